"""The operator installed as users install it, running as pods on a real node: the locally
built image (the Dockerfile's contents) pulled from the local registry, under its
ServiceAccount's projected token with the generated RBAC and admission policies, the
in-cluster configuration, probes and a read-only root filesystem.

With the Helm chart: install, the operator reconciling the seed's sample end to end (its
nginx answering), ``helm test`` really GETting ``/metrics``, an upgrade to another image,
and an uninstall that leaves nothing of the operator (the CRDs stay, as documented). Then
with ``deploy/install.yaml`` and ``appstack uninstall``, which leaves nothing at all.
On a cluster of its own: an installed operator reconciles every enabled namespace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from appstack import __version__
from appstack.api.namespaces import ENABLED
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.helm import Helm
from appstack_testbed.image import build_image
from appstack_testbed.images.build import push_archive
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.registry import LocalRegistry
from appstack_testbed.waiting import eventually_sync
from tests.e2e.scrape_installed import scrape_installed
from tests.e2e.test_real_node import http_get

ROOT = Path(__file__).resolve().parents[2]
NS = "appstack-system"
IMAGE = f"appstack:{__version__}"
NEXT = f"appstack:{__version__}-next"


def _say(message: str) -> None:
    print(message, file=sys.__stderr__, flush=True)


@pytest.fixture(scope="module")
def cluster(kube_cluster: ClusterHandle) -> Iterator[LocalCluster]:
    kube_cluster.require_local()
    if os.geteuid() != 0:
        pytest.skip("a real node (and the daemonless image build) needs root")
    built = build_image(printer=_say)
    registry = LocalRegistry(_say)
    for ref in (IMAGE, NEXT):  # the same contents under a second name, for the upgrade
        push_archive(built.archive, ref, registry, _say)
    local = LocalCluster(f"incluster-{uuid.uuid4().hex[:6]}", nodes=1, real_nodes=1)
    local.up()
    try:
        yield local
    finally:
        local.down()


def kubectl(cluster: LocalCluster, *args: str) -> str:
    return cluster.kubectl(*args).stdout


def get(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(kubectl(cluster, "get", "-o", "json", *args))


def operator_pods(cluster: LocalCluster) -> list[dict[str, Any]]:
    pods = get(cluster, "pods", "-n", NS, "-l", "app.kubernetes.io/name=appstack-operator")
    return [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]


def seed_sample_served(cluster: LocalCluster, namespace: str, size: int) -> None:
    """The seed's sample, reconciled by the installed operator, answering on its NodePort."""
    if cluster.kubectl("get", "namespace", namespace, check=False).returncode != 0:
        kubectl(cluster, "create", "namespace", namespace)
        # as the platform team does once (docs/install.md): opted in for appstack
        kubectl(cluster, "label", "namespace", namespace, f"{ENABLED}=true")
    sample = ROOT / "examples" / "appservice.yaml"
    kubectl(cluster, "-n", namespace, "apply", "-f", str(sample))
    kubectl(cluster, "-n", namespace, "scale", "appservice/appservice-sample", f"--replicas={size}")

    def reconciled(app: dict[str, Any]) -> bool:
        status = app.get("status") or {}
        ready = any(
            c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or []
        )
        return ready and status.get("readyReplicas") == size

    eventually_sync(
        lambda: get(cluster, "-n", namespace, "appservice/appservice-sample"),
        reconciled,
        timeout=180,
        what="the sample reconciled by the installed operator",
        interval=1,
    )
    real = cluster.real()
    assert real is not None
    assert "Welcome to nginx!" in http_get(f"http://{real.nodes()[0].node.address}:30002/")


def test_helm_install_runs_the_operator_image_on_the_real_node_end_to_end(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    helm = Helm.ensure(cluster.kubeconfig, tmp_path / "helm", _say)
    release = ("appstack", str(ROOT / "charts" / "appstack"), f"--namespace={NS}")
    helm("install", *release, "--create-namespace", "--wait", "--timeout=4m")
    pods = operator_pods(cluster)
    assert len(pods) == 2
    real = cluster.real()
    assert real is not None
    for pod in pods:  # running for real, from the image, as the chart runs it
        assert pod["spec"]["nodeName"] == real.nodes()[0].name
        (container,) = pod["spec"]["containers"]
        assert container["image"] == IMAGE
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert pod["spec"]["serviceAccountName"] == "appstack-operator"
        assert pod["status"]["containerStatuses"][0]["ready"] is True
    logs = kubectl(cluster, "-n", NS, "logs", "-l", "app.kubernetes.io/name=appstack-operator")
    assert "caches synced" in logs

    seed_sample_served(cluster, "shop", 2)
    tested = helm("test", "appstack", f"--namespace={NS}", "--timeout=3m")
    assert "Phase:          Succeeded" in tested.stdout, tested.stdout

    helm("upgrade", *release, f"--set=image.tag={NEXT.split(':', 1)[1]}", "--wait", "--timeout=4m")
    pods = operator_pods(cluster)
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {NEXT}
    seed_sample_served(cluster, "shop", 3)  # the upgraded operator reconciles a change

    helm("uninstall", "appstack", f"--namespace={NS}", "--wait", "--timeout=3m")
    assert operator_pods(cluster) == []
    left = kubectl(
        cluster,
        "get",
        "deployment,serviceaccount,role,rolebinding,service",
        "-n",
        NS,
        "-l",
        "app.kubernetes.io/part-of=appstack",
        "-o",
        "name",
    )
    assert left.strip() == ""
    cluster_wide = kubectl(
        cluster,
        "get",
        "clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding",
        "-l",
        "app.kubernetes.io/part-of=appstack",
        "-o",
        "name",
    )
    assert cluster_wide.strip() == ""
    crds = kubectl(cluster, "get", "crd", "-o", "name")
    assert "appservices.appstack.dev" in crds  # kept by Helm (crds/), as documented


def test_install_yaml_and_appstack_uninstall_leave_nothing(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    kubectl(
        cluster,
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        str(ROOT / "deploy" / "install.yaml"),
    )
    kubectl(cluster, "-n", NS, "rollout", "status", "deployment/appstack-operator", "--timeout=4m")
    seed_sample_served(cluster, "shop", 1)
    # The default install's metrics, scraped for real with the shipped ServiceMonitor's
    # settings and binding: every pod up, one leader, no alert pending or firing.
    print(scrape_installed(cluster, tmp_path / "scrape", replicas=2))
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    out = subprocess.run(
        [sys.executable, "-m", "appstack", "uninstall", "--yes"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert cluster.kubectl("get", "namespace", NS, check=False).returncode != 0
    everything = kubectl(
        cluster,
        "get",
        "clusterrole,clusterrolebinding,validatingadmissionpolicy,crd",
        "-l",
        "app.kubernetes.io/part-of=appstack",
        "-o",
        "name",
    )
    assert everything.strip() == ""
    assert "appstack.dev" not in kubectl(cluster, "get", "crd", "-o", "name")
