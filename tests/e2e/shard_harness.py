"""Driving and checking tests/e2e/shard_program.py's sharded operator from outside: its
processes (:class:`Shards`, each logging JSON lines to a file of its own), what the API
server shows of the shards and their keys (:func:`live_shards`, :func:`balanced`,
:func:`off`), the objects and their changes (:func:`config_map`, :func:`churn`), and the
check of the processes' logs (:func:`check_logs`: no two shards' reconciles of one key
overlap, no write for a key after a drain of it was acknowledged). Used by
tests/e2e/test_sharding.py and bench/sharding_faults.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from signal import SIGCONT, Signals
from typing import Any

from appstack.runtime import CONFIG_MAP, LEASE, Client
from appstack.runtime.sharding import owner, root_key

PROGRAM = Path(__file__).with_name("shard_program.py")
SHARD = "shard.tick.example.com/tick"
DRAIN = "drain.shard.tick.example.com/tick"
SHARD_OF = "tick.example.com/shard-of=tick"
TICK = "tick.example.com/tick"
LEASE_NAME = "tick"  # the program's leader-election Lease: its shards' names start with it
LEASE_DURATION = 3.0  # the program's


class Shards:
    """The operator's processes, each logging to ``<logs>/<name>.log``; ``name`` is its
    POD_NAME, the prefix of its identity (and so of its user agent's instance)."""

    def __init__(self, kubeconfig: Path, namespace: str, logs: Path) -> None:
        self.kubeconfig, self.namespace, self.logs = kubeconfig, namespace, logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, *args: str) -> None:
        out = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        command = [sys.executable, str(PROGRAM), "--kubeconfig", str(self.kubeconfig)]
        self.procs[name] = subprocess.Popen(
            [*command, "--namespace", self.namespace, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "POD_NAME": name},
        )

    def signal(self, name: str, sig: Signals) -> None:
        """Send ``sig`` and wait for the process to exit."""
        self.procs[name].send_signal(sig)
        self.procs[name].wait(timeout=30)

    def send(self, name: str, sig: Signals) -> None:
        """Send ``sig`` (SIGSTOP, SIGCONT...) without waiting."""
        self.procs[name].send_signal(sig)

    def running(self) -> list[str]:
        return [name for name, proc in self.procs.items() if proc.poll() is None]

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(SIGCONT)  # a stopped process is killed once continued
                proc.kill()
                proc.wait()

    def lines(self) -> Iterator[dict[str, Any]]:
        """Every JSON line of every process, with ``proc``: the process's name."""
        return log_lines(self.logs)


def log_lines(directory: Path) -> Iterator[dict[str, Any]]:
    """Every JSON line of every ``<process>.log`` in ``directory``, with ``proc``: the
    process's name."""
    for path in directory.glob("*.log"):
        for line in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict):
                    yield {**entry, "proc": path.stem}


def reconciled_after(
    lines: Iterable[dict[str, Any]], let_go: Iterable[tuple[str, float, str]]
) -> list[float]:
    """For each ``(key, when, by)`` — a key (``namespace/name``) process ``by`` let go of
    at ``when`` — the seconds until another process's first reconcile of the key began at or
    after ``when``, in the order given (keys never reconciled again are left out)."""
    starts: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for entry in lines:
        if "reconcile" in entry:
            starts[entry["reconcile"]].append((entry["start"], entry["proc"]))
    latencies = []
    for key, when, by in let_go:
        later = [start for start, proc in starts.get(key, []) if start >= when and proc != by]
        if later:
            latencies.append(min(later) - when)
    return latencies


def handover_latency(
    lines: Iterable[dict[str, Any]], event: str = "drain acknowledged"
) -> list[float]:
    """For every ``event`` of :data:`LETTING_GO` (a drain acknowledged, or a key handed back
    by a stopping shard): seconds until another shard's first reconcile of the key began
    (keys never reconciled again are left out)."""
    lines = list(lines)
    let_go = [
        ("/".join(entry["key"].split("/")[2:]), entry["at"], entry["proc"])
        for entry in lines
        if entry.get("event") == event
    ]
    return reconciled_after(lines, let_go)


async def live_shards(client: Client, namespace: str, selector: str = SHARD_OF) -> dict[str, str]:
    """POD_NAME prefix of the holder -> shard (Lease) name, of the held shard Leases
    ``selector`` chooses (``<domain>/shard-of=<election Lease>``: the test program's by
    default; appstack's for its own operator)."""
    leases, _ = await client.list(LEASE, namespace, label_selector=selector)
    return {
        lease["spec"]["holderIdentity"].split("_")[0]: lease["metadata"]["name"]
        for lease in leases
        if lease["spec"].get("holderIdentity")
    }


async def labelled(client: Client, namespace: str) -> dict[str, dict[str, str]]:
    """The program's objects (name -> labels)."""
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


