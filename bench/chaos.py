"""Chaos under load: nothing lost, nothing duplicated, no write without the Lease.

On one local cluster (its own, started here: ``--cluster``), two operator replicas
(``appstack run --leader-elect``, processes with distinct user agents, the operator's
ServiceAccount) run while 1,000 AppServices and 50 AppStacks (copies of
examples/dataservice.yaml: a managed MySQL and 11 components in 8 dependency waves) are
created in batches; between batches, in turn, the Lease holder is SIGKILLed (three times;
a replacement starts as a Deployment would), the API server is restarted (twice) and etcd
(once). Afterwards it checks (appstack_testbed.chaos): every object converged, every child
exactly once and owned by its parent, nothing lost, and — from the API server's audit log —
no write by a replica that did not hold the Lease when the write was received.

Prints a table, writes JSON (``--json``), exits 1 if a check fails. Bounded: a global
``--timeout``. The cluster is deleted afterwards unless ``--keep``.

Usage: python bench/chaos.py [--apps 1000] [--stacks 50] [--json docs/chaos.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import yaml

from appstack.api.namespaces import ENABLED
from appstack.runtime import CONFIG_MAP, NAMESPACE, Client
from appstack_testbed import demo
from appstack_testbed.chaos_run import Outcome, Plan, run, small_stack
from appstack_testbed.cluster import LocalCluster

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dataservice.yaml"
FAULTS = "leader,kube-apiserver,leader,etcd,leader,kube-apiserver"


def dataservice(namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the init-scripts ConfigMap, the AppStack) of the example, node ports removed."""
    init, stack = yaml.safe_load_all(EXAMPLE.read_text())
    for component in stack["spec"]["components"]:
        for port in component.get("ports", []):
            port.pop("nodePort", None)  # node ports are cluster-wide
    init["metadata"]["namespace"] = namespace
    return init, stack


def table(outcome: Outcome) -> str:
    f = outcome.figures
    rows = [("fault", "at", "measured")]
    for fault in f["faults"]:
        if fault["fault"] == "leader":
            figure = f"Lease taken over after {fault['takeover_s']} s"
        else:
            figure = f"down and back healthy in {fault['outage_s']} s"
        rows.append((fault["fault"], f"{fault['at_s']} s", figure))
    c = f["children"]
    rows += [
        ("converged after the last fault", "", f"{f['converge_after_last_fault_s']} s"),
        ("whole run", "", f"{f['run_s']} s"),
        ("objects (AppServices, AppStacks)", "", f"{f['appservices']}, {f['appstacks']}"),
        ("not converged / lost", "", f"{f['not_converged']} / {f['parents_lost']}"),
        ("children expected / found", "", f"{c['expected']} / {c['found']} {c['per_kind']}"),
        (
            "children missing / duplicated / orphaned",
            "",
            f"{c['missing']} / {c['duplicates']} / {c['orphans']}",
        ),
        (
            "replicas started (exit codes)",
            "",
            f"{f['replicas_started']} {[e['code'] for e in f['replica_exits']]}",
        ),
        ("leaders (audit log)", "", str(f["leader_tenures_in_audit"])),
        (
            "writes by replicas / without the Lease",
            "",
            f"{f['replica_writes']} / {f['writes_without_lease']}",
        ),
    ]
    width = [max(len(r[i]) for r in rows) for i in range(2)]
    return "\n".join(f"{r[0]:<{width[0]}}  {r[1]:>{width[1]}}  {r[2]}" for r in rows)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cluster", default="chaos-bench")
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--stacks", type=int, default=50)
    parser.add_argument("--stack", choices=["dataservice", "small"], default="dataservice")
    parser.add_argument("--faults", default=FAULTS, help="comma-separated, in order")
    parser.add_argument("--concurrency", type=int, default=16, help="operator --concurrency")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--operator-log-level", default="warning", help="e.g. info, to diagnose")
    parser.add_argument("--json")
    parser.add_argument("--keep", action="store_true", help="keep the cluster afterwards")
    args = parser.parse_args()

    # A log big enough for the whole run: the check needs every write since the start.
    cluster = LocalCluster(
        args.cluster, extra_args={"kube-apiserver": ["--audit-log-maxsize=1000"]}
    )
    cluster.up()
    try:
        operator_kubeconfig = demo.install(cluster)
        namespace = f"chaos-{uuid.uuid4().hex[:6]}"
        init, stack = dataservice(namespace)
        prelude = [(CONFIG_MAP, init)] if args.stack == "dataservice" else []
        plan = Plan(
            namespace,
            apps=args.apps,
            stacks=args.stacks,
            stack=stack if args.stack == "dataservice" else small_stack(),
            faults=args.faults.split(","),
            prelude=prelude,
            operator_args=(
                f"--concurrency={args.concurrency}",
                f"--log-level={args.operator_log_level}",
            ),
            timeout=args.timeout,
        )
        async with await Client.connect(str(cluster.kubeconfig)) as client:
            body = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": namespace, "labels": {ENABLED: "true"}},
            }
            await client.create(NAMESPACE, body)
        logs = Path(tempfile.mkdtemp(prefix="chaos-logs-"))
        outcome = await run(cluster, operator_kubeconfig, plan, logs, say=print)
    finally:
        if not args.keep:
            cluster.down()
    result = {**outcome.figures, "stack": args.stack, "audit_complete": outcome.audit_complete}
    print(table(outcome))
    print(f"operator logs: {logs}")
    for problem in [
        *outcome.children.missing,
        *outcome.children.duplicates,
        *outcome.children.orphans,
    ][:20]:
        print("child problem:", problem)
    for write in outcome.unfenced[:20]:
        print("write without the Lease:", write)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    failed = not outcome.children.ok or outcome.unfenced or outcome.lost or outcome.pending
    return 1 if failed or not outcome.audit_complete else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
