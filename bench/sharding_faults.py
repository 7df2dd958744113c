"""The sharding handover proof under faults (issue #50): no two shards act on one key, and
no shard writes for a key after it lost it — checked from every reconcile's log line and
from the API server's audit log — over more than a thousand handovers.

On one local cluster of its own (``--cluster``; its audit log big enough for the whole
run), real processes of tests/e2e/shard_program.py (an SDK operator run with
``sharding=True``, 3 s lease, 2 s renew deadline; every reconcile ≥ 20 ms and writing the
key's child ConfigMap ``<name>-seen``; each process's Lease calls through a latency proxy
of its own) reconcile ``--objects`` labelled ConfigMaps while one of them changes every
20 ms. Each cycle, in turn: scale 1 → 4; SIGKILL a shard (the coordinator every other
cycle) and start a replacement; SIGSTOP a shard (the other kind) past its Lease, continue
it once its keys are on the others — it must write nothing more and exit 1 — and start a
replacement; delay one shard's Lease calls by 20 s (it must exit and write nothing once
its Lease may have expired) and start a replacement; a rolling update (each of the four
replaced by a new process, one at a time, a new one first); scale 4 → 1 (SIGTERM).

Checked afterwards, from the processes' logs (tests/e2e/shard_harness.check_logs): no two
shards' reconciles of one key overlap, no write after a drain acknowledgement; from the
audit log, the writes of each shard (its user agent names its identity) to each key's
child: none received after the shard lost the key — acknowledged its drain, saw it
assigned to another shard (the coordinator's patch, after the Lease expired), handed its
keys back, was resumed after a freeze or had its Lease calls delayed past the lease —
unless the key was assigned to it again since. Measured: the time from a drain's
acknowledgement, and from a stopping shard's hand-back of a key, to the new owner's first
reconcile of the key (p50, p99, max; target p99 ≤ 2 s), each fault's recovery time.

Prints a table, writes JSON (``--json``), exits 1 if a check fails or the handovers are
fewer than ``--handovers``. The cluster is deleted afterwards unless ``--keep``.

Usage: python bench/sharding_faults.py [--cycles 4] [--objects 200]
       [--json docs/sharding-faults.json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import itertools
import json
import os
import re
import signal
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.e2e.shard_harness

from tests.e2e.shard_harness import (
    HANDED,
    LEASE_DURATION,
    LEASE_NAME,
    Shards,
    balanced,
    check_logs,
    churn,
    config_map,
    handover_latency,
    labelled,
    live_shards,
)

from appstack.runtime import CONFIG_MAP, LEASE, NAMESPACE, Client
from appstack_testbed.audit import AuditEvent, audit_log_files, read_audit_events
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.control_plane import audit_policy
from appstack_testbed.latency_proxy import LatencyProxy
from appstack_testbed.versions import cache_root
from appstack_testbed.waiting import eventually

SHARD = "shard.tick.example.com/tick"
WIDTH = 4  # shards at the top of each cycle
BALANCE_TIMEOUT = 90.0
AGENT = re.compile(r"\((?P<identity>(?P<pod>[^_()]+)_[0-9a-f]{8})\)")


@dataclass
class Fleet:
    """The shard processes of the run: each started with the Lease calls through a
    latency proxy of its own, named ``s000``, ``s001``... in order of start."""

    shards: Shards
    api_port: int
    scratch: Path
    members: list[str] = field(default_factory=list)  # the shards meant to be running
    proxies: dict[str, LatencyProxy] = field(default_factory=dict)
    started: int = 0

    async def start(self) -> str:
        name = f"s{self.started:03d}"
        self.started += 1
        proxy = LatencyProxy("127.0.0.1", self.api_port)
        await proxy.start()
        self.proxies[name] = proxy
        config = yaml.safe_load(self.shards.kubeconfig.read_text())
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
        lease_kubeconfig = self.scratch / f"{name}-lease-kubeconfig"
        lease_kubeconfig.write_text(yaml.safe_dump(config))
        self.shards.start(name, "--stamp-child", f"--lease-kubeconfig={lease_kubeconfig}")
        self.members.append(name)
        return name

    async def close(self) -> None:
        self.shards.stop_all()
        for proxy in self.proxies.values():
            await proxy.close()


@dataclass
class Run:
    """What happened when: the faults, and the times the audit check needs."""

    api: Client
    namespace: str
    fleet: Fleet
    names: list[str]
    faults: list[dict[str, Any]] = field(default_factory=list)
    #: process -> (wall time after which it may write nothing at all, why)
    silent_after: dict[str, tuple[float, str]] = field(default_factory=dict)

    async def coordinator(self) -> str:
        lease = await self.api.get(LEASE, LEASE_NAME, self.namespace)
        return str(lease["spec"].get("holderIdentity") or "").split("_")[0]

    async def balance(self, what: str) -> float:
        """Wait until every key is on its owner among the members; seconds waited. A member
        that exits meanwhile unasked (its Lease lost on a loaded machine: exit 1) is
        recorded and left out."""
        started = time.monotonic()

        async def settled() -> bool:
            for name in list(self.fleet.members):
                code = self.fleet.shards.procs[name].poll()
                if code is not None:
                    self.fleet.members.remove(name)
                    self.record("exited unasked", shard=name, exit_code=code)
            if not self.fleet.members:  # the last one: a Deployment would start another
                await self.fleet.start()
            return await balanced(self.api, self.namespace, set(self.fleet.members))

        await eventually(settled, timeout=BALANCE_TIMEOUT, what=what, interval=0.1)
        return round(time.monotonic() - started, 2)

    async def exit_code(self, name: str, timeout: float) -> int:
        proc = self.fleet.shards.procs[name]
        await eventually(
            proc.poll,
            lambda code: code is not None,
            timeout=timeout,
            what=f"{name} to exit",
            interval=0.05,
        )
        return int(proc.returncode)

    async def poke(self, name: str) -> None:
        """Change a few of ``name``'s keys, so that it is likely mid-reconcile now."""
        objects = await labelled(self.api, self.namespace)
        live = await live_shards(self.api, self.namespace)
        mine = [n for n, labels in objects.items() if labels.get(SHARD) == live.get(name)][:3]
        for key in mine:
            patch = {"data": {"v": f"poke-{uuid.uuid4().hex[:6]}"}}
            await self.api.patch(CONFIG_MAP, key, patch, namespace=self.namespace)
        await asyncio.sleep(0.012)  # the watch event arrives; the reconcile's 20 ms begin

    async def victim(self, coordinator: bool) -> str:
        lead = await self.coordinator()
        others = [m for m in self.fleet.members if m != lead]
        return lead if coordinator and lead in self.fleet.members else others[-1]

    def record(self, fault: str, **figures: Any) -> None:
        entry = {"fault": fault, **figures}
        self.faults.append(entry)
        print(json.dumps(entry), flush=True)

    # ------------------------------------------------------------------------ faults
    async def scale_out(self) -> None:
        for _ in range(WIDTH - len(self.fleet.members)):
            await self.fleet.start()
        self.record("scale 1 -> 4", balanced_s=await self.balance("1 -> 4 balanced"))

    async def sigkill(self, coordinator: bool) -> None:
        name = await self.victim(coordinator)
        self.fleet.shards.send(name, signal.SIGKILL)
        await self.exit_code(name, timeout=30)
        self.fleet.members.remove(name)
        moved = await self.balance(f"{name}'s keys on the others after its SIGKILL")
        await self.fleet.start()
        back = await self.balance("the replacement balanced")
        self.record(
            "SIGKILL",
            shard=name,
            coordinator=coordinator,
            keys_moved_s=moved,
            replacement_balanced_s=back,
        )

    async def sigstop(self, coordinator: bool) -> None:
        name = await self.victim(coordinator)
        await self.poke(name)
        self.fleet.shards.send(name, signal.SIGSTOP)
        stopped = time.time()
        self.fleet.members.remove(name)
        moved = await self.balance(f"{name}'s keys on the others while it is stopped")
        await asyncio.sleep(max(0.0, stopped + LEASE_DURATION + 1 - time.time()))
        resumed = time.time()
        self.fleet.shards.send(name, signal.SIGCONT)
        self.silent_after[name] = (resumed, "resumed after a SIGSTOP past its Lease")
        code = await self.exit_code(name, timeout=30)
        await self.fleet.start()
        back = await self.balance("the replacement balanced")
        self.record(
            "SIGSTOP",
            shard=name,
            coordinator=coordinator,
            stopped_at=stopped,
            resumed_at=resumed,
            stopped_s=round(resumed - stopped, 2),
            keys_moved_s=moved,
            exit_code=code,
            replacement_balanced_s=back,
        )

    async def delay_lease(self, coordinator: bool) -> None:
        name = await self.victim(coordinator)
        self.fleet.proxies[name].delay = 20.0
        delayed = time.time()
        self.silent_after[name] = (delayed + LEASE_DURATION, "Lease calls delayed 20 s")
        self.fleet.members.remove(name)
        code = await self.exit_code(name, timeout=30)
        exited = round(time.time() - delayed, 2)
        moved = await self.balance(f"{name}'s keys on the others after its Lease calls slowed")
        await self.fleet.start()
        back = await self.balance("the replacement balanced")
        self.record(
            "Lease calls +20 s",
            shard=name,
            coordinator=coordinator,
            exited_after_s=exited,
            exit_code=code,
            keys_moved_s=moved,
            replacement_balanced_s=back,
        )

    async def rolling_update(self) -> None:
        started = time.monotonic()
        codes = []
        for old in list(self.fleet.members):
            await self.fleet.start()
            await self.balance("a new shard balanced")
            if old not in self.fleet.members:  # it exited unasked meanwhile
                continue
            self.fleet.shards.send(old, signal.SIGTERM)  # the loop runs on: the proxies
            codes.append(await self.exit_code(old, timeout=30))
            self.fleet.members.remove(old)
            await self.balance(f"{old}'s keys on the others after its SIGTERM")
        self.record("rolling update", took_s=round(time.monotonic() - started, 2), exit_codes=codes)

    async def scale_in(self) -> None:
        leaving = self.fleet.members[1:]
        for name in leaving:
            self.fleet.shards.send(name, signal.SIGTERM)
        codes = [await self.exit_code(name, timeout=30) for name in leaving]
        self.fleet.members[1:] = []
        self.record(
            "scale 4 -> 1", balanced_s=await self.balance("4 -> 1 balanced"), exit_codes=codes
        )


