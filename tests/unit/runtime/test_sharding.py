"""The pure core of sharding (runtime/sharding.py): rendezvous hashing's balance and moves at
10,000 keys (the figures docs/sharding.md states), the coordinator's decision, the shard's
step and the label patches. The protocol as a whole: test_sharding_model.py."""

from __future__ import annotations

import functools
from collections import Counter

import pytest

from appstack.runtime.sharding import (
    Assign,
    Drain,
    KeyState,
    ShardLabels,
    ShardRoster,
    Step,
    acknowledge_patch,
    action_patch,
    coordinate,
    owner,
    release_patch,
    root_key,
    shard_name,
    shard_step,
    weight,
)

KEYS = [root_key("example.com", "Widget", f"ns-{i % 50}", f"w-{i}") for i in range(10_000)]
SHARDS = [f"widgets-{i:02d}" for i in range(9)]
NAMES = ShardLabels("shard.example.com/widgets", "drain.shard.example.com/widgets")


@functools.cache
def _owners_of(shards: tuple[str, ...]) -> dict[str, str | None]:
    return {key: owner(key, shards) for key in KEYS}


def _owners(shards: list[str]) -> dict[str, str | None]:
    return _owners_of(tuple(shards))


def test_the_key_of_a_root_names_group_kind_namespace_and_name() -> None:
    assert root_key("apps", "Deployment", "web", "api") == "apps/Deployment/web/api"
    assert root_key("", "Namespace", "", "web") == "/Namespace//web"


def test_a_shard_is_named_after_the_lease_and_a_hash_of_the_replica_identity() -> None:
    name = shard_name("widgets", "widgets-7d9f8-abcde")
    assert name == shard_name("widgets", "widgets-7d9f8-abcde")
    assert name.startswith("widgets-shard-")
    assert len(name) == len("widgets-shard-") + 10
    assert shard_name("widgets", "widgets-7d9f8-fghij") != name
    long = shard_name("w" * 70 + ".x", "pod")
    assert len(long) == 63
    assert long.endswith(shard_name("w", "pod").removeprefix("w"))
    with pytest.raises(ValueError, match="name of its operator's Lease"):
        shard_name("", "pod")


def test_the_weight_is_a_stable_64_bit_hash_of_shard_and_key() -> None:
    # Fixed value: every process, every Python version, every machine agrees on owners.
    assert weight("a", "k") == weight("a", "k") < 2**64
    assert weight("a", "k") != weight("k", "a") != weight("ak", "")
    assert weight("shard-0", "example.com/Widget/ns/w") == 0x732F2CC9942C55C1


def test_owner_is_none_without_shards_and_does_not_depend_on_their_order() -> None:
    assert owner("k", []) is None
    assert owner("k", ["only"]) == "only"
    for key in KEYS[:200]:
        assert owner(key, SHARDS) == owner(key, list(reversed(SHARDS)))


@pytest.mark.parametrize("n", range(1, 8))
def test_adding_a_shard_moves_about_one_in_n_plus_one_keys_all_to_the_new_shard(n: int) -> None:
    before, after = _owners(SHARDS[:n]), _owners(SHARDS[: n + 1])
    moved = [key for key in KEYS if before[key] != after[key]]
    ideal = len(KEYS) / (n + 1)
    assert 0.9 * ideal <= len(moved) <= 1.15 * ideal
    assert {after[key] for key in moved} == {SHARDS[n]}


