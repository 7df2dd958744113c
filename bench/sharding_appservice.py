"""appstack's own operator sharded (issue #50): N AppServices created at once, then an
image update wave, with 1, 2, 3 and 4 ``appstack run --sharding`` processes.

bench/sharding_scale.py measures sharding with a test kind whose reconcile only waits;
this measures it with AppService, whose reconcile writes a Deployment and a Service and
whose status follows the Deployment's: the API server's writes, the controller-manager's
ReplicaSets and kwok's pods are part of every app's convergence. For each N (``--shards``),
in a fresh namespace enabled for appstack:

* N shards started — ``appstack run --sharding`` as processes of their own (each with its
  own ``POD_NAME``, so its own identity and shard Lease, its own /metrics port, the Leases
  in the namespace, ``--lease-duration`` Leases), run with the **admin kubeconfig**, not the
  operator's ServiceAccount under the sharded install's RBAC and guards
  (tests/e2e/test_sharding_install.py checks those): what is measured is the work, which
  the credentials do not change; then their N Leases awaited;
* M AppServices (``--objects``, 300) created at once (bench/converge.py's wave, 64 in
  flight): ``operator`` = the time until every one has its Deployment and Service and
  ``status.observedGeneration == generation``, ``ready`` = until every one is
  ``Ready=True``; then the image of all M changed, the same two times;
* per wave: the shards' CPU seconds (each, from /proc), the API requests they issued per
  app (summed over the shards' /metrics, by verb: the coordinator's label patches
  included), the API server's and etcd's cores (from /proc, when the cluster runs on this
  host), the whole machine's busy cores (/proc/stat), the load average;
* each shard's keys (its label on the AppServices, each checked against its owner by the
  rendezvous hash), its RSS before the wave and its peak RSS (VmHWM);
* against N = 1: the speed-up of each time, each shard's peak RSS over N = 1's, the
  busiest shard's keys over the mean.

Then, unless ``--no-scale-out``, one scale-out step with M objects (in a namespace of its
own, one shard): a second shard started once the M apps are Ready; the time until every
AppService is labelled to its owner among the two shards (no drain left) and Ready, the
keys moved (bench/sharding_scale.py's ``scale_out_moves``), then an image wave of all M on
the two shards (the moved keys reconciled by their new owner).

Each shard caches its own AppServices and their Deployments and Services (children follow
their root's shard label: docs/sharding.md, "Children follow their root"); the Pods the
Deployments make are cached whole by every shard. The shards' RSS and CPU say what each
costs; ``--objects`` at N shards against M/N at one shard is issue #50's RSS bound.

Usage:
  python bench/sharding_appservice.py --cluster bench-apps --json docs/sharding-appservice.json
      [--shards 1,2,3,4] [--objects 300] [--lease-duration 15] [--no-scale-out]
      [--operator-arg ARG ...]

``--cluster NAME``: a running local cluster (``appstack cluster up --name NAME
--real-nodes 0``: kwok nodes, 5,000 pods each); appstack's CRDs are applied to it. Records
are merged into an existing ``--json`` file by N, so sizes can be run apart.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import converge
import sharding_scale

from appstack.api.identity import IDENTITY
from appstack.api.namespaces import ENABLED
from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.rbac import LEASE_NAME
from appstack.manifests.crds import all_crds
from appstack.runtime import LEASE, NAMESPACE, Client, Resource, errors, owner, root_key

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.e2e.shard_harness

from tests.e2e.shard_harness import live_shards

SHARD, DRAIN = IDENTITY.shard_labels
SHARD_OF = f"{IDENTITY.key('shard-of')}={LEASE_NAME}"
CRD = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
IMAGES = ("nginx:1.27", "nginx:1.28", "nginx:1.29")  # created, updated, after the scale-out


def _log(message: str) -> None:
    print(f"[sharding-appservice {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr)


# --------------------------------------------------------------------------- pure parts
def key_of(namespace: str, name: str) -> str:
    """An AppService's key, as the shards' rendezvous hash sees it."""
    return root_key(APP_SERVICE.group, APP_SERVICE.kind, namespace, name)


def keys_summary(labels: Mapping[str, str]) -> dict[str, Any]:
    """From app name → the shard its label names: the keys per shard (most first) and the
    busiest shard's over the mean."""
    per_shard = Counter(labels.values())
    if not per_shard:
        return {"keys_per_shard": [], "busiest_x_mean": None}
    mean = len(labels) / len(per_shard)
    return {
        "keys_per_shard": sorted(per_shard.values(), reverse=True),
        "busiest_x_mean": round(max(per_shard.values()) / mean, 2),
    }


