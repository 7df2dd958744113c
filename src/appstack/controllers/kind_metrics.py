"""appstack's metrics about what users run, for every registered kind
(:data:`appstack.controllers.registry.ALL`): per object whether its kind's ready condition
is True (``appstack_object_ready``; the condition its registration names, e.g. an
EtcdCluster's ``Available``), and the kind's own gauges (its registration's ``gauges``: an
AppStack's members by state, an EtcdCluster's quorum, backups and database sizes, a
CronTab's last run; each kind's ``metrics`` module). The collector is the SDK's
(:class:`appstack.sdk.KindMetrics`), registered by its assembly as for any
operator; this module names appstack's families for its alerts
(:mod:`appstack.manifests.dashboard`) and dashboards (:mod:`appstack.manifests.grafana`),
and its pure :func:`samples` for the tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from appstack.api.identity import IDENTITY
from appstack.controllers.registry import ALL
from appstack.sdk import Sample, metric_families, metric_samples, ready_metric

READY = ready_metric(IDENTITY)
#: name → help; every gauge :func:`samples` may produce (also what the tests check against):
#: the readiness of every object, then each kind's own families.
FAMILIES: dict[str, str] = metric_families(ALL, IDENTITY)


def samples(kind: str, objects: Iterable[dict[str, Any]]) -> Iterator[Sample]:
    """Every sample one kind's cached ``objects`` give (pure; none for a kind not ours)."""
    return metric_samples(ALL, IDENTITY, kind, objects)
