"""Side by side: appstack against the API server's raw write floor, the seed's own
controller (kosmos-io/simple-controller, built from its repository) and a kopf peer — one
invocation, one cluster. Our Go re-implementation of the seed is a peer too, labelled so.

For each size N and each repeat, one after another, each in a fresh namespace that is
deleted (and waited for) before the next: the raw floor (the same 2N child creates, 64 in
flight, then N Deployment image patches), optionally the full floor (``floor-full``:
also the AppService writes and a status write per app, done directly, see
``peerbench/fullfloor.py``), then every peer: N AppServices of size 1
created at once, timed until each has its Deployment and Service owned by it (and, for a
peer that writes status, ``status.observedGeneration == generation``), then the image of
all N changed, timed the same way. Per wave: seconds, apps/s, x floor, operator CPU
(ms per app) and peak RSS from /proc, requests per app by method (from the peer's
``rest_client_requests_total``, appstack and Go), writes per app (API server audit log).

Usage:
  python bench/peers.py --cluster bench [--sizes 100,1000] [--repeat 2]
      [--peers floor,floor-full,appstack,appstack-tuned,seed,go-seed-reimplementation,kopf]
      [--seed-binary PATH --seed-crd PATH] [--tuned=--concurrency=16]
      [--base-source DIR --peers ...,appstack-base,...]
      [--json docs/peers.json] [--plot docs/peers.png] [--docs docs/performance.md]
  python bench/peers.py --cluster bench --startup 10000   # process start -> first reconcile
  python bench/peers.py --cluster bench --restart 3000 --peers appstack-base,appstack \
      --base-source DIR   # a change made while catching up after a restart: acted on when

``--cluster NAME`` starts (or reuses) the local test bed and installs the CRDs;
``--kubeconfig`` uses any cluster (no audit counts then). The ``seed`` peer needs the
seed's binary and CRD by path (``--seed-binary``/``--seed-crd`` or $APPSTACK_SEED_BINARY/
$APPSTACK_SEED_CRD; how to build them: docs/performance.md); its CRD is installed too.
``--stacks 300`` instead runs bench/stacks.py's AppStack measurement (appstack only,
default flags).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peerbench import report, seed
from peerbench.operators import LEGACY_KEYS, REIMPLEMENTATION_LABEL, peers
from peerbench.run import measure_floor, measure_peer
from peerbench.startup import measure_startup
from peerbench.startup import table as startup_table

ROOT = Path(__file__).resolve().parents[1]


def _cluster(name: str) -> tuple[str, Path]:
    from appstack_testbed.cluster import LocalCluster  # noqa: PLC0415

    cluster = LocalCluster(name)
    cluster.up()
    subprocess.run(
        [cluster.toolchain.binary("kubectl"), f"--kubeconfig={cluster.kubeconfig}",
         "apply", "--server-side", "-f", str(ROOT / "deploy" / "crds")],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return str(cluster.kubeconfig), cluster.directory


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} (1/5 min), {os.cpu_count()} cores"


async def run(args: argparse.Namespace, kubeconfig: str, cluster_dir: Path | None) -> list[Any]:
    known = peers(tuple(args.tuned.split()), args.base_source, args.seed_binary)
    wanted = args.peers.split(",")
    log_dir = Path(tempfile.mkdtemp(prefix="peers-logs-"))
    print(f"[peers] operator logs in {log_dir}", file=sys.stderr)
    records: list[dict[str, Any]] = []
    for n in (int(s) for s in args.sizes.split(",")):
        for repeat in range(args.repeat):
            order = wanted if repeat % 2 == 0 or not args.alternate else wanted[::-1]
            for key in order:
                load = _load()
                print(f"[peers] N={n} repeat {repeat}: {key} ({load})", file=sys.stderr)
                if key in ("floor", "floor-full"):
                    record = await measure_floor(kubeconfig, n, full=key == "floor-full")
                else:
                    record = await measure_peer(
                        kubeconfig, known[key], n, cluster_dir=cluster_dir, log_dir=log_dir
                    )
                record.update(repeat=repeat, load_before=load)
                print(json.dumps(record), flush=True)
                records.append(record)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--cluster", help="local test bed name (started if down)")
    target.add_argument("--kubeconfig")
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--peers", default="floor,appstack,appstack-tuned,seed,kopf")
    parser.add_argument("--seed-binary", help=f"the seed's controller (or ${seed.BINARY_ENV})")
    parser.add_argument("--seed-crd", help=f"the seed's deploy/crd.yaml (or ${seed.CRD_ENV})")
    parser.add_argument("--tuned", default="--concurrency=16", help="appstack-tuned's flags")
    parser.add_argument("--base-source", help="appstack-base's source tree (holds src/)")
    parser.add_argument("--alternate", action="store_true", help="odd repeats in reverse order")
    parser.add_argument("--json")
    parser.add_argument("--plot")
    parser.add_argument("--docs", help="rewrite the marked table section of this Markdown file")
    parser.add_argument("--from-log", help="only render the records (JSON lines) of a past run")
    parser.add_argument("--base-label", help="the table's name for appstack-base")
    parser.add_argument("--stacks", type=int, help="only: N DataService AppStacks (appstack)")
    parser.add_argument("--startup", type=int, help="only: start-up with N existing AppServices")
    parser.add_argument(
        "--restart", type=int, help="only: a change made while catching up with N converged apps"
    )
    args = parser.parse_args()
    if args.from_log:
        lines = Path(args.from_log).read_text().splitlines()
        records = [json.loads(line) for line in lines if line.startswith("{")]
        render(args, records, started=None)
        return
    if not (args.cluster or args.kubeconfig):
        parser.error("one of --cluster, --kubeconfig (or --from-log) is required")
    try:
        crd = seed_peer(args)
    except seed.SeedError as err:
        parser.error(str(err))
    if args.cluster:
        kubeconfig, cluster_dir = _cluster(args.cluster)
    else:
        kubeconfig, cluster_dir = args.kubeconfig, None
    if crd is not None:
        asyncio.run(_install_seed_crd(kubeconfig, crd))
    if args.stacks:
        from stacks import measure as measure_stacks  # noqa: PLC0415 - bench/stacks.py

        result = asyncio.run(measure_stacks(kubeconfig, args.stacks))
        print(json.dumps(result))
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1))
        return
    if args.restart or args.startup:
        _starts(args, kubeconfig)
        return
    started = datetime.datetime.now(datetime.timezone.utc)
    records = asyncio.run(run(args, kubeconfig, cluster_dir))
    render(args, records, started)


def seed_peer(args: argparse.Namespace) -> dict[str, Any] | None:
    """With ``seed`` among ``--peers``: resolve its binary and CRD paths into ``args`` and
    return its CRD (:class:`~peerbench.seed.SeedError` if either is missing or not the
    seed's); else None."""
    if "seed" not in args.peers.split(","):
        return None
    binary, crd = seed.paths(args.seed_binary, args.seed_crd)
    args.seed_binary, args.seed_crd = str(binary), str(crd)
    return seed.read_crd(crd.read_text())


async def _install_seed_crd(kubeconfig: str, crd: dict[str, Any]) -> None:
    from appstack.runtime.client import Client  # noqa: PLC0415

    async with await Client.connect(kubeconfig) as client:
        await seed.install_crd(client, crd)


def relabel(records: list[dict[str, Any]], base_label: str | None = None) -> None:
    """Older runs called our Go re-implementation ``go-seed``: give it its name and label
    (no table calls it the seed); name appstack-base as ``--base-label`` says."""
    for record in records:
        if record["peer"] in LEGACY_KEYS:
            record.update(peer=LEGACY_KEYS[record["peer"]], label=REIMPLEMENTATION_LABEL)
        if record["peer"] == "appstack-base" and base_label:
            record["label"] = base_label


def _starts(args: argparse.Namespace, kubeconfig: str) -> None:
    """``--startup N`` or ``--restart N``: print the table, write the JSON."""
    from peerbench import restart  # noqa: PLC0415

    known = peers(tuple(args.tuned.split()), args.base_source, args.seed_binary)
    wanted = [known[k] for k in args.peers.split(",") if k != "floor"]
    if args.restart:
        results = asyncio.run(restart.measure_restart(kubeconfig, wanted[0], wanted, args.restart))
        print(restart.table(results))
    else:
        results = asyncio.run(measure_startup(kubeconfig, wanted, args.startup))
        print(startup_table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def render(args: argparse.Namespace, records: list[Any], started: Any) -> None:
    """Print the table; write the JSON, the plot and the docs section as asked."""
    relabel(records, args.base_label)
    rows = report.summarise(records)
    text = report.table(rows)
    print(text)
    meta = {
        "command": "python bench/peers.py " + " ".join(sys.argv[1:]),
        "started": started.isoformat(timespec="seconds") if started else None,
        "load_at_end": _load(),
    }
    if args.json:
        Path(args.json).write_text(json.dumps({**meta, "rows": rows, "runs": records}, indent=1))
    if args.plot:
        from peerbench.plot import plot  # noqa: PLC0415

        plot(rows, args.plot)
    if args.docs:
        when = meta["started"] or f"rendered from {args.from_log}"
        note = (
            f"`{meta['command']}` — {when}; machine {meta['load_at_end']} at the end "
            "(shared with other work). Medians, (min-max) over the repeats."
        )
        doc = Path(args.docs)
        doc.write_text(report.replace_section(doc.read_text(), f"{note}\n\n{text}\n"))


if __name__ == "__main__":
    main()
