"""``make demo``: the operator running on the local cluster, as it would in production.

Installs the generated CRDs and RBAC, starts ``appstack run`` in the background with a
token of its ServiceAccount (so it has exactly the generated permissions), applies
``examples/appservice.yaml`` (the seed operator's sample) and waits until it is Ready,
then applies ``examples/dataservice.yaml`` (an AppStack of 12 members) and prints its
members as they come up in dependency order.
The operator is a managed process of the cluster: ``appstack cluster down`` stops it too.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from appstack.controllers.appstack.labels import STACK_LABEL
from appstack.manifests import bundle, crds, rbac, workload
from appstack_testbed.cluster import LocalCluster

OPERATOR = "appstack-operator"


def install(cluster: LocalCluster) -> Path:
    """Apply CRDs, RBAC and admission policies; return a kubeconfig with the operator's
    ServiceAccount token."""
    objects = [
        workload.namespace(),
        *crds.all_crds(),
        *bundle.permissions(),  # RBAC and the admission policies, as installed
    ]
    cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=appstack-demo",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(objects),
    )
    for crd in crds.all_crds():
        cluster.kubectl(
            "wait", "--for=condition=Established", "--timeout=30s", f"crd/{crd['metadata']['name']}"
        )
    token = cluster.kubectl(
        "create", "token", rbac.NAME, f"--namespace={rbac.NAMESPACE}", "--duration=24h"
    ).stdout.strip()
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"] = [{"name": rbac.NAME, "user": {"token": token}}]
    config["contexts"][0]["context"]["user"] = rbac.NAME
    path = cluster.directory / "config" / "operator.kubeconfig"
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump(config))
    return path


def start_operator(cluster: LocalCluster, kubeconfig: Path) -> int:
    proc = cluster.process(OPERATOR)
    if proc.running():
        proc.stop()  # pick up new code and a fresh token
    return proc.start(
        [
            sys.executable,
            "-m",
            "appstack",
            "run",
            f"--kubeconfig={kubeconfig}",
            "--metrics-bind-address=127.0.0.1:0",
            "--health-probe-bind-address=127.0.0.1:0",
            "--log-format=json",
        ]
    )


def watch_stack(
    cluster: LocalCluster, name: str, say: Callable[[str], None], timeout: float = 180.0
) -> None:
    """Print the stack's members whenever their states change, until it is Ready."""
    last = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = cluster.kubectl("get", f"appstack/{name}", "-o", "json", check=False)
        status = (json.loads(out.stdout).get("status") or {}) if out.returncode == 0 else {}
        members = status.get("members") or []
        line = "  ".join(f"{m['name']}={m['state']}" for m in members)
        if line and line != last:
            say(f"[{status.get('readyMembers', '?')}] {line}")
            last = line
        if members and all(m["state"] == "Ready" for m in members):
            return
        time.sleep(0.5)
    raise TimeoutError(f"AppStack {name} was not Ready within {timeout:.0f}s")


def run(
    cluster: LocalCluster,
    example: Path,
    say: Callable[[str], None],
    stack_example: Path | None = None,
) -> None:
    cluster.up()
    say("\n$ kubectl get nodes")
    say(cluster.kubectl("get", "nodes").stdout)
    kubeconfig = install(cluster)
    pid = start_operator(cluster, kubeconfig)
    say(
        f"operator running (pid {pid}) as ServiceAccount {rbac.NAMESPACE}/{rbac.NAME}; "
        f"log: {cluster.process(OPERATOR).log_file}"
    )
    say(f"\n$ kubectl apply -f {example}")
    say(cluster.kubectl("apply", "-f", str(example)).stdout)
    name = yaml.safe_load(example.read_text())["metadata"]["name"]
    cluster.kubectl("wait", "--for=condition=Ready", f"appservice/{name}", "--timeout=90s")
    for args in (
        ["get", "appservice,deployment,service,pods", "-o", "wide"],
        ["events", f"--for=appservice/{name}"],
        ["get", "pods", "-A"],
    ):
        say(f"\n$ kubectl {' '.join(args)}")
        say(cluster.kubectl(*args).stdout)
    if stack_example is not None:
        say(f"\n$ kubectl apply -f {stack_example}")
        say(cluster.kubectl("apply", "-f", str(stack_example)).stdout)
        docs = [d for d in yaml.safe_load_all(stack_example.read_text()) if d]
        stack = next(d for d in docs if d.get("kind") == "AppStack")["metadata"]["name"]
        say("members as they start (each waits until what it depends on is ready):")
        watch_stack(cluster, stack, say)
        for args in (
            ["get", "appstack"],
            ["get", "statefulset,deployment", "-l", f"{STACK_LABEL}={stack}"],
        ):
            say(f"\n$ kubectl {' '.join(args)}")
            say(cluster.kubectl(*args).stdout)
    say(
        f"The cluster and the operator keep running. Try:\n"
        f"  export KUBECONFIG={cluster.kubeconfig}\n"
        f"  kubectl scale appservice/{name} --replicas=3   "
        f"(kubectl: {cluster.toolchain.binary('kubectl')})\n"
        f"Stop everything with: make demo-down  (appstack cluster down)"
    )
