"""The parity rows of CronTab's env and envFrom (pure data), changes of the base object of
:mod:`tests.cel_parity.schedule_cases`."""

from __future__ import annotations

from tests.cel_parity.table import Case

_SECRET = {"secretKeyRef": {"name": "s", "key": "k"}}

POD_CASES: tuple[Case, ...] = (
    # CronTab's env (EnvVar) and envFrom
    Case(
        "CronTab",
        ".spec.env[*]",
        "set either value or valueFrom",
        (("spec.env", [{"name": "A", "value": "1", "valueFrom": _SECRET}]),),
        "spec.env[0]",
    ),
    Case(
        "CronTab",
        ".spec.env[*].valueFrom",
        "valueFrom needs exactly one",
        (("spec.env", [{"name": "A", "valueFrom": {}}]),),
        "spec.env[0].valueFrom",
    ),
    Case(
        "CronTab",
        ".spec.envFrom[*]",
        "envFrom needs exactly one of configMapRef, secretRef",
        (("spec.envFrom", [{"configMapRef": {"name": "c"}, "secretRef": {"name": "s"}}]),),
        "spec.envFrom[0]",
    ),
    Case(
        "CronTab",
        ".spec.envFrom[*]",
        "envFrom needs exactly one of configMapRef, secretRef",
        (("spec.envFrom", [{"prefix": "APP_"}]),),
        "spec.envFrom[0]",
    ),
)
