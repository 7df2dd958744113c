"""The seeds' operator workflow, from an empty directory (issue #36), against this session's
control plane: docs/build-your-own-operator.md's blocks run as one shell session (seed 002's
init + create api, make manifests, make lint test; seed 000's new / add api / add
controller / generate k8s); make install, make run in the background, the samples Ready at
their generation, make uninstall; make image-oci (the generated Dockerfile, from the wheels
of make build alone) + make deploy on the real node, the pod
reconciling the sample, make undeploy, and the project's own e2e (its /metrics 401 and 200);
the generated admission policies holding the operator's own token (issue #46); a second
kind after editing the first's files; bad input to every command refused with the flag named
and nothing written. The generated operator acts only in namespaces labelled
``<domain>/enabled=true``: each test labels the namespaces it uses, as the page's reader
would.

The projects share one virtual environment (appstack and its test bed from this checkout,
pytest, ruff and mypy from PyPI: what ``make venv`` installs), passed as ``VENV``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from appstack.scaffold import manifests
from appstack_testbed.dist import source_build_lock
from appstack_testbed.helm import Helm
from appstack_testbed.operators import token_kubeconfig
from appstack_testbed.pytest_plugin import SESSION_ENV, ClusterHandle
from appstack_testbed.waiting import eventually_sync
from tests.doc_blocks import run_by
from tests.e2e.shell_blocks import blocks
from tests.support.certs import serving_cert_files
from tests.support.files import file_digests
from tests.support.paths import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "build-your-own-operator.md"
REGISTRY = "src/guestbook/controllers/__init__.py"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``make venv`` installs, once for every project of the module."""
    path = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    pip = [str(path / "bin" / "python"), "-m", "pip", "install", "-q"]
    with source_build_lock():  # pip -e writes src/*.egg-info in the checkout
        subprocess.run(
            [
                *pip,
                "-e",
                f"{REPO_ROOT}[cel]",  # as the project's make venv: its tests evaluate CEL rules
                "-e",
                str(REPO_ROOT / "testbed"),
                "pytest",
                "ruff",
                "mypy",
            ],
            check=True,
            timeout=900,
        )
    return path


@pytest.fixture(scope="module")
def env(venv: Path, kube_cluster: ClusterHandle) -> dict[str, str]:
    """A reader's shell: the venv's commands and the cluster's kubectl on PATH, KUBECONFIG
    the session's cluster, ``make test`` against it (the plugin's existing-cluster mode)."""
    local = kube_cluster.require_local()
    path = [
        str(venv / "bin"),
        str(local.toolchain.bin_dir),
        os.environ.get("PATH", "/usr/bin:/bin"),
    ]
    return {
        **os.environ,
        "PATH": os.pathsep.join(path),
        "VENV": str(venv),
        "KUBECONFIG": str(kube_cluster.kubeconfig),
        "APPSTACK_TEST_KUBECONFIG": str(kube_cluster.kubeconfig),
        "APPSTACK_SOURCE": str(REPO_ROOT),
        "KUBECACHEDIR": str(venv.parent / "kube-cache"),  # not the other tests' discovery
    }