async def churn(
    client: Client, namespace: str, names: Sequence[str], stop: asyncio.Event, pause: float = 0.02
) -> int:
    """Change random objects every ``pause`` seconds (each change a reconcile) until
    ``stop``; returns how many changes were made."""
    changes = 0
    while not stop.is_set():
        name = random.choice(names)  # noqa: S311 - not for security
        with contextlib.suppress(Exception):
            patch = {"data": {"v": str(changes + 1)}}
            await client.patch(CONFIG_MAP, name, patch, namespace=namespace)
            changes += 1
        await asyncio.sleep(pause)
    return changes


@dataclass
class LogCheck:
    """What :func:`check_logs` found: the figures and every violation, described."""

    reconciles: int = 0
    handovers: int = 0
    acknowledgements: int = 0
    hand_backs: int = 0
    overlaps: list[str] = field(default_factory=list)
    late_writes: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, int]:
        return {
            "reconciles": self.reconciles,
            "handovers": self.handovers,
            "acknowledgements": self.acknowledgements,
            "hand_backs": self.hand_backs,
            "overlapping_reconciles": len(self.overlaps),
            "writes_after_acknowledgement": len(self.late_writes),
        }


#: The log events of a shard letting go of a key: a drain acknowledged, a key handed back
#: by a stopping shard (runtime/sharding.py).
HANDED = "key handed back"
LETTING_GO = frozenset({"drain acknowledged", HANDED})


def check_logs(
    lines: list[dict[str, Any]], frozen: Mapping[str, Sequence[tuple[float, float]]] | None = None
) -> LogCheck:
    """From every reconcile's (shard, key, start, end, wrote, sent) and every drain
    acknowledgement and graceful hand-back of a key in the processes' logs
    (:data:`LETTING_GO`): reconciles of one key by two shards that overlap in time, and
    writes by a shard for a key after it let go of it (unless it reconciled the key again
    since: assigned it back); a *handover* is two consecutive reconciles of a key by
    different shards.

    ``frozen``: per shard, the (SIGSTOP, SIGCONT) times of its freezes past its Lease. A
    reconcile in flight across a freeze stood still from the SIGSTOP on: it counts as ending
    there unless it wrote after the SIGCONT — a late write (its Lease had expired: the
    fence must have refused it)."""
    reconciles: dict[str, list[tuple[float, float, str, bool]]] = defaultdict(list)
    acks: dict[tuple[str, str], list[float]] = defaultdict(list)
    found = LogCheck()
    for entry in lines:
        if "reconcile" in entry:
            start, proc, wrote = entry["start"], entry["proc"], entry["wrote"]
            end = _through_freezes(entry, (frozen or {}).get(proc, ()), found)
            reconciles[entry["reconcile"]].append((start, end, proc, wrote))
        elif entry.get("event") in LETTING_GO:
            namespace, name = entry["key"].split("/")[2:]
            acks[(f"{namespace}/{name}", entry["proc"])].append(entry["at"])
            found.hand_backs += entry["event"] == HANDED
    found.acknowledgements = sum(len(at) for at in acks.values()) - found.hand_backs
    for key, runs in reconciles.items():
        runs.sort()
        found.reconciles += len(runs)
        latest_end: dict[str, float] = {}  # shard -> the latest end of its runs so far
        for i, (start, end, proc, _) in enumerate(runs):
            for other, other_end in latest_end.items():
                if other != proc and other_end > start:
                    found.overlaps.append(f"{key}: {other} (to {other_end}) and {proc} at {start}")
            latest_end[proc] = max(end, latest_end.get(proc, end))
            if i and runs[i - 1][2] != proc:
                found.handovers += 1
        for start, end, proc, wrote in runs:
            before = [at for at in acks.get((key, proc), []) if at < end]
            # a write after an acknowledgement: only if assigned again since (a run started)
            if (
                wrote
                and before
                and not any(max(before) < s <= start for s, _, p, _ in runs if p == proc)
            ):
                found.late_writes.append(
                    f"{key}: shard {proc} wrote at {end} after acknowledging at {max(before)}"
                )
    return found


def _through_freezes(
    entry: dict[str, Any], freezes: Sequence[tuple[float, float]], found: LogCheck
) -> float:
    """The end of a reconcile (a log line) that its process's freezes leave: the SIGSTOP
    of one it was in flight across (it stood still from there; a write it asked for after
    the SIGCONT must have been refused), unless it wrote after the SIGCONT: that goes to
    ``found.late_writes``."""
    start, end, sent = entry["start"], entry["end"], entry.get("sent")
    for stopped, resumed in freezes:
        if start < stopped < end:
            if entry["wrote"] and sent is not None and sent >= resumed:
                found.late_writes.append(
                    f"{entry['reconcile']}: shard {entry['proc']} wrote after its freeze"
                )
            else:
                end = stopped
    return float(end)
