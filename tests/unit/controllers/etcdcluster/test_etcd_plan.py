"""The EtcdCluster's next step from observed pods, volumes and members (pure)."""

from __future__ import annotations

from dataclasses import replace

from appstack.controllers.etcdcluster.plan import (
    MemberView,
    Observed,
    PodView,
    Step,
    next_free_name,
    next_step,
)

V = "3.6.16"


def pod(name: str, *, ready: bool = True, version: str = V, deleting: bool = False) -> PodView:
    return PodView(name, "127.0.0.9", ready, version, deleting)


def member(
    i: int,
    *,
    learner: bool = False,
    started: bool = True,
    healthy: bool = True,
    applied: int = 100,
    name: str = "e",
) -> MemberView:
    return MemberView(1000 + i, f"{name}-{i}", started, learner, healthy, applied, V)


def healthy(n: int, replicas: int | None = None, leader: int = 0, **kw: object) -> Observed:
    names = [f"e-{i}" for i in range(n)]
    seen = Observed(
        name="e",
        replicas=n if replicas is None else replicas,
        version=V,
        pods={p: pod(p) for p in names},
        volumes={f"data-{p}": False for p in names},
        members=[member(i) for i in range(n)],
        leader=1000 + leader,
        bootstrapped=True,
    )
    return replace(seen, **kw)  # type: ignore[arg-type]


def test_a_new_cluster_bootstraps_every_member_at_once() -> None:
    seen = Observed("e", 3, V, pods={}, volumes={}, members=None)
    assert next_step(seen) == Step("Bootstrap", "creating 3 members", pods=("e-0", "e-1", "e-2"))


def test_bootstrap_finishes_missing_pods_then_waits_for_a_leader() -> None:
    seen = Observed(
        "e", 3, V, {"e-0": pod("e-0", ready=False)}, {}, None, bootstrap_names=("e-0", "e-1", "e-2")
    )
    assert next_step(seen).kind == "Bootstrap"
    assert next_step(seen).pods == ("e-1", "e-2")
    full = replace(seen, pods={f"e-{i}": pod(f"e-{i}", ready=False) for i in range(3)})
    assert next_step(full).kind == "Wait"


def test_a_healthy_cluster_of_the_wanted_size_is_done() -> None:
    assert next_step(healthy(3)).kind == "Done"
    assert not next_step(healthy(3)).changes


def test_scale_up_adds_one_learner_with_a_fresh_name() -> None:
    step = next_step(healthy(3, replicas=5))
    assert (step.kind, step.pod) == ("AddMember", "e-3")


def test_a_learner_gets_its_pod_then_waits_to_catch_up_then_is_promoted() -> None:
    base = healthy(3, replicas=5)
    added = replace(base, members=[*(base.members or []), member(3, learner=True, started=False)])
    assert (next_step(added).kind, next_step(added).pod) == ("CreatePod", "e-3")
    running = replace(
        added,
        pods={**added.pods, "e-3": pod("e-3")},
        volumes={**added.volumes, "data-e-3": False},
        members=[*(base.members or []), member(3, learner=True, applied=20)],
    )
    assert next_step(running).kind == "Wait"
    assert next_step(running).reason == "learner e-3 is catching up (applied 20 of 100)"
    starting = replace(
        running, members=[*(base.members or []), member(3, learner=True, healthy=False)]
    )
    assert next_step(starting).reason == "learner e-3 is starting"
    caught = replace(running, members=[*(base.members or []), member(3, learner=True, applied=95)])
    assert next_step(caught) == Step("PromoteMember", "learner e-3 caught up", "e-3", 1003)


def test_no_promotion_while_a_voting_member_is_unhealthy() -> None:
    base = healthy(3, replicas=5)
    sick = [member(0), member(1), member(2, healthy=False), member(3, learner=True)]
    seen = replace(
        base,
        pods={**base.pods, "e-3": pod("e-3")},
        volumes={**base.volumes, "data-e-3": False},
        members=sick,
    )
    step = next_step(seen)
    assert step.kind == "Wait"
    assert "e-2" in step.reason


def test_no_membership_change_or_upgrade_while_a_member_is_unhealthy() -> None:
    sick = [member(0), member(1), member(2, healthy=False)]
    for replicas, version in ((5, V), (1, V), (3, "3.6.17")):
        seen = replace(healthy(3), replicas=replicas, version=version, members=sick)
        assert next_step(seen).kind == "Wait"


def test_scale_down_removes_the_highest_follower_never_the_leader() -> None:
    step = next_step(healthy(5, replicas=3, leader=4))
    assert (step.kind, step.pod, step.member) == ("RemoveMember", "e-3", 1003)
    step = next_step(healthy(5, replicas=3, leader=0))
    assert (step.kind, step.pod) == ("RemoveMember", "e-4")


def test_after_removal_the_pod_then_the_volume_of_the_former_member_go() -> None:
    seen = healthy(4, replicas=3)
    removed = replace(seen, members=(seen.members or [])[:3])
    assert (next_step(removed).kind, next_step(removed).pod) == ("DeletePod", "e-3")
    going = replace(removed, pods={**removed.pods, "e-3": pod("e-3", deleting=True)})
    assert next_step(going).kind == "Wait"
    gone = replace(removed, pods={p: v for p, v in removed.pods.items() if p != "e-3"})
    assert (next_step(gone).kind, next_step(gone).pod) == ("DeleteVolume", "e-3")


