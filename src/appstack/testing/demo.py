"""``make demo``: the operator running on the local cluster, as it would in production.

Installs the generated CRDs and RBAC, starts ``appstack run`` in the background with a
token of its ServiceAccount (so it has exactly the generated permissions), applies
``examples/appservice.yaml`` (the seed operator's sample) and waits until it is Ready.
The operator is a managed process of the cluster: ``appstack cluster down`` stops it too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from appstack.manifests import crds, operator, rbac
from appstack.testing.cluster import LocalCluster

OPERATOR = "appstack-operator"


def install(cluster: LocalCluster) -> Path:
    """Apply CRDs and RBAC; return a kubeconfig with the operator's ServiceAccount token."""
    objects = [
        operator.namespace(),
        *crds.all_crds(),
        rbac.service_account(),
        rbac.cluster_role(),
        rbac.cluster_role_binding(),
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


def run(cluster: LocalCluster, example: Path, say: Callable[[str], None]) -> None:
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
    say(
        f"The cluster and the operator keep running. Try:\n"
        f"  export KUBECONFIG={cluster.kubeconfig}\n"
        f"  kubectl scale appservice/{name} --replicas=3   "
        f"(kubectl: {cluster.toolchain.binary('kubectl')})\n"
        f"Stop everything with: make demo-down  (appstack cluster down)"
    )
