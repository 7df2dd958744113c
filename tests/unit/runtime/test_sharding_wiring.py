"""The runtime's wiring of sharding (runtime/sharding.py: Shard, Coordinator; the manager's
sharded mode) against the in-memory API server: the coordinator assigns, drains only after
nothing else, reassigns a gone shard's keys and deletes its Lease; a shard's write fence
refuses a write for a key it let go of (counted) and lets the coordinator's through on the
election Lease's fence; a sharded manager reconciles only its keys, acknowledges a drain
without reconciling, and hands its keys back on a graceful stop; the coordinator's gauges
say how many keys wait unassigned and since when, and the drains in flight; a shard whose
Lease may have expired starts no reconcile. The e2e on the
local cluster, with processes scaled and killed: tests/e2e/test_sharding.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from dataclasses import replace
from typing import Any

import pytest

from appstack.runtime import CONFIG_MAP, LEASE, NAMESPACE, SECRET, Client, Metrics
from appstack.runtime.apirequest import ApiRequest
from appstack.runtime.builder import Builder
from appstack.runtime.cache import Cache
from appstack.runtime.clock import FakeClock
from appstack.runtime.controller import Request, Result
from appstack.runtime.fake import FakeApiServer
from appstack.runtime.leaderelection import LeaderElectionConfig, NotLeader
from appstack.runtime.manager import Manager
from appstack.runtime.sharding import (
    _FENCE,
    CURRENT_KEY,
    Coordinator,
    KeyFenced,
    Shard,
    ShardingConfig,
    ShardLabels,
    ShardMetrics,
    auto_drains,
    owner,
    root_key,
    shard_child_labels,
    shard_name,
)
from appstack_testbed.waiting import eventually

NS = "ns"
ONLY_NS = {"namespace": NS}
LABELS = ShardLabels("shard.example.com/op", "drain.shard.example.com/op")
CONFIG = ShardingConfig(
    labels=LABELS,
    lease_label="example.com/shard-of",
    leaving_label="example.com/shard-leaving",
    primaries=((CONFIG_MAP, "app=yes"),),
    max_drains=3,
    interval=0.02,
)


async def _client() -> Client:
    client = Client(FakeApiServer(), field_manager="test")
    await client.create(NAMESPACE, {"metadata": {"name": NS}})
    return client


def _cm(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta = {"name": name, "namespace": NS, "labels": {"app": "yes", **(labels or {})}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def _lease(name: str, holder: str = "someone") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": NS, "labels": {CONFIG.lease_label: "op"}},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 3, "renewTime": "t0"},
    }


def _key(name: str) -> str:
    return root_key("", "ConfigMap", NS, name)


async def _labels(client: Client) -> dict[str, dict[str, str]]:
    items, _ = await client.list(CONFIG_MAP, NS)
    return {o["metadata"]["name"]: o["metadata"].get("labels") or {} for o in items}


def _coordinator(client: Client, clock: FakeClock, config: ShardingConfig = CONFIG) -> Coordinator:
    return Coordinator(
        client,
        config,
        lease_namespace=NS,
        lease_value="op",
        namespaces=[NS],
        metrics=ShardMetrics(Metrics()),
        clock=clock,
        default_duration=3.0,
    )


async def test_the_coordinator_assigns_drains_and_reassigns_a_gone_shards_keys() -> None:
    client, clock = await _client(), FakeClock()
    for name in ("s1", "s2"):
        await client.create(LEASE, _lease(name))
    names = [f"c{i}" for i in range(30)]
    for name in names:
        await client.create(CONFIG_MAP, _cm(name))
    await client.create(
        CONFIG_MAP, {**_cm("other"), "metadata": {"name": "other", "namespace": NS}}
    )
    coordinator = _coordinator(client, clock)

    ready, leaving = await coordinator.look()
    assert ready == {"s1", "s2"}
    await coordinator.sweep(ready, leaving, unassigned_only=True)
    labels = await _labels(client)
    assert all(labels[n][LABELS.shard] == owner(_key(n), ["s1", "s2"]) for n in names)
    assert LABELS.shard not in labels["other"]  # not chosen by the primary's selector
    assert coordinator.metrics.unassigned.labels(str(CONFIG_MAP))._value.get() == 0

    await client.create(LEASE, _lease("s3"))  # a new shard: its keys drained, 3 at a time
    ready, leaving = await coordinator.look()
    await coordinator.sweep(ready, leaving)
    labels = await _labels(client)
    drained = [n for n in names if LABELS.drain in labels[n]]
    assert len(drained) == 3
    assert all(labels[n][LABELS.drain] == labels[n][LABELS.shard] for n in drained)
    assert all(owner(_key(n), ["s1", "s2", "s3"]) == "s3" for n in drained)
    assert not any(labels[n].get(LABELS.shard) == "s3" for n in names)  # none before the ack
    assert coordinator._pending  # more keys wait to move

    for name in drained:  # their holders acknowledge: then, and only then, s3 gets them
        meta = {"labels": {LABELS.shard: None, LABELS.drain: None}}
        await client.patch(CONFIG_MAP, name, {"metadata": meta}, namespace=NS)
    await coordinator.sweep(ready, leaving, unassigned_only=True)
    labels = await _labels(client)
    assert all(labels[n][LABELS.shard] == "s3" for n in drained)

    await _then_shards_go(client, clock, coordinator, names)


async def _then_shards_go(
    client: Client, clock: FakeClock, coordinator: Coordinator, names: list[str]
) -> None:
    s1 = await client.get(LEASE, "s1", NS)  # s1 released its Lease: its keys go at once
    s1["spec"]["holderIdentity"] = ""
    await client.update(LEASE, s1)
    ready, leaving = await coordinator.look()
    assert ready == {"s2", "s3"}
    await coordinator.sweep(ready, leaving)
    labels = await _labels(client)
    assert not any(labels[n].get(LABELS.shard) == "s1" for n in names)
    leases, _ = await client.list(LEASE, NS)
    assert sorted(lease["metadata"]["name"] for lease in leases) == ["s2", "s3"]

    await clock.advance(2.9)  # s2 renews, s3 does not: expired on the coordinator's clock
    s2 = await client.get(LEASE, "s2", NS)
    s2["spec"]["renewTime"] = "t1"
    await client.update(LEASE, s2)
    await coordinator.look()
    await clock.advance(0.2)
    ready, leaving = await coordinator.look()
    assert ready == {"s2"}
    await coordinator.sweep(ready, leaving)
    labels = await _labels(client)
    assert all(labels[n][LABELS.shard] == "s2" for n in names)  # drains asked of s2 run on
    handovers = coordinator.metrics.handovers
    assert handovers.labels(str(CONFIG_MAP), "drain")._value.get() >= 3
    assert handovers.labels(str(CONFIG_MAP), "expired")._value.get() > 0


def _gauges(coordinator: Coordinator) -> tuple[float, float, float]:
    """(unassigned keys, the oldest one's age, drains in flight) of the ConfigMaps."""
    metrics, resource = coordinator.metrics, str(CONFIG_MAP)
    return (
        metrics.unassigned.labels(resource)._value.get(),
        metrics.oldest_unassigned.labels(resource)._value.get(),
        metrics.drains.labels(resource)._value.get(),
    )


class _Counting(FakeApiServer):
    """The in-memory API server, counting the requests other than watches by method and
    resource (the last part of the path before a name); ``slow_leaving``: a watch's events
    of objects leaving its selector are held back (a watch late to show an assignment)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str]] = []
        self.slow_leaving = False

    async def _stream(self, *args: Any) -> AsyncGenerator[bytes, None]:
        async for line in super()._stream(*args):
            if self.slow_leaving and json.loads(line)["type"] == "DELETED":
                continue  # never comes
            yield line

    async def send(self, request: ApiRequest, timeouts: Any, guard: Any = None) -> Any:
        if not request.stream and "configmaps" in request.path:
            self.sent.append((request.method, request.path.rsplit("configmaps", 1)[1]))
        return await super().send(request, timeouts, guard)


async def test_the_coordinator_assigns_what_its_watch_brings_at_once_and_lists_nothing() -> None:
    api = _Counting()
    client, clock = Client(api, field_manager="test"), FakeClock()
    await client.create(NAMESPACE, {"metadata": {"name": NS}})
    await client.create(LEASE, _lease("s1"))
    coordinator = _coordinator(client, clock, replace(CONFIG, interval=5.0))
    running = asyncio.create_task(coordinator.run())
    try:
        await eventually(
            lambda: (
                bool(coordinator._unassigned)
                and all(i.has_synced() for i in coordinator._unassigned.values())
            ),
            timeout=5,
            what="the watch of unassigned ConfigMaps listed",
        )
        await asyncio.sleep(0.05)  # the first pass done
        api.sent.clear()
        names = [f"c{i}" for i in range(20)]
        for name in names:  # the clock does not move: no look is due, the watch wakes it
            await client.create(CONFIG_MAP, _cm(name))

        def labelled() -> bool:  # read in the server's memory: no request
            return all(LABELS.shard in o["metadata"]["labels"] for o in api.objects(CONFIG_MAP))

        await _until(labelled)  # the clock has not moved
        assert all(o["metadata"]["labels"][LABELS.shard] == "s1" for o in api.objects(CONFIG_MAP))
        coordinator_calls = [c for c in api.sent if c[0] != "POST"]
        # one patch each: none repeated on the informer's older copy; no LIST, no GET
        assert sorted(coordinator_calls) == sorted(("PATCH", f"/{n}") for n in names)
        assert not coordinator._pending

        api.sent.clear()  # the watch lags: a key assigned is not assigned again on its copy
        api.slow_leaving = True
        await client.create(CONFIG_MAP, _cm("late-1"))
        await _until(labelled)
        await client.create(CONFIG_MAP, _cm("late-2"))
        await _until(labelled)
        assert ("PATCH", "/late-1") in api.sent
        assert [c for c in api.sent if c[0] == "PATCH"] == [
            ("PATCH", "/late-1"),
            ("PATCH", "/late-2"),
        ]
        assert not coordinator._pending
        api.slow_leaving = False

        api.sent.clear()  # a drain acknowledged (both labels removed): assigned at once too
        meta = {"labels": {LABELS.shard: None}}
        await client.patch(CONFIG_MAP, "c3", {"metadata": meta}, namespace=NS)
        await _until(labelled)
        assert api.sent == [("PATCH", "/c3"), ("PATCH", "/c3")]  # the test's, the coordinator's
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    assert coordinator._unassigned == {}  # the watch stopped with it
    assert coordinator._watching == []


async def test_the_coordinator_reports_how_long_keys_wait_unassigned() -> None:
    client, clock = await _client(), FakeClock()
    coordinator = _coordinator(client, clock)
    for name in ("c0", "c1"):
        await client.create(CONFIG_MAP, _cm(name))
    ready, leaving = await coordinator.look()  # no shard: nothing can be assigned
    await coordinator.sweep(ready, leaving, unassigned_only=True)
    assert _gauges(coordinator) == (2, 0, 0)
    await clock.advance(5)
    await client.create(CONFIG_MAP, _cm("c2"))
    await client.create(CONFIG_MAP, _cm("gone", {LABELS.shard: "dead"}))  # a shard gone
    await coordinator.sweep(ready, leaving, unassigned_only=True)
    assert _gauges(coordinator) == (3, 5, 0)  # the oldest since the first look
    await clock.advance(1)
    await coordinator.sweep(ready, leaving)  # the full sweep sees the dead shard's key too
    assert _gauges(coordinator) == (4, 6, 0)

    await client.create(LEASE, _lease("s1"))
    ready, leaving = await coordinator.look()
    await clock.advance(1)
    await coordinator.sweep(ready, leaving, unassigned_only=True)
    # the unlabelled keys assigned; the look lists no labelled one: kept from the sweep
    assert _gauges(coordinator) == (1, 1, 0)
    await coordinator.sweep(ready, leaving)
    assert _gauges(coordinator) == (0, 0, 0)
    assert all(labels[LABELS.shard] == "s1" for labels in (await _labels(client)).values())
    # the keys per shard as the sweep left them: the one it assigned counted
    assert coordinator.metrics.keys.labels(str(CONFIG_MAP), "s1")._value.get() == 4


async def test_the_coordinator_reports_the_drains_in_flight() -> None:
    client, clock = await _client(), FakeClock()
    await client.create(LEASE, _lease("s1"))
    names = [f"c{i}" for i in range(30)]
    for name in names:
        await client.create(CONFIG_MAP, _cm(name))
    coordinator = _coordinator(client, clock)
    ready, leaving = await coordinator.look()
    await coordinator.sweep(ready, leaving)
    await client.create(LEASE, _lease("s2"))  # a new shard: drains, CONFIG.max_drains at a time
    ready, leaving = await coordinator.look()
    await coordinator.sweep(ready, leaving)
    assert _gauges(coordinator) == (0, 0, CONFIG.max_drains)
    drained = [n for n, labels in (await _labels(client)).items() if LABELS.drain in labels]
    meta = {"labels": {LABELS.shard: None, LABELS.drain: None}}
    await client.patch(CONFIG_MAP, drained[0], {"metadata": meta}, namespace=NS)  # acknowledged
    await coordinator.sweep(ready, leaving, unassigned_only=True)
    assert _gauges(coordinator) == (0, 0, CONFIG.max_drains - 1)  # and the key assigned
    assert (await _labels(client))[drained[0]][LABELS.shard] == "s2"
    s2 = await client.get(LEASE, "s2", NS)  # the new shard goes: the drains are let run
    s2["spec"]["holderIdentity"] = ""
    await client.update(LEASE, s2)
    ready, leaving = await coordinator.look()
    await coordinator.sweep(ready, leaving)
    assert _gauges(coordinator) == (0, 0, CONFIG.max_drains - 1)
    for name in drained[1:]:
        await client.patch(CONFIG_MAP, name, {"metadata": meta}, namespace=NS)
    await coordinator.sweep(ready, leaving, unassigned_only=True)
    assert _gauges(coordinator) == (0, 0, 0)
    assert all(labels[LABELS.shard] == "s1" for labels in (await _labels(client)).values())


async def test_the_fence_refuses_a_write_for_a_key_the_shard_let_go() -> None:
    client = await _client()
    election = LeaderElectionConfig("op", NS, "me", 3.0, 2.0, 0.5)
    cache = Cache(client, [NS])
    shard = Shard(client, client, cache, config=CONFIG, election=election, metrics=Metrics())
    client.write_guard = shard.guard
    await shard.elector.acquire()
    lease = await client.get(LEASE, shard.name, NS)
    assert lease["metadata"]["labels"] == {CONFIG.lease_label: "op"}
    await client.create(CONFIG_MAP, _cm("mine", {LABELS.shard: shard.name}))
    await client.create(CONFIG_MAP, _cm("theirs", {LABELS.shard: "another"}))
    cache.informers(CONFIG_MAP)
    await cache.start()
    await cache.wait_synced()
    assert cache.keys(CONFIG_MAP) == [f"{NS}/mine"]  # selected server-side

    write = {"metadata": {"annotations": {"a": "b"}}}
    token = CURRENT_KEY.set(_key("mine"))
    await client.patch(CONFIG_MAP, "mine", write, namespace=NS)
    shard.released.add(_key("mine"))  # a drain acknowledged
    with pytest.raises(KeyFenced):
        await client.patch(CONFIG_MAP, "mine", write, namespace=NS)
    CURRENT_KEY.reset(token)
    token = CURRENT_KEY.set(_key("theirs"))  # not in this shard's cache
    with pytest.raises(KeyFenced):
        await client.patch(CONFIG_MAP, "theirs", write, namespace=NS)
    CURRENT_KEY.reset(token)
    assert shard.metrics.refused._value.get() == 2
    await client.patch(CONFIG_MAP, "theirs", write, namespace=NS)  # outside a reconcile

    def refuse() -> float:
        raise NotLeader("not the coordinator")

    token = _FENCE.set(refuse)  # the coordinator's writes: the election Lease's fence
    with pytest.raises(NotLeader):
        await client.patch(CONFIG_MAP, "mine", write, namespace=NS)
    _FENCE.reset(token)
    await cache.stop()


async def test_a_shard_whose_lease_may_have_expired_starts_no_reconcile() -> None:
    """A shard frozen past its Lease (SIGSTOP) and continued runs what its queue held before
    it learns the Lease is lost — from its stale cache, keys already another shard's. It
    starts none of them (bench/sharding_faults.py saw them start; their writes refused)."""
    client = await _client()
    election = LeaderElectionConfig("op", NS, "me", 3.0, 2.0, 0.5)
    cache = Cache(client, [NS])
    shard = Shard(client, client, cache, config=CONFIG, election=election, metrics=Metrics())
    await shard.elector.acquire()
    await client.create(CONFIG_MAP, _cm("mine", {LABELS.shard: shard.name}))
    cache.informers(CONFIG_MAP)
    await cache.start()
    await cache.wait_synced()
    ran: list[str] = []

    class Inner:
        async def reconcile(self, request: Request) -> Result | None:
            ran.append(request.name)
            return None

    wrapped = shard.wrap(Inner(), CONFIG_MAP)  # type: ignore[arg-type]
    await wrapped.reconcile(Request(NS, "mine"))
    assert ran == ["mine"]
    shard.elector._renewed_at -= election.renew_deadline + 0.1  # frozen past the deadline
    await wrapped.reconcile(Request(NS, "mine"))
    assert ran == ["mine"]
    await cache.stop()


async def test_a_sharded_manager_reconciles_its_keys_acknowledges_and_hands_back() -> None:
    admin = await _client()  # the test's writes: not fenced
    client = Client(admin.transport, field_manager="op")
    election = LeaderElectionConfig("op", NS, "me", 3.0, 2.0, 0.5)
    manager = Manager(client, namespaces=[NS], leader_election=election, sharding=CONFIG)
    seen: list[str] = []

    class Record:
        async def reconcile(self, request: Request) -> Result | None:
            seen.append(request.name)
            note = {"metadata": {"annotations": {"seen": "yes"}}}
            await client.patch(CONFIG_MAP, request.name, note, namespace=NS)
            return None

    Builder(manager, "record").for_(CONFIG_MAP).complete(Record())
    for name in ("a", "b"):
        await admin.create(CONFIG_MAP, _cm(name))
    running = asyncio.create_task(manager.run())
    shard = manager.shard
    assert shard is not None

    async def until(check: Any) -> None:
        for _ in range(500):
            if await check():
                return
            await asyncio.sleep(0.01)
        raise AssertionError("not in time")

    async def reconciled() -> bool:
        labels = await _labels(client)
        return set(seen) >= {"a", "b"} and all(
            labels[n].get(LABELS.shard) == shard.name for n in ("a", "b")
        )

    await until(reconciled)
    count = seen.count("a")
    await client.patch(
        CONFIG_MAP, "a", {"metadata": {"labels": {LABELS.drain: shard.name}}}, namespace=NS
    )

    async def acknowledged() -> bool:  # and assigned again by the coordinator (one shard)
        return _key("a") not in shard.released and seen.count("a") > count

    await until(acknowledged)
    manager.stop()
    await running
    labels = await _labels(client)
    assert all(LABELS.shard not in labels[n] for n in ("a", "b"))  # handed back
    lease = await client.get(LEASE, shard.name, NS)
    assert not lease["spec"]["holderIdentity"]  # released after
    assert lease["metadata"]["labels"][CONFIG.leaving_label] == "true"


async def test_a_shard_stopping_takes_no_coordinator_role_while_it_drains() -> None:
    """A replica that does not coordinate, asked to stop while a reconcile is in flight,
    campaigns no more: the coordinator's election Lease, expiring during its drain, is
    not taken by it (it would coordinate, and run the leader-only tasks, for the moment its
    shutdown lasts)."""
    admin = await _client()
    api = admin.transport
    assert isinstance(api, FakeApiServer)
    client = Client(api, field_manager="op")
    election = LeaderElectionConfig("op", NS, "me", 1.0, 0.6, 0.05)
    # the coordinator is another replica (its key already assigned to this one's shard),
    # which stops renewing when this one is asked to stop
    lease = _lease("op", holder="other")
    lease["metadata"] = {"name": "op", "namespace": NS}
    lease["spec"]["leaseDurationSeconds"] = 1
    await admin.create(LEASE, lease)
    await admin.create(CONFIG_MAP, _cm("a", {LABELS.shard: shard_name("op", "me")}))
    gone = asyncio.Event()

    async def other_renews() -> None:
        beat = 0
        while not gone.is_set():
            beat += 1
            renewed = {"spec": {"renewTime": f"2026-12-03T00:00:{beat % 60:02d}.000000Z"}}
            await admin.patch(LEASE, "op", renewed, namespace=NS)
            await asyncio.sleep(0.1)

    manager = Manager(client, namespaces=[NS], leader_election=election, sharding=CONFIG)
    started, release = asyncio.Event(), asyncio.Event()

    class Slow:
        async def reconcile(self, request: Request) -> Result | None:
            started.set()
            await release.wait()
            return None

    Builder(manager, "slow").for_(CONFIG_MAP).complete(Slow())
    renewing = asyncio.create_task(other_renews())
    running = asyncio.create_task(manager.run())
    await asyncio.wait_for(started.wait(), 10)
    gone.set()
    await renewing
    manager.stop()
    await asyncio.sleep(1.5)  # the election Lease, unrenewed, has expired meanwhile
    release.set()
    await asyncio.wait_for(running, 10)
    election_path = f"/namespaces/{NS}/leases/op"
    taken = [r for r in api.requests if r.method == "PUT" and r.path.endswith(election_path)]
    assert taken == []
    assert (await admin.get(LEASE, "op", NS))["spec"]["holderIdentity"] == "other"


async def _one_shard(
    api: FakeApiServer, names: list[str]
) -> tuple[Client, Manager, asyncio.Task[None]]:
    """A sharded manager of replica ``me`` alone on ``api`` (reconciling nothing), running,
    its shard joined with the ConfigMaps ``names`` labelled to it in its cache; and the
    admin client that made them."""
    admin = Client(api, field_manager="test")
    await admin.create(NAMESPACE, {"metadata": {"name": NS}})
    client = Client(api, field_manager="op")
    election = LeaderElectionConfig("op", NS, "me", 3.0, 2.0, 0.5)
    manager = Manager(client, namespaces=[NS], leader_election=election, sharding=CONFIG)
    mine = shard_name("op", "me")
    for name in names:
        await admin.create(CONFIG_MAP, _cm(name, {LABELS.shard: mine}))

    class Nothing:
        async def reconcile(self, request: Request) -> Result | None:
            return None

    Builder(manager, "nothing").for_(CONFIG_MAP).complete(Nothing())
    running = asyncio.create_task(manager.run())
    for _ in range(1000):  # the shard joined, its cache of the keys filled
        shard = manager.shard
        cached = len(shard.cache.objects(CONFIG_MAP)) if shard else 0
        if shard and shard.elector.remaining() > 0 and cached == len(names):
            break
        await asyncio.sleep(0.01)
    return admin, manager, running


async def test_a_stopping_shard_hands_its_keys_back_several_at_a_time() -> None:
    """The hand-back's label patches run side by side (a shard of thousands of keys is
    done within a pod's grace period, not one round trip after another), and every key
    is handed back."""

    class Slow(FakeApiServer):
        stopping, in_flight, most = False, 0, 0

        async def send(self, request: Any, timeouts: Any, guard: Any = None) -> Any:
            if not (self.stopping and request.method == "PATCH" and "/configmaps/" in request.path):
                return await super().send(request, timeouts, guard)
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            try:
                await asyncio.sleep(0.01)
                return await super().send(request, timeouts, guard)
            finally:
                self.in_flight -= 1

    api = Slow()
    names = [f"k{i}" for i in range(40)]
    admin, manager, running = await _one_shard(api, names)
    api.stopping = True
    manager.stop()
    await asyncio.wait_for(running, 10)
    labels = await _labels(admin)
    assert all(LABELS.shard not in labels[name] for name in names)
    assert api.most > 1


async def _until(check: Any, seconds: float = 10) -> None:
    for _ in range(int(seconds / 0.01)):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not in {seconds} s")


class _SlowLabelPatches(FakeApiServer):
    """The in-memory API server, each shard-label patch 0.1 s slow once ``stopping``."""

    def __init__(self) -> None:
        super().__init__()
        self.stopping = False
        self.label_patches: list[dict[str, Any]] = []

    async def send(self, request: Any, timeouts: Any, guard: Any = None) -> Any:
        body = json.loads(request.body) if request.body else {}
        labels = (body.get("metadata") or {}).get("labels") or {}
        if self.stopping and request.method == "PATCH" and LABELS.shard in labels:
            self.label_patches.append(labels)
            await asyncio.sleep(0.1)
        return await super().send(request, timeouts, guard)


def _recording(
    api: FakeApiServer,
    identity: str,
    runs: list[tuple[str, str, float, float]],
    hold: Any,
) -> Manager:
    """A sharded manager of replica ``identity`` whose reconciles take 10 ms (or wait for
    the event ``hold(name)`` gives) and are recorded in ``runs``."""
    client = Client(api, field_manager="op")
    election = LeaderElectionConfig("op", NS, identity, 3.0, 2.0, 0.2)
    manager = Manager(client, namespaces=[NS], leader_election=election, sharding=CONFIG)

    class Record:
        async def reconcile(self, request: Request) -> Result | None:
            start = asyncio.get_running_loop().time()
            held = hold(request.name)
            await (held.wait() if held is not None else asyncio.sleep(0.01))
            runs.append((identity, request.name, start, asyncio.get_running_loop().time()))
            return None

    Builder(manager, "record").for_(CONFIG_MAP).complete(Record())
    return manager


async def test_a_stopping_shard_hands_each_key_to_its_new_owner_while_reconciling_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A graceful stop at many keys: each key goes straight to its owner among the staying
    shards (one patch, never left unlabelled for the coordinator), one at a time here; the
    keys not yet handed are still reconciled by the stopping shard (changed during the
    hand-back, each is reconciled by one shard or the other, never by both at once); a key
    whose reconcile is in flight is handed only once that reconcile has ended."""
    monkeypatch.setattr("appstack.runtime.sharding.PATCHES_AT_ONCE", 1)

    api = _SlowLabelPatches()
    admin = Client(api, field_manager="test")
    await admin.create(NAMESPACE, {"metadata": {"name": NS}})
    me, other = shard_name("op", "me"), shard_name("op", "other")
    names = [f"k{i:02d}" for i in range(24)]
    mine = [n for n in names if owner(_key(n), [me, other]) == me]
    for name in names:
        await admin.create(CONFIG_MAP, _cm(name, {LABELS.shard: owner(_key(name), [me, other])}))
    runs: list[tuple[str, str, float, float]] = []  # (shard, key, start, end)
    in_flight, finish = asyncio.Event(), asyncio.Event()
    slow_key = mine[0]
    staying = _recording(api, "other", runs, lambda _: None)
    stopping = _recording(
        api, "me", runs, lambda name: finish if name == slow_key and in_flight.is_set() else None
    )
    running = [asyncio.create_task(m.run()) for m in (staying, stopping)]

    def joined() -> bool:  # both joined, each with its keys reconciled once, and the
        done = {(who, key) for who, key, *_ in runs}  # stopping one's roster sees the other
        coordinator = stopping._coordinator
        return all((("me" if n in mine else "other"), n) in done for n in names) and bool(
            coordinator and other in coordinator.roster.ready()
        )

    await _until(joined)
    in_flight.set()
    await admin.patch(CONFIG_MAP, slow_key, {"data": {"v": "1"}}, namespace=NS)
    await _until(lambda: bool(stopping.shard and _key(slow_key) in stopping.shard._reconciling))
    api.stopping = True
    stopped_at = asyncio.get_running_loop().time()
    stopping.stop()
    await asyncio.sleep(0.05)
    for name in names:  # every key changes while the stopping shard hands its keys back
        await admin.patch(CONFIG_MAP, name, {"data": {"v": "2"}}, namespace=NS)
    await asyncio.sleep(0.3)
    labels = await _labels(admin)
    assert labels[slow_key][LABELS.shard] == me  # its reconcile is in flight: not handed yet
    finish.set()
    await asyncio.wait_for(running[1], 20)
    labels = await _labels(admin)
    assert all(labels[n].get(LABELS.shard) == other for n in names)
    assert all(LABELS.drain not in labels[n] for n in names)
    # straight to the new owner: no hand-back patch leaves a key unlabelled
    assert api.label_patches
    assert all(p[LABELS.shard] == other for p in api.label_patches)
    await _until(  # the staying shard reconciles every key changed meanwhile
        lambda: (
            {k for who, k, start, _ in runs if who == "other" and start > stopped_at} >= set(mine)
        )
    )
    # while it handed the others back, the stopping shard still reconciled keys of its own
    kept = {key for who, key, start, _ in runs if who == "me" and start > stopped_at + 0.05}
    assert kept, runs
    for name in mine:  # never both at once: the stopping shard's runs end before the other's
        ends = [end for who, key, _, end in runs if who == "me" and key == name]
        starts = [start for who, key, start, _ in runs if who == "other" and key == name]
        assert max(ends) <= min(s for s in starts if s > stopped_at), name
    staying.stop()
    await asyncio.wait_for(running[0], 20)


async def test_a_hand_back_longer_than_the_shutdown_timeout_is_cut_and_the_lease_released(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A shard of more keys than it can hand back within the shutdown timeout (below the
    pod's grace period) stops handing at the timeout and releases its Lease — the keys left
    are assigned at the coordinator's next look, not after the Lease's expiry (as after a
    SIGKILL at the end of the grace period)."""
    monkeypatch.setattr("appstack.runtime.sharding.PATCHES_AT_ONCE", 1)
    api = _SlowLabelPatches()
    admin = Client(api, field_manager="test")
    await admin.create(NAMESPACE, {"metadata": {"name": NS}})
    mine = shard_name("op", "me")
    names = [f"k{i:02d}" for i in range(30)]
    for name in names:
        await admin.create(CONFIG_MAP, _cm(name, {LABELS.shard: mine}))
    runs: list[tuple[str, str, float, float]] = []
    manager = _recording(api, "me", runs, lambda _: None)
    manager.shutdown_timeout = 0.5
    running = asyncio.create_task(manager.run())
    await _until(lambda: {key for _, key, *_ in runs} == set(names))
    api.stopping = True
    loop = asyncio.get_running_loop()
    stopped = loop.time()
    manager.stop()
    await asyncio.wait_for(running, 10)
    took = loop.time() - stopped
    left = [n for n, labels in (await _labels(admin)).items() if labels.get(LABELS.shard) == mine]
    assert 0 < len(left) < len(names)  # cut short: 30 patches of 0.1 s one at a time
    assert took < 0.5 + 1.0 + 1.0  # the timeout, the workers' last second, the release
    lease = await admin.get(LEASE, mine, NS)
    assert not lease["spec"]["holderIdentity"]  # released: the keys left go at once


async def test_left_to_choose_the_coordinator_drains_one_percent_of_the_objects() -> None:
    """``max_drains=None`` (the SDK's ``--shard-max-drains=auto``): at least 10 drains in
    flight, and 1 % of the kind's objects as the last full sweep counted them."""
    assert [auto_drains(n) for n in (0, 999, 1_000, 10_000, 30_000)] == [10, 10, 10, 100, 300]
    client, clock = await _client(), FakeClock()
    await client.create(LEASE, _lease("s1"))
    names = [f"c{i:04d}" for i in range(1_500)]
    await asyncio.gather(*(client.create(CONFIG_MAP, _cm(n, {LABELS.shard: "s1"})) for n in names))
    coordinator = _coordinator(client, clock, replace(CONFIG, max_drains=None))
    assert coordinator.max_drains(CONFIG_MAP) == 10  # no sweep yet
    await coordinator.sweep(*await coordinator.look())
    assert coordinator.max_drains(CONFIG_MAP) == 15
    await client.create(LEASE, _lease("s2"))  # a new shard: 15 of its keys drained at once
    await coordinator.sweep(*await coordinator.look())
    drained = [n for n, labels in (await _labels(client)).items() if LABELS.drain in labels]
    assert len(drained) == 15


async def test_a_sweep_assigns_nothing_to_a_shard_the_roster_has_since_seen_leaving() -> None:
    """A sweep begun on a look from before a shard was marked leaving (a replica stopping:
    it marks its Lease, looks again at once and hands its keys back) does not assign that
    shard a key it just released."""
    client, clock = await _client(), FakeClock()
    await client.create(LEASE, _lease("s1"))
    await client.create(CONFIG_MAP, _cm("k"))
    coordinator = _coordinator(client, clock)
    ready, leaving = await coordinator.look()
    assert (ready, leaving) == ({"s1"}, set())
    marked = {"metadata": {"labels": {CONFIG.leaving_label: "true"}}}
    await client.patch(LEASE, "s1", marked, namespace=NS)
    await coordinator.look(delete=False)  # the stopping replica's fresh look
    await coordinator.sweep(ready, leaving, unassigned_only=True)  # the earlier look's sets
    assert LABELS.shard not in (await _labels(client))["k"]


async def test_a_stale_hand_back_patch_reads_the_key_again_and_hands_it_only_if_still_its() -> None:
    """A hand-back patch carries the version in the cache; when the object changed since
    (409), the shard reads it again: still labelled to it, it is handed on the fresh
    version (the change kept); labelled to another shard meanwhile, it is left as it is."""

    class Interleaving(FakeApiServer):
        """Before the stopping shard's first label patch of ``stale`` (or ``moved``), someone
        else changes that object: the patch's version is then out of date."""

        def __init__(self) -> None:
            super().__init__()
            self.stopping, self.done, self.refused = False, set[str](), 0

        async def send(self, request: Any, timeouts: Any, guard: Any = None) -> Any:
            body = json.loads(request.body) if request.body else {}
            labels = (body.get("metadata") or {}).get("labels") or {}
            name = request.path.rsplit("/", 1)[-1].split("?")[0]
            first = name in ("stale", "moved") and name not in self.done
            if self.stopping and request.method == "PATCH" and LABELS.shard in labels and first:
                self.done.add(name)
                change = (
                    {"data": {"v": "changed"}}
                    if name == "stale"
                    else {"metadata": {"labels": {LABELS.shard: "someone-else"}}}
                )
                await admin.patch(CONFIG_MAP, name, change, namespace=NS)
                answer = await super().send(request, timeouts, guard)
                self.refused += answer.status == 409
                return answer
            return await super().send(request, timeouts, guard)

    api = Interleaving()
    admin, manager, running = await _one_shard(api, ["stale", "moved", "plain"])
    api.stopping = True
    manager.stop()
    await asyncio.wait_for(running, 10)
    assert api.refused == 2  # both patches were refused as stale first
    labels = await _labels(admin)
    assert LABELS.shard not in labels["stale"]  # handed (no shard stays: left unlabelled)
    assert LABELS.shard not in labels["plain"]
    assert labels["moved"][LABELS.shard] == "someone-else"  # no longer its: left alone
    stale = await admin.get(CONFIG_MAP, "stale", NS)
    assert stale["data"] == {"v": "changed"}  # the change made meanwhile kept


ROOT_LABEL = "root.shard.example.com/op"
WITH_CHILDREN = replace(CONFIG, children=((CONFIG_MAP, (SECRET,)),), root_label=ROOT_LABEL)


class _ChildWriting:
    """A root's reconcile as the SDK's children writer does it: apply its one wanted child
    (``<root>-child``) with the shard's child labels, prune any other child it controls
    that the cache shows."""

    def __init__(self, client: Client, manager: Manager) -> None:
        self.client, self.manager = client, manager

    async def reconcile(self, request: Request) -> Result | None:
        root = self.manager.cache.get(CONFIG_MAP, request.key)
        if root is None:
            return None
        uid = root["metadata"]["uid"]
        owner_ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": request.name}
        child = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": f"{request.name}-child",
                "namespace": NS,
                "labels": {"app": "child", **shard_child_labels()},
                "ownerReferences": [{**owner_ref, "uid": uid, "controller": True}],
            },
        }
        await self.client.apply(SECRET, child)
        for cached in self.manager.cache.objects(SECRET):
            meta = cached["metadata"]
            mine = any(r.get("uid") == uid for r in meta.get("ownerReferences") or [])
            if mine and meta["name"] != f"{request.name}-child":
                await self.client.delete(SECRET, meta["name"], NS)
        return None


async def test_each_shard_caches_its_roots_children_and_adopts_them_with_the_key() -> None:
    """Children follow their root: each is written with its root's shard and uid, and a
    shard's cache of the child kind holds only the children of its own roots (the split
    is server-side, as the primaries'); a shard that comes to hold a key — at the start,
    after a drain, after a hand-back — first relabels that root's children left with
    another shard (one LIST per child kind, by the root's uid), so what it prunes is in its
    cache: a stray child left under a gone shard's label is found and pruned."""
    admin = await _client()
    api = admin.transport
    names = [f"r{i}" for i in range(8)]
    for name in names:
        await admin.create(CONFIG_MAP, _cm(name))
    root = await admin.get(CONFIG_MAP, "r0", NS)
    stray = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "r0-left-behind",
            "namespace": NS,
            "labels": {
                "app": "child",
                LABELS.shard: "op-gone",
                ROOT_LABEL: root["metadata"]["uid"],
            },
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "r0",
                    "uid": root["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
    }
    await admin.create(SECRET, stray)

    def start(replica: str) -> tuple[Manager, asyncio.Task[None]]:
        client = Client(api, field_manager="op")
        election = LeaderElectionConfig("op", NS, replica, 3.0, 2.0, 0.1)
        manager = Manager(client, namespaces=[NS], leader_election=election, sharding=WITH_CHILDREN)
        Builder(manager, "roots").for_(CONFIG_MAP).owns(SECRET).complete(
            _ChildWriting(client, manager)
        )
        return manager, asyncio.create_task(manager.run())

    async def settled(*managers: Manager) -> bool:
        """Every root's child labelled as its root, each shard caching exactly its own."""
        roots = {o["metadata"]["name"]: o for o in (await admin.list(CONFIG_MAP, NS))[0]}
        children = {o["metadata"]["name"]: o for o in (await admin.list(SECRET, NS))[0]}
        if set(children) != {f"{n}-child" for n in names}:
            return False  # not all written yet, or the stray child not yet pruned
        for name in names:
            labels = children[f"{name}-child"]["metadata"]["labels"]
            owner_shard = roots[name]["metadata"]["labels"].get(LABELS.shard)
            if owner_shard is None or labels.get(LABELS.shard) != owner_shard:
                return False
        for manager in managers:
            shard = manager.shard
            assert shard is not None
            cached = {o["metadata"]["name"] for o in shard.cache.objects(SECRET)}
            own = {
                f"{n}-child"
                for n in names
                if roots[n]["metadata"]["labels"].get(LABELS.shard) == shard.name
            }
            if cached != own:
                return False
        return True

    first, first_running = start("me")
    await eventually(lambda: settled(first), timeout=20, what="one shard with every child")
    second, second_running = start("you")

    async def split() -> bool:
        held = [len(m.shard.cache.objects(CONFIG_MAP)) for m in (first, second) if m.shard]
        return len(held) == 2 and min(held) > 0 and await settled(first, second)

    await eventually(split, timeout=20, what="the roots and their children split in two")
    cached = [len(m.shard.cache.objects(SECRET)) for m in (first, second) if m.shard]
    assert sum(cached) == len(names), cached
    assert min(cached) > 0, cached
    second.stop()
    await asyncio.wait_for(second_running, 10)
    await eventually(lambda: settled(first), timeout=20, what="handed back with the children")
    first.stop()
    await asyncio.wait_for(first_running, 10)
