"""Sharded operators on the local cluster (issue #50): an SDK operator run with
``sharding=True`` (tests/e2e/shard_program.py, a cheap reconcile of labelled ConfigMaps)
as real processes, scaled 1 → 3 → 1 — the first, the coordinator, SIGKILLed, one stopped
gracefully — while the objects keep changing. From every reconcile's (shard, key, start,
end) and every drain acknowledgement in the processes' logs: no two shards' reconciles of
one key overlap, and no shard writes for a key after it acknowledged a drain of it (until
it is assigned the key again); every object is labelled to a live shard within the lease
duration + 2 s of the SIGKILL (a new coordinator elected meanwhile), and to the one left
within 2 s of the graceful stop; new objects are assigned. The figures go to
docs/sharding.md."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from appstack.runtime import CONFIG_MAP, LEASE, Client
from appstack.runtime.sharding import owner, root_key
from appstack_testbed.waiting import eventually

# Serial: the bounds below are the (a key unowned at most the lease duration + 2 s
# after a SIGKILL, 2 s after a graceful stop), with about 1.5 s of slack on a quiet machine.
pytestmark = pytest.mark.serial

PROGRAM = Path(__file__).with_name("shard_program.py")
SHARD = "shard.tick.example.com/tick"
DRAIN = "drain.shard.tick.example.com/tick"
SHARD_OF = "tick.example.com/shard-of=tick"
TICK = "tick.example.com/tick"
LEASE_DURATION = 3.0  # the program's
OBJECTS = 100


class Shards:
    """The operator's processes, each logging to its own file."""

    def __init__(self, kubeconfig: Path, namespace: str, logs: Path) -> None:
        self.kubeconfig, self.namespace, self.logs = kubeconfig, namespace, logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        out = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        command = [sys.executable, str(PROGRAM), "--kubeconfig", str(self.kubeconfig)]
        self.procs[name] = subprocess.Popen(
            [*command, "--namespace", self.namespace],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "POD_NAME": name},
        )

    def signal(self, name: str, sig: signal.Signals) -> None:
        self.procs[name].send_signal(sig)
        self.procs[name].wait(timeout=30)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def lines(self) -> Iterator[dict[str, Any]]:
        """Every JSON line of every process, with ``proc``: the process's name."""
        for path in self.logs.glob("*.log"):
            for line in path.read_text().splitlines():
                with contextlib.suppress(ValueError):
                    entry = json.loads(line)
                    if isinstance(entry, dict):
                        yield {**entry, "proc": path.stem}


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


async def live_shards(client: Client, namespace: str) -> dict[str, str]:
    """POD_NAME prefix of the holder -> shard (Lease) name, of the held shard Leases."""
    leases, _ = await client.list(LEASE, namespace, label_selector=SHARD_OF)
    return {
        lease["spec"]["holderIdentity"].split("_")[0]: lease["metadata"]["name"]
        for lease in leases
        if lease["spec"].get("holderIdentity")
    }


async def labelled(client: Client, namespace: str) -> dict[str, dict[str, str]]:
    items, _ = await client.list(CONFIG_MAP, namespace, label_selector=f"{TICK}=yes")
    return {o["metadata"]["name"]: o["metadata"].get("labels") or {} for o in items}


def key_of(namespace: str, name: str) -> str:
    return root_key("", "ConfigMap", namespace, name)


async def balanced(client: Client, namespace: str, pods: set[str]) -> bool:
    """Every object labelled to its owner among ``pods``' shards, no drain left."""
    live = await live_shards(client, namespace)
    if set(live) != pods:
        return False
    names = set(live.values())
    objects = await labelled(client, namespace)
    return all(
        DRAIN not in labels and labels.get(SHARD) == owner(key_of(namespace, name), names)
        for name, labels in objects.items()
    )


async def off(client: Client, namespace: str, shards: set[str]) -> dict[str, dict[str, str]]:
    """The objects not labelled to one of ``shards``: their labels."""
    objects = await labelled(client, namespace)
    return {n: labels for n, labels in objects.items() if labels.get(SHARD) not in shards}


def config_map(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {TICK: "yes"}},
        "data": {"v": "0"},
    }


