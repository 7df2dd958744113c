"""Every test under tests/e2e runs against the real control plane and is marked ``e2e``.

Also: an async runtime ``client`` per test, a throw-away CRD (``widget_crd``) with a
validation rule and a status subresource, and a real S3 server in the test's namespace
(``s3_server``, reached from the host with ``s3_client``: :mod:`appstack_testbed.objectstore`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, KubeConfig, codecs
from lightkube import Client as LightClient
from lightkube.generic_resource import GenericNamespacedResource, create_namespaced_resource
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Service as LightService
from lightkube.resources.core_v1 import ServiceAccount

from appstack import __version__
from appstack.api.appstack import AppStack
from appstack.api.identity import IDENTITY
from appstack.controllers.appstack.addresses import ExternalIPPolicy, parse_networks
from appstack.controllers.registry import ALL, CACHE
from appstack.manifests import crds
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.events import EventRecorder
from appstack.runtime.manager import Manager
from appstack.runtime.resources import EVENT, Resource
from appstack.sdk.operator import assemble
from appstack.sdk.options import OperatorOptions
from appstack_testbed import objectstore
from appstack_testbed.build import _file_lock
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.control_plane import SERVICE_CIDR
from appstack_testbed.objectstore import ObjectStore, S3Server
from appstack_testbed.pytest_plugin import ClusterHandle, RealNodeHandle
from appstack_testbed.versions import cache_root
from appstack_testbed.waiting import condition_status, eventually, eventually_sync
from tests.support.paths import REPO_ROOT

TokenRequest = ServiceAccount.Token

WIDGET_GROUP = "testbed.appstack.dev"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every e2e test is marked ``e2e`` (the order the workers take the modules in:
    tests/conftest.py)."""
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def _node_ports(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``node_ports(30002, ...)`` takes those NodePorts — the seed's samples
    name theirs, and a NodePort is the whole cluster's: it waits, before any other fixture,
    until no other test (on another parallel worker) holds them, and until no Service of an
    earlier one (its namespace going) still does; they are its until it is done."""
    marker = request.node.get_closest_marker("node_ports")
    if marker is None:
        yield
        return
    ports = sorted(int(p) for p in marker.args)
    with contextlib.ExitStack() as held:
        for port in ports:  # in order: two tests never wait for each other's second port
            held.enter_context(_test_lock(f"node-port-{port}"))
        kube: LightClient = request.getfixturevalue("kube")

        def taken() -> set[int]:
            return {
                port.nodePort
                for service in kube.list(LightService, namespace="*")
                for port in (service.spec.ports or [])
                if port.nodePort in ports
            }

        eventually_sync(
            taken, lambda t: not t, timeout=120, interval=0.2, what=f"NodePorts {ports} free"
        )
        yield


@pytest.fixture(autouse=True)
def _our_names(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``our_names`` runs kubectl with our kinds' bare names (``appservice``,
    ``appsvc``): it holds them shared with the other such tests. One marked
    ``our_names(exclusive=True)`` installs a kind of another group under one of those names
    (seed 000's AppService of ``app.example.com``), which makes them ambiguous to kubectl: it
    waits until no other test holds them (and none new starts: a turnstile), holds them alone,
    and before it lets go removes every CRD of another group named as ours, waits until the
    API server has it no more, and drops the session cluster's kubectl discovery cache."""
    marker = request.node.get_closest_marker("our_names")
    if marker is None:
        yield
        return
    exclusive = bool(marker.kwargs.get("exclusive"))
    with contextlib.ExitStack() as held:
        if exclusive:
            held.enter_context(_test_lock("our-names-turnstile"))
        else:
            with _test_lock("our-names-turnstile"):
                pass
        held.enter_context(_test_lock("our-names", shared=not exclusive))
        if exclusive:  # before the lock is let go (an exit stack unwinds last in, first out)
            held.callback(
                _remove_kinds_named_as_ours,
                request.getfixturevalue("kube"),
                request.getfixturevalue("kube_cluster").require_local(),
            )
        yield


def _test_lock(name: str, *, shared: bool = False) -> contextlib.AbstractContextManager[None]:
    """A lock parallel test workers take in turn: ``$APPSTACK_CACHE/locks/<name>``."""
    locks = cache_root() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    return _file_lock(locks / name, shared=shared)


def _remove_kinds_named_as_ours(kube: LightClient, local: LocalCluster) -> None:
    ours = crds.all_crds()
    names = {name for crd in ours for name in _names(crd["spec"]["names"])}
    groups = {crd["spec"]["group"] for crd in ours}

    def namesakes() -> list[str]:
        return [
            crd.metadata.name
            for crd in kube.list(CustomResourceDefinition)
            if crd.spec.group not in groups and names & _names(crd.spec.names.to_dict())
        ]

    for name in namesakes():
        with contextlib.suppress(ApiError):
            kube.delete(CustomResourceDefinition, name)
    eventually_sync(namesakes, lambda left: not left, timeout=120, what="namesake CRDs gone")
    shutil.rmtree(local.directory / "kubectl-cache", ignore_errors=True)


def _names(names: dict[str, Any]) -> set[str]:
    return {
        names["plural"],
        names.get("singular") or "",
        names["kind"].lower(),
        *(names.get("shortNames") or []),
    } - {""}


@pytest.fixture
async def client(kubeconfig: Path) -> AsyncIterator[Client]:
    """The runtime's client as the cluster's admin, writing as the operator's field manager
    (as it always has: the tests check managedFields owners and share the operator's)."""
    connecting = Client.connect(str(kubeconfig), field_manager=IDENTITY.field_manager)
    async with await connecting as runtime_client:
        yield runtime_client


@pytest.fixture
def widget_crd(kube: LightClient) -> Iterator[Resource]:
    """A namespaced CRD ``Widget<suffix>`` with ``spec.min <= spec.max`` and a status."""
    suffix = uuid.uuid4().hex[:6]
    plural, kind = f"widgets{suffix}", f"Widget{suffix}"
    name = f"{plural}.{WIDGET_GROUP}"
    spec_schema = {
        "type": "object",
        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "spec.min must not exceed spec.max"}
        ],
    }
    status_schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": spec_schema, "status": status_schema},
            }
        },
    }
    kube.create(
        codecs.from_dict(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": name},
                "spec": {
                    "group": WIDGET_GROUP,
                    "scope": "Namespaced",
                    "names": {"plural": plural, "singular": plural, "kind": kind},
                    "versions": [version],
                },
            }
        )
    )
    eventually_sync(
        lambda: condition_status(kube.get(CustomResourceDefinition, name), "Established") == "True",
        timeout=30,
        what=f"CRD {name} to be established",
    )
    yield Resource(WIDGET_GROUP, "v1", kind, plural)
    kube.delete(CustomResourceDefinition, name)