def _ready(app: Mapping[str, Any]) -> bool:
    status = app.get("status") or {}
    return status.get("observedGeneration") == app["metadata"].get("generation") and any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def off_owner(apps: list[Mapping[str, Any]], shards: set[str]) -> list[str]:
    """The names of the AppServices not settled on ``shards``: not labelled to their owner
    among them, carrying a drain label, or not Ready at their generation."""
    off = []
    for app in apps:
        meta = app["metadata"]
        labels = meta.get("labels") or {}
        mine = owner(key_of(meta["namespace"], meta["name"]), shards)
        if DRAIN in labels or labels.get(SHARD) != mine or not _ready(app):
            off.append(str(meta["name"]))
    return sorted(off)


def cores(before: Mapping[str, float], after: Mapping[str, float], seconds: float) -> dict:
    """CPU seconds used between two readings (process name → seconds) as cores over
    ``seconds``, named ``<process>_cores``."""
    if seconds <= 0:
        return {}
    return {f"{n}_cores": round((after[n] - before[n]) / seconds, 2) for n in sorted(after)}


def busy_seconds(stat: str) -> float:
    """The seconds every CPU of the machine spent busy (not idle, not waiting on I/O), from
    /proc/stat's text: its ``cpu`` line, in clock ticks."""
    fields = [int(x) for x in stat.splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / converge.TICKS


def _ratio(value: float | None, base: float | None) -> float | None:
    return round(value / base, 2) if value and base else None


def compare(runs: list[dict[str, Any]]) -> None:
    """Against N = 1 (when measured), on each run: ``speedup`` — N = 1's time over this
    run's, for each wave's ``operator_s`` and ``ready_s`` — and ``peak_rss_x_one_shard``:
    this run's largest and smallest shard peak RSS over N = 1's."""
    one = next((r for r in runs if r["shards"] == 1), None)
    if one is None:
        return
    base_rss = max(one["peak_rss_mib"].values())
    for run in runs:
        run["speedup"] = {
            f"{wave}_{what}": _ratio(one[wave][what], run[wave][what])
            for wave in ("create", "update")
            for what in ("operator_s", "ready_s")
        }
        peaks = run["peak_rss_mib"].values()
        run["peak_rss_x_one_shard"] = {
            "largest": _ratio(max(peaks), base_rss),
            "smallest": _ratio(min(peaks), base_rss),
        }


def merged(record: dict[str, Any], run: dict[str, Any]) -> list[dict[str, Any]]:
    """``record``'s runs with ``run`` in place of any of the same N, by N."""
    runs = [r for r in record.get("runs", []) if r["shards"] != run["shards"]] + [run]
    return sorted(runs, key=lambda r: int(r["shards"]))


# --------------------------------------------------------------------------- the shards
class Shards:
    """``appstack run --sharding`` processes watching one namespace, their Leases there:
    bench/converge.py's operator process, with a ``POD_NAME`` of its own each."""

    def __init__(self, kubeconfig: str, namespace: str, lease_s: int, extra: list[str]) -> None:
        self.kubeconfig, self.namespace = kubeconfig, namespace
        renew = max(1, lease_s * 2 // 3)
        self.args = [
            "--sharding",
            f"--leader-election-namespace={namespace}",
            f"--leader-elect-lease-duration={lease_s}s",
            f"--leader-elect-renew-deadline={renew}s",
            "--leader-elect-retry-period=1s",  # the coordinator looks every second
            *extra,
        ]
        self.procs: dict[str, tuple[subprocess.Popen[bytes], int]] = {}

    def start(self, name: str) -> None:
        port = converge._free_port()
        before = os.environ.get("POD_NAME")
        os.environ["POD_NAME"] = name  # the child's identity: <name>_<random>
        try:
            proc = converge.start_operator(self.kubeconfig, self.namespace, port, self.args)
        finally:
            if before is None:
                del os.environ["POD_NAME"]
            else:
                os.environ["POD_NAME"] = before
        self.procs[name] = (proc, port)

    def check(self) -> None:
        """Raise if a shard has exited (a lost Lease ends the process with 1)."""
        for name, (proc, _) in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"shard {name} exited with {proc.returncode}")

    async def metrics_up(self) -> None:
        for _, port in self.procs.values():
            await converge._metrics_up(port)

    def usage(self) -> dict[str, tuple[float, int]]:
        """Shard → (CPU seconds, peak RSS KiB)."""
        return {n: converge._proc_usage(p.pid) for n, (p, _) in self.procs.items()}

    def rss_mib(self) -> dict[str, float]:
        return {
            n: round(sharding_scale._status_kib(p.pid, "VmRSS") / 1024, 1)
            for n, (p, _) in self.procs.items()
        }

    def requests(self) -> dict[str, float]:
        """``rest_client_requests_total`` by verb, summed over the shards."""
        totals: dict[str, float] = {}
        for _, port in self.procs.values():
            for verb, count in converge.requests_by_verb(port).items():
                totals[verb] = totals.get(verb, 0.0) + count
        return totals

    def stop_all(self) -> dict[str, int | None]:
        """SIGTERM to each (they hand their keys back), then their exit codes."""
        for proc, _ in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes: dict[str, int | None] = {}
        for name, (proc, _) in self.procs.items():
            try:
                codes[name] = proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                codes[name] = None
        return codes


async def coordinator_of(client: Client, namespace: str) -> str:
    lease = await client.get(LEASE, LEASE_NAME, namespace)
    return str(lease["spec"].get("holderIdentity") or "").split("_")[0]


async def app_labels(client: Client, namespace: str) -> dict[str, str]:
    """App name → the shard its label names ("" for none)."""
    items, _ = await client.list(APP_SERVICE.metadata_only(), namespace)
    return {
        o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get(SHARD, "") for o in items
    }


async def guarded(work: Any, shards: Shards) -> Any:
    """Await ``work`` while checking every second that no shard has exited."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=1.0)
            if done:
                return task.result()
            shards.check()
    finally:
        task.cancel()


async def delete_namespace(client: Client, namespace: str) -> float:
    """Delete it and wait until it is gone (its Deployments, ReplicaSets and pods
    collected), so that the next run does not share the machine with the collection."""
    started = time.monotonic()
    await client.delete(NAMESPACE, namespace)
    while time.monotonic() - started < 600:
        try:
            await client.get(NAMESPACE, namespace)
        except errors.NotFound:
            return round(time.monotonic() - started, 1)
        await asyncio.sleep(1.0)
    raise TimeoutError(f"namespace {namespace} not gone within 600 s")


async def install_crds(client: Client) -> None:
    for crd in all_crds():
        await client.apply(CRD, crd)
    for crd in all_crds():
        name = crd["metadata"]["name"]
        for _ in range(300):
            got = await client.get(CRD, name)
            conditions = (got.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            await asyncio.sleep(0.1)
        else:
            raise TimeoutError(f"CRD {name} not established")


# --------------------------------------------------------------------------- one run
class Readings:
    """The shards', the API server's and etcd's CPU, the shards' requests, at one moment."""

    def __init__(self, shards: Shards, plane: dict[str, int]) -> None:
        self.at = time.monotonic()
        self.usage = shards.usage()
        self.requests = shards.requests()
        self.plane = {name: sharding_scale._cpu_s(pid) for name, pid in plane.items()}
        self.plane["machine"] = busy_seconds(Path("/proc/stat").read_text())

    def figures(self, after: Readings, wave: dict[str, float], m: int) -> dict[str, Any]:
        seconds = after.at - self.at
        cpu = {n: round(after.usage[n][0] - self.usage[n][0], 2) for n in after.usage}
        return {
            **wave,
            "shards_cpu_s": cpu,
            "cpu_ms_per_app": round(sum(cpu.values()) * 1000 / m, 1),
            "requests_per_app": converge._per_app(self.requests, after.requests, m),
            **cores(self.plane, after.plane, seconds),
            "load_average": sharding_scale._load(),
        }


async def start_shards(client: Client, shards: Shards, pods: list[str]) -> None:
    for pod in pods:
        shards.start(pod)
    await sharding_scale.until(
        lambda: _holding(client, shards.namespace, set(pods)), 120, "shard Leases", shards
    )
    await shards.metrics_up()


async def _holding(client: Client, namespace: str, pods: set[str]) -> bool:
    return set(await live_shards(client, namespace, SHARD_OF)) == pods


async def waves(
    client: Client, shards: Shards, m: int, plane: dict[str, int]
) -> tuple[dict[str, Any], dict[str, Any], converge.Watch]:
    """M AppServices created at once, then their images changed: each wave's figures (and
    the watch, still running, for what follows)."""
    namespace = shards.namespace
    watch = converge.Watch(client, namespace)
    await watch.apps.wait_synced()
    await asyncio.sleep(1.0)  # as bench/converge.py: the shards' caches synced
    r0 = Readings(shards, plane)
    created = await guarded(
        converge._wave(client, watch, namespace, m, IMAGES[0], create=True), shards
    )
    r1 = Readings(shards, plane)
    updated = await guarded(
        converge._wave(client, watch, namespace, m, IMAGES[1], create=False), shards
    )
    r2 = Readings(shards, plane)
    return r0.figures(r1, created, m), r1.figures(r2, updated, m), watch


async def measure(
    client: Client, kubeconfig: str, n: int, args: argparse.Namespace, plane: dict[str, int]
) -> dict[str, Any]:
    namespace = await sharding_scale.new_namespace(client, f"bench-apps{n}", {ENABLED: "true"})
    shards = Shards(kubeconfig, namespace, args.lease_duration, args.operator_arg)
    pods = [f"s{i}" for i in range(n)]
    watch = None
    try:
        await start_shards(client, shards, pods)
        idle = shards.rss_mib()
        create, update, watch = await waves(client, shards, args.objects, plane)
        live = await live_shards(client, namespace, SHARD_OF)
        labels = await app_labels(client, namespace)
        apps, _ = await client.list(APP_SERVICE, namespace)
        run = {
            "shards": n,
            "objects": args.objects,
            "create": create,
            "update": update,
            **keys_summary(labels),
            "off_owner": len(off_owner(apps, set(live.values()))),
            "coordinator": await coordinator_of(client, namespace),
            "idle_rss_mib": idle,
            "rss_mib": shards.rss_mib(),
            "peak_rss_mib": {p: round(kib / 1024, 1) for p, (_, kib) in shards.usage().items()},
        }
    finally:
        if watch is not None:
            watch.stop()
        codes = shards.stop_all()
    run["exit_codes"] = codes
    run["namespace_deleted_s"] = await delete_namespace(client, namespace)
    return run


async def scale_out(
    client: Client, kubeconfig: str, args: argparse.Namespace, plane: dict[str, int]
) -> dict[str, Any]:
    """One shard and M Ready apps, then a second shard: until every app is on its owner
    among the two and Ready; the keys moved; then an image wave on the two."""
    namespace = await sharding_scale.new_namespace(client, "bench-apps-out", {ENABLED: "true"})
    shards = Shards(kubeconfig, namespace, args.lease_duration, args.operator_arg)
    watch = None
    try:
        await start_shards(client, shards, ["s0"])
        _, _, watch = await waves(client, shards, args.objects, plane)
        before = await app_labels(client, namespace)
        r0 = Readings(shards, {})
        started = time.monotonic()
        shards.start("s1")
        live: dict[str, str] = {}
        held: list[float] = []  # when the new shard's Lease was first seen held

        async def settled() -> bool:
            live.update(await live_shards(client, namespace, SHARD_OF))
            if set(live) != {"s0", "s1"}:
                return False
            held[:] = held or [time.monotonic() - started]
            apps, _ = await client.list(APP_SERVICE, namespace)
            return len(apps) == args.objects and not off_owner(apps, set(live.values()))

        await sharding_scale.until(settled, 600, "every app on its owner of two", shards)
        took = time.monotonic() - started
        r1 = Readings(shards, {})
        after = await app_labels(client, namespace)
        moves = sharding_scale.scale_out_moves(before, after, live["s1"])
        wave = await guarded(
            converge._wave(client, watch, namespace, args.objects, IMAGES[2], create=False),
            shards,
        )
        r2 = Readings(shards, {})
        return {
            "from": 1,
            "to": 2,
            "objects": args.objects,
            "new_lease_held_s": round(held[0], 1),
            "settled_s": round(took, 1),
            **moves,
            "keys_per_s": round(moves["moved"] / took, 1),
            "settling_requests_per_moved_key": _ratio(
                sum(r1.requests.values()) - sum(r0.requests.values()), moves["moved"]
            ),
            "load_average": sharding_scale._load(),
            "update_after": r1.figures(r2, wave, args.objects),
            "peak_rss_mib": {p: round(kib / 1024, 1) for p, (_, kib) in shards.usage().items()},
        }
    finally:
        if watch is not None:
            watch.stop()
        shards.stop_all()
        await delete_namespace(client, namespace)


async def main(args: argparse.Namespace, kubeconfig: str, cluster_dir: Path | None) -> None:
    plane = sharding_scale.control_plane(cluster_dir)
    record: dict[str, Any] = {}
    if args.json and Path(args.json).exists():  # runs by N are merged into one record
        record = json.loads(Path(args.json).read_text())
    record.update({
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cores": os.cpu_count(),
        "load_average_before": sharding_scale._load(),
        "credentials": "the cluster's admin kubeconfig (not the operator's ServiceAccount)",
        "lease_duration_s": args.lease_duration,
        "operator_args": args.operator_arg,
        "control_plane_pids_found": sorted(plane),
    })  # fmt: skip

    def save() -> None:
        if args.json:
            Path(args.json).write_text(json.dumps(record, indent=2) + "\n")

    async with await Client.connect(kubeconfig, field_manager="bench") as client:
        await install_crds(client)
        for n in (int(s) for s in args.shards.split(",")):
            run = await measure(client, kubeconfig, n, args, plane)
            record["runs"] = merged(record, run)
            compare(record["runs"])
            _log(f"N={n}: {json.dumps(run)}")
            save()
        if args.scale_out:
            record["scale_out"] = await scale_out(client, kubeconfig, args, plane)
            _log(f"scale-out: {json.dumps(record['scale_out'])}")
    record["load_average_after"] = sharding_scale._load()
    save()
    print(json.dumps(record, indent=2))


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--cluster", help="a running local cluster (appstack cluster up)")
    where.add_argument("--kubeconfig")
    parser.add_argument("--shards", default="1,2,3,4")
    parser.add_argument("--objects", type=int, default=300, help="M AppServices")
    parser.add_argument(
        "--lease-duration", type=int, default=15, help="seconds (renew deadline 2/3 of it)"
    )
    parser.add_argument("--scale-out", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--operator-arg", action="append", default=[])
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.lease_duration < 2:
        parser.error("--lease-duration: at least 2 s (the renew deadline is 2/3 of it)")
    asyncio.run(main(args, *sharding_scale.target(parser, args)))


if __name__ == "__main__":
    cli()
