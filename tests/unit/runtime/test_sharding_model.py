"""A property-based model of the sharding protocol, driven by the runtime's own pure
functions (runtime/sharding.py: ``coordinate``, ``shard_step``, ``owner``).

Hypothesis plays every interleaving of: shards joining, renewing their Lease, crashing
(their Lease then expires), stopping gracefully (mark leaving, then hand each key, at its
turn, to its owner among the shards its roster shows staying — a roster that may be stale:
the target may be dead, leaving or gone — while the workers go on with the keys not yet
handed; stop the workers, release the Lease) and freezing past their renew deadline; each
shard's cache catching up with an object late; shards acknowledging drains (or not yet);
the coordinator sweeping (reading every object and the Leases) and applying the sweep's
patches later, each with the resourceVersion it read as precondition. Clocks are one
clock: what the real protocol measures on each replica's own clock only makes a shard give
up sooner or the coordinator wait longer (leaderelection.py's fencing argument).

Invariants:

* at most one shard may act on a key at any time: a shard may act while its process runs
  its workers, its last renewal is younger than the renew deadline (the write fence), its
  cache shows the key labelled to it and it has neither acknowledged a drain of it since
  nor begun to hand it back;
* once the system is quiet (every live shard renewing, the dead ones expired, the leaving
  ones gone, caches caught up, sweeps and acknowledgements run to the end) every key is
  labelled to its rendezvous owner among the live shards, with no drain label left.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from appstack.runtime.sharding import (
    Action,
    Assign,
    KeyState,
    ShardLabels,
    Step,
    coordinate,
    owner,
    shard_step,
)

NAMES = ShardLabels("shard.example.com/model", "drain.shard.example.com/model")
# Namespace "g": these six keys split 3/3 between two shards, 2/2/2 among three, ...
KEYS = [f"example.com/Widget/g/w-{i}" for i in range(6)]
LEASE = 6  # lease duration, in ticks
RENEW_DEADLINE = 4  # < LEASE: the fence shuts before a successor may take over
MAX_DRAINS = 2


@dataclass
class Object:
    labels: dict[str, str] = field(default_factory=dict)
    rv: int = 1


@dataclass
class Shard:
    name: str
    renewed: int  # when its last renewal started (its Lease's renewTime)
    running: bool = True  # the process is up (a crash ends it for good)
    stalled: bool = False  # its Lease calls fail (it does not renew)
    workers: bool = True  # its workers run (a graceful stop ends them first)
    leaving: bool = False  # its Lease says it is leaving
    released: bool = False  # its Lease is released
    cache: dict[str, Object] = field(default_factory=dict)  # what its informer shows
    acknowledged: dict[str, int] = field(default_factory=dict)  # key -> rv of its ack
    handing: set[str] = field(default_factory=set)  # keys it handed back or is handing


class Protocol(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.objects = {key: Object() for key in KEYS}
        self.shards: dict[str, Shard] = {}
        self.pending: list[tuple[str, int, Action]] = []  # (key, rv read, action)
        self.joined = 0

    # --- what each side sees and may do -------------------------------------------------

    def fenced(self, shard: Shard) -> bool:
        """The shard's write guard: its last renewal started a renew deadline ago or more."""
        return self.now - shard.renewed >= RENEW_DEADLINE

    def ready(self) -> list[str]:
        """The shards the coordinator sees as Ready: Lease held, renewed within its duration."""
        return [
            s.name for s in self.shards.values() if not s.released and self.now - s.renewed < LEASE
        ]

    def may_act(self, shard: Shard, key: str) -> bool:
        seen = shard.cache.get(key)
        return (
            shard.running
            and shard.workers
            and not self.fenced(shard)
            and seen is not None
            and seen.labels.get(NAMES.shard) == shard.name
            and key not in shard.acknowledged
            and key not in shard.handing
        )

    def write(self, key: str, labels: dict[str, str | None], rv: int) -> bool:
        """A merge patch of labels with a resourceVersion precondition (False: a 409)."""
        obj = self.objects[key]
        if obj.rv != rv:
            return False
        merged = dict(obj.labels)
        for name, value in labels.items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        self.objects[key] = Object(merged, obj.rv + 1)
        return True

    def live(self) -> list[Shard]:
        return [s for s in self.shards.values() if s.running and not s.released]

    # --- rules --------------------------------------------------------------------------

    @initialize(shards=st.integers(0, 3))
    def start(self, shards: int) -> None:
        """Start from a settled system of 0-3 shards (every key assigned, seen by its owner)."""
        for _ in range(shards):
            self.join()
        self.sweep()
        self.apply()
        for shard in self.live():
            for key in KEYS:
                self.see(shard, key)

    @precondition(lambda self: self.joined < 5)
    @rule()
    def join(self) -> None:
        name = f"shard-{self.joined}"
        self.joined += 1
        self.shards[name] = Shard(name, renewed=self.now)

    @rule(ticks=st.integers(1, LEASE))
    def tick(self, ticks: int) -> None:
        """Time passes; every shard whose Lease calls get through renews each tick (its retry
        period), one that finds itself past its renew deadline has lost its Lease and exits."""
        for _ in range(ticks):
            self.now += 1
            for shard in self.live():
                if self.fenced(shard):
                    shard.running = False
                elif not shard.stalled:
                    shard.renewed = self.now

    @rule(data=st.data())
    def stall(self, data: st.DataObject) -> None:
        """A shard's Lease calls stop getting through (a slow network, an API server that
        does not answer); its workers go on until its write fence shuts."""
        if live := self.live():
            data.draw(st.sampled_from(live)).stalled = True

    @rule(data=st.data())
    def recover(self, data: st.DataObject) -> None:
        if stalled := [s for s in self.live() if s.stalled]:
            data.draw(st.sampled_from(stalled)).stalled = False

    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        if live := self.live():
            data.draw(st.sampled_from(live)).running = False

    def see(self, shard: Shard, key: str) -> None:
        seen = self.objects[key]
        shard.cache[key] = Object(dict(seen.labels), seen.rv)
        acked = shard.acknowledged.get(key)
        if acked is not None and seen.rv > acked and seen.labels.get(NAMES.shard) == shard.name:
            del shard.acknowledged[key]  # assigned to it again after its acknowledgement

    @rule(data=st.data())
    def sync(self, data: st.DataObject) -> None:
        """One shard's informer catches up with every object; the others' stay behind."""
        if live := self.live():
            shard = data.draw(st.sampled_from(live))
            for key in KEYS:
                self.see(shard, key)

    @rule(data=st.data())
    def reconcile(self, data: st.DataObject) -> None:
        """A shard's workers take each key in its cache once, as shard_step decides."""
        if not (live := [s for s in self.live() if s.workers]):
            return
        self.reconcile_as(data.draw(st.sampled_from(live)))

    def reconcile_as(self, shard: Shard) -> None:
        for key, seen in sorted(shard.cache.items()):
            if self.fenced(shard) or key in shard.acknowledged or key in shard.handing:
                continue  # the write guard refuses
            step = shard_step(shard.name, seen.labels, NAMES)
            if step is Step.ACKNOWLEDGE:
                if self.write(key, {NAMES.shard: None, NAMES.drain: None}, seen.rv):
                    shard.acknowledged[key] = self.objects[key].rv
            elif step is Step.RECONCILE:
                assert self.may_act(shard, key)
                self.objects[key].rv += 1  # its own write (status), which bumps the version

    @rule(data=st.data())
    def begin_stop(self, data: st.DataObject) -> None:
        """A graceful stop: mark the Lease leaving (while it is still fresh); the workers go
        on with the keys not yet handed back."""
        able = [s for s in self.live() if not s.leaving and not self.fenced(s)]
        if able:
            data.draw(st.sampled_from(able)).leaving = True

    @rule(data=st.data())
    def hand_back(self, data: st.DataObject) -> None:
        """A stopping shard hands one of its keys (as its cache shows them) to the owner
        among the shards its roster shows staying — a roster that may be stale."""
        stopping = [s for s in self.live() if s.leaving]
        if not stopping:
            return
        shard = data.draw(st.sampled_from(stopping))
        mine = [
            k
            for k, seen in sorted(shard.cache.items())
            if seen.labels.get(NAMES.shard) == shard.name
        ]
        if not (held := [k for k in mine if k not in shard.handing]):
            return
        others = sorted(set(self.shards) - {shard.name})
        roster = data.draw(
            st.lists(st.sampled_from(others), unique=True) if others else st.just([])
        )
        self.hand_key(shard, data.draw(st.sampled_from(held)), roster)

    def hand_key(self, shard: Shard, key: str, stayers: list[str]) -> None:
        """One key at its turn: acted on here no more (a reconcile of it in flight ends
        first: reconciles are atomic here), then labelled to its owner among ``stayers``
        (none: unlabelled) on the version the cache shows — a 409 reads it again and hands
        it if it is still this shard's."""
        shard.handing.add(key)
        target = owner(key, stayers)
        for rv in (shard.cache[key].rv, self.objects[key].rv):
            if self.fenced(shard) or self.objects[key].labels.get(NAMES.shard) != shard.name:
                return  # the fence refuses; or, read again, no longer this shard's
            if self.write(key, {NAMES.shard: target, NAMES.drain: None}, rv):
                return

    def hand_back_as(self, shard: Shard) -> None:
        """Every key at once, to the owners among the Ready shards that stay."""
        stayers = [n for n in self.ready() if n != shard.name and not self.shards[n].leaving]
        for key in KEYS:
            if self.objects[key].labels.get(NAMES.shard) == shard.name:
                self.see(shard, key)
                self.hand_key(shard, key, stayers)

    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        """A stopping shard's workers stop and it releases its Lease."""
        if stopping := [s for s in self.live() if s.leaving]:
            shard = data.draw(st.sampled_from(stopping))
            shard.workers, shard.released = False, True

    @rule()
    def sweep(self) -> None:
        """The coordinator reads every object and the Leases; its patches go out later."""
        states = [KeyState.of(key, self.objects[key].labels, NAMES) for key in KEYS]
        leaving = [s.name for s in self.shards.values() if s.leaving]
        for action in coordinate(states, self.ready(), leaving, MAX_DRAINS):
            self.pending.append((action.key, self.objects[action.key].rv, action))

    @rule()
    def apply(self) -> None:
        """The patches of the last sweeps go out (each 409s if its object changed since)."""
        while self.pending:
            self.apply_action(*self.pending.pop(0))

    def apply_action(self, key: str, rv: int, action: Action) -> None:
        if isinstance(action, Assign):
            self.write(key, {NAMES.shard: action.shard, NAMES.drain: None}, rv)
        else:
            self.write(key, {NAMES.drain: action.shard}, rv)

    # --- invariants ---------------------------------------------------------------------

    @invariant()
    def at_most_one_shard_may_act_on_a_key(self) -> None:
        for key in KEYS:
            acting = [s.name for s in self.shards.values() if self.may_act(s, key)]
            assert len(acting) <= 1, f"{key} acted on by {acting} at {self.now}"

    def teardown(self) -> None:
        """Quiet the system, then every key is with its owner among the live shards."""
        for shard in self.live():
            if shard.leaving:
                shard.released = (
                    True  # a stop runs to its end (its keys expire or were handed back)
                )
            elif self.fenced(shard):
                shard.running = False  # lost its Lease: the process exits
        self.now += LEASE  # the dead expire; the live renew right after
        for shard in self.live():
            shard.renewed, shard.stalled = self.now, False
        stayers = [s.name for s in self.live()]
        self.pending.clear()  # in flight at the quiet point: 409 or done, either is fine
        for _ in range(2 * len(KEYS) + 2):  # each round ends a drain or more; fewer suffice
            before = {key: obj.rv for key, obj in self.objects.items()}
            for shard in self.live():
                for key in KEYS:
                    self.see(shard, key)
                    seen = self.objects[key]
                    if shard_step(shard.name, seen.labels, NAMES) is Step.ACKNOWLEDGE:
                        self.write(key, {NAMES.shard: None, NAMES.drain: None}, seen.rv)
                        shard.acknowledged[key] = self.objects[key].rv
            self.at_most_one_shard_may_act_on_a_key()
            self.sweep()
            self.apply()
            self.at_most_one_shard_may_act_on_a_key()
            if before == {key: obj.rv for key, obj in self.objects.items()}:
                break
        for key in KEYS:
            labels = self.objects[key].labels
            if stayers:
                assert labels.get(NAMES.shard) == owner(key, stayers), (key, labels, stayers)
                assert NAMES.drain not in labels, (key, labels)