# ---------------------------------------------------------------------------- checks
def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _pod(event: AuditEvent) -> str:
    """The process (POD_NAME) whose user agent sent ``event``; "" for another client."""
    match = AGENT.search(event.user_agent)
    return match["pod"] if match else ""


def request_audit_policy() -> dict[str, Any]:
    """The test bed's audit policy, with the bodies of ConfigMap patches recorded (level
    Request): who set or removed a shard label on a key, and when, from the API server."""
    policy = audit_policy()
    rules: list[dict[str, Any]] = list(policy["rules"])  # type: ignore[call-overload]
    metadata = next(i for i, rule in enumerate(rules) if rule.get("level") == "Metadata")
    body = {
        "level": "Request",
        "verbs": ["patch"],
        "resources": [{"group": "", "resources": ["configmaps"]}],
    }
    return {**policy, "rules": [*rules[:metadata], body, *rules[metadata:]]}


def holders(
    directory: Path, namespace: str, shard_of: dict[str, str]
) -> dict[str, list[tuple[float, str]]]:
    """Per key, from the audit log's recorded patch bodies: [(when the API server received
    a patch that set the shard label, to which process's shard; or removed it: "")]."""
    history: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for path in audit_log_files(directory):
        with open(path, "rb") as log:
            for line in log:
                if not line.endswith(b"\n") or b'"requestObject"' not in line:
                    continue
                raw = json.loads(line)
                ref = raw.get("objectRef") or {}
                code = int((raw.get("responseStatus") or {}).get("code", 0))
                if raw.get("stage") != "ResponseComplete" or ref.get("namespace") != namespace:
                    continue
                labels = ((raw.get("requestObject") or {}).get("metadata") or {}).get("labels")
                if not 200 <= code < 300 or not isinstance(labels, dict) or SHARD not in labels:
                    continue
                when = datetime.datetime.fromisoformat(
                    str(raw["requestReceivedTimestamp"]).replace("Z", "+00:00")
                ).timestamp()
                value = labels[SHARD]
                history[str(ref.get("name"))].append(
                    (when, shard_of.get(value, "?") if value else "")
                )
    for changes in history.values():
        changes.sort()
    return history