def test_a_deleted_pod_comes_back_with_its_volume() -> None:
    seen = healthy(3)
    lost = replace(
        seen,
        pods={p: v for p, v in seen.pods.items() if p != "e-1"},
        members=[member(0), member(1, healthy=False), member(2)],
    )
    assert (next_step(lost).kind, next_step(lost).pod) == ("CreatePod", "e-1")


def test_a_member_whose_volume_is_lost_is_removed_then_replaced_under_a_new_name() -> None:
    seen = healthy(3)
    lost = replace(
        seen,
        pods={p: v for p, v in seen.pods.items() if p != "e-1"},
        volumes={**seen.volumes, "data-e-1": True},  # being deleted
        members=[member(0), member(1, healthy=False), member(2)],
    )
    assert next_step(lost) == Step("RemoveMember", "member e-1 lost its volume", "e-1", 1001)
    after = replace(lost, members=[member(0), member(2)])
    step = next_step(after)
    assert (step.kind, step.pod) == ("AddMember", "e-3")  # e-1's volume is still going


def test_names_are_never_reused_while_anything_of_them_is_left() -> None:
    seen = healthy(3)
    assert next_free_name(seen) == "e-3"
    assert next_free_name(replace(seen, volumes={**seen.volumes, "data-e-7": True})) == "e-8"


def test_quorum_lost_is_degraded_with_what_is_needed_never_forced() -> None:
    seen = healthy(3)
    lost = replace(
        seen,
        pods={"e-0": replace(pod("e-0", ready=False), answers=True)},
        volumes={"data-e-0": False},
        members=[member(0, healthy=True), member(1, healthy=False), member(2, healthy=False)],
        leader=0,
    )
    step = next_step(lost)
    assert step.kind == "Degraded"
    assert "1 of 3 members answer, 2 are needed" in step.reason
    assert "restore" in step.reason
    # the member list itself cannot be read without a leader: the last known size counts
    unlisted = replace(lost, members=None, last_size=3)
    assert "1 of 3 members answer, 2 are needed" in next_step(unlisted).reason


def test_without_a_leader_pods_whose_volumes_remain_are_restarted_first() -> None:
    seen = replace(healthy(3), pods={}, members=None, leader=0)
    assert (next_step(seen).kind, next_step(seen).pod) == ("CreatePod", "e-0")


def test_without_answers_but_pods_starting_it_waits() -> None:
    seen = replace(
        healthy(3),
        pods={f"e-{i}": pod(f"e-{i}", ready=False) for i in range(3)},
        members=None,
        leader=0,
    )
    assert next_step(seen).kind == "Wait"


def test_upgrade_followers_one_at_a_time_lowest_first_then_the_leader() -> None:
    seen = replace(healthy(3, leader=0), version="3.6.17")
    step = next_step(seen)
    assert (step.kind, step.pod) == ("DeletePod", "e-1")
    one_done = replace(seen, pods={**seen.pods, "e-1": pod("e-1", version="3.6.17")})
    assert next_step(one_done).pod == "e-2"
    followers_done = replace(one_done, pods={**one_done.pods, "e-2": pod("e-2", version="3.6.17")})
    step = next_step(followers_done)
    assert (step.kind, step.pod, step.member) == ("MoveLeader", "e-1", 1001)
    moved = replace(followers_done, leader=1001)
    assert (next_step(moved).kind, next_step(moved).pod) == ("DeletePod", "e-0")
    done = replace(moved, pods={**moved.pods, "e-0": pod("e-0", version="3.6.17")})
    assert next_step(done).kind == "Done"


def test_a_single_member_is_upgraded_in_place() -> None:
    seen = replace(healthy(1), version="3.6.17")
    assert (next_step(seen).kind, next_step(seen).pod) == ("DeletePod", "e-0")


def test_a_started_learner_without_pod_restarts_with_its_volume_or_is_removed() -> None:
    base = healthy(3, replicas=5)
    seen = replace(base, members=[*(base.members or []), member(3, learner=True)])
    step = next_step(seen)
    assert step == Step("RemoveMember", "member e-3 lost its volume", "e-3", 1003)
    kept = replace(seen, volumes={**seen.volumes, "data-e-3": False})
    assert (next_step(kept).kind, next_step(kept).pod) == ("CreatePod", "e-3")


def test_members_that_answer_without_a_leader_are_electing_not_degraded() -> None:
    """Right after the leader goes, every other member still answers but none leads yet:
    that is an election, not a lost quorum (e2e saw "quorum lost: 3 of 3 members answer")."""
    seen = healthy(3)
    electing = replace(seen, leader=0, members=None, last_size=3)
    electing = replace(electing, pods={n: replace(p, answers=True) for n, p in seen.pods.items()})
    step = next_step(electing)
    assert step.kind == "Wait"
    assert "3 of 3 members answer, electing one" in step.reason