Protocol.TestCase.settings = settings(
    # 400 runs of 40 steps, ~8 s; SHARDING_MODEL_EXAMPLES=5000 for a deeper search
    max_examples=int(os.environ.get("SHARDING_MODEL_EXAMPLES", "400")),
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestProtocol = Protocol.TestCase


# --- the dangerous moments, step by step (the same machine, no search) --------------------


def _settled(shards: int) -> Protocol:
    machine = Protocol()
    machine.start(shards)
    return machine


def _acting(machine: Protocol, key: str) -> list[str]:
    return [s.name for s in machine.shards.values() if machine.may_act(s, key)]


def test_scale_out_moves_a_key_only_after_its_holder_acknowledged_the_drain() -> None:
    machine = _settled(1)
    assert {machine.objects[key].labels[NAMES.shard] for key in KEYS} == {"shard-0"}
    machine.join()
    old, new = machine.shards["shard-0"], machine.shards["shard-1"]
    moving = [key for key in KEYS if owner(key, ["shard-0", "shard-1"]) == "shard-1"]
    assert len(moving) == 3  # KEYS split 3/3
    for _ in range(3):  # sweeps while nobody acknowledges: drains asked, nothing moves
        machine.sweep()
        machine.apply()
    for key in KEYS:
        labels = machine.objects[key].labels
        assert labels[NAMES.shard] == "shard-0"
        assert (NAMES.drain in labels) == (key in moving[:MAX_DRAINS])
    machine.reconcile_as(old)  # from its stale cache: 409, no acknowledgement yet
    assert old.acknowledged == {}
    for key in KEYS:
        machine.see(old, key)
    machine.reconcile_as(old)  # acknowledges the drains it sees
    assert set(old.acknowledged) == set(moving[:MAX_DRAINS])
    machine.sweep()
    machine.apply()
    for key in KEYS:
        machine.see(new, key)  # the new holder sees its keys; the old one's cache lags
    for key in moving[:MAX_DRAINS]:
        assert machine.objects[key].labels == {NAMES.shard: "shard-1"}
        assert _acting(machine, key) == ["shard-1"]  # not shard-0: it acknowledged
    assert _acting(machine, moving[MAX_DRAINS]) == ["shard-0"]  # its drain is next


def test_a_stalled_shard_is_fenced_before_the_coordinator_reassigns_its_keys() -> None:
    machine = _settled(2)
    stalled = machine.shards["shard-0"]
    held = [key for key in KEYS if machine.objects[key].labels[NAMES.shard] == "shard-0"]
    stalled.stalled = True
    for _ in range(LEASE):
        assert "shard-0" in machine.ready() or machine.fenced(stalled)
        machine.tick(1)
        machine.sweep()
        machine.apply()
        for key in KEYS:
            machine.see(machine.shards["shard-1"], key)
            assert len(_acting(machine, key)) <= 1
    assert "shard-0" not in machine.ready()
    assert not stalled.running  # found itself past its renew deadline: exited
    assert all(machine.objects[key].labels[NAMES.shard] == "shard-1" for key in held)


def test_a_graceful_stop_hands_back_only_its_own_keys() -> None:
    machine = _settled(3)
    before = {key: machine.objects[key].labels[NAMES.shard] for key in KEYS}
    leaving = machine.shards["shard-1"]
    leaving.leaving = True
    machine.sweep()
    assert machine.pending == []  # a leaving shard's keys are left to it
    mine = [key for key in KEYS if before[key] == "shard-1"]
    assert all(_acting(machine, key) == ["shard-1"] for key in mine)  # until their turn
    machine.hand_back_as(leaving)  # each straight to its owner among the staying shards
    assert all(_acting(machine, key) == [] for key in mine)  # until the new owner sees it
    for shard in machine.live():
        for key in KEYS:
            machine.see(shard, key)
    assert all(len(_acting(machine, key)) == 1 for key in KEYS)
    leaving.workers, leaving.released = False, True
    machine.sweep()
    assert machine.pending == []
    after = {key: machine.objects[key].labels[NAMES.shard] for key in KEYS}
    assert {key for key in KEYS if before[key] != after[key]} == {
        key for key in KEYS if before[key] == "shard-1"
    }
    assert all(after[key] == owner(key, ["shard-0", "shard-2"]) for key in KEYS)
