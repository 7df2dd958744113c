"""The metric samples an operator built on the SDK exports (for the tests that check its
dashboards and alerts name only those): the runtime's families, a sharded replica's shard
families under the operator's metric prefix, each with its samples' suffixes."""

from __future__ import annotations

from appstack.runtime.metrics import Metrics
from appstack.runtime.sharding import ShardMetrics


def exported_samples(metric_prefix: str) -> set[str]:
    """Every sample name of the runtime's registry and of a sharded replica's (counters
    ``_total``, histograms ``_bucket``/``_sum``/``_count``); add the kinds' own gauges."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    sharded = Metrics(prefix=metric_prefix)  # a sharded install's replicas: + these
    ShardMetrics(sharded)
    return {
        family.name + suffix
        for registry in (Metrics().registry, sharded.registry)
        for family in registry.collect()
        for suffix in suffixes.get(family.type, ("",))
    }
