"""The pure parts of bench/sharding_appservice.py: keys per shard and the busiest over the
mean, which AppServices are not yet settled on their owners, CPU seconds as cores, the
comparison with one shard (speed-ups, peak RSS) and the merging of runs by N."""

from __future__ import annotations

import sys
from typing import Any

from appstack.runtime import owner
from tests.support.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import sharding_appservice as bench

NS = "apps"
SHARDS = {"appstack-operator-shard-00aa", "appstack-operator-shard-11bb"}


def _app(name: str, shard: str | None, *, ready: bool = True, seen: int = 2) -> dict[str, Any]:
    labels = {bench.SHARD: shard} if shard else {}
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {
        "metadata": {"name": name, "namespace": NS, "generation": 2, "labels": labels},
        "status": {"observedGeneration": seen, "conditions": [condition]},
    }


def _owner(name: str) -> str:
    home = owner(bench.key_of(NS, name), SHARDS)
    assert home is not None
    return home


def test_keys_per_shard_and_the_busiest_over_the_mean() -> None:
    labels = {"a": "s1", "b": "s1", "c": "s2", "d": "s1"}
    assert bench.keys_summary(labels) == {"keys_per_shard": [3, 1], "busiest_x_mean": 1.5}
    assert bench.keys_summary({"a": "s1"}) == {"keys_per_shard": [1], "busiest_x_mean": 1.0}
    assert bench.keys_summary({}) == {"keys_per_shard": [], "busiest_x_mean": None}


def test_an_app_is_settled_on_its_owner_when_labelled_to_it_undrained_and_ready() -> None:
    names = [f"app-{i:04d}" for i in range(6)]
    other = {n: next(s for s in SHARDS if s != _owner(n)) for n in names}
    apps = [
        _app(names[0], _owner(names[0])),  # settled
        _app(names[1], other[names[1]]),  # on the shard that no longer owns it
        _app(names[2], None),  # not assigned yet
        _app(names[3], _owner(names[3]), ready=False),
        _app(names[4], _owner(names[4]), seen=1),  # Ready, but of an older generation
        _app(names[5], _owner(names[5])),
    ]
    apps[5]["metadata"]["labels"][bench.DRAIN] = _owner(names[5])  # a drain asked
    assert bench.off_owner(apps, SHARDS) == names[1:]
    assert bench.off_owner(apps[:1], SHARDS) == []


def test_cpu_seconds_become_cores_over_the_interval() -> None:
    before = {"kube-apiserver": 10.0, "etcd": 2.0}
    after = {"kube-apiserver": 25.0, "etcd": 3.0}
    assert bench.cores(before, after, 10.0) == {"etcd_cores": 0.1, "kube-apiserver_cores": 1.5}
    assert bench.cores(before, after, 0.0) == {}


def test_the_machine_s_busy_seconds_leave_out_idle_and_io_wait() -> None:
    ticks = bench.converge.TICKS
    # user nice system idle iowait irq softirq steal guest guest_nice
    line = f"cpu  {3 * ticks} {ticks} {2 * ticks} {50 * ticks} {4 * ticks} 0 {ticks} 0 9 9"
    assert bench.busy_seconds(line + "\ncpu0 1 2 3 4 5 6 7 8 9 10\n") == 7.0


def _run(n: int, create: float, ready: float, peaks: list[float]) -> dict[str, Any]:
    return {
        "shards": n,
        "create": {"operator_s": create, "ready_s": ready},
        "update": {"operator_s": create / 2, "ready_s": ready / 2},
        "peak_rss_mib": {f"s{i}": peak for i, peak in enumerate(peaks)},
    }


def test_each_run_is_compared_with_one_shard() -> None:
    runs = [_run(1, 30.0, 40.0, [100.0]), _run(2, 20.0, 40.0, [104.0, 95.0])]
    bench.compare(runs)
    assert runs[0]["speedup"] == dict.fromkeys(
        ("create_operator_s", "create_ready_s", "update_operator_s", "update_ready_s"), 1.0
    )
    assert runs[1]["speedup"] == {
        "create_operator_s": 1.5,
        "create_ready_s": 1.0,
        "update_operator_s": 1.5,
        "update_ready_s": 1.0,
    }
    assert runs[1]["peak_rss_x_one_shard"] == {"largest": 1.04, "smallest": 0.95}


def test_without_one_shard_nothing_is_compared() -> None:
    runs = [_run(2, 20.0, 40.0, [104.0, 95.0])]
    bench.compare(runs)
    assert "speedup" not in runs[0]


def test_a_run_replaces_the_one_of_the_same_n_and_runs_stay_ordered() -> None:
    record = {"runs": [_run(1, 30.0, 40.0, [100.0]), _run(3, 10.0, 40.0, [1.0, 1.0, 1.0])]}
    again = _run(1, 28.0, 38.0, [99.0])
    two = _run(2, 20.0, 40.0, [1.0, 1.0])
    assert bench.merged(record, again) == [again, record["runs"][1]]
    with_two = {"runs": bench.merged(record, two)}
    assert [r["shards"] for r in bench.merged(with_two, again)] == [1, 2, 3]
    assert bench.merged({}, two) == [two]


def test_the_shards_run_sharded_with_their_leases_in_the_namespace() -> None:
    shards = bench.Shards("kubeconfig", NS, 15, ["--concurrency=16"])
    assert shards.args == [
        "--sharding",
        f"--leader-election-namespace={NS}",
        "--leader-elect-lease-duration=15s",
        "--leader-elect-renew-deadline=10s",
        "--leader-elect-retry-period=1s",
        "--concurrency=16",
    ]
    assert "--leader-elect-renew-deadline=2s" in bench.Shards("k", NS, 3, []).args