def audit_check(
    events: list[AuditEvent], lines: list[dict[str, Any]], run: Run, directory: Path
) -> tuple[dict[str, Any], list[str]]:
    """Every write of a shard process to a key's child against who held the key then (the
    last patch that set or removed its shard label, :func:`holders`): a write by a process
    that did not hold the key — lost it (acknowledged, handed back, assigned away after
    its Lease expired) or never had it — is a violation; so is every write of a process
    after it was resumed from a freeze or its Lease calls were delayed past the lease."""
    ours = [e for e in events if e.succeeded and AGENT.search(e.user_agent)]
    # shard name -> process: each process says which shard it is when it joins
    shard_of = {e["shard"]: e["proc"] for e in lines if e.get("event") == "shard joined"}
    history = holders(directory, run.namespace, shard_of)
    violations = []
    seen_writes = [e for e in ours if e.resource == "configmaps" and e.name.endswith("-seen")]
    writers: dict[str, list[str]] = defaultdict(list)
    for event in seen_writes:
        key, writer, at = event.name.removesuffix("-seen"), _pod(event), event.received.timestamp()
        writers[key].append(writer)
        before = [holder for when, holder in history.get(key, []) if when < at]
        if not before or before[-1] != writer:
            held = before[-1] if before else "nobody"
            violations.append(f"{event}: {writer} wrote while the key was {held or 'nobody'}'s")
    lease_writes = 0  # its own Lease's, after a freeze or a delay: reported, not keys
    for event in ours:
        silent = run.silent_after.get(_pod(event))
        if silent and event.received.timestamp() > silent[0]:
            if event.resource == "configmaps":
                violations.append(f"{event}: written after {_pod(event)} was {silent[1]}")
            else:
                lease_writes += 1
    figures = {
        "writes_by_shards": len(ours),
        "key_writes_checked": len(seen_writes),
        "shard_label_changes": sum(len(h) for h in history.values()),
        "assignments": sum(1 for h in history.values() for _, holder in h if holder),
        "handovers_in_audit": sum(
            sum(1 for a, b in itertools.pairwise(w) if a != b) for w in writers.values()
        ),
        "key_writes_not_holding_the_key": sum(1 for v in violations if "wrote while" in v),
        "writes_after_freeze_or_delay": sum(1 for v in violations if "written after" in v),
        "lease_writes_after_freeze_or_delay": lease_writes,
    }
    return figures, violations


