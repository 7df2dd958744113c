"""The EtcdCluster's day-2 settings (pure): member flags and env, the configuration digest
that rolls members, the refusals of what appstack owns, and the defragmentation and
NOSPACE decisions of :mod:`appstack.controllers.etcdcluster.maintenance`."""

from __future__ import annotations

import datetime
from dataclasses import replace
from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.etcdcluster import (
    DefragmentationStatus,
    DefragmentedMember,
    EtcdCluster,
    EtcdClusterSpec,
)
from appstack.api.etcdcluster_maintenance import OWNED_FLAGS, env_name
from appstack.controllers.etcdcluster import desired, maintenance, status
from appstack.controllers.etcdcluster.etcdapi import EndpointStatus
from appstack.controllers.etcdcluster.observe import Observation, pod_view
from appstack.controllers.etcdcluster.plan import MemberView, Observed, PodView, Step, next_step

OBJ: dict[str, Any] = {
    "apiVersion": "appstack.dev/v1",
    "kind": "EtcdCluster",
    "metadata": {
        "name": "e",
        "namespace": "ns",
        "uid": "u-1",
        "generation": 2,
        "creationTimestamp": "2026-11-27T10:00:00Z",
    },
    "spec": {"replicas": 3, "storage": "1Gi"},
}
MIB = 1 << 20


def spec(**extra: Any) -> EtcdClusterSpec:
    """The spec of a whole EtcdCluster, validated as admission validates it (CEL rules too)."""
    obj = {**OBJ, "spec": {"replicas": 3, "storage": "1Gi", **extra}}
    return EtcdCluster.model_validate(obj).spec


