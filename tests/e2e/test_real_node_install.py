"""The operator installed as users install it, running as pods on a real node: the locally
built image (the Dockerfile's contents) pulled from the local registry, under its
ServiceAccount's projected token with the generated RBAC and admission policies, the
in-cluster configuration, probes and a read-only root filesystem.

With the Helm chart, as docs/on-your-cluster.md walks a platform team through it on a
cluster that is not this machine's: a release built by ``make dist``'s command for
``registry.example.com/team/appstack``, then the page's blocks of steps 2 to 5 run verbatim
(read by their headings: :func:`tests.doc_blocks.run_by`) in a reader's shell — this
cluster's kubeconfig, the test bed's kubectl and helm on ``PATH``, ``dist/`` the release and
``examples/`` the checkout's. The one substitution is the page's own ("replace
``registry.example.com/team`` by yours"): the push's ``docker://registry.example.com/`` is
the local registry's address (the stand-in for the team's registry: the real node's
containerd pulls every registry name from it, so the chart's ``image.repository`` stays as
written); that registry speaks plain HTTP, which skopeo accepts from the reader's
``~/.config/containers/registries.conf`` (``insecure = true``), no flag added. Checked: the
operator running the archived image (by its digest), ``helm test`` really GETting
``/metrics``, the seed's sample reconciled end to end (its nginx answering), an upgrade to
another tag (the test's own, between steps 4 and 5) that also shards it, its shards set
by a HorizontalPodAutoscaler (the chart's ``autoscaling``: the cluster's HPA controller
adds the third shard), and an uninstall that leaves nothing
of the operator (the CRDs stay, as documented). Then with ``deploy/install.yaml`` and
``appstack uninstall``, which leaves nothing at all.
Last, installed sharded (issue #50): ``appstack manifests --shards 3``, three operator pods
each a shard, ``make demo``'s examples applied unchanged by the demo's own steps and
answering, the AppStack handed to another shard when its shard's pod is deleted.
On a cluster of its own: an installed operator reconciles every enabled namespace.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
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
from appstack.api.identity import IDENTITY
from appstack.api.kind import GROUP
from appstack.api.namespaces import ENABLED
from appstack.controllers.rbac import LEASE_NAME
from appstack.runtime import owner, root_key
from appstack_testbed import demo
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.helm import Helm
from appstack_testbed.image import build_image
from appstack_testbed.images.build import push_archive, repository_path
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.registry import LocalRegistry
from appstack_testbed.waiting import eventually_sync
from tests.doc_blocks import Fenced, run_by
from tests.e2e.scrape_installed import scrape_installed
from tests.e2e.shell_blocks import run_pasted
from tests.e2e.test_real_node import http_get

# cold, the image build and make dist's (helm's, the wheel's) come first, in the fixtures
pytestmark = pytest.mark.timeout(1800)
ROOT = Path(__file__).resolve().parents[2]
NS = "appstack-system"
IMAGE = f"appstack:{__version__}"
# the platform team's registry in docs/on-your-cluster.md; the local registry serves it
REPOSITORY = "registry.example.com/team/appstack"
NEXT = f"{__version__}-next"
# the page's steps this module runs as written: its blocks' notes name this file
PAGE = ROOT / "docs" / "on-your-cluster.md"
PUSH = "2. Push the image to your registry"
INSTALL = "3. Install the chart with that image"
FIRST = "4. The first AppService"
REMOVE = "5. Remove it"


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


def steps() -> dict[str, Fenced]:
    """The page's blocks this module runs, by heading, each in appstack's version."""
    found = run_by(PAGE, "tests/e2e/test_real_node_install.py")
    assert set(found) == {PUSH, INSTALL, FIRST, REMOVE}, sorted(found)
    for heading in (PUSH, INSTALL):  # dist/appstack-X.oci.tar, .../appstack:X, appstack-X.tgz
        versions = set(re.findall(r"appstack[-:](\d+\.\d+\.\d+)", found[heading].text))
        assert versions == {__version__}, f"{PAGE.name}, {heading}: {versions}, not {__version__}"
    return found


@dataclass(frozen=True)
class Reader:
    """The shell the page's reader types its blocks into: this cluster's kubeconfig, the
    test bed's kubectl and helm on ``PATH``, a home of its own (helm's state, skopeo's
    ``registries.conf``), in a directory whose ``dist/`` is the release and ``examples/``
    the checkout's."""

    directory: Path
    home: Path
    env: dict[str, str]
    registry: str  # the local registry's address: the reader's registry here

    @property
    def dist(self) -> Path:
        return self.directory / "dist"

    def run(self, block: Fenced) -> str:
        """A block's commands, in order, as bash runs a pasted block; its output."""
        return run_pasted(block.text, self.directory, self.env, block.name).stdout


