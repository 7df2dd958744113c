"""Sharded operators on the local cluster (issue #50): an SDK operator run with
``sharding=True`` (tests/e2e/shard_program.py, a cheap reconcile of labelled ConfigMaps)
as real processes, scaled 1 → 4 → 1 — the first, the coordinator, SIGKILLed and at the
same moment another frozen (SIGSTOP) past its Lease, one stopped gracefully — while the
objects keep changing. From every reconcile's (shard, key, start, end) and every drain
acknowledgement in the processes' logs: no two shards' reconciles of one key overlap, and
no shard writes for a key after it acknowledged a drain of it (until it is assigned the
key again); every object is labelled to a live shard within the lease duration + 2 s of
the SIGKILL and the freeze (a new coordinator elected meanwhile), and to the one left
within 2 s of the graceful stop, each key the stopped shard handed back reconciled by its
new owner within 2 s of the hand-back; new objects are assigned. The frozen shard, continued,
writes nothing more (the audit log) and exits 1. The figures go to docs/sharding.md;
bench/sharding_faults.py runs the same program through a thousand and more handovers
under every fault."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from appstack.runtime import CONFIG_MAP, Client
from appstack_testbed.audit import read_audit_events
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.waiting import eventually
from tests.e2e.shard_harness import (
    HANDED,
    LEASE_DURATION,
    Shards,
    balanced,
    check_logs,
    churn,
    config_map,
    handover_latency,
    live_shards,
    off,
)

# Serial: the bounds below are the (a key unowned at most the lease duration + 2 s
# after a SIGKILL, 2 s after a graceful stop), with about 1.5 s of slack on a quiet machine.
pytestmark = pytest.mark.serial

OBJECTS = 100


@pytest.fixture
def shards(kubeconfig: Path, namespace: str, tmp_path: Path) -> Iterator[Shards]:
    running = Shards(kubeconfig, namespace, tmp_path)
    try:
        yield running
    finally:
        running.stop_all()


@pytest.fixture
async def api(kubeconfig: Path) -> AsyncIterator[Client]:
    async with await Client.connect(str(kubeconfig), field_manager="sharding-test") as client:
        yield client


async def test_shards_scale_crash_and_stop_without_overlap_or_orphans(
    api: Client, namespace: str, shards: Shards, kube_cluster: ClusterHandle
) -> None:
    names = [f"t-{i:03d}" for i in range(OBJECTS)]
    await asyncio.gather(*(api.create(CONFIG_MAP, config_map(namespace, n)) for n in names))
    shards.start("a")
    await eventually(
        lambda: balanced(api, namespace, {"a"}), timeout=30, what="every object on shard a"
    )
    stop = asyncio.Event()
    changing = asyncio.create_task(churn(api, namespace, names, stop))
    for name in "bcd":
        shards.start(name)
    started = time.monotonic()
    await eventually(
        lambda: balanced(api, namespace, {"a", "b", "c", "d"}), timeout=30, what="1 -> 4 balanced"
    )
    scale_out = time.monotonic() - started

    new = [f"n-{i:03d}" for i in range(10)]
    started = time.monotonic()
    await asyncio.gather(*(api.create(CONFIG_MAP, config_map(namespace, n)) for n in new))
    await eventually(
        lambda: balanced(api, namespace, {"a", "b", "c", "d"}),
        timeout=10,
        what="new objects assigned",
    )
    assigned_new = time.monotonic() - started

    live = await live_shards(api, namespace)
    shards.send("d", signal.SIGSTOP)  # frozen past its Lease: its keys go to b and c
    frozen = time.time()
    shards.signal("a", signal.SIGKILL)  # the coordinator: b or c takes over
    killed = time.monotonic()
    await eventually(
        lambda: off(api, namespace, {live["b"], live["c"]}),
        lambda found: not found,
        timeout=LEASE_DURATION + 10,
        what="the killed and the frozen shards' objects on b and c",
        interval=0.05,
    )
    orphaned = time.monotonic() - killed
    resumed = time.time()
    shards.send("d", signal.SIGCONT)  # its Lease expired: it must write nothing more
    await eventually(
        shards.procs["d"].poll, lambda code: code is not None, timeout=15, what="d to exit"
    )

    shards.signal("c", signal.SIGTERM)  # returns once the process has exited
    stopped = time.monotonic()
    await eventually(
        lambda: off(api, namespace, {live["b"]}),
        lambda found: not found,
        timeout=10,
        what="the stopped shard's objects on b",
        interval=0.05,
    )
    handed_back = time.monotonic() - stopped
    stop.set()
    changes = await changing
    shards.signal("b", signal.SIGTERM)

    lines = list(shards.lines())
    found = check_logs(lines, {"d": [(frozen, resumed)]})
    # each key c handed back on its SIGTERM: from when c let go of it to b's first reconcile
    unowned = handover_latency(lines, HANDED)
    figures = found.figures()
    events = read_audit_events(kube_cluster.require_local().directory, namespace=namespace)
    thawed = [e for e in events if "(d_" in e.user_agent and e.received.timestamp() > resumed]
    print(  # the figures docs/sharding.md quotes
        f"\nsharding e2e: {figures} changes={changes} scale-out={scale_out:.1f}s "
        f"new-assigned={assigned_new:.1f}s orphaned-after-SIGKILL={orphaned:.1f}s "
        f"after-SIGTERM={handed_back:.1f}s frozen-writes-after-resume={len(thawed)} "
        f"handed-back-unreconciled-max={max(unowned, default=0):.2f}s ({len(unowned)} keys)"
    )
    assert not found.overlaps, "\n".join(found.overlaps[:20])
    assert not found.late_writes, "\n".join(found.late_writes[:20])
    assert not [e for e in thawed if e.succeeded], "\n".join(map(str, thawed))
    assert shards.procs["d"].returncode == 1
    assert figures["handovers"] > 0
    assert figures["acknowledgements"] > 0
    assert orphaned <= LEASE_DURATION + 2
    assert handed_back <= 2
    assert max(unowned, default=99) <= 2  # c handed its keys straight to b (none: fails)
    assert shards.procs["c"].returncode == 0
    assert shards.procs["b"].returncode == 0
