"""The operator image, built without a daemon and run from its own filesystem.

The image is built like the Dockerfile builds it (:mod:`appstack_testbed.image`:
mmdebstrap + chroot + buildah, cached in ``$APPSTACK_CACHE/image``: about 2 minutes cold,
nothing to do warm), the committed oci-archive is unpacked with umoci, and ``appstack
run`` is started chrooted into that root filesystem, as uid 65532 on a read-only root, with
the ServiceAccount token and CA mounted where a pod has them — under the ServiceAccount
and ClusterRole that ``deploy/install.yaml`` creates. It must serve its probes and
reconcile the seed sample (``examples/appservice.yaml``) to Ready.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import yaml
from lightkube import Client as LightClient
from lightkube import codecs
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Service, ServiceAccount

from appstack import __version__
from appstack_testbed import image_labels
from appstack_testbed.image import SOURCES, UID, build_image
from appstack_testbed.oci import UnpackedImage, unpack
from appstack_testbed.rootfs import Bind, namespace_command
from appstack_testbed.versions import cache_root
from appstack_testbed.waiting import condition_status, eventually_sync

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="building and entering the image needs root (mmdebstrap, chroot, mount namespaces)",
)

ROOT = Path(__file__).resolve().parents[2]
SA_DIR = "/run/secrets/kubernetes.io/serviceaccount"  # /var/run -> /run in the image
AppService = create_namespaced_resource("appstack.dev", "v1", "AppService", "appservices")


def _progress(message: str) -> None:
    print(message, file=sys.__stderr__, flush=True)  # a cold build takes minutes


@pytest.fixture(scope="module")
def image() -> UnpackedImage:
    built = build_image(ROOT, printer=_progress)
    return unpack(built.archive, cache_root() / "image" / "unpacked")


def test_the_image_is_labelled_with_its_source_revision_version_and_build_time(
    image: UnpackedImage,
) -> None:
    """The OCI provenance labels: the commit it was built from (this checkout's HEAD, for
    these sources), its version, when it was built, and where its source is."""
    labels = image.config["Labels"]
    oci = "org.opencontainers.image."
    assert labels[f"{oci}version"] == __version__
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert labels[f"{oci}revision"] in {head, f"{head}-dirty"}
    assert labels[f"{oci}revision"] == image_labels.revision(ROOT, list(SOURCES))
    built = datetime.datetime.strptime(labels[f"{oci}created"], "%Y-%m-%dT%H:%M:%SZ")
    assert built <= datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    # Where the source is: the origin remote, else $APPSTACK_IMAGE_SOURCE (never guessed).
    expected = image_labels.source(ROOT)
    assert labels.get(f"{oci}source") == expected
    assert expected is None or expected.startswith("https://")


@pytest.fixture(scope="module")
def install(kube: LightClient) -> dict[str, str]:
    """deploy/install.yaml without the Deployment; returns ServiceAccount name/namespace."""
    docs = [d for d in yaml.safe_load_all((ROOT / "deploy" / "install.yaml").read_text()) if d]
    for doc in docs:
        if doc["kind"] != "Deployment":
            kube.apply(codecs.from_dict(doc), force=True)
    for doc in docs:
        if doc["kind"] == "CustomResourceDefinition":
            name = doc["metadata"]["name"]
            eventually_sync(
                lambda n=name: (
                    condition_status(kube.get(CustomResourceDefinition, n), "Established") == "True"
                ),
                timeout=30,
                what=f"CRD {name}",
            )
    (account,) = [d["metadata"] for d in docs if d["kind"] == "ServiceAccount"]
    return {"name": account["name"], "namespace": account["namespace"]}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_image_has_the_operator_as_non_root_and_nothing_else(image: UnpackedImage) -> None:
    config = image.config
    assert config["User"] == f"{UID}:{UID}"
    assert (config["Entrypoint"], config["Cmd"]) == (["appstack"], ["run", "--leader-elect"])
    assert sorted(config["ExposedPorts"]) == ["8080/tcp", "8081/tcp"]
    root = image.rootfs
    assert f"appstack:x:{UID}:{UID}:" in (root / "etc/passwd").read_text()
    (site,) = (root / "opt/appstack/lib").glob("python3*/site-packages")
    assert (site / "appstack" / "py.typed").is_file()
    assert not (site / "tests").exists()
    # No test bed: no appstack_testbed, nor the old appstack/testing, nor its tools.
    assert not (site / "appstack_testbed").exists()
    assert not (site / "appstack" / "testing").exists()
    product = [p.relative_to(site).as_posix() for p in (site / "appstack").rglob("*.py")]
    assert not [p for p in product if "procnode" in p or "pytest" in p], product
    assert not [p for p in product if "unshare" in (site / p).read_text()]
    installed = {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}
    lock = (ROOT / "requirements.lock").read_text().splitlines()
    locked = {line.split("==")[0].replace("-", "_") for line in lock if "==" in line}
    assert installed == locked | {"appstack"}  # no pip, no test-only packages
    assert not (root / "opt/appstack/bin/pip").exists()
    assert os.stat(site / "appstack" / "__init__.py").st_uid == 0  # not writable by the user


@pytest.fixture
def service_account_dir(
    kube: LightClient, kubeconfig: Path, install: dict[str, str], namespace: str, tmp_path: Path
) -> Path:
    """token, ca.crt and namespace, as the kubelet mounts them into the operator's pod."""
    token = kube.create(
        ServiceAccount.Token(
            metadata=ObjectMeta(name=install["name"], namespace=install["namespace"]),
            spec=TokenRequestSpec(audiences=[], expirationSeconds=3600),
        ),
        name=install["name"],
        namespace=install["namespace"],
    ).status.token
    cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    directory = tmp_path / "serviceaccount"
    directory.mkdir(mode=0o755)
    files = {
        "token": token,
        "ca.crt": base64.b64decode(cluster["certificate-authority-data"]).decode(),
        "namespace": namespace,
    }
    for name, content in files.items():
        path = directory / name
        path.touch(mode=0o644)
        path.write_text(content)
    return directory