@pytest.fixture(scope="module")
def reader(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Reader:
    directory = tmp_path_factory.mktemp("reader")
    (directory / "examples").symlink_to(ROOT / "examples")
    home = tmp_path_factory.mktemp("reader-home")
    registry = LocalRegistry(_say)
    registry.ensure()
    # plain HTTP: what a registry without TLS needs (man 5 containers-registries.conf)
    conf = home / ".config" / "containers" / "registries.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(f'[[registry]]\nlocation = "{registry.address}"\ninsecure = true\n')
    helm = Helm.ensure(cluster.kubeconfig, home, _say)
    path = dict.fromkeys(
        [str(helm.binary.parent), str(cluster.toolchain.bin_dir), "/usr/bin", "/bin"]
    )
    env = {
        "HOME": str(home),
        "PATH": os.pathsep.join(path),
        "KUBECONFIG": str(cluster.kubeconfig),
        # where the Helm wrapper keeps them: the test's own helm upgrade shares its state
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        **{k: v for k, v in os.environ.items() if k == "TMPDIR"},
    }
    return Reader(directory, home, env, registry.address)


@dataclass(frozen=True)
class Release:
    """``make dist``'s artifacts, the image pushed as docs/on-your-cluster.md says."""

    directory: Path
    digest: str  # the image's, as dist/install.yaml pins it and the registry serves it

    @property
    def chart(self) -> Path:
        return self.directory / f"appstack-{__version__}.tgz"


@pytest.fixture(scope="module")
def release(reader: Reader) -> Release:
    """``make dist IMG=registry.example.com/team/appstack`` (its command) into the reader's
    ``dist/``, then the page's push block with the local registry's address for
    ``registry.example.com`` (``skopeo copy --preserve-digests`` of the archive, the
    version's tag), and a second tag for the upgrade (the image build is the cluster
    fixture's, cached)."""
    out = reader.dist
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
    push = steps()[PUSH]
    yours = "docker://registry.example.com/"  # the page's "replace ... by yours"
    assert yours in push.text, push.text
    ours = f"docker://{reader.registry}/"
    reader.run(dataclasses.replace(push, lines=tuple(x.replace(yours, ours) for x in push.lines)))
    path, _ = repository_path(f"{REPOSITORY}:{__version__}")  # team/appstack
    registry = LocalRegistry(_say)
    assert registry.has(path, __version__)
    next_push = subprocess.run(  # not on the page: the upgrade's tag
        [
            "skopeo",
            "copy",
            "--quiet",
            "--preserve-digests",
            f"oci-archive:{out / f'appstack-{__version__}.oci.tar'}",
            f"docker://{reader.registry}/{path}:{NEXT}",
        ],
        env=reader.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert next_push.returncode == 0, next_push.stderr
    return Release(out, digest)


def kubectl(cluster: LocalCluster, *args: str) -> str:
    return cluster.kubectl(*args).stdout


def get(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(kubectl(cluster, "get", "-o", "json", *args))


def operator_pods(cluster: LocalCluster) -> list[dict[str, Any]]:
    # install.yaml's pods by their name, the chart's by the chart's name and release
    selector = "app.kubernetes.io/name in (appstack-operator,appstack)"
    pods = get(cluster, "pods", "-n", NS, "-l", selector)
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
    cluster: LocalCluster, release: Release, reader: Reader
) -> None:
    page = steps()
    installed = reader.run(page[INSTALL])  # helm install ... --wait; helm test
    assert "Phase:          Succeeded" in installed, installed  # its GET of /metrics
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
    selector = "app.kubernetes.io/instance=appstack,app.kubernetes.io/name=appstack"
    logs = kubectl(cluster, "-n", NS, "logs", "-l", selector)
    assert "caches synced" in logs

    reader.run(page[FIRST])  # namespace shop opened, the sample applied and Ready
    seed_sample_served(cluster, "shop", 2)  # its nginx answering on the node

    # An upgrade to another tag that also shards the operator, its shards set by a
    # HorizontalPodAutoscaler (the chart's autoscaling values, docs/sharding.md), in one
    # rollout; then the cluster's own HPA controller scales the Deployment, which has no
    # replicas of its own any more, to a minimum raised to 3 (no metrics-server here: the
    # bounds are what it acts on): the pod it adds is a shard that takes its share.
    helm = Helm.ensure(cluster.kubeconfig, reader.home, _say)
    helm(
        "upgrade",
        "appstack",
        str(release.chart),
        f"--namespace={NS}",
        f"--set=image.repository={REPOSITORY}",
        f"--set=image.tag={NEXT}",
        "--set=sharding.enabled=true",
        "--set=autoscaling.enabled=true",
        "--set=autoscaling.minReplicas=2",
        "--set=autoscaling.maxReplicas=3",
        "--wait",
        "--timeout=4m",
    )
    pods = operator_pods(cluster)
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {f"{REPOSITORY}:{NEXT}"}
    raised = '{"spec": {"minReplicas": 3}}'
    kubectl(cluster, "-n", NS, "patch", "hpa/appstack-operator", "--type=merge", "-p", raised)
    live = eventually_sync(
        lambda: _shards(cluster),
        lambda shards: len(shards) == 3,
        timeout=120,
        what="three shard Leases, the third pod started by the autoscaler",
        interval=1,
    )
    hpa = get(cluster, "-n", NS, "hpa/appstack-operator")
    assert hpa["status"]["desiredReplicas"] == 3, hpa["status"]
    assert get(cluster, "-n", NS, "deployment/appstack-operator")["spec"]["replicas"] == 3
    assert set(live.values()) == {p["metadata"]["name"] for p in operator_pods(cluster)}
    seed_sample_served(cluster, "shop", 3)  # the upgraded, sharded operator reconciles a change
    key = root_key(GROUP, "AppService", "shop", "appservice-sample")
    sample = get(cluster, "-n", "shop", "appservice/appservice-sample")
    assert sample["metadata"]["labels"][SHARD_LABEL] == owner(key, set(live))

    reader.run(page[REMOVE])  # the sample deleted (its finalizer removed), helm uninstall
    assert cluster.kubectl("-n", "shop", "get", "appservices", "-o", "name").stdout == ""
    assert operator_pods(cluster) == []
    # what docs/on-your-cluster.md says stays: helm test's pod, which Helm keeps (the
    # operator's pods are gone once their graceful shutdown ends)
    eventually_sync(
        lambda: kubectl(
            cluster,
            "get",
            "deployment,replicaset,pod,serviceaccount,role,rolebinding,service,"
            "poddisruptionbudget,horizontalpodautoscaler,configmap,secret",
            "-n",
            NS,
            "-l",
            "app.kubernetes.io/part-of=appstack",
            "-o",
            "name",
        ),
        lambda left: set(left.split()) <= {"pod/appstack-test-metrics"},
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
    assert "appservices.appstack.dev" in crds  # kept by Helm (crd.keep), as documented
    assert cluster.kubectl("get", "namespace", NS, check=False).returncode == 0  # documented


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


# --- Installed sharded (issue #50): the demo's examples, unchanged, on three shards.

SHARDS = 3
SHARD_LABEL, DRAIN_LABEL = IDENTITY.shard_labels
SHARD_OF = IDENTITY.key("shard-of")
POD_SELECTOR = "app.kubernetes.io/name=appstack-operator"


def _shards(cluster: LocalCluster) -> dict[str, str]:
    """Held shard Lease -> the pod holding it (its identity's pod name), in the install's
    namespace."""
    leases = get(cluster, "leases", "-n", NS, "-l", f"{SHARD_OF}={LEASE_NAME}")
    return {
        lease["metadata"]["name"]: lease["spec"]["holderIdentity"].split("_")[0]
        for lease in leases["items"]
        if lease["spec"].get("holderIdentity")
    }


def _owners(cluster: LocalCluster, live: set[str]) -> dict[str, str]:
    """``Kind/name`` -> its shard label, of the demo's objects (namespace ``default``), once
    each is labelled to its owner among ``live`` with no drain asked; ``{}`` before."""
    found = get(cluster, "-n", "default", "appservices,appstacks")["items"]
    owners = {}
    for obj in found:
        labels = obj["metadata"].get("labels") or {}
        key = root_key(GROUP, obj["kind"], "default", obj["metadata"]["name"])
        if DRAIN_LABEL in labels or labels.get(SHARD_LABEL) != owner(key, live):
            return {}
        owners[f"{obj['kind']}/{obj['metadata']['name']}"] = labels[SHARD_LABEL]
    return owners if len(found) == 2 else {}


def _refused_writes(cluster: LocalCluster) -> list[str]:
    """Log lines of the running operator pods about a write refused (RBAC or admission)."""
    logs = kubectl(cluster, "-n", NS, "logs", "-l", POD_SELECTOR, "--tail=-1", "--prefix")
    return [
        line[:400]
        for line in logs.splitlines()
        if any(word in line.lower() for word in ("forbidden", "denied", '"status": 403'))
    ]


def test_installed_with_three_shards_the_demo_examples_run_unchanged(
    cluster: LocalCluster,
) -> None:
    """docs/sharding.md's ``appstack manifests --shards 3 -o yaml | kubectl apply
    --server-side -f -``, the image from the local registry, three operator pods on the real
    node each a shard; then what ``make demo`` does with them, by the demo's own steps:
    namespace ``default`` opened, examples/appservice.yaml and examples/dataservice.yaml
    applied as they are, the sample's nginx and the stack's web → proxy → auth → MariaDB
    answering. Each object is labelled to its owner among the live shards. The pod owning
    the AppStack is deleted: the stack is handed to another shard, which applies a change
    of it (web scaled to 2), and the stack answers again, its children labelled to the new
    shard. No write refused in any log."""
    # the module's earlier tests uninstalled appstack: the seed's sample's NodePort is
    # free again once its Service has gone
    eventually_sync(
        lambda: kubectl(cluster, "get", "services", "-A", "-o", "jsonpath={..nodePort}"),
        lambda ports: "30002" not in ports.split(),
        timeout=60,
        what="NodePort 30002 released by the earlier installs' sample",
        interval=1,
    )
    install = subprocess.run(
        [sys.executable, "-m", "appstack", "manifests", "--shards", str(SHARDS), "-o", "yaml"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    cluster.kubectl("apply", "--server-side", "-f", "-", stdin=install.stdout)
    kubectl(cluster, "-n", NS, "rollout", "status", "deployment/appstack-operator", "--timeout=4m")
    pods = operator_pods(cluster)
    assert len(pods) == SHARDS
    for pod in pods:
        assert "--sharding" in pod["spec"]["containers"][0]["args"]
    live = eventually_sync(
        lambda: _shards(cluster),
        lambda shards: len(shards) == SHARDS,
        timeout=60,
        what="a shard Lease held by each operator pod",
        interval=1,
    )
    assert set(live.values()) == {p["metadata"]["name"] for p in pods}

    # make demo's steps, by its own functions (testbed/src/appstack_testbed/demo.py)
    said: list[str] = []
    kubectl(cluster, "label", "namespace", "default", f"{ENABLED}=true", "--overwrite")
    kubectl(cluster, "apply", "-f", str(ROOT / "examples" / "appservice.yaml"))
    demo.wait_app(cluster, "appservice-sample", said.append)
    real = cluster.real()
    assert real is not None
    node = real.nodes()[0].node.address
    assert "Welcome to nginx!" in http_get(f"http://{node}:30002/")
    answers: list[str] = []
    demo.run_stack(cluster, ROOT / "examples" / "dataservice.yaml", said.append, node, answers)
    assert any("MySQL" in answer for answer in answers), said

    owners = eventually_sync(
        lambda: _owners(cluster, set(live)),
        bool,
        timeout=30,
        what="the demo's objects labelled to their owners",
        interval=1,
    )
    # the AppStack's shard stopped (its pod deleted, as a node drain or a rollout would):
    # the stack goes to another shard, which reconciles a change of it
    stack_shard = owners["AppStack/dataservice"]
    kubectl(cluster, "-n", NS, "delete", "pod", live[stack_shard], "--wait=false")
    moved = eventually_sync(
        lambda: (_shards(cluster), _owners(cluster, set(_shards(cluster)))),
        lambda found: len(found[0]) == SHARDS and stack_shard not in found[0] and bool(found[1]),
        timeout=120,
        what="the stack handed over and a new pod's shard live",
        interval=1,
    )[1]
    assert moved["AppStack/dataservice"] != stack_shard
    stack = get(cluster, "-n", "default", "appstack/dataservice")
    web = next(i for i, c in enumerate(stack["spec"]["components"]) if c["name"] == "web")
    scale = [{"op": "add", "path": f"/spec/components/{web}/replicas", "value": 2}]
    kubectl(
        cluster,
        "-n",
        "default",
        "patch",
        "appstack/dataservice",
        "--type=json",
        "-p",
        json.dumps(scale),
    )
    eventually_sync(
        lambda: get(cluster, "-n", "default", "deployment/dataservice-web"),
        lambda d: d["spec"]["replicas"] == 2 and d["status"].get("readyReplicas") == 2,
        timeout=120,
        what="the stack's change applied by its new shard",
        interval=1,
    )
    demo.watch_stack(cluster, "dataservice", said.append)
    assert "dataservice-auth" in http_get(
        f"http://{node}:{demo.WEB_NODE_PORT}{demo.THROUGH_THE_STACK}"
    )
    # its children followed it (docs/sharding.md, "Children follow their root"): each
    # labelled with its new owner, as that shard's caches select them
    made = get(
        cluster,
        "-n",
        "default",
        "deployments,statefulsets,services,configmaps",
        "-l",
        f"{IDENTITY.shard_root_label}={stack['metadata']['uid']}",
    )["items"]
    assert "dataservice-web" in {c["metadata"]["name"] for c in made}, made
    shards = {c["metadata"]["name"]: c["metadata"]["labels"].get(SHARD_LABEL) for c in made}
    assert set(shards.values()) == {moved["AppStack/dataservice"]}, shards
    assert not _refused_writes(cluster), "\n".join(_refused_writes(cluster))