def in_flight_at_freeze(
    lines: list[dict[str, Any]], faults: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The reconciles a SIGSTOPped shard had begun before the freeze and ended after it,
    and how each ended (a write refused by the fence: its error)."""
    found: list[dict[str, Any]] = []
    for fault in faults:
        if fault["fault"] != "SIGSTOP":
            continue
        for entry in lines:
            if (
                "reconcile" in entry
                and entry["proc"] == fault["shard"]
                and entry["start"] < fault["stopped_at"] < entry["end"]
            ):
                found.append(
                    {"shard": fault["shard"], "wrote": entry["wrote"], "error": entry["error"]}
                )
    return found


# ------------------------------------------------------------------------------ main
async def drive(args: argparse.Namespace, cluster: LocalCluster, logs: Path) -> dict[str, Any]:
    namespace = f"shard-faults-{uuid.uuid4().hex[:6]}"
    names = [f"k-{i:04d}" for i in range(args.objects)]
    async with await Client.connect(str(cluster.kubeconfig), field_manager="bench") as api:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        await api.create(NAMESPACE, body)
        for first in range(0, len(names), 50):
            batch = names[first : first + 50]
            await asyncio.gather(*(api.create(CONFIG_MAP, config_map(namespace, n)) for n in batch))
        shards = Shards(cluster.kubeconfig, namespace, logs)
        fleet = Fleet(shards, cluster.layout().ports["kube-apiserver"], logs)
        run = Run(api, namespace, fleet, names)
        stop = asyncio.Event()
        try:
            await fleet.start()
            await run.balance("every object on the first shard")
            changing = asyncio.create_task(churn(api, namespace, names, stop))
            began = time.monotonic()
            for cycle in range(args.cycles):
                print(f"cycle {cycle + 1}/{args.cycles}", flush=True)
                await run.scale_out()
                await run.sigkill(coordinator=cycle % 2 == 0)
                await run.sigstop(coordinator=cycle % 2 == 1)
                await run.delay_lease(coordinator=cycle % 2 == 0)
                await run.rolling_update()
                await run.scale_in()
            took = time.monotonic() - began
            stop.set()
            changes = await changing
            shards.send(fleet.members[0], signal.SIGTERM)
            await run.exit_code(fleet.members[0], timeout=30)
        finally:
            stop.set()
            await fleet.close()
    lines = list(shards.lines())
    frozen: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for fault in run.faults:
        if fault["fault"] == "SIGSTOP":
            frozen[fault["shard"]].append((fault["stopped_at"], fault["resumed_at"]))
    found = check_logs(lines, frozen)
    latencies = handover_latency(lines)
    handed = handover_latency(lines, HANDED)
    events = read_audit_events(cluster.directory, namespace=namespace)
    audit, violations = audit_check(events, lines, run, cluster.directory)
    refused = [e for e in lines if e.get("reconcile") and e.get("error")]
    return {
        "objects": args.objects,
        "cycles": args.cycles,
        "shard_processes": fleet.started,
        "changes": changes,
        "faults_s": round(took, 1),
        "logs": found.figures(),
        "overlaps": found.overlaps[:20],
        "late_writes_in_logs": found.late_writes[:20],
        "acknowledgement_to_new_owner_s": {
            "count": len(latencies),
            "p50": round(_percentile(latencies, 0.50), 3),
            "p99": round(_percentile(latencies, 0.99), 3),
            "max": round(max(latencies, default=0.0), 3),
        },
        "hand_back_to_new_owner_s": {
            "count": len(handed),
            "p50": round(_percentile(handed, 0.50), 3),
            "p99": round(_percentile(handed, 0.99), 3),
            "max": round(max(handed, default=0.0), 3),
        },
        "audit": audit,
        "audit_violations": violations[:20],
        # the log kept everything: the creates of the objects, the first writes, are in it
        "audit_complete": len(
            {e.name for e in events if e.verb == "create" and e.name in set(names)}
        )
        == len(names),
        "reconciles_failed": {
            error: sum(1 for e in refused if e["error"] == error)
            for error in sorted({e["error"] for e in refused})
        },
        "in_flight_at_freeze": in_flight_at_freeze(lines, run.faults),
        "faults": run.faults,
    }


def table(result: dict[str, Any]) -> str:
    logs, audit, gap = result["logs"], result["audit"], result["acknowledgement_to_new_owner_s"]
    kinds: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for fault in result["faults"]:
        kinds[fault["fault"]].append(fault)
    rows = [
        ("cycles / shard processes started", f"{result['cycles']} / {result['shard_processes']}"),
        ("reconciles / handovers (logs)", f"{logs['reconciles']} / {logs['handovers']}"),
        (
            "drains acknowledged / assignments",
            f"{logs['acknowledgements']} / {audit['assignments']}",
        ),
        ("overlapping reconciles (logs)", str(logs["overlapping_reconciles"])),
        ("writes after an acknowledgement (logs)", str(logs["writes_after_acknowledgement"])),
        (
            "key writes checked / handovers (audit)",
            f"{audit['key_writes_checked']} / {audit['handovers_in_audit']}",
        ),
        (
            "key writes by a shard not holding the key (audit)",
            str(audit["key_writes_not_holding_the_key"]),
        ),
        ("writes after a resume or a delay (audit)", str(audit["writes_after_freeze_or_delay"])),
        (
            "key handed back -> new owner's reconcile",
            "p50 {p50} s, p99 {p99} s, max {max} s ({count})".format(
                **result["hand_back_to_new_owner_s"]
            ),
        ),
        (
            "acknowledgement -> new owner's reconcile",
            f"p50 {gap['p50']} s, p99 {gap['p99']} s, max {gap['max']} s ({gap['count']})",
        ),
    ]
    for kind, faults in kinds.items():
        figures = {k: v for k, v in faults[0].items() if k.endswith("_s") or k == "exit_code"}
        spread = {
            k: f"{min(f[k] for f in faults)}-{max(f[k] for f in faults)}"
            if isinstance(v, float)
            else sorted({f[k] for f in faults})
            for k, v in figures.items()
        }
        rows.append((f"{kind} x{len(faults)}", json.dumps(spread, ensure_ascii=False)))
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{r[0]:<{width}}  {r[1]}" for r in rows)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cluster", default="shard-bench")
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--cycles", type=int, default=4)
    parser.add_argument("--handovers", type=int, default=1000, help="at least this many")
    parser.add_argument("--p99-bound", type=float, default=2.0, help="seconds")
    parser.add_argument("--json")
    parser.add_argument("--keep", action="store_true", help="keep the cluster afterwards")
    args = parser.parse_args()
    if args.objects < 10 or args.cycles < 1:
        parser.error("--objects must be at least 10 and --cycles at least 1")
    policy = cache_root() / f"{args.cluster}-audit-policy.yaml"  # beside the cluster's own
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text(yaml.safe_dump(request_audit_policy()))
    flags = ["--audit-log-maxsize=1000", f"--audit-policy-file={policy}"]  # the last wins
    cluster = LocalCluster(args.cluster, extra_args={"kube-apiserver": flags})
    load = os.getloadavg()
    cluster.up()
    logs = Path(tempfile.mkdtemp(prefix="sharding-faults-"))
    try:
        result = await drive(args, cluster, logs)
    finally:
        if not args.keep:
            cluster.down()
    result["load_before"] = [round(x, 2) for x in load]
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    result["cpus"] = os.cpu_count()
    print(table(result))
    print(f"shard logs: {logs}")
    problems = [*result["overlaps"], *result["late_writes_in_logs"], *result["audit_violations"]]
    for problem in problems:
        print("violation:", problem)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    failed = (
        problems
        or result["logs"]["handovers"] < args.handovers
        or result["acknowledgement_to_new_owner_s"]["p99"] > args.p99_bound
        or result["hand_back_to_new_owner_s"]["p99"] > args.p99_bound
        or not result["audit_complete"]
        or any(f.get("exit_code", 1) != 1 for f in result["faults"] if f["fault"] == "SIGSTOP")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