@pytest.fixture(scope="session")
def operator_image(kube_cluster: ClusterHandle) -> str:
    """The operator's image, built from this checkout (daemonless, cached) and pushed as
    ``appstack:<version>``: what EtcdCluster backups to an object store run by default."""
    from appstack_testbed.image import build_image  # noqa: PLC0415
    from appstack_testbed.images.build import push_archive  # noqa: PLC0415
    from appstack_testbed.registry import LocalRegistry  # noqa: PLC0415

    kube_cluster.require_local()
    if os.geteuid() != 0:
        pytest.skip("the daemonless image build needs root")
    built = build_image(printer=_progress)
    return push_archive(
        built.archive, f"appstack:{__version__}", LocalRegistry(_progress), _progress
    )


@pytest.fixture(scope="session")
def previous_etcd_image(kube_cluster: ClusterHandle) -> str:
    """The older etcd release's image (gcr.io/etcd-development/etcd:<ETCD_PREVIOUS>) in the
    local registry, for the upgrade tests (built once, cached)."""
    from appstack_testbed.etcd_releases import ETCD_PREVIOUS  # noqa: PLC0415
    from appstack_testbed.images import build as images  # noqa: PLC0415
    from appstack_testbed.images.catalog import etcd  # noqa: PLC0415
    from appstack_testbed.registry import LocalRegistry  # noqa: PLC0415

    kube_cluster.require_local()
    say = _progress
    images.ensure([etcd(ETCD_PREVIOUS)], LocalRegistry(say), say)
    return ETCD_PREVIOUS


@pytest.fixture(scope="session")
def versitygw_image(kube_cluster: ClusterHandle) -> str:
    """Versity S3 Gateway's image (versity/versitygw:<VERSITYGW>) in the local registry, for
    the tests that need an S3 server (built once, cached: about 3 minutes cold)."""
    kube_cluster.require_local()
    return objectstore.push_image(_progress)


@pytest.fixture
def s3_server(
    kube: LightClient, namespace: str, real_node: RealNodeHandle, versitygw_image: str
) -> S3Server:
    """A real S3 server in the test's namespace (so on the real node): Versity S3 Gateway,
    posix backend on an emptyDir, random root keys, answering. In the cluster it is
    ``s3_server.endpoint``; from the host, ``s3_client``. Goes with the namespace."""
    return objectstore.deploy(
        kube,
        namespace,
        access_key=f"AK{uuid.uuid4().hex[:18].upper()}",
        secret_key=uuid.uuid4().hex + uuid.uuid4().hex[:8],
        image=versitygw_image,
    )


