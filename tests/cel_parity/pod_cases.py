"""The parity rows of the pod fields AppService and AppStack components share (volumes and
their mounts, tolerations: the SDK's models, :mod:`appstack.sdk.model`) and of CronTab's env
and envFrom (pure data), changes of the base objects of :mod:`tests.cel_parity.kind_cases` and
:data:`tests.cel_parity.appstack_cases.STACK`."""

from __future__ import annotations

from typing import Any

from tests.cel_parity.table import Case

_CM: dict[str, Any] = {"name": "a", "configMap": {"name": "settings"}}
_PVC: dict[str, Any] = {"name": "b", "persistentVolumeClaim": {"claimName": "data"}}
_SECRET = {"secretKeyRef": {"name": "s", "key": "k"}}


def _pod_cases(kind: str, path: str, obj: str) -> tuple[Case, ...]:
    """The rules of :func:`appstack.sdk.model.mount_rules` and of a volume and a toleration,
    for the object at ``obj`` (``spec``, ``spec.components[1]``), whose schema is ``path``."""
    v, m = f"{obj}.volumes", f"{obj}.volumeMounts"
    mount = {"name": "a", "mountPath": "/etc/app"}
    return (
        Case(
            kind,
            path,
            "volume names must be unique",
            ((v, [_CM, {"name": "a", "emptyDir": {}}]),),
            v,
        ),
        Case(kind, path, "every volumeMount must name a volume", ((m, [mount]),), m),
        Case(
            kind,
            path,
            "every volumeMount must name a volume",
            ((v, [_CM, _PVC]), (m, [mount, {"name": "b", "mountPath": "/data"}])),
            m,
            refused=False,
        ),
        Case(
            kind,
            path,
            "volumeMounts: mount paths must be unique",
            ((v, [_CM, _PVC]), (m, [mount, {"name": "b", "mountPath": "/etc/app"}])),
            m,
        ),
        Case(
            kind,
            path,
            "volumeMounts: mount paths must be unique",
            ((v, [_CM]), (m, [mount, {**mount, "mountPath": "/etc/app2", "subPath": "x"}])),
            m,
            refused=False,  # one volume, mounted twice
        ),
        Case(
            kind,
            f"{path}.volumes[*]",
            "a volume needs exactly one of",
            ((v, [{**_CM, "emptyDir": {}}]),),
            f"{v}[0]",
        ),
        Case(
            kind,
            f"{path}.volumes[*]",
            "a volume needs exactly one of",
            ((v, [{"name": "a"}]),),
            f"{v}[0]",
        ),
        *_toleration_cases(kind, path, obj),
    )


def _toleration_cases(kind: str, path: str, obj: str) -> tuple[Case, ...]:
    """The rules of :class:`appstack.sdk.model.Toleration`, for the object at ``obj``: the
    same for every kind with tolerations (AppService, AppStack components, EtcdCluster)."""
    t = f"{obj}.tolerations"
    return (
        Case(
            kind,
            f"{path}.tolerations[*]",
            "operator must be Exists when key is empty",
            ((t, [{"effect": "NoSchedule"}]),),
            f"{t}[0].operator",
        ),
        Case(
            kind,
            f"{path}.tolerations[*]",
            "operator must be Exists when key is empty",
            ((t, [{"operator": "Exists"}]),),
            f"{t}[0].operator",
            refused=False,
        ),
        Case(
            kind,
            f"{path}.tolerations[*]",
            "value must be empty when operator is Exists",
            ((t, [{"key": "gpu", "operator": "Exists", "value": "yes"}]),),
            f"{t}[0].value",
        ),
        Case(
            kind,
            f"{path}.tolerations[*]",
            "tolerationSeconds needs effect NoExecute",
            ((t, [{"key": "gpu", "effect": "NoSchedule", "tolerationSeconds": 60}]),),
            f"{t}[0].tolerationSeconds",
        ),
        Case(
            kind,
            f"{path}.tolerations[*]",
            "tolerationSeconds needs effect NoExecute",
            ((t, [{"key": "gpu", "effect": "NoExecute", "tolerationSeconds": 60}]),),
            f"{t}[0].tolerationSeconds",
            refused=False,
        ),
    )


_API = "spec.components[0]"  # configs api (/app/config) and shared (/shared)
_C = ".spec.components[*]"

POD_CASES: tuple[Case, ...] = (
    *_pod_cases("AppService", ".spec", "spec"),
    *_pod_cases("AppStack", _C, "spec.components[1]"),
    *_toleration_cases("EtcdCluster", ".spec", "spec"),
    Case(
        "AppStack",
        _C,
        "volumes: a volume may not have the name of a config",
        ((f"{_API}.volumes", [{**_CM, "name": "shared"}]),),
        f"{_API}.volumes",
    ),
    Case(
        "AppStack",
        _C,
        "volumeMounts: a mount path may not be one of config",
        (
            (f"{_API}.volumes", [_CM]),
            (f"{_API}.volumeMounts", [{"name": "a", "mountPath": "/shared"}]),
        ),
        f"{_API}.volumeMounts",
    ),
    Case(
        "AppStack",
        _C,
        "volumeMounts: a mount path may not be one of config",
        (
            (f"{_API}.volumes", [_CM]),
            (f"{_API}.volumeMounts", [{"name": "a", "mountPath": "/shared/more"}]),
        ),
        f"{_API}.volumeMounts",
        refused=False,
    ),
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
