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


def test_a_scale_out_counts_the_keys_that_moved_and_checks_done_when_2() -> None:
    before = {f"o-{i}": ("a" if i % 2 else "b") for i in range(12)}
    after = dict(before) | {"o-0": "c", "o-1": "c", "o-2": "c", "o-3": "c"}
    record = sharding_scale.scale_out_moves(before, after, "c")
    assert record == {
        "keys": 12,
        "moved": 4,
        "moved_to_new_shard": 4,
        "x_ideal": 1.0,
        "busiest_x_mean": 1.0,
        "keys_per_shard": [4, 4, 4],
        "moved_within_bounds": True,
        "busiest_within_bound": True,
    }
    skewed = dict(before) | {"o-0": "c", "o-2": "c"}  # 2 moved of the ideal 4; b holds 4
    worse = sharding_scale.scale_out_moves(before, skewed, "c")
    assert worse["x_ideal"] == 0.5
    assert worse["busiest_x_mean"] == 1.5  # a: 6 of a mean 4
    assert worse["moved_within_bounds"] is False
    assert worse["busiest_within_bound"] is False


def test_a_scale_in_moves_only_the_leaving_shards_keys() -> None:
    before = {f"o-{i}": "abc"[i % 3] for i in range(12)}
    after = before | {"o-2": "b", "o-5": "a", "o-8": "b", "o-11": "a"}  # c's keys
    record = sharding_scale.scale_in_moves(before, after, "c")
    assert record["leaving_keys"] == 4
    assert record["moved"] == record["moved_from_leaving_shard"] == 4
    assert record["moved_from_staying_shards"] == 0
    assert record["x_ideal"] == 1.0  # 4 of 12 keys over 3 shards
    assert record["keys_per_shard"] == [6, 6]
    assert record["only_leaving_moved"] is True
    assert record["busiest_within_bound"] is True


def test_a_scale_in_that_moves_a_staying_shards_key_is_caught() -> None:
    before = {f"o-{i}": "abc"[i % 3] for i in range(12)}
    after = {name: ("a" if shard == "c" else shard) for name, shard in before.items()}
    after["o-1"] = "a"  # b's key moved too
    record = sharding_scale.scale_in_moves(before, after, "c")
    assert record["moved_from_staying_shards"] == 1
    assert record["only_leaving_moved"] is False
    assert record["busiest_within_bound"] is False  # a: 9 of a mean 6
    kept = before | {"o-2": "a", "o-5": "b"}  # not every key of c moved: c still holds two
    assert sharding_scale.scale_in_moves(before, kept, "c")["only_leaving_moved"] is False


def test_a_graceful_stop_reports_each_keys_unowned_time_and_those_over_two_seconds() -> None:
    lines = [
        {"reconcile": "ns/a", "proc": "s0", "start": 10.3},
        {"reconcile": "ns/a", "proc": "s0", "start": 10.9},
        {"reconcile": "ns/b", "proc": "s1", "start": 9.0},  # the leaving shard's own run
        {"reconcile": "ns/b", "proc": "s0", "start": 14.0},
        {"reconcile": "ns/c", "proc": "s0", "start": 8.0},  # before it was let go: not it
    ]
    let_go = {"ns/a": 10.0, "ns/b": 11.0, "ns/c": 12.0}
    gaps = sharding_scale.unowned(lines, let_go, "s1")
    assert [round(g, 3) for g in gaps] == [0.3, 3.0]
    figures = sharding_scale.hand_back_gaps(gaps, handed=2, released=1)
    assert (figures["keys_handed_back"], figures["keys_left_at_exit"]) == (2, 1)
    assert figures["gap_s"]["max"] == 3.0
    assert figures["gaps_over_bound"] == 1
    assert figures["keys_not_reconciled_again"] == 1
    assert sharding_scale.hand_back_gaps([], handed=0)["gap_s"]["max"] is None