@pytest.mark.parametrize("n", range(2, 9))
def test_removing_a_shard_moves_only_its_keys(n: int) -> None:
    before = _owners(SHARDS[:n])
    leaving = SHARDS[n // 2]
    after = _owners([s for s in SHARDS[:n] if s != leaving])
    moved = {key for key in KEYS if before[key] != after[key]}
    assert moved == {key for key in KEYS if before[key] == leaving}


@pytest.mark.parametrize("n", range(1, 10))
def test_the_busiest_shard_holds_at_most_1_10_times_the_mean(n: int) -> None:
    counts = Counter(_owners(SHARDS[:n]).values())
    assert set(counts) == set(SHARDS[:n])
    assert max(counts.values()) <= 1.10 * len(KEYS) / n


def test_shard_labels_must_be_two_distinct_keys() -> None:
    with pytest.raises(ValueError, match="two distinct label keys"):
        ShardLabels("a/b", "a/b")
    with pytest.raises(ValueError, match="two distinct label keys"):
        ShardLabels("", "a/b")


def test_key_state_reads_the_labels_an_empty_shard_label_is_none() -> None:
    assert KeyState.of("k", {}, NAMES) == KeyState("k", None, False)
    assert KeyState.of("k", {NAMES.shard: ""}, NAMES) == KeyState("k", None, False)
    labels = {NAMES.shard: "a", NAMES.drain: "a", "app": "x"}
    assert KeyState.of("k", labels, NAMES) == KeyState("k", "a", True)


def _key_owned_by(shard: str, among: list[str], not_by: str | None = None) -> str:
    return next(
        key for key in KEYS if owner(key, among) == shard and (not_by is None or key != not_by)
    )


def test_unassigned_keys_and_keys_of_dead_shards_are_assigned_to_their_owner() -> None:
    ready = ["a", "b"]
    states = [
        KeyState(KEYS[0], None),
        KeyState(KEYS[1], "dead"),
        KeyState(KEYS[2], "dead", draining=True),  # drained, then its shard died
    ]
    assert coordinate(states, ready) == [Assign(s.key, owner(s.key, ready) or "") for s in states]


def test_nothing_is_assigned_without_a_ready_shard_that_stays() -> None:
    states = [KeyState(KEYS[0], None), KeyState(KEYS[1], "dead")]
    assert coordinate(states, []) == []
    assert coordinate(states, ["a"], leaving=["a"]) == []


def test_a_key_of_a_ready_shard_that_is_not_its_owner_is_drained_not_reassigned() -> None:
    key = _key_owned_by("b", ["a", "b"])
    assert coordinate([KeyState(key, "a")], ["a", "b"]) == [Drain(key, "a")]
    # asked already: nothing more until the holder acknowledges
    assert coordinate([KeyState(key, "a", draining=True)], ["a", "b"]) == []
    # its owner holds it: nothing
    assert coordinate([KeyState(key, "b")], ["a", "b"]) == []


def test_a_leaving_shard_keeps_its_keys_until_it_hands_them_back_or_expires() -> None:
    key = _key_owned_by("b", ["a", "b"])
    assert coordinate([KeyState(key, "a")], ["a", "b"], leaving=["a"]) == []
    # not assigned to the leaving shard either
    assert coordinate([KeyState(key, None)], ["a", "b"], leaving=["b"]) == [Assign(key, "a")]


def test_drains_in_flight_are_bounded_counting_those_already_asked() -> None:
    moving = [key for key in KEYS if owner(key, ["a", "b"]) == "b"][:10]
    states = [KeyState(key, "a") for key in moving]
    assert coordinate(states, ["a", "b"], max_drains=3) == [Drain(k, "a") for k in moving[:3]]
    asked = [KeyState(moving[0], "a", draining=True), *states[1:]]
    assert coordinate(asked, ["a", "b"], max_drains=3) == [Drain(k, "a") for k in moving[1:3]]
    assert coordinate(states, ["a", "b"], max_drains=0) == []
    with pytest.raises(ValueError, match="max_drains"):
        coordinate(states, ["a"], max_drains=-1)


def test_a_drain_whose_holder_is_the_owner_again_is_let_run() -> None:
    key = _key_owned_by("a", ["a"])
    assert coordinate([KeyState(key, "a", draining=True)], ["a"]) == []


def test_a_shard_skips_keys_not_labelled_to_it_acknowledges_a_drain_reconciles_the_rest() -> None:
    assert shard_step("a", {}, NAMES) is Step.SKIP
    assert shard_step("a", {NAMES.shard: "b"}, NAMES) is Step.SKIP
    assert shard_step("a", {NAMES.shard: "b", NAMES.drain: "b"}, NAMES) is Step.SKIP
    assert shard_step("a", {NAMES.shard: "a", NAMES.drain: "a"}, NAMES) is Step.ACKNOWLEDGE
    assert shard_step("a", {NAMES.shard: "a", "app": "x"}, NAMES) is Step.RECONCILE


def test_patches_carry_the_resource_version_as_precondition() -> None:
    both_removed = {
        "metadata": {"labels": {NAMES.shard: None, NAMES.drain: None}, "resourceVersion": "7"}
    }
    assert acknowledge_patch(NAMES, "7") == both_removed
    assert release_patch(NAMES, "7") == both_removed
    assert action_patch(Assign("k", "b"), NAMES, "8") == {
        "metadata": {"labels": {NAMES.shard: "b", NAMES.drain: None}, "resourceVersion": "8"}
    }
    assert action_patch(Drain("k", "a"), NAMES, "9") == {
        "metadata": {"labels": {NAMES.drain: "a"}, "resourceVersion": "9"}
    }


def test_a_page_of_a_sweep_is_bounded_by_the_drains_counted_before_it() -> None:
    moving = [key for key in KEYS if owner(key, ["a", "b"]) == "b"][:5]
    page = [KeyState(key, "a") for key in moving]  # no drain on this page
    assert coordinate(page, ["a", "b"], max_drains=3, in_flight=2) == [Drain(moving[0], "a")]
    assert coordinate(page, ["a", "b"], max_drains=3, in_flight=3) == []


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def now(self) -> float:
        return self.t


def _lease(name: str, holder: str, renew: str, *, duration: int = 15, **labels: str) -> dict:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"holderIdentity": holder, "renewTime": renew, "leaseDurationSeconds": duration},
    }