def _sh(
    script: str, cwd: Path, env: dict[str, str], timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _ok(proc: subprocess.CompletedProcess[str], what: str) -> str:
    assert proc.returncode == 0, (
        f"{what} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    return proc.stdout


def _snapshot(directory: Path) -> dict[str, str]:
    return file_digests(directory, skip=("__pycache__", ".pytest_cache"))


def test_the_page_shows_the_seeds_commands() -> None:
    script = "\n".join(b.script for b in blocks(PAGE) if b.skip is None)
    for command in (
        "appstack init --domain tutorial.kubebuilder.io --repo tutorial.kubebuilder.io/project",
        "appstack create api --group webapp --version v1 --kind Guestbook",
        "appstack new first-operator --repo=github.com/njlkj/first-operator",
        "appstack add api --api-version=app.example.com/v1alpha1 --kind=AppService",
        "appstack add controller",
        "appstack generate k8s",
        "make lint test",
    ):
        assert command in script, command


@pytest.mark.our_names(exclusive=True)  # seed 000: an AppService of app.example.com
def test_the_pages_blocks_run_from_an_empty_directory(env: dict[str, str], tmp_path: Path) -> None:
    """Seed 002 and seed 000, as the page shows them; the time from init to a passing
    make test is reported."""
    script = "\n".join(b.script for b in blocks(PAGE) if b.skip is None)
    started = time.monotonic()
    _ok(_sh(script, tmp_path, env), "the page's blocks")
    print(
        f"init -> make lint test passing, and seed 000's project: {time.monotonic() - started:.0f}s"
    )
    guestbook = tmp_path / "guestbook"
    assert (guestbook / "config/crd/bases/webapp.tutorial.kubebuilder.io_guestbooks.yaml").is_file()
    # create webhook's Python handlers, whose tests make test ran (and its controller test
    # with them served in developer mode); the CEL engine of the model's rules is there too
    registry = (guestbook / "src/guestbook/controllers/__init__.py").read_text()
    for role in ("validator", "defaulter"):
        assert f'"guestbook.webhooks.guestbook_{role}",' in registry
        assert (guestbook / f"tests/test_guestbook_{role}.py").is_file()
    assert (guestbook / "config/webhook/manifests.yaml").is_file()
    engine = "python -c 'from appstack.sdk.cel import available; assert available()'"
    _ok(_sh(engine, guestbook, env), "the CEL engine in the projects' venv")
    project = yaml.safe_load((tmp_path / "first-operator" / "PROJECT").read_text())
    (resource,) = project["resources"]
    assert (resource["group"], resource["domain"], resource["version"], resource["kind"]) == (
        "app",
        "example.com",
        "v1alpha1",
        "AppService",
    )
    assert resource["controller"] is True


SEED_FIELDS = """    size: int = Field(1, ge=0, le=100, description="How many replicas.")
    image: str = Field("nginx:1.7.9", max_length=512, description="The image.")
    ports: list[ServicePort] | None = Field(default=None, max_length=16, description="Ports.")
"""


@pytest.mark.our_names(exclusive=True)  # seed 000: an AppService of app.example.com
def test_seed_000s_fields_in_the_spec(env: dict[str, str], tmp_path: Path) -> None:
    """operator-sdk's spellings make a v1alpha1 AppService of app.example.com; with the
    seed's size, image and ports in its spec, make manifests test pass."""
    _ok(
        _sh("appstack new first-operator --repo=github.com/njlkj/first-operator", tmp_path, env),
        "new",
    )
    project = tmp_path / "first-operator"
    for command in (
        "appstack add api --api-version=app.example.com/v1alpha1 --kind=AppService",
        "appstack add controller --api-version=app.example.com/v1alpha1 --kind=AppService",
    ):
        _ok(_sh(command, project, env), command)
    kind = project / "src/first_operator/api/v1alpha1/appservice.py"
    docstring = (
        '    """What each AppService asks for. Add your fields here (camelCase on the wire)."""\n'
    )
    text = kind.read_text().replace(docstring, docstring + "\n" + SEED_FIELDS)
    text = text.replace(
        "from appstack.sdk import AGE,",
        "from appstack.sdk.model import ServicePort\nfrom appstack.sdk import AGE,",
    )
    kind.write_text(text)
    _ok(_sh("make lint-fix", project, env), "make lint-fix")
    _ok(_sh("make manifests test", project, env), "make manifests test")
    crd = next((project / "config/crd/bases").glob("app.example.com_appservices.yaml"))
    spec = yaml.safe_load(crd.read_text().split("\n", 1)[1])["spec"]
    assert spec["versions"][0]["name"] == "v1alpha1"
    properties = spec["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]
    assert {"size", "image", "ports", "foo"} <= set(properties)


@contextlib.contextmanager
def _new_guestbook(env: dict[str, str], directory: Path) -> Iterator[Path]:
    """A project of its own in ``directory``, its domain unique; the CRDs of that domain its
    tests installed (the generated controller tests leave theirs, as ``make install`` would)
    removed after."""
    domain = f"t{uuid.uuid4().hex[:6]}.example.com"
    directory.mkdir()
    _ok(
        _sh(f"appstack init --domain {domain} --repo example.com/guestbook", directory, env), "init"
    )
    _ok(
        _sh("appstack create api --group webapp --version v1 --kind Guestbook", directory, env),
        "create api",
    )
    _ok(_sh("make manifests", directory, env), "make manifests")
    yield directory
    names = _sh("kubectl get crd -o name", directory, env).stdout.split()
    ours = [name for name in names if name.endswith(f".{domain}")]
    if ours:
        _sh(f"kubectl delete --ignore-not-found {' '.join(ours)}", directory, env)


@pytest.fixture
def guestbook(env: dict[str, str], tmp_path: Path) -> Iterator[Path]:
    """A project for a test that changes it."""
    with _new_guestbook(env, tmp_path / "guestbook") as directory:
        yield directory


@pytest.fixture(scope="module")
def untouched_guestbook(
    env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """One project for the tests whose commands must write nothing (each checks it did not):
    made once, about 25 s, not once per refused command."""
    with _new_guestbook(env, tmp_path_factory.mktemp("refusals") / "guestbook") as directory:
        yield directory


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def sample_namespace(env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    name = f"samples-{uuid.uuid4().hex[:6]}"
    _ok(_sh(f"kubectl create namespace {name}", tmp_path, env), "a namespace")
    yield name
    _sh(f"kubectl delete namespace {name} --wait=false", tmp_path, env)


def _enable(env: dict[str, str], project: Path, namespace: str) -> None:
    """Label ``namespace`` so that the project's operator acts there (a platform team's
    ``kubectl label namespace NAME <domain>/enabled=true``)."""
    domain = yaml.safe_load((project / "PROJECT").read_text())["domain"]
    _ok(
        _sh(f"kubectl label namespace {namespace} {domain}/enabled=true", project, env),
        f"enable {namespace}",
    )


def _ready_at_generation(
    env: dict[str, str], cwd: Path, namespace: str, timeout: float = 120
) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        proc = _sh(f"kubectl -n {namespace} get guestbook guestbook-sample -o json", cwd, env)
        if proc.returncode == 0:
            obj = yaml.safe_load(proc.stdout)
            status = obj.get("status") or {}
            ready = [c for c in status.get("conditions") or [] if c["type"] == "Ready"]
            if (
                ready
                and ready[0]["status"] == "True"
                and status.get("observedGeneration") == obj["metadata"]["generation"]
            ):
                return
            last = str(status)
        time.sleep(0.5)
    raise AssertionError(f"guestbook-sample not Ready at its generation: {last}")


def _on_a_live_shard(env: dict[str, str], cwd: Path, namespace: str) -> None:
    """The sample is labelled to a shard whose Lease one of the two replicas holds, and
    both replicas hold one (issue #50, docs/sharding.md)."""
    domain = yaml.safe_load((cwd / "PROJECT").read_text())["domain"]
    leases = json.loads(
        _ok(
            _sh(
                f"kubectl -n guestbook-system get leases -l {domain}/shard-of -o json",
                cwd,
                env,
            ),
            "the shard Leases",
        )
    )["items"]
    shards = {lease["metadata"]["name"] for lease in leases}
    assert len(shards) == 2, shards
    sample = json.loads(
        _ok(_sh(f"kubectl -n {namespace} get guestbook guestbook-sample -o json", cwd, env), "")
    )
    label = sample["metadata"].get("labels", {}).get(f"shard.{domain}/guestbook")
    assert label in shards, (label, shards)


GAUGE = """

def _length(obj: dict[str, Any], labels: dict[str, str]) -> Iterator[Sample]:
    yield "guestbook_foo_length", labels, float(len((obj.get("spec") or {}).get("foo") or ""))


CONTROLLER = replace(
    CONTROLLER, gauges=Gauges({"guestbook_foo_length": "Length of foo"}, _length)
)
"""


def test_make_install_run_samples_uninstall(
    env: dict[str, str], guestbook: Path, sample_namespace: str
) -> None:
    """make install, make run, the samples Ready at their generation, make uninstall — and
    a gauge the author declares on the kind's registration served on the operator's
    /metrics beside each object's readiness (issue #47: the SDK dropped it). With v2 added
    to the kind by ``create api`` after the controller was edited (issues #47, #49): the
    edit kept byte for byte, the CRD of both versions (v1 stored), and each sample, one
    written at v1 and one at v2, read at the other version through the conversion webhook
    of the operator ``make run`` runs (developer mode: ``--webhook-host``)."""
    controller = guestbook / "src/guestbook/controllers/guestbook.py"
    original = controller.read_text()
    controller.write_text(
        "from collections.abc import Iterator\nfrom dataclasses import replace\n"
        "from typing import Any\n\nfrom appstack.sdk import Gauges, Sample\n"
        + original.replace("from __future__ import annotations\n", "")
        + GAUGE
    )
    edited = {
        p: p.read_bytes() for p in (controller, guestbook / "src/guestbook/api/v1/guestbook.py")
    }
    _ok(
        _sh("appstack create api --group webapp --version v2 --kind Guestbook", guestbook, env),
        "create api v2",
    )
    assert {p: p.read_bytes() for p in edited} == edited
    _ok(_sh("make install", guestbook, env), "make install")
    domain = yaml.safe_load((guestbook / "PROJECT").read_text())["domain"]
    crd = yaml.safe_load(
        _ok(_sh(f"kubectl get crd guestbooks.webapp.{domain} -o yaml", guestbook, env), "the CRD")
    )
    assert [(v["name"], v["storage"]) for v in crd["spec"]["versions"]] == [
        ("v1", True),
        ("v2", False),
    ]
    assert crd["spec"]["conversion"]["strategy"] == "Webhook"
    _enable(env, guestbook, sample_namespace)
    health, metrics, webhook = _free_port(), _free_port(), _free_port()
    run_env = {
        **env,
        "RUN_ARGS": f"--metrics-bind-address=127.0.0.1:{metrics} --no-metrics-secure "
        f"--no-metrics-auth --health-probe-bind-address=127.0.0.1:{health} "
        f"--webhook-host=127.0.0.1 --webhook-bind-address=127.0.0.1:{webhook}",
    }
    log = guestbook / "run.log"
    with open(log, "wb") as out:
        run = subprocess.Popen(
            ["make", "run"],
            cwd=guestbook,
            env=run_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        # the v2 sample is stored as v1 once the operator has pointed the CRD at itself
        eventually_sync(
            lambda: _sh(f"kubectl -n {sample_namespace} apply -k config/samples/", guestbook, env),
            lambda proc: proc.returncode == 0,
            timeout=60,
            what="the samples of both versions applied",
        )
        _ready_at_generation(env, guestbook, sample_namespace)
        for name, at, other in (
            ("guestbook-sample", "v1", "v2"),
            ("guestbook-v2-sample", "v2", "v1"),
        ):
            resource = f"guestbooks.{other}.webapp.{domain}"
            got = _sh(
                f"kubectl -n {sample_namespace} get {resource} {name} -o json", guestbook, env
            )
            read = json.loads(_ok(got, f"{name}, written at {at}, read at {other}"))
            assert read["apiVersion"] == f"webapp.{domain}/{other}"
            assert read["spec"] == {"foo": "bar"}
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=30) as got:
            scraped = got.read().decode()
        who = f'name="guestbook-sample",namespace="{sample_namespace}"'
        assert f'guestbook_object_ready{{kind="Guestbook",{who}}} 1.0' in scraped, scraped[-2000:]
        assert f"guestbook_foo_length{{{who}}} 3.0" in scraped  # the sample's foo: bar
    finally:
        os.killpg(run.pid, signal.SIGTERM)
        run.wait(timeout=60)
        controller.write_text(original)
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    _ok(_sh("make uninstall", guestbook, env), "make uninstall")
    gone = _sh(
        "kubectl get crd guestbooks.webapp."
        + yaml.safe_load((guestbook / "PROJECT").read_text())["domain"],
        guestbook,
        env,
    )
    assert gone.returncode != 0, gone.stdout


def _logged(env: dict[str, str], cwd: Path, event: str) -> dict[str, int]:
    """Per operator pod, how many of its log lines say ``event``."""
    logs = _ok(
        _sh(
            "kubectl -n guestbook-system logs -l control-plane=controller-manager "
            "--tail=-1 --prefix",
            cwd,
            env,
        ),
        "the operator pods' logs",
    )
    counts: dict[str, int] = {}
    for line in logs.splitlines():
        pod = line.split(" ", 1)[0]
        counts[pod] = counts.get(pod, 0) + (event in line)
    return counts


def _webhook_serving_in_cluster(env: dict[str, str], project: Path) -> None:
    """The deployed operator's webhook, from the generated config/webhook, RBAC and guards:
    both replicas Ready (listening, the CA bundle written) with the one certificate the
    first made in the shared Secret, whose CA is the configuration's caBundle; the 30 s
    certificate renewed and served anew by both, neither restarted.

    Admission through the Service is checked once the samples' namespace is enabled
    (:func:`_admitted_by_the_deployed_webhook`)."""
    secret = _ok(
        _sh(
            "kubectl -n guestbook-system get secret guestbook-webhook-server-cert "
            "-o jsonpath='{.type}'",
            project,
            env,
        ),
        "the shared certificate's Secret",
    )
    assert secret == "kubernetes.io/tls"

    def bundles() -> tuple[str, str]:
        ca = _sh(
            "kubectl -n guestbook-system get secret guestbook-webhook-server-cert "
            "-o jsonpath='{.data.ca\\.crt}'",
            project,
            env,
        ).stdout
        injected = _sh(
            "kubectl get validatingwebhookconfiguration guestbook-validating-webhooks "
            "-o jsonpath='{.webhooks[0].clientConfig.caBundle}'",
            project,
            env,
        ).stdout
        return ca, injected

    eventually_sync(
        bundles, lambda b: b[0] and b[0] == b[1], timeout=30, what="the Secret's CA injected"
    )
    created = _logged(env, project, "webhook certificate created")
    assert len(created) == 2, created
    assert sum(created.values()) == 1, created  # the other replica took the first's
    eventually_sync(
        lambda: _logged(env, project, "webhook certificate reloaded"),
        lambda reloads: len(reloads) == 2 and all(reloads.values()),
        timeout=60,
        what="a renewed certificate served by both replicas",
    )
    restarts = _ok(
        _sh(
            "kubectl -n guestbook-system get pods -l control-plane=controller-manager "
            "-o jsonpath='{.items[*].status.containerStatuses[0].restartCount}'",
            project,
            env,
        ),
        "restarts",
    )
    assert restarts.split() == ["0", "0"], restarts


def _admitted_by_the_deployed_webhook(env: dict[str, str], project: Path, namespace: str) -> None:
    """The API server calls the deployed pods through the webhooks' Service (failurePolicy
    Fail, as generated): a Guestbook the scaffolded validator forbids is refused with its
    field and message; one without ``spec.foo`` is stored with the scaffolded defaulter's
    value; the samples, applied next, are admitted by the same calls."""
    domain = yaml.safe_load((project / "PROJECT").read_text())["domain"]
    forbidden = {
        "apiVersion": f"webapp.{domain}/v1",
        "kind": "Guestbook",
        "metadata": {"name": "forbidden", "namespace": namespace},
        "spec": {"foo": "forbidden"},
    }
    refused = _sh(
        f"echo {shlex.quote(json.dumps(forbidden))} | kubectl create --dry-run=server -f -",
        project,
        env,
    )
    assert refused.returncode != 0, refused.stdout
    assert "forbidden is not a foo" in refused.stderr, refused.stderr
    assert "spec.foo" in refused.stderr, refused.stderr
    empty = {**forbidden, "metadata": {"name": "defaulted", "namespace": namespace}, "spec": {}}
    created = _ok(
        _sh(
            f"echo {shlex.quote(json.dumps(empty))} | kubectl create -o json -f -",
            project,
            env,
        ),
        "a Guestbook without spec.foo",
    )
    assert json.loads(created)["spec"] == {"foo": "bar"}, created


def test_make_deploy_on_the_real_node_and_the_projects_own_e2e(
    env: dict[str, str],
    guestbook: Path,
    sample_namespace: str,
    kube_cluster: ClusterHandle,
    real_node: object,
) -> None:
    """The image built from the generated Dockerfile without a daemon (issue #47: its pip
    step finds everything in dist/, with no index) into the local registry, deployed with kustomize
    (config/default, the image set in config/manager) with the user's edit of
    config/manager/manager.yaml: the pod Ready on the real node reconciles the sample; make
    undeploy removes it all. With the webhooks ``create webhook --programmatic-validation
    --defaulting`` scaffolds first (issue #49): two replicas from the generated
    config/webhook share one certificate and renew it (:func:`_webhook_serving_in_cluster`)
    and answer the API server (:func:`_admitted_by_the_deployed_webhook`). The two replicas
    are shards (issue #50: config/default's sharding line uncommented, one line): the
    sample is labelled to one of them and Ready. Then the project's own e2e test (its
    /metrics: 401, 200) against this cluster, the webhooks taken out again."""
    image = f"guestbook:e2e-{uuid.uuid4().hex[:6]}"
    deploy_env = {**env, "IMG": image}
    # the scaffolded webhooks (issue #49): make manifests adds config/webhook and wires it
    # into the files scaffolded once
    kept = {p: p.read_text() for p in (guestbook / "PROJECT", guestbook / REGISTRY)}
    shutil.copytree(guestbook / "config", guestbook.parent / "config-before-webhook")
    _ok(
        _sh(
            "appstack create webhook --group webapp --version v1 --kind Guestbook "
            "--programmatic-validation --defaulting",
            guestbook,
            env,
        ),
        "create webhook",
    )
    _ok(_sh("make manifests", guestbook, env), "make manifests, with the webhooks")
    # the user's own edit of the Deployment (issue #47: make manifests reverted it); two
    # replicas sharing a webhook certificate valid 30 s, renewed while the test runs
    manager = guestbook / "config/manager/manager.yaml"
    documents = list(yaml.safe_load_all(manager.read_text()))
    (deployment,) = [d for d in documents if d and d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    container["env"].append({"name": "GUESTBOOK_EDITED", "value": "kept"})
    assert container["ports"][-1] == {
        "name": "webhook-server",
        "containerPort": 9443,
        "protocol": "TCP",
    }
    deployment["spec"]["replicas"] = 2
    container["args"].append("--webhook-cert-validity=30s")
    manager.write_text(yaml.safe_dump_all(documents))
    # sharded with one line (issue #50): the two replicas are two shards
    default = guestbook / "config/default/kustomization.yaml"
    line = "#components: [../sharding]"
    assert line in default.read_text()
    default.write_text(default.read_text().replace(line, line.removeprefix("#")))
    _make_image_oci(guestbook, deploy_env)
    _ok(_sh("make deploy", guestbook, deploy_env), "make deploy")
    try:
        edited = _ok(
            _sh(
                "kubectl -n guestbook-system get deployment guestbook-controller-manager -o "
                'jsonpath=\'{.spec.template.spec.containers[0].env[?(@.name=="GUESTBOOK_EDITED")]'
                ".value} {.spec.template.spec.containers[0].image}'",
                guestbook,
                env,
            ),
            "the deployed Deployment",
        )
        assert edited.split() == ["kept", image], edited
        _ok(
            _sh("kubectl get validatingadmissionpolicy guestbook-operator-writes", guestbook, env),
            "the guards, applied with it",
        )
        _ok(
            _sh(
                "kubectl -n guestbook-system rollout status "
                "deployment/guestbook-controller-manager --timeout=180s",
                guestbook,
                env,
            ),
            "the controller-manager pod Ready",
        )
        node = _ok(
            _sh(
                "kubectl -n guestbook-system get pods -o jsonpath='{.items[0].spec.nodeName}'",
                guestbook,
                env,
            ),
            "its node",
        )
        assert node.startswith("real-node"), node
        _webhook_serving_in_cluster(env, guestbook)
        _enable(env, guestbook, sample_namespace)
        _admitted_by_the_deployed_webhook(env, guestbook, sample_namespace)
        _ok(
            _sh(f"kubectl -n {sample_namespace} apply -k config/samples/", guestbook, env),
            "apply the samples",
        )
        _ready_at_generation(env, guestbook, sample_namespace)
        _on_a_live_shard(env, guestbook, sample_namespace)
    finally:
        _ok(_sh("make undeploy", guestbook, deploy_env), "make undeploy")
    assert _sh("kubectl get namespace guestbook-system", guestbook, env).returncode != 0
    # the project's own e2e, as scaffolded: without the webhooks
    for path, text in kept.items():
        path.write_text(text)
    shutil.rmtree(guestbook / "src/guestbook/webhooks")
    for role in ("validator", "defaulter"):
        (guestbook / f"tests/test_guestbook_{role}.py").unlink()
    shutil.rmtree(guestbook / "config")
    shutil.copytree(guestbook.parent / "config-before-webhook", guestbook / "config")
    _projects_own_e2e(env, guestbook, kube_cluster)
    # the same install as a Helm chart (make helm, issue #47), the image already built
    _helm_release(env, guestbook, kube_cluster)


def _projects_own_e2e(env: dict[str, str], project: Path, cluster: ClusterHandle) -> None:
    """The project's tests/e2e as ``make test-e2e`` runs them, on this session's cluster:
    ``make build`` first (the wheels of this source, the image's Dockerfile installs)."""
    with source_build_lock():  # make build's pip wheel of the checkout writes its egg-info
        _ok(_sh("make build", project, env), "make build")
    e2e_env = {**env, "APPSTACK_TEST_CLUSTER": cluster.require_local().name}
    e2e_env.pop("APPSTACK_TEST_KUBECONFIG")
    e2e_env.pop(SESSION_ENV, None)  # a session of its own: it did not start the cluster
    _ok(
        _sh(f"{env['VENV']}/bin/python -m pytest tests/e2e -q", project, e2e_env, timeout=1800),
        "the project's e2e",
    )


def _helm_release(env: dict[str, str], project: Path, cluster: ClusterHandle) -> None:
    """``make helm``'s chart of the image the project's own e2e built and deployed (as
    config/manager names it) installed under a release name that is not the project's, in
    a namespace of its own (its CRDs from the chart: the kustomize install's removed
    first), told to watch one namespace (``watchNamespaces``: a Role there, no
    ClusterRole): the release's operator pod Ready, selected by the release; the sample in
    the watched namespace Ready, the one in another enabled namespace untouched and not
    readable by the operator's ServiceAccount; ``/metrics`` served with the certificate of
    ``metrics.certSecret`` (a CA-signed one for the release's metrics Service), which
    ``helm test`` checks against that CA through the release's Service; uninstalled
    after."""
    started = time.monotonic()
    kustomization = yaml.safe_load((project / "config/manager/kustomization.yaml").read_text())
    (entry,) = kustomization["images"]
    image = f"{entry['newName']}:{entry['newTag']}"
    _ok(_sh(f"make helm IMG={image}", project, env), "make helm")
    _ok(_sh("make uninstall ignore-not-found=true", project, env), "the CRDs removed")
    helm = Helm.ensure(cluster.kubeconfig, project.parent / "helm-home")
    suffix = uuid.uuid4().hex[:6]
    namespace, release = f"gb-helm-{suffix}", "gb-e2e"
    watched, unwatched = f"gb-watched-{suffix}", f"gb-unwatched-{suffix}"
    for each in (watched, unwatched):
        _ok(_sh(f"kubectl create namespace {each}", project, env), f"namespace {each}")
        _enable(env, project, each)
    chart = str(project / "dist" / "chart")
    service = f"{release}-guestbook-controller-manager-metrics-service"
    certs = serving_cert_files(project.parent / f"certs-{suffix}", [f"{service}.{namespace}.svc"])
    _ok(_sh(f"kubectl create namespace {namespace}", project, env), f"namespace {namespace}")
    files = " ".join(f"--from-file={certs / name}" for name in ("ca.crt", "tls.crt", "tls.key"))
    _ok(
        _sh(f"kubectl -n {namespace} create secret generic metrics-tls {files}", project, env),
        "the metrics certificate's Secret",
    )
    helm(
        "install",
        release,
        chart,
        f"--namespace={namespace}",
        f"--set=watchNamespaces={{{watched}}}",
        "--set=metrics.certSecret=metrics-tls",
    )
    try:
        deployment = f"{release}-guestbook-controller-manager"
        _ok(
            _sh(
                f"kubectl -n {namespace} rollout status deployment/{deployment} --timeout=180s",
                project,
                env,
            ),
            "the release's operator pod Ready",
        )
        selector = _ok(
            _sh(
                f"kubectl -n {namespace} get deployment {deployment} -o "
                "jsonpath='{.spec.selector.matchLabels.app\\.kubernetes\\.io/instance}'",
                project,
                env,
            ),
            "its selector",
        )
        assert selector == release, selector
        # watchNamespaces: the operator acts in the watched namespace only, with a Role there
        for each in (watched, unwatched):
            _ok(
                _sh(f"kubectl -n {each} apply -k config/samples/", project, env),
                f"the samples in {each}",
            )
        _ready_at_generation(env, project, watched)
        account = f"system:serviceaccount:{namespace}:{release}-guestbook-controller-manager"
        for each, allowed in ((watched, "yes"), (unwatched, "no")):
            can = _sh(f"kubectl auth can-i list guestbooks -n {each} --as={account}", project, env)
            assert can.stdout.strip() == allowed, (each, can.stdout, can.stderr)
        time.sleep(3)  # the watched sample's reconcile done: the other would have been too
        untouched = _ok(
            _sh(
                f"kubectl -n {unwatched} get guestbook guestbook-sample -o jsonpath='{{.status}}'",
                project,
                env,
            ),
            "the unwatched sample",
        )
        assert untouched == "", untouched
        # helm test: the chart's Pod GETs /metrics through the release's metrics Service, the
        # certificate checked against metrics.certSecret's CA for the Service's name
        tested = helm("test", release, f"--namespace={namespace}", "--timeout=2m")
        assert "Phase:          Succeeded" in tested.stdout, tested.stdout
    finally:
        helm("uninstall", release, f"--namespace={namespace}", "--wait", check=False)
        for each in (namespace, watched, unwatched):
            _sh(f"kubectl delete namespace {each} --wait=false", project, env)
    print(f"\nhelm install of make helm's chart: {time.monotonic() - started:.1f} s")


def _token_kubectl(
    token: Path, args: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``kubectl args`` with the operator's token alone."""
    return subprocess.run(
        ["kubectl", f"--kubeconfig={token}", *args],
        input=stdin,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _as_token(
    token: Path, obj: dict[str, Any], cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``obj`` created with the operator's token alone, a server-side dry run: admission
    (the policies included) decides, nothing is stored."""
    args = ["create", "--dry-run=server", "-o", "name", "-f", "-"]
    return _token_kubectl(token, args, cwd, env, json.dumps(obj))


def _refused(token: Path, obj: dict[str, Any], said: str, cwd: Path, env: dict[str, str]) -> None:
    proc = _as_token(token, obj, cwd, env)
    assert proc.returncode != 0, f"admitted: {obj['kind']} {obj['metadata']}"
    assert said in proc.stderr, proc.stderr


def _guards_block() -> str:
    """The page's block that declares a project's ``GUARDS`` ("Extending the guards"), as
    tests/unit/scaffold/test_guarded_project.py runs it (its ``run by`` note)."""
    block = run_by(PAGE, "tests/unit/scaffold/test_guarded_project.py")["Extending the guards"]
    return block.text


def test_the_installed_policies_hold_the_operators_token(
    env: dict[str, str], guestbook: Path, kube_cluster: ClusterHandle, tmp_path: Path
) -> None:
    """Issue #46: a scaffolded operator's token wrote ConfigMaps everywhere (kube-system's
    aws-auth among them). With the generated install applied (without its Deployment: the
    token, not the process, is the subject), the token of its ServiceAccount is refused a
    ConfigMap in kube-system, one in a namespace not enabled, an unowned one in an enabled
    namespace and a service-account-token Secret — while the controller's real child (its
    ``desired()``) and an Opaque Secret it owns are admitted. The controller owns Secrets
    here, so that RBAC admits them and what refuses the token Secret is the policy.

    Issue #47: the project declares the docs' ``GUARDS`` (its own validation in the writes
    policy and a policy of its own), as appstack's operator declares its own; the API
    server enforces both on the token: a ConfigMap with binaryData refused by the writes
    policy, and its own child, admitted by the writes policy, refused deletion by the
    project's own policy."""
    controller = guestbook / "src/guestbook/controllers/guestbook.py"
    text = controller.read_text().replace(
        "import CONFIG_MAP, Result", "import CONFIG_MAP, SECRET, Result"
    )
    controller.write_text(text.replace("owns = (CONFIG_MAP,)", "owns = (CONFIG_MAP, SECRET)"))
    registry = guestbook / REGISTRY
    registry.write_text(registry.read_text() + "\n" + _guards_block())
    _ok(_sh("make manifests", guestbook, env), "make manifests")
    bundle = yaml.safe_load_all(
        _ok(
            _sh("appstack generate installer --image guestbook:unused -o -", guestbook, env),
            "installer",
        )
    )
    install = tmp_path / "install.yaml"
    install.write_text(yaml.safe_dump_all([o for o in bundle if o and o["kind"] != "Deployment"]))
    suffix = uuid.uuid4().hex[:6]
    enabled, closed = f"guarded-{suffix}", f"closed-{suffix}"
    _ok(_sh(f"kubectl apply --server-side -f {install}", guestbook, env), "the install")
    try:
        for name in (enabled, closed):
            _ok(_sh(f"kubectl create namespace {name}", guestbook, env), name)
        _enable(env, guestbook, enabled)
        _ok(_sh(f"kubectl -n {enabled} apply -k config/samples/", guestbook, env), "the sample")
        owner = json.loads(
            _ok(
                _sh(f"kubectl -n {enabled} get guestbook guestbook-sample -o json", guestbook, env),
                "it",
            )
        )
        manifests.load(guestbook)  # the project's package, from its src/
        desired = importlib.import_module("guestbook.controllers.guestbook").desired
        spec = importlib.import_module("guestbook.api.v1.guestbook").GuestbookSpec
        (child,) = desired(owner, spec.model_validate(owner.get("spec") or {}))
        token = token_kubeconfig(
            kube_cluster.kubeconfig,
            "guestbook-system",
            "guestbook-controller-manager",
            tmp_path / "token.kubeconfig",
        )

        def moved(obj: dict[str, Any], **metadata: Any) -> dict[str, Any]:
            return {**obj, "metadata": {**obj["metadata"], **metadata}}

        # the policies are active (the API server loads them a moment after they exist)
        canary = moved(child, name="aws-auth", namespace="kube-system")
        eventually_sync(
            lambda: _as_token(token, canary, guestbook, env),
            lambda proc: proc.returncode != 0 and "guestbook-operator-writes" in proc.stderr,
            timeout=60,
            what="kube-system's aws-auth refused to the operator's token by its writes policy",
        )
        _refused(token, canary, "may not write in namespace kube-system", guestbook, env)
        _refused(
            token, moved(child, namespace=closed), "it is not enabled for guestbook", guestbook, env
        )
        unowned = moved(child, name="unowned", ownerReferences=[])
        _refused(
            token, unowned, "may only write objects controlled by one of its kinds", guestbook, env
        )
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                **child["metadata"],
                "name": "minted",
                "annotations": {"kubernetes.io/service-account.name": "default"},
            },
            "type": "kubernetes.io/service-account-token",
        }
        _refused(
            token,
            secret,
            "never writes a Secret of type kubernetes.io/service-account-token",
            guestbook,
            env,
        )
        # the operator's real writes: its child, and a Secret of its own of another type
        _ok(_as_token(token, child, guestbook, env), "the controller's child")
        opaque = {**secret, "type": "Opaque", "metadata": {**secret["metadata"], "annotations": {}}}
        _ok(_as_token(token, opaque, guestbook, env), "an Opaque Secret the sample owns")
        _others_objects_refused(token, enabled, opaque, guestbook, env)
        _the_projects_guards_hold(token, child, guestbook, env)
    finally:
        _sh(
            f"kubectl delete namespace {enabled} {closed} --ignore-not-found --wait=false",
            guestbook,
            env,
        )
        _sh(f"kubectl delete --ignore-not-found -f {install}", guestbook, env)


def _others_objects_refused(
    token: Path, enabled: str, opaque: dict[str, Any], project: Path, env: dict[str, str]
) -> None:
    """What is not the operator's own is neither rewritten nor deleted with its token: the
    enabled namespace's kube-root-ca.crt, kube-system's extension-apiserver-authentication
    (the review's canaries, beside aws-auth), a Secret the cluster's admin made. A
    ConfigMap's deletion is refused by the project's own no-deletes policy too (which of
    two refusals the API server reports is not fixed): the writes policy's refusal of a
    deletion is the Secret's."""
    for namespace, name in (
        (enabled, "kube-root-ca.crt"),
        ("kube-system", "extension-apiserver-authentication"),
    ):
        for verb, refusers in (
            (
                ["patch", "configmap", name, "--type=merge", "-p", '{"data":{"attack":"1"}}'],
                ("guestbook-operator-writes",),
            ),
            (
                ["delete", "configmap", name],
                ("guestbook-operator-writes", "guestbook-operator-no-deletes"),
            ),
        ):
            proc = _token_kubectl(token, [*verb, "-n", namespace, "--dry-run=server"], project, env)
            assert proc.returncode != 0, f"admitted: {verb} in {namespace}"
            assert any(name in proc.stderr for name in refusers), proc.stderr
    others = {**opaque, "metadata": {"name": "not-its-own", "namespace": enabled}}
    admin = Path(env["KUBECONFIG"])  # the cluster's admin creates it
    _ok(_token_kubectl(admin, ["create", "-f", "-"], project, env, json.dumps(others)), "a Secret")
    proc = _token_kubectl(
        token,
        ["delete", "secret", "not-its-own", "-n", enabled, "--dry-run=server"],
        project,
        env,
    )
    assert proc.returncode != 0, "admitted: the deletion of a Secret not its own"
    assert "guestbook-operator-writes" in proc.stderr, proc.stderr


def _the_projects_guards_hold(
    token: Path, child: dict[str, Any], project: Path, env: dict[str, str]
) -> None:
    """The project's ``GUARDS`` (docs/build-your-own-operator.md), on the API server: a
    ConfigMap with binaryData refused by the writes policy's added validation; the
    operator's own child, admitted by the writes policy, refused deletion by the project's
    own policy."""
    binary = {**child, "binaryData": {"blob": "AAEC"}}
    _refused(
        token,
        binary,
        "the guestbook operator writes ConfigMaps of text only (no binaryData)",
        project,
        env,
    )
    _ok(
        _token_kubectl(token, ["create", "-f", "-"], project, env, json.dumps(child)),
        "its child",
    )
    deleted = [
        "delete",
        "configmap",
        child["metadata"]["name"],
        "-n",
        child["metadata"]["namespace"],
    ]
    proc = _token_kubectl(token, [*deleted, "--dry-run=server"], project, env)
    assert proc.returncode != 0, "admitted: the deletion of its own ConfigMap"
    assert "guestbook-operator-no-deletes" in proc.stderr, proc.stderr
    assert "the guestbook operator deletes no ConfigMap" in proc.stderr, proc.stderr


def _make_image_oci(project: Path, env: dict[str, str]) -> None:
    """``make image-oci`` (issue #47): the generated Dockerfile's image, its pip step given
    the wheels ``make build`` put in ``dist/`` alone (``--no-index``: appstack is on no
    index), with the Dockerfile's user and entry point."""
    with source_build_lock():  # make build's pip wheel of the checkout writes its egg-info
        built = _ok(_sh("make image-oci", project, env, timeout=1800), "make image-oci")
    wheels = {p.name.split("-")[0] for p in (project / "dist").glob("*.whl")}
    assert {"appstack", "guestbook", "pydantic_core", "aiohttp", "cryptography"} <= wheels
    assert "--no-index" in (project / "Dockerfile").read_text()
    (archive,) = [line for line in built.splitlines() if line.endswith(".oci.tar")]
    config = _image_config(Path(archive))
    assert config["User"] == "65532:65532", config
    assert config["Entrypoint"] == ["python", "-m", "guestbook"], config
    # the Dockerfile's own venv, not appstack's image's (/opt/appstack)
    assert config["Env"][0].startswith("PATH=/opt/operator/bin:"), config


def _image_config(archive: Path) -> dict[str, Any]:
    """The container configuration (User, Entrypoint, ...) of the one image in an
    oci-archive, read from its index, manifest and config blobs."""
    with tarfile.open(archive) as tar:

        def blob(descriptor: dict[str, Any]) -> dict[str, Any]:
            algorithm, digest = descriptor["digest"].split(":")
            member = tar.extractfile(f"blobs/{algorithm}/{digest}")
            assert member is not None, descriptor
            return cast("dict[str, Any]", json.load(member))

        index = tar.extractfile("index.json")
        assert index is not None, archive
        (manifest,) = json.load(index)["manifests"]
        return cast("dict[str, Any]", blob(blob(manifest)["config"])["config"])


def test_a_second_kind_leaves_the_edited_first_kind_as_it_is(
    env: dict[str, str], guestbook: Path
) -> None:
    kind = guestbook / "src/guestbook/api/v1/guestbook.py"
    controller = guestbook / "src/guestbook/controllers/guestbook.py"
    kind.write_text(
        kind.read_text().replace("    foo: str | None", "    size: int = 1\n    foo: str | None")
    )
    controller.write_text(controller.read_text() + "\n# edited by its author\n")
    before = {p: p.read_bytes() for p in (kind, controller)}
    _ok(
        _sh("appstack create api --group crew --version v1alpha1 --kind Captain", guestbook, env),
        "a second kind",
    )
    assert {p: p.read_bytes() for p in before} == before
    _ok(_sh("make manifests", guestbook, env), "make manifests")
    assert not _sh("make manifests", guestbook, env).stdout.count("wrote ")  # twice: nothing
    _ok(_sh("make lint test", guestbook, env), "make lint test with both kinds")


def test_make_test_unit_needs_no_cluster_no_go_and_no_kubeconfig(
    env: dict[str, str], untouched_guestbook: Path
) -> None:
    """``make test-unit`` of a new project: the pure tests and the controller in memory,
    with no kubeconfig, no cluster's toolchain and no Go on PATH (only the venv and the
    system's)."""
    bare = {
        k: v
        for k, v in env.items()
        if k not in ("KUBECONFIG", "APPSTACK_TEST_KUBECONFIG", "APPSTACK_TEST_SESSION", "GOROOT")
    }
    bare["PATH"] = os.pathsep.join([str(Path(env["VENV"]) / "bin"), "/usr/bin", "/bin"])
    bare["HOME"] = str(untouched_guestbook.parent)  # no ~/.kube/config either
    started = time.monotonic()
    proc = _sh("make test-unit", untouched_guestbook, bare)
    out = _ok(proc, "make test-unit")
    print(f"make test-unit: {time.monotonic() - started:.1f}s")
    assert "4 passed" in out, out[-2000:]  # the desired state's 2, in memory, config/


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        ("appstack create api --group webapp --version v1 --kind guestbook", "--kind"),
        ("appstack create api --group webapp --version 1 --kind Other", "--version"),
        ("appstack create api --group Web.App --version v1 --kind Other", "--group"),
        ("appstack create api --group webapp --version v1 --kind Guestbook", "--kind"),  # exists
        ("appstack init --domain example.com --repo x/y", "PROJECT"),
        ("appstack add api --api-version=app/v1 --kind=Other", "--api-version"),
        (
            "appstack create webhook --group webapp --version v1 --kind Guestbook --conversion",
            "--conversion",
        ),
        (
            "appstack create api --group webapp --version v1 --kind Other --plural Others",
            "--plural",
        ),
    ],
)
def test_bad_input_is_refused_with_the_flag_named_and_nothing_written(
    env: dict[str, str], untouched_guestbook: Path, command: str, flag: str
) -> None:
    before = _snapshot(untouched_guestbook)
    proc = _sh(command, untouched_guestbook, env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert flag in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert _snapshot(untouched_guestbook) == before


def test_init_refuses_a_non_empty_directory_and_appstacks_checkout(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    proc = _sh("appstack init --domain example.com --repo x/y", tmp_path, env)
    assert proc.returncode == 2
    assert "not empty" in proc.stderr
    proc = _sh(f"appstack init --domain example.com --repo x/y -C {REPO_ROOT}", tmp_path, env)
    assert proc.returncode == 2
    assert "appstack's own checkout" in proc.stderr or "not empty" in proc.stderr