@pytest.fixture
def operator_from_image(
    image: UnpackedImage,
    kubeconfig: Path,
    service_account_dir: Path,
    leases_here: str,
    tmp_path: Path,
) -> Iterator[tuple[subprocess.Popen[bytes], int, int, Path]]:
    """``appstack run`` chrooted into the image as uid 65532; (process, health, metrics, log)."""
    namespace = leases_here  # its POD_NAMESPACE, where the generated Lease Role is granted
    server = urlsplit(yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"])
    health, metrics = _free_port(), _free_port()
    env = dict(pair.split("=", 1) for pair in image.config["Env"])
    env |= {
        "KUBERNETES_SERVICE_HOST": server.hostname or "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(server.port),
        "POD_NAMESPACE": namespace,
        "POD_NAME": "appstack-operator-image-test",
    }
    # The Deployment's arguments, on free ports and watching only this test's namespace.
    argv = [
        *image.config["Entrypoint"],
        "run",
        "--leader-elect",
        f"--namespace={namespace}",
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        # Scrapes are authorised by default (test_operator_process.py proves it); here the
        # test reads the metrics without a scraper's token.
        "--no-metrics-auth",
        f"--health-probe-bind-address=127.0.0.1:{health}",
        "--log-format=json",
    ]
    command = namespace_command(
        image.rootfs,
        argv,
        userspec=image.config["User"],
        tmpfs=["/run"],
        binds=[Bind(service_account_dir, SA_DIR)],
        read_only_root=True,
    )
    log = tmp_path / "operator.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        yield proc, health, metrics, log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.node_ports(30002)  # the seed sample's
def test_operator_runs_from_the_image_and_reconciles_the_seed_sample(
    operator_from_image: tuple[subprocess.Popen[bytes], int, int, Path],
    image: UnpackedImage,
    kube: LightClient,
    namespace: str,
) -> None:
    proc, health, metrics, log = operator_from_image
    started = time.monotonic()

    def ready() -> bool:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            return httpx.get(f"http://127.0.0.1:{health}/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    eventually_sync(ready, timeout=60, interval=0.2, what="/readyz of the operator in the image")
    to_ready = time.monotonic() - started

    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
    )
    assert status["Uid"].split() == [str(UID)] * 4
    assert status["Gid"].split() == [str(UID)] * 4
    assert os.readlink(f"/proc/{proc.pid}/root") == str(image.rootfs)
    mounts = [line.split() for line in Path(f"/proc/{proc.pid}/mountinfo").read_text().splitlines()]
    (root_options,) = [m[5] for m in mounts if m[4] == "/"]
    assert root_options.split(",")[0] == "ro"

    sample = yaml.safe_load((ROOT / "examples" / "appservice.yaml").read_text())
    sample["metadata"]["namespace"] = namespace
    name = sample["metadata"]["name"]
    applied = time.monotonic()
    kube.apply(codecs.from_dict(sample), field_manager="appstack-tests")
    eventually_sync(
        lambda: (
            condition_status(kube.get(AppService, name, namespace=namespace), "Ready") == "True"
        ),
        timeout=90,
        what=f"AppService {name} to be Ready (operator log: {log})",
    )
    reconciled = time.monotonic() - applied
    assert kube.get(Deployment, name, namespace=namespace).spec.replicas == sample["spec"]["size"]
    assert kube.get(Service, name, namespace=namespace).spec.ports[0].nodePort == 30002
    assert httpx.get(f"http://127.0.0.1:{health}/healthz", timeout=5).status_code == 200
    # HTTPS with the self-signed certificate made at start-up in memory (read-only root).
    text = httpx.get(f"https://127.0.0.1:{metrics}/metrics", timeout=5, verify=False).text  # noqa: S501
    assert 'controller_runtime_reconcile_total{controller="appservice",result="success"}' in text
    print(f"operator from the image: /readyz after {to_ready:.1f}s, sample Ready {reconciled:.1f}s")

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0, log.read_text()[-3000:]
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
    assert any(line.get("controller") == "appservice" for line in lines)