def test_the_roster_judges_expiry_on_its_own_clock_from_when_a_lease_last_changed() -> None:
    clock = _Clock()
    roster = ShardRoster(clock, "leaving.example.com/widgets")  # type: ignore[arg-type]
    # renewTime is far in the past by the shard's clock: only our clock counts
    roster.observe([_lease("s1", "pod-1", "2001-01-01T00:00:00.000000Z")])
    assert roster.ready() == {"s1"}
    assert roster.next_expiry() == 15
    clock.t += 10
    roster.observe([_lease("s1", "pod-1", "2001-01-01T00:00:00.000000Z")])  # unchanged
    assert roster.ready() == {"s1"}
    assert roster.next_expiry() == 5
    clock.t += 4.9
    roster.observe([_lease("s1", "pod-1", "2001-01-01T00:00:10.000000Z")])  # renewed
    clock.t += 10
    assert roster.ready() == {"s1"}
    clock.t += 5
    assert roster.ready() == set()  # 15 s since the renewal was seen
    assert roster.next_expiry() is None


def test_the_roster_drops_released_and_deleted_leases_and_reports_the_leaving() -> None:
    clock = _Clock()
    roster = ShardRoster(clock, "leaving")  # type: ignore[arg-type]
    roster.observe(
        [
            _lease("s1", "pod-1", "t0"),
            _lease("s2", "pod-2", "t0", leaving="true"),
            _lease("s3", "", "t0"),  # released
            {"metadata": {}, "spec": {"holderIdentity": "x"}},  # no name: not a shard
        ]
    )
    assert roster.ready() == {"s1", "s2"}
    assert roster.leaving() == {"s2"}
    roster.observe([_lease("s2", "pod-2", "t0", leaving="true")])  # s1's Lease deleted
    assert roster.ready() == {"s2"}
    clock.t += 15
    assert roster.leaving() == set()  # expired: not Ready, so not leaving either
    # a Lease seen again after it expired counts from when it is seen changed
    roster.observe([_lease("s2", "pod-2", "t1", duration=3)])
    assert roster.ready() == {"s2"}
    clock.t += 3
    assert roster.ready() == set()
