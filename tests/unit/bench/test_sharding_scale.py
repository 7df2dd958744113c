"""The pure parts of bench/sharding_scale.py: a shard's /metrics read into the counts a
load step is judged by, the step's verdict (queue-wait p99 ≤ 1 s) and E(N)."""

from __future__ import annotations

import sys

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from tests.support.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import sharding_scale


def _exposition(waits: list[float], reconciles: int, depth: int) -> str:
    """What a shard's /metrics says: the runtime's metric names and queue buckets."""
    registry = CollectorRegistry()
    buckets = tuple(10.0**e for e in range(-8, 2))
    queue = Histogram(
        "workqueue_queue_duration_seconds", "", ["name"], buckets=buckets, registry=registry
    )
    total = Counter(
        "controller_runtime_reconcile_total", "", ["controller", "result"], registry=registry
    )
    took = Histogram(
        "controller_runtime_reconcile_time_seconds", "", ["controller"], registry=registry
    )
    gauge = Gauge("workqueue_depth", "", ["name"], registry=registry)
    for wait in waits:
        queue.labels("tick").observe(wait)
    total.labels("tick", "success").inc(reconciles)
    for _ in range(reconciles):
        took.labels("tick").observe(0.25)
    gauge.labels("tick").set(depth)
    return generate_latest(registry).decode()


def test_counts_reads_waits_by_bucket_reconciles_their_time_and_depth() -> None:
    text = _exposition([0.05, 0.5, 0.5, 2.0, 5.0], reconciles=7, depth=3)
    assert sharding_scale.counts(text) == {
        "waits": 5.0,
        "le_0.1": 1.0,
        "le_1": 3.0,
        "reconciles": 7.0,
        "reconcile_s": 1.75,
        "depth": 3.0,
    }


def _counts(waits: float, le_1: float, le_01: float = 0.0) -> dict[str, float]:
    return {
        **dict.fromkeys(sharding_scale.COUNTS, 0.0),
        "waits": waits,
        "le_0.1": le_01,
        "le_1": le_1,
    }


def test_a_step_passes_with_at_most_one_percent_of_its_waits_over_one_second() -> None:
    before = _counts(1000, 990, 500)
    passed = sharding_scale.verdict(before, _counts(1200, 1188, 600))  # 2 of 200 over
    assert passed == {
        "waits": 200,
        "waits_le_100ms": 0.5,
        "waits_over_1s": 0.01,
        "passed": True,
    }
    failed = sharding_scale.verdict(before, _counts(1200, 1187))  # 3 of 200 over
    assert failed["passed"] is False
    assert failed["waits_over_1s"] == 0.015


def test_a_step_with_no_wait_observed_does_not_pass() -> None:
    same = _counts(10, 10)
    assert sharding_scale.verdict(same, same)["passed"] is False


def test_efficiency_is_capacity_over_n_times_one_shards() -> None:
    runs = [
        {"shards": 1, "capacity_changes_per_s": 10.0},
        {"shards": 2, "capacity_changes_per_s": 19.0},
        {"shards": 4, "capacity_changes_per_s": 32.0},
    ]
    sharding_scale.efficiencies(runs)
    assert [r["efficiency"] for r in runs] == [1.0, 0.95, 0.8]
    unmeasured = [{"shards": 1, "capacity_changes_per_s": 0.0}]
    sharding_scale.efficiencies(unmeasured)
    assert "efficiency" not in unmeasured[0]