async def churn(client: Client, namespace: str, names: list[str], stop: asyncio.Event) -> int:
    """Change random objects every 20 ms (each change a reconcile) until ``stop``."""
    changes = 0
    while not stop.is_set():
        name = random.choice(names)  # noqa: S311 - not for security
        with contextlib.suppress(Exception):
            patch = {"data": {"v": str(changes + 1)}}
            await client.patch(CONFIG_MAP, name, patch, namespace=namespace)
            changes += 1
        await asyncio.sleep(0.02)
    return changes


def check_logs(lines: list[dict[str, Any]]) -> dict[str, int]:
    """Assert no overlap and no write after an acknowledgement; the figures."""
    reconciles: dict[str, list[tuple[float, float, str, bool]]] = defaultdict(list)
    acks: dict[tuple[str, str], list[float]] = defaultdict(list)
    for entry in lines:
        if "reconcile" in entry:
            reconciles[entry["reconcile"]].append(
                (entry["start"], entry["end"], entry["proc"], entry["wrote"])
            )
        elif entry.get("event") == "drain acknowledged":
            namespace, name = entry["key"].split("/")[2:]
            acks[(f"{namespace}/{name}", entry["proc"])].append(entry["at"])
    handovers = 0
    for key, runs in reconciles.items():
        runs.sort()
        for i, (start, _, proc, _) in enumerate(runs):
            for _, end, other, _ in runs[:i]:
                assert other == proc or end <= start, f"{key}: {other} and {proc} overlap"
            if i and runs[i - 1][2] != proc:
                handovers += 1
        for start, end, proc, wrote in runs:
            before = [at for at in acks.get((key, proc), []) if at < end]
            if wrote and before:  # a write after an acknowledgement: assigned again since?
                assert any(s > max(before) for s, _, p, _ in runs if p == proc and s <= start), (
                    f"{key}: shard {proc} wrote at {end} after acknowledging at {max(before)}"
                )
    return {
        "reconciles": sum(len(runs) for runs in reconciles.values()),
        "handovers": handovers,
        "acknowledgements": sum(len(at) for at in acks.values()),
    }


async def test_shards_scale_crash_and_stop_without_overlap_or_orphans(
    api: Client, namespace: str, shards: Shards
) -> None:
    names = [f"t-{i:03d}" for i in range(OBJECTS)]
    await asyncio.gather(*(api.create(CONFIG_MAP, config_map(namespace, n)) for n in names))
    shards.start("a")
    await eventually(
        lambda: balanced(api, namespace, {"a"}), timeout=30, what="every object on shard a"
    )
    stop = asyncio.Event()
    changing = asyncio.create_task(churn(api, namespace, names, stop))
    shards.start("b")
    shards.start("c")
    started = time.monotonic()
    await eventually(
        lambda: balanced(api, namespace, {"a", "b", "c"}), timeout=30, what="1 -> 3 balanced"
    )
    scale_out = time.monotonic() - started

    new = [f"n-{i:03d}" for i in range(10)]
    started = time.monotonic()
    await asyncio.gather(*(api.create(CONFIG_MAP, config_map(namespace, n)) for n in new))
    await eventually(
        lambda: balanced(api, namespace, {"a", "b", "c"}), timeout=10, what="new objects assigned"
    )
    assigned_new = time.monotonic() - started

    live = await live_shards(api, namespace)
    shards.signal("a", signal.SIGKILL)  # the coordinator: b or c takes over
    killed = time.monotonic()
    await eventually(
        lambda: off(api, namespace, {live["b"], live["c"]}),
        lambda found: not found,
        timeout=LEASE_DURATION + 10,
        what="the killed shard's objects on b and c",
        interval=0.05,
    )
    orphaned = time.monotonic() - killed

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

    figures = check_logs(list(shards.lines()))
    print(  # the figures docs/sharding.md quotes
        f"\nsharding e2e: {figures} changes={changes} scale-out={scale_out:.1f}s "
        f"new-assigned={assigned_new:.1f}s orphaned-after-SIGKILL={orphaned:.1f}s "
        f"after-SIGTERM={handed_back:.1f}s"
    )
    assert figures["handovers"] > 0
    assert figures["acknowledgements"] > 0
    assert orphaned <= LEASE_DURATION + 2
    assert handed_back <= 2
    assert shards.procs["c"].returncode == 0
    assert shards.procs["b"].returncode == 0