@pytest.fixture
def s3_client(s3_server: S3Server, real_node: RealNodeHandle) -> ObjectStore:
    """``s3_server`` from the host (boto3 through a loopback proxy to its Service), with
    its root keys."""
    address = real_node.service_address(s3_server.namespace, s3_server.service, s3_server.port)
    return objectstore.connect(s3_server, address)


def _progress(message: str) -> None:
    print(message, file=sys.__stderr__, flush=True)  # a cold build takes a minute


@pytest.fixture(scope="module")
def fresh_cluster(kube_cluster: ClusterHandle) -> Iterator[LocalCluster]:
    """A cluster of the module's own, for tests that install and remove cluster-wide
    things the session shares (CRDs, the operator's ClusterRole): about 5 s to start."""
    kube_cluster.require_local()  # needs the local toolchain
    local = LocalCluster(f"fresh-{uuid.uuid4().hex[:6]}", nodes=1, pods_per_node=200)
    local.up()
    yield local
    local.down()


# --------------------------------------------------------------------------- the operator
@pytest.fixture(scope="session")
def operator_kubeconfig(
    kube_cluster: ClusterHandle, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Install the generated CRDs, RBAC and admission policies; a kubeconfig with the
    operator's SA token.

    The operator under test runs with exactly the generated permissions (ClusterRole,
    leader-election Role, ValidatingAdmissionPolicies), so a missing permission fails the
    tests instead of hiding behind admin rights.
    """
    from appstack.manifests import bundle, crds, rbac  # noqa: PLC0415

    objects = [
        *crds.all_crds(),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": rbac.NAMESPACE}},
        *bundle.permissions(),
    ]
    light = LightClient(
        config=KubeConfig.from_file(str(kube_cluster.kubeconfig)), field_manager="appstack-tests"
    )
    apply_objects(light, objects)
    path = tmp_path_factory.mktemp("operator") / "kubeconfig"
    service_account_kubeconfig(light, kube_cluster.kubeconfig, rbac.NAMESPACE, path)
    _wait_for_the_admission_policies(path)
    return path


@pytest.fixture(scope="session")
def finalized_kinds() -> tuple[type[GenericNamespacedResource], ...]:
    """AppStack's teardown finalizer (our one finalized kind) is released when a test's
    namespace is deleted (the test bed's ``namespace``): the operator that would run the
    teardown has stopped with the test."""
    kind = AppStack.KIND
    return (create_namespaced_resource(kind.group, kind.version, kind.kind, kind.plural),)


@pytest.fixture
def namespace(namespace: str, operator_kubeconfig: Path) -> str:
    """The test bed's namespace per test, once appstack's CRDs, RBAC and admission policies
    are installed: a test that creates our kinds needs them, whichever test a parallel
    worker happened to run first."""
    return namespace


def _wait_for_the_admission_policies(operator_kubeconfig: Path) -> None:
    """The API server enforces a new ValidatingAdmissionPolicy a moment after it is
    created: probe with dry-run writes (admission runs, nothing is stored) as the operator,
    in its own namespace (not enabled for appstack), until a Secret and a ConfigMap are
    refused by our policies."""
    from lightkube.resources.core_v1 import ConfigMap, Secret  # noqa: PLC0415

    from appstack.manifests import rbac  # noqa: PLC0415

    as_operator = LightClient(config=KubeConfig.from_file(str(operator_kubeconfig)))
    meta = ObjectMeta(generateName="policy-probe-", namespace=rbac.NAMESPACE)
    # A Secret there is refused by both the Secrets and the writes policy: which of the two
    # answers is the API server's order (on 1.30 it may be the writes policy, every time).
    secrets, writes = "may not write Secrets in namespace", "may not write in namespace"
    probes = {
        "Secret": (Secret(metadata=meta), (secrets, writes)),
        "ConfigMap": (ConfigMap(metadata=meta), (writes,)),
    }

    answers: dict[str, str] = {}

    def refused() -> bool:
        for name, (probe, expected) in probes.items():
            try:
                as_operator.create(probe, dry_run=True)
            except ApiError as error:
                answers[name] = str(error.status.message)
                if not any(text in answers[name] for text in expected):
                    return False
            else:
                answers[name] = "admitted"
                return False
        return True

    # A new policy is enforced once the API server has compiled it: seconds, but more than
    # 30 s were seen on a 1.30 API server just started on a busy machine.
    started = time.monotonic()
    eventually_sync(
        refused,
        timeout=180,
        interval=0.5,
        what="the admission policies in force",
        diagnose=lambda: f"the probes' answers: {answers}",
    )
    print(f"admission policies in force after {time.monotonic() - started:.1f}s")


def apply_objects(light: LightClient, objects: list[dict[str, Any]]) -> None:
    """Server-side apply ``objects`` in order; wait until their CRDs are established."""
    for obj in objects:
        light.apply(codecs.from_dict(obj), force=True)
    for obj in objects:
        if obj["kind"] != "CustomResourceDefinition":
            continue
        name = obj["metadata"]["name"]
        eventually_sync(
            lambda n=name: (
                condition_status(light.get(CustomResourceDefinition, n), "Established") == "True"
            ),
            timeout=30,
            what=f"CRD {name}",
        )


def service_account_kubeconfig(
    light: LightClient, admin_kubeconfig: Path, namespace: str, path: Path, account: str = ""
) -> Path:
    """Write to ``path`` a kubeconfig with a token of the operator's ServiceAccount (or
    ``account``) in ``namespace`` (so that it runs with exactly the generated RBAC)."""
    from appstack.manifests import rbac  # noqa: PLC0415

    account = account or rbac.NAME
    token = light.create(
        TokenRequest(
            metadata=ObjectMeta(name=account, namespace=namespace),
            spec=TokenRequestSpec(audiences=[], expirationSeconds=7200),
        ),
        name=account,
        namespace=namespace,
    ).status.token
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    admin["users"] = [{"name": account, "user": {"token": token}}]
    admin["contexts"][0]["context"]["user"] = account
    path.write_text(yaml.safe_dump(admin))
    return path


@pytest.fixture
def leases_here(kube: LightClient, namespace: str, operator_kubeconfig: Path) -> str:
    """The generated leader-election Role, in the test's namespace instead of the
    operator's: as if the operator were installed there (a replica per test can hold its
    own Lease, not the shared ``appstack-system/appstack-operator``)."""
    from appstack.manifests import rbac  # noqa: PLC0415

    for obj in (rbac.leader_election_role(namespace), rbac.leader_election_role_binding(namespace)):
        kube.apply(codecs.from_dict(obj), force=True)
    return namespace


# IP-backed external middleware allowed, except in the test bed's service and pod ranges
# (kwok's pod range and the nodes' podCIDRs, appstack_testbed.kwok), as an installer would.
TEST_BED_IPS = ExternalIPPolicy(
    allow=True, deny=parse_networks([SERVICE_CIDR, "10.15.128.0/17", "10.16.0.0/15"])
)

# 8 AppService workers (the operator's default is 32: tests share 2 cores with other
# control planes); every kind keeps the default sync period (10 minutes): what a test
# waits for must come from a watch.
E2E_OPTIONS: dict[str, dict[str, Any]] = {
    "appservice": {"concurrency": 8},
    "appstack": {"external_ips": TEST_BED_IPS},
}


@dataclass
class RunningOperator:
    manager: Manager
    client: Client
    task: asyncio.Task[None]
    recorder: EventRecorder

    def reconciles(self, controller: str, *results: str) -> float:
        """How many reconciles ``controller`` has done (with any of ``results``: default
        all of success, requeue, requeue_after, error)."""
        registry = self.manager.metrics.registry
        return sum(
            registry.get_sample_value(
                "controller_runtime_reconcile_total", {"controller": controller, "result": r}
            )
            or 0.0
            for r in results or ("success", "requeue", "requeue_after", "error")
        )

    async def stop(self) -> None:
        """Stop it as SIGTERM does: the Events drained and the client closed."""
        self.manager.stop()
        await asyncio.wait_for(self.task, 30)


async def start_operator(
    kubeconfig: Path,
    namespace: str,
    controllers: dict[str, dict[str, Any]] | None = None,
    *,
    also_watch: tuple[str, ...] = (),
    **options: Any,
) -> RunningOperator:
    """The operator as ``appstack run`` assembles it (:func:`appstack.sdk.operator.assemble`:
    its identity, the CRD check, the cache's table, Event pacing, the per-kind metrics),
    in this process, watching ``namespace`` and ``also_watch``; ``controllers`` maps a
    controller's name to its own options (default :data:`E2E_OPTIONS`); ``options`` are
    :class:`~appstack.sdk.options.OperatorOptions` fields (by default: no leader election,
    no metrics or health endpoint, 4 workers shared as the controllers' shares say)."""
    chosen: dict[str, Any] = {
        "metrics_address": None,
        "health_address": None,
        "metrics_auth": False,
        "concurrency": 4,
        **options,
    }
    assembled = await assemble(
        ALL,
        IDENTITY,
        OperatorOptions(kubeconfig=str(kubeconfig), namespaces=[namespace, *also_watch], **chosen),
        version=__version__,
        cache=CACHE,
        controller_options=E2E_OPTIONS if controllers is None else controllers,
    )
    manager = assembled.manager
    task = asyncio.create_task(assembled.run())
    await eventually(lambda: manager.ready or task.done(), timeout=30, what="caches to sync")
    if task.done():
        task.result()
    return RunningOperator(manager, assembled.client, task, assembled.recorder)


@pytest.fixture
async def operator(operator_kubeconfig: Path, namespace: str) -> AsyncIterator[RunningOperator]:
    """The operator (all controllers), watching the test's namespace, as its ServiceAccount."""
    running = await start_operator(operator_kubeconfig, namespace)
    yield running
    await running.stop()


# ----------------------------------------------------------------- programs as processes
@dataclass
class Program:
    """A program :func:`program` started, its output (stdout and stderr) in ``log``."""

    proc: subprocess.Popen[bytes]
    log: Path

    def tail(self) -> str:
        """The end of its output, for an assertion message."""
        return self.log.read_text()[-2000:]


def appstack_run(kubeconfig: Path, namespace: str, *flags: str) -> list[str]:
    """The argv of ``appstack run`` (this interpreter) on ``namespace`` with ``flags``."""
    run = [sys.executable, "-m", "appstack", "run"]
    return [*run, f"--kubeconfig={kubeconfig}", f"--namespace={namespace}", *flags]


@contextlib.contextmanager
def program(argv: list[str], log: Path) -> Iterator[Program]:
    """Run ``argv`` with its output in ``log``; on leaving, a program still running gets
    SIGTERM and 30 s to exit (then SIGKILL). Its exit code is ``proc.returncode`` after."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield Program(proc, log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def is_ready(obj: dict[str, Any]) -> bool:
    """The object's Ready condition is True."""
    return condition_status(obj, "Ready") == "True"


async def absent(client: Client, res: Any, name: str, namespace: str) -> bool:
    """A probe for :func:`eventually`: ``res`` ``namespace/name`` is not there (any more)."""
    try:
        await client.get(res, name, namespace)
    except errors.NotFound:
        return True
    return False


async def until(  # noqa: PLR0917 - read positionally
    client: Client,
    res: Any,
    name: str,
    namespace: str,
    check: Any,
    timeout: float = 30,
    what: str = "",
) -> dict[str, Any]:
    """``res`` ``namespace/name`` once ``check(obj)`` holds (NotFound is "not yet"); fails
    with the last state seen."""
    obj = await eventually(
        lambda: client.get(res, name, namespace),
        check,
        timeout=timeout,
        what=what or name,
        retry_on=(errors.NotFound,),
    )
    return dict(obj)


async def events_until(
    client: Client,
    namespace: str,
    check: Callable[[list[dict[str, Any]]], object],
    what: str,
    timeout: float = 30,
) -> list[dict[str, Any]]:
    """The Events in ``namespace`` once ``check(events)`` holds; fails with the last list
    seen. The operator sends its Events in the background, after the status write that says
    the same (``appstack.runtime.events``): a test waits for them as for any other state,
    never reads them once right after the status."""

    async def listed() -> list[dict[str, Any]]:
        return (await client.list(EVENT, namespace))[0]

    return list(await eventually(listed, check, timeout=timeout, what=what))


async def events_of(
    client: Client,
    namespace: str,
    reason: str,
    *,
    about: str | None = None,
    type_: str | None = None,
    note: str = "",
    timeout: float = 30,
) -> list[dict[str, Any]]:
    """The Events in ``namespace`` with ``reason`` (about the object named ``about``, of
    ``type_``, with ``note`` in their note, where given), once there is one."""

    def matching(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            e
            for e in events
            if e.get("reason") == reason
            and (about is None or e["regarding"]["name"] == about)
            and (type_ is None or e.get("type") == type_)
            and note in (e.get("note") or "")
        ]

    what = f"a {type_ or ''} {reason} Event" + (f" about {about}" if about else "")
    return matching(await events_until(client, namespace, matching, what, timeout))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's files (linked) in a directory of the test's own, so that files a
    command writes (certificates, say) do not land in the checkout: where the README's and
    the docs' commands run (test_readme.py, test_doc_blocks.py)."""
    work = tmp_path_factory.mktemp("reader")
    for entry in REPO_ROOT.iterdir():
        if entry.name != ".git":
            (work / entry.name).symlink_to(entry)
    return work
