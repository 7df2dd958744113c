"""The operator installed as users install it, running as pods on a real node: the locally
built image (the Dockerfile's contents) pulled from the local registry, under its
ServiceAccount's projected token with the generated RBAC and admission policies, the
in-cluster configuration, probes and a read-only root filesystem.

With the Helm chart, as docs/on-your-cluster.md walks a platform team through it on a
cluster that is not this machine's: a release built by ``make dist``'s command for
``registry.example.com/team/appstack``, its OCI archive pushed with ``skopeo copy
--preserve-digests`` into the local registry (the stand-in for the team's registry: the real
node's containerd pulls every registry name from it), the packaged chart (``dist/*.tgz``)
installed with that ``image.repository``; the operator running the archived image (by its
digest), reconciling the seed's sample end to end (its nginx answering), ``helm test``
really GETting ``/metrics``, an upgrade to another tag, and an uninstall that leaves nothing
of the operator (the CRDs stay, as documented). Then with ``deploy/install.yaml`` and
``appstack uninstall``, which leaves nothing at all.
On a cluster of its own: an installed operator reconciles every enabled namespace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack import __version__
from appstack.api.namespaces import ENABLED
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.helm import Helm
from appstack_testbed.image import build_image
from appstack_testbed.images.build import push_archive, repository_path
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.registry import LocalRegistry
from appstack_testbed.waiting import eventually_sync
from tests.e2e.scrape_installed import scrape_installed
from tests.e2e.test_real_node import http_get

# cold, the image build and make dist's (helm's, the wheel's) come first, in the fixtures
pytestmark = pytest.mark.timeout(1800)
ROOT = Path(__file__).resolve().parents[2]
NS = "appstack-system"
IMAGE = f"appstack:{__version__}"
# the platform team's registry in docs/on-your-cluster.md; the local registry serves it
REPOSITORY = "registry.example.com/team/appstack"
NEXT = f"{__version__}-next"


def _say(message: str) -> None:
    print(message, file=sys.__stderr__, flush=True)


@pytest.fixture(scope="module")
def cluster(kube_cluster: ClusterHandle) -> Iterator[LocalCluster]:
    kube_cluster.require_local()
    if os.geteuid() != 0:
        pytest.skip("a real node (and the daemonless image build) needs root")
    built = build_image(printer=_say)
    push_archive(built.archive, IMAGE, LocalRegistry(_say), _say)  # deploy/install.yaml's
    local = LocalCluster(f"incluster-{uuid.uuid4().hex[:6]}", nodes=1, real_nodes=1)
    local.up()
    try:
        yield local
    finally:
        local.down()


@dataclass(frozen=True)
class Release:
    """``make dist``'s artifacts, the image pushed as docs/on-your-cluster.md says."""

    directory: Path
    digest: str  # the image's, as dist/install.yaml pins it and the registry serves it

    @property
    def chart(self) -> Path:
        return self.directory / f"appstack-{__version__}.tgz"


@pytest.fixture(scope="module")
def release(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Release:
    """``make dist IMG=registry.example.com/team/appstack`` (its command), then ``skopeo copy
    --preserve-digests`` of the archive into the local registry as that repository, under the
    version's tag and a second one for the upgrade (the image build is the fixture's, cached)."""
    out = tmp_path_factory.mktemp("dist")
    dist = subprocess.run(
        [sys.executable, "-m", "appstack_testbed.dist", "--image", REPOSITORY, "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert dist.returncode == 0, dist.stdout + dist.stderr[-3000:]
    install = out / "install.yaml"
    (deployment,) = [
        d for d in yaml.safe_load_all(install.read_text()) if d and d["kind"] == "Deployment"
    ]
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    repository, _, digest = image.partition("@")
    assert repository == REPOSITORY, image
    assert digest.startswith("sha256:"), image
    registry = LocalRegistry(_say)
    registry.ensure()
    path, _ = repository_path(f"{REPOSITORY}:{__version__}")  # team/appstack
    for tag in (__version__, NEXT):
        push = subprocess.run(
            [
                "skopeo",
                "copy",
                "--quiet",
                "--preserve-digests",
                "--dest-tls-verify=false",
                f"oci-archive:{out / f'appstack-{__version__}.oci.tar'}",
                f"docker://{registry.address}/{path}:{tag}",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert push.returncode == 0, push.stderr
    return Release(out, digest)


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


def test_helm_install_of_the_release_runs_its_image_on_the_real_node_end_to_end(
    cluster: LocalCluster, release: Release, tmp_path: Path
) -> None:
    helm = Helm.ensure(cluster.kubeconfig, tmp_path / "helm", _say)
    chart = (
        "appstack",
        str(release.chart),
        f"--namespace={NS}",
        f"--set=image.repository={REPOSITORY}",
    )
    helm("install", *chart, "--create-namespace", "--wait", "--timeout=4m")
    pods = operator_pods(cluster)
    assert len(pods) == 2
    real = cluster.real()
    assert real is not None
    for pod in pods:  # running for real, from the image, as the chart runs it
        assert pod["spec"]["nodeName"] == real.nodes()[0].name
        (container,) = pod["spec"]["containers"]
        assert container["image"] == f"{REPOSITORY}:{__version__}"
        assert pod["status"]["containerStatuses"][0]["imageID"].endswith(release.digest)
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert pod["spec"]["serviceAccountName"] == "appstack-operator"
        assert pod["status"]["containerStatuses"][0]["ready"] is True
    logs = kubectl(cluster, "-n", NS, "logs", "-l", "app.kubernetes.io/name=appstack-operator")
    assert "caches synced" in logs

    seed_sample_served(cluster, "shop", 2)
    tested = helm("test", "appstack", f"--namespace={NS}", "--timeout=3m")
    assert "Phase:          Succeeded" in tested.stdout, tested.stdout

    helm("upgrade", *chart, f"--set=image.tag={NEXT}", "--wait", "--timeout=4m")
    pods = operator_pods(cluster)
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {f"{REPOSITORY}:{NEXT}"}
    seed_sample_served(cluster, "shop", 3)  # the upgraded operator reconciles a change

    helm("uninstall", "appstack", f"--namespace={NS}", "--wait", "--timeout=3m")
    assert operator_pods(cluster) == []
    # what docs/on-your-cluster.md says stays: helm test's pod, which Helm keeps (the
    # operator's pods are gone once their graceful shutdown ends)
    eventually_sync(
        lambda: kubectl(
            cluster,
            "get",
            "deployment,replicaset,pod,serviceaccount,role,rolebinding,service,"
            "poddisruptionbudget,configmap,secret",
            "-n",
            NS,
            "-l",
            "app.kubernetes.io/part-of=appstack",
            "-o",
            "name",
        ),
        lambda left: set(left.split()) <= {"pod/appstack-operator-test-metrics"},
        timeout=60,
        what="nothing of the release left in its namespace but helm test's pod",
        interval=1,
    )
    cluster_wide = kubectl(
        cluster,
        "get",
        "clusterrole,clusterrolebinding,validatingadmissionpolicy,"
        "validatingadmissionpolicybinding,flowschema",
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
