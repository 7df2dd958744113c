"""The CronTab's own gauge — whether its newest run failed, read from its typed status —
the dashboard row that shows it and the alert on it (:data:`ALERTS`). Declared on its
registration (:data:`.CONTROLLER`); the operator's per-kind collector reads it at scrape
time (:mod:`appstack.controllers.kind_metrics`), its dashboard is drawn by
:mod:`appstack.manifests.grafana` and its alert goes into the operator's PrometheusRule
(:func:`appstack.sdk.alert_rules`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import ValidationError

from appstack.api.crontab import CronTabStatus
from appstack.sdk import Alert, Gauges, Panel, Sample

LAST_RUN_FAILED = "appstack_crontab_last_run_failed"
FAMILIES = {LAST_RUN_FAILED: "1 if the CronTab's newest run failed"}


def samples(obj: dict[str, Any], who: dict[str, str]) -> Iterator[Sample]:
    """1 if the newest run failed, else 0 (none for a status that is not the kind's)."""
    try:
        status = CronTabStatus.model_validate(obj.get("status") or {})
    except ValidationError:
        return
    yield LAST_RUN_FAILED, who, 1.0 if status.last_run_result == "Failed" else 0.0


def panels(who: str) -> Sequence[Panel]:
    """The dashboard row of :data:`FAMILIES`, for the objects ``who`` selects."""
    return [
        (
            "Newest run failed (1 = yes)",
            "short",
            [f"max by (namespace, name) ({LAST_RUN_FAILED}{{{who}}})"],
        ),
    ]


GAUGES = Gauges(FAMILIES, samples)

#: What users are warned of about their CronTabs (the operator's PrometheusRule).
ALERTS = (
    Alert(
        "AppstackCronTabFailing",
        f"max by (namespace, name) ({LAST_RUN_FAILED}) == 1",
        "CronTab {{ $labels.namespace }}/{{ $labels.name }}: its newest run failed",
    ),
)