def refused(**extra: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Where and why an EtcdCluster with these spec fields is refused."""
    with pytest.raises(ValidationError) as caught:
        spec(**extra)
    return [(e["loc"], e["msg"]) for e in caught.value.errors()]


def pod(s: EtcdClusterSpec, name: str = "e-0") -> dict[str, Any]:
    return desired.member_pod(OBJ, s, name, {name: "x"}, new_cluster=True, voter=True)


def test_every_member_gets_safe_compaction_and_quota_defaults_explicitly() -> None:
    args = pod(spec())["spec"]["containers"][0]["args"]
    assert "--auto-compaction-mode=periodic" in args
    assert "--auto-compaction-retention=1h" in args
    assert f"--quota-backend-bytes={2 << 30}" in args


def test_compaction_quota_extra_args_and_env_reach_the_member() -> None:
    s = spec(
        compaction={"mode": "revision", "retention": "10000"},
        quotaBackendBytes=64 * MIB,
        extraArgs={"snapshot-count": "5000", "experimental-memory-mlock": "true"},
        env=[{"name": "GOMAXPROCS", "value": "2"}],
    )
    container = pod(s)["spec"]["containers"][0]
    args = container["args"]
    assert "--auto-compaction-mode=revision" in args
    assert "--auto-compaction-retention=10000" in args
    assert f"--quota-backend-bytes={64 * MIB}" in args
    # sorted: the same spec always gives the same arguments (no needless restart)
    assert args[-2:] == ["--experimental-memory-mlock=true", "--snapshot-count=5000"]
    assert container["env"][-1] == {"name": "GOMAXPROCS", "value": "2"}
    assert [e["name"] for e in container["env"][:2]] == ["POD_NAME", "POD_IP"]
    assert desired.pod_quota(pod(s)) == 64 * MIB


def test_the_configuration_digest_changes_with_flags_and_env_only() -> None:
    base = desired.config_digest(spec())
    assert base == desired.config_digest(spec(replicas=5))  # scaling restarts nobody
    assert base == desired.config_digest(spec(compaction={}))  # the defaults made explicit
    for other in (
        spec(quotaBackendBytes=64 * MIB),
        spec(compaction={"retention": "30m"}),
        spec(extraArgs={"snapshot-count": "5000"}),
        spec(env=[{"name": "GOMAXPROCS", "value": "2"}]),
    ):
        assert desired.config_digest(other) != base
    made = pod(spec(quotaBackendBytes=64 * MIB))
    assert made["metadata"]["annotations"][desired.CONFIG] == desired.config_digest(
        spec(quotaBackendBytes=64 * MIB)
    )
    assert pod_view(made).config == desired.config_digest(spec(quotaBackendBytes=64 * MIB))


@pytest.mark.parametrize("flag", sorted(OWNED_FLAGS))
def test_each_flag_appstack_owns_is_refused_naming_it(flag: str) -> None:
    ((field, said),) = refused(extraArgs={"snapshot-count": "1", flag: "x"})
    assert field == ("spec", "extraArgs")
    assert said.startswith(f"extraArgs may not set a flag appstack owns: --{flag} "), said
    assert refused(env=[{"name": env_name(flag), "value": "x"}]) == [
        (("spec", "env", 0, "name"), f"env may not set a variable appstack owns: {env_name(flag)}")
    ]


def test_bad_values_are_refused_field_by_field() -> None:
    def fields(**extra: Any) -> set[tuple[str | int, ...]]:
        return {field for field, _ in refused(**extra)}

    def says(**extra: Any) -> str:
        return "\n".join(said for _, said in refused(**extra))

    retention = {"compaction": {"mode": "revision", "retention": "1h"}}
    assert fields(**retention) == {("spec", "compaction", "retention")}
    assert says(**retention).startswith("compaction.retention: with mode periodic")
    assert fields(quotaBackendBytes=1 * MIB) == {("spec", "quotaBackendBytes")}
    schedule = {"defragmentation": {"schedule": "0 3 * *"}}
    assert fields(**schedule) == {("spec", "defragmentation", "schedule")}
    assert "defragmentation.schedule takes five fields" in says(**schedule)
    assert refused(env=[{"name": "POD_IP", "value": "1.2.3.4"}]) == [
        (("spec", "env", 0, "name"), "env may not set a variable appstack owns: POD_IP")
    ]
    flag_name = {"extraArgs": {"--snapshot-count": "1"}}
    assert fields(**flag_name) == {("spec", "extraArgs")}
    assert "flag's name" in says(**flag_name)


def _members(n: int) -> list[MemberView]:
    return [MemberView(100 + i, f"e-{i}", True, False, True, 10, "3.6.16") for i in range(n)]


def _seen(config: dict[str, str], wanted: str, leader: int = 100) -> Observed:
    pods = {p: PodView(p, "10.0.0.1", True, "3.6.16", config=c) for p, c in config.items()}
    return Observed(
        "e",
        3,
        "3.6.16",
        pods,
        {f"data-{p}": False for p in pods},
        _members(3),
        leader=leader,
        bootstrapped=True,
        config=wanted,
    )


def test_a_new_configuration_restarts_followers_first_then_moves_leadership() -> None:
    seen = _seen({"e-0": "old", "e-1": "old", "e-2": "old"}, "new")
    assert next_step(seen) == Step("DeletePod", "restarting e-1 with the new configuration", "e-1")
    seen = _seen({"e-0": "old", "e-1": "new", "e-2": "new"}, "new")
    assert next_step(seen) == Step(
        "MoveLeader", "moving leadership to e-1 before restarting", "e-1", 101
    )
    assert next_step(_seen({"e-0": "new", "e-1": "new", "e-2": "new"}, "new")).kind == "Done"
    # no wanted configuration: nothing restarts for it
    assert next_step(_seen({"e-0": "a", "e-1": "b", "e-2": "c"}, "")).kind == "Done"
    # never while a member is unhealthy
    sick = replace(_seen({"e-0": "old", "e-1": "old", "e-2": "old"}, "new"))
    sick = replace(sick, members=[replace(m, healthy=m.id != 102) for m in sick.members or []])
    assert next_step(sick).kind == "Wait"


def status_of(
    member: int, leader: int, size: int, in_use: int, errors: tuple[str, ...] = ()
) -> EndpointStatus:
    return EndpointStatus(
        member, 7, leader, 10, 10, "3.6.16", False, errors, size, in_use, revision=55
    )


def test_alarms_are_the_clusters_not_a_member_failure() -> None:
    raised = status_of(1, 1, 10, 5, ("memberID:1 alarm:NOSPACE ", "memberID:2 alarm:NOSPACE "))
    assert raised.alarms == ("NOSPACE",)
    assert raised.failures == ()
    broken = status_of(1, 1, 10, 5, ("raft: not ready",))
    assert broken.alarms == ()
    assert broken.failures == ("raft: not ready",)


def test_defragmentation_goes_followers_first_leader_last_and_only_where_worth_it() -> None:
    statuses = {
        "e-0": status_of(100, 101, 10, 5),
        "e-1": status_of(101, 101, 10, 5),
        "e-2": status_of(102, 101, 10, 5),
    }
    assert maintenance.order(statuses, 101) == ["e-0", "e-2", "e-1"]
    assert maintenance.worth(status_of(1, 1, 100 * MIB, 80 * MIB), 20)
    assert not maintenance.worth(status_of(1, 1, 100 * MIB, 81 * MIB), 20)
    assert maintenance.worth(status_of(1, 1, 100 * MIB, 100 * MIB), 0)
    assert not maintenance.worth(status_of(1, 1, 0, 0), 0)


def test_a_quota_below_what_the_database_holds_is_not_applied() -> None:
    statuses = {"e-0": status_of(1, 1, 64 * MIB, 40 * MIB)}
    assert maintenance.quota_problem(spec(), statuses) == ""  # the default: never refused
    assert maintenance.quota_problem(spec(quotaBackendBytes=64 * MIB), statuses) == ""
    said = maintenance.quota_problem(spec(quotaBackendBytes=32 * MIB), statuses)
    assert "quotaBackendBytes 33554432 (32.0 MiB) is not above the 41943040 bytes" in said


def test_a_database_near_its_quota_is_looked_at_every_few_seconds() -> None:
    small = spec(quotaBackendBytes=100 * MIB)
    near = {"e-0": status_of(1, 1, 10 * MIB, 10 * MIB), "e-1": status_of(2, 1, 80 * MIB, 5 * MIB)}
    far = {"e-0": status_of(1, 1, 79 * MIB, 79 * MIB)}
    assert maintenance.check_after(small, near) == maintenance.NEAR_QUOTA_CHECK  # the file
    assert maintenance.check_after(small, far) == float("inf")
    assert maintenance.check_after(spec(), near) == float("inf")  # etcd's 2 GiB default
    assert maintenance.check_after(small, {}) == float("inf")


def test_the_schedule_counts_from_the_last_complete_run() -> None:
    s = spec(defragmentation={"schedule": "0 3 * * *"})
    created = OBJ["metadata"]["creationTimestamp"]
    at = datetime.datetime(2026, 11, 28, 2, 59, tzinfo=datetime.timezone.utc)
    assert maintenance.due(s, None, created, at) == 60
    assert maintenance.due(s, "2026-11-28T03:00:05Z", created, at) > 23 * 3600
    assert maintenance.due(spec(), None, created, at) == float("inf")


def test_a_run_is_summed_up_and_a_stopped_one_keeps_the_last_time() -> None:
    run = maintenance.Run(
        [
            DefragmentedMember(name="e-0", before_bytes=30 * MIB, after_bytes=2 * MIB),
            DefragmentedMember(name="e-1", before_bytes=20 * MIB, after_bytes=2 * MIB),
        ]
    )
    assert run.reclaimed == 46 * MIB
    assert maintenance.summary(run) == (
        "e-0 30.0 MiB → 2.0 MiB, e-1 20.0 MiB → 2.0 MiB; reclaimed 46.0 MiB"
    )
    done = maintenance.run_status(run, "2026-11-28T03:00:05Z", None)
    assert (done.last_time, done.result) == ("2026-11-28T03:00:05Z", "Complete")
    old = DefragmentationStatus(last_time="2026-11-27T03:00:00Z")
    stopped = maintenance.run_status(replace(run, stopped="member e-2 does not answer"), "t", old)
    assert (stopped.last_time, stopped.result) == (
        "2026-11-27T03:00:00Z",
        "member e-2 does not answer",
    )


def test_status_carries_database_sizes_alarms_and_the_last_defragmentation() -> None:
    members = _members(3)
    seen = Observed("e", 3, "3.6.16", {}, {}, members, leader=100, bootstrapped=True)
    nospace = ("memberID:100 alarm:NOSPACE ",)
    statuses = {m.pod: status_of(m.id, 100, 20 * MIB, 15 * MIB, nospace) for m in members}
    obj = {**OBJ, "status": {"defragmentation": {"lastTime": "2026-11-27T03:00:00Z"}}}
    out = status.from_observation(
        obj, Observation(seen, {}, 7, None, statuses, {}), Step("Done", "ok"), "now"
    ).to_dict()
    assert out["alarms"] == ["NOSPACE"]
    assert out["members"][0]["dbSize"] == 20 * MIB
    assert out["members"][0]["dbSizeInUse"] == 15 * MIB
    assert out["defragmentation"] == {"lastTime": "2026-11-27T03:00:00Z"}
    quiet = {m.pod: status_of(m.id, 100, 20 * MIB, 15 * MIB) for m in members}
    cleared = status.from_observation(
        obj, Observation(seen, {}, 7, None, quiet, {}), Step("Done", "ok"), "now"
    ).to_dict()
    assert cleared["alarms"] == []  # written empty: the merge patch clears the old list
