"""pytest fixtures for tests against a real control plane (envtest, but the whole cluster).

Enable with ``pytest_plugins = ["appstack_testbed.pytest_plugin"]`` in a conftest.

* ``kube_cluster`` (session): the local cluster ``$APPSTACK_TEST_CLUSTER`` (default
  ``appstack-test``), started once per session if it is not already up and stopped at the
  end if this session started it (``APPSTACK_KEEP_CLUSTER=1`` keeps it). Parallel workers
  (pytest-xdist, ``-n``) share it: the first to need it starts it, the others wait for
  that, and the session's controller stops it once every worker is done. A session is
  ``$APPSTACK_TEST_SESSION`` (a fresh id unless set): two pytest runs given the same id are
  one session for this purpose — the second stops the cluster the first started and kept
  (``make test`` runs the parallel phase, then the serial one, so). With
  ``APPSTACK_TEST_KUBECONFIG`` set, an existing cluster is used instead and nothing is
  started or stopped (like envtest's existing-cluster mode); tests that need to stop or
  restart components are then skipped.
* ``kubeconfig`` (session): path of the admin kubeconfig.
* ``kube`` (session): a lightkube ``Client`` for that kubeconfig.
* ``real_node`` (session): the cluster's first real node (a real kubelet, containerd and
  kube-proxy: :mod:`appstack_testbed.realnode`) as a :class:`RealNodeHandle` (``name``,
  ``address``: NodePorts answer there); skips where the cluster has none (not root).
  The session's cluster has ``$APPSTACK_TEST_REAL_NODES`` of them (default: 1 as root).
* ``namespace``: a fresh namespace per test (with its default ServiceAccount ready),
  enabled for the operator (``appstack.dev/enabled=true``, as a platform team labels the
  namespaces it opens to appstack), deleted afterwards. Its pods run on the kwok nodes
  (fake, instant, as many as wanted: the namespace selects and tolerates them) — unless
  the test also uses ``real_node``: then they run on the real node, like a user's.
  Objects of the kinds ``finalized_kinds`` names still holding finalizers there once the
  test is done have them removed after the namespace is deleted: the operator that would
  remove them (a test's) has stopped, and a namespace left Terminating is swept kind by
  kind by the namespace controller every 15 s for the rest of the session.
* ``finalized_kinds`` (session): those kinds (lightkube resource classes), none by
  default; a conftest overrides it to name its operator's finalized kinds.
* ``prometheus_binaries`` (session): Prometheus and promtool
  (:class:`appstack_testbed.prometheus.Binaries`), built on first use with progress shown.

When a component fails to start, the fixture error carries that component's log tail.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest
from lightkube import ApiError, Client, KubeConfig
from lightkube.generic_resource import GenericNamespacedResource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Pod, ServiceAccount
from lightkube.types import PatchType

from appstack.api.kind import group_key
from appstack.api.namespaces import ENABLED
from appstack_testbed import prometheus
from appstack_testbed.cli import default_real_nodes
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.kwok import TAINT
from appstack_testbed.realnode.cleanup import kill_container
from appstack_testbed.realnode.configs import cgroup_root
from appstack_testbed.serviceproxy import ServiceAccess
from appstack_testbed.waiting import eventually_sync

# Namespace annotations (admission plugins PodNodeSelector, PodTolerationRestriction) that
# put every pod of the namespace on the kwok nodes.
KWOK_PLACEMENT = {
    "scheduler.alpha.kubernetes.io/node-selector": "type=kwok",
    "scheduler.alpha.kubernetes.io/defaultTolerations": json.dumps(
        [{"key": TAINT["key"], "operator": "Exists", "effect": TAINT["effect"]}]
    ),
}


@dataclass
class RealNodeHandle:
    """A real node of the session's cluster: its ``name``, its ``address`` (NodePorts
    answer there, from the host too), a way to a Service from the host
    (:meth:`service_address`) and to crash a container (:meth:`kill`)."""

    name: str
    address: str
    cgroup_root: str
    services: ServiceAccess

    def service_address(self, namespace: str, service: str, port: int) -> tuple[str, int]:
        """A loopback (host, port) reaching the Service's ready endpoints (a ClusterIP is
        routed inside the nodes only)."""
        return self.services.address(namespace, service, port)

    def kill(self, namespace: str, pod: str, container: str | None = None) -> list[int]:
        """SIGKILL a container's processes (a crash, not a deletion: the kubelet restarts
        it); the pids killed."""
        obj = self.services.client.get(Pod, pod, namespace=namespace)
        statuses = (obj.status.containerStatuses or []) if obj.status else []
        status = next(s for s in statuses if container in (None, s.name))
        if not status.containerID:
            raise LookupError(f"{namespace}/{pod}: container {status.name} has no container")
        return kill_container(self.cgroup_root, status.containerID.split("://", 1)[-1])


@dataclass(frozen=True)
class ClusterHandle:
    """What a test gets: the kubeconfig, and the local cluster when we run one."""

    kubeconfig: Path
    local: LocalCluster | None

    def require_local(self) -> LocalCluster:
        """The local cluster, or skip: the test controls components (restart, kill)."""
        if self.local is None:
            pytest.skip("needs the local control plane (APPSTACK_TEST_KUBECONFIG is set)")
        return self.local


def _progress(message: str) -> None:
    # Bypass pytest's capture: a cold build takes minutes and must show progress.
    print(message, file=sys.__stderr__, flush=True)


SESSION_ENV = "APPSTACK_TEST_SESSION"
# In the cluster's directory: the session that started it (so it stops it).
STARTED_BY = "started-by-session"


def _session_cluster() -> LocalCluster:
    real_nodes = os.environ.get("APPSTACK_TEST_REAL_NODES")
    return LocalCluster(
        os.environ.get("APPSTACK_TEST_CLUSTER", "appstack-test"),
        real_nodes=int(real_nodes) if real_nodes else default_real_nodes(),
        printer=_progress,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """The session's id, before pytest-xdist starts its workers (they inherit it)."""
    if not hasattr(config, "workerinput"):
        os.environ.setdefault(SESSION_ENV, uuid.uuid4().hex)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's cluster stopped, once, by the process that ran the session (the
    controller, with workers): after every worker, every test and every fixture is done."""
    if not hasattr(config, "workerinput") and not os.environ.get("APPSTACK_TEST_KUBECONFIG"):
        stop_if_started(_session_cluster(), os.environ.get(SESSION_ENV, ""))


class SessionCluster(Protocol):
    """What the session's start and stop ask of a :class:`LocalCluster`."""

    directory: Path

    def is_up(self) -> bool: ...
    def up(self) -> None: ...
    def down(self) -> None: ...


def start_or_join(cluster: SessionCluster, session: str) -> None:
    """Bring ``cluster`` up for ``session``, or wait while another process of it does (a
    parallel worker); the session that found it down is marked as the one that started it."""
    was_up = cluster.is_up()
    cluster.up()
    marker = cluster.directory / STARTED_BY
    if not was_up and not marker.exists():
        marker.write_text(session)


def stop_if_started(cluster: SessionCluster, session: str) -> bool:
    """Stop ``cluster`` if ``session`` started it (and ``APPSTACK_KEEP_CLUSTER=1`` does not
    say to keep it); whether it did."""
    marker = cluster.directory / STARTED_BY
    if os.environ.get("APPSTACK_KEEP_CLUSTER") == "1" or not session:
        return False
    if not marker.is_file() or marker.read_text() != session:
        return False
    cluster.down()
    return True


@pytest.fixture(scope="session")
def kube_cluster() -> ClusterHandle:
    existing = os.environ.get("APPSTACK_TEST_KUBECONFIG")
    if existing:
        return ClusterHandle(Path(existing).expanduser(), None)
    cluster = _session_cluster()
    start_or_join(cluster, os.environ[SESSION_ENV])
    return ClusterHandle(cluster.kubeconfig, cluster)


@pytest.fixture(scope="session")
def prometheus_binaries() -> prometheus.Binaries:
    return prometheus.ensure(printer=_progress)  # minutes the first time: show progress


@pytest.fixture(scope="session")
def kubeconfig(kube_cluster: ClusterHandle) -> Path:
    return kube_cluster.kubeconfig


@pytest.fixture(scope="session")
def kube(kubeconfig: Path) -> Client:
    return Client(config=KubeConfig.from_file(str(kubeconfig)), field_manager="appstack-tests")


@pytest.fixture(scope="session")
def real_node(kube_cluster: ClusterHandle, kube: Client) -> Iterator[RealNodeHandle]:
    real = kube_cluster.require_local().real()
    if real is None:
        pytest.skip("needs a real node: the session's cluster has none (run as root)")
    node = real.nodes()[0]
    services = ServiceAccess(kube)
    try:
        yield RealNodeHandle(node.name, node.node.address, cgroup_root(node.node), services)
    finally:
        services.stop()


@pytest.fixture(scope="session")
def finalized_kinds() -> Sequence[type[GenericNamespacedResource]]:
    """The kinds whose finalizers only an operator run by a test removes (the ``namespace``
    fixture releases them once the test is done): none unless a conftest overrides this."""
    return ()


@pytest.fixture
def namespace(
    kube: Client,
    request: pytest.FixtureRequest,
    finalized_kinds: Sequence[type[GenericNamespacedResource]],
) -> Iterator[str]:
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    real = "real_node" in request.fixturenames
    annotations = None if real else KWOK_PLACEMENT
    kube.create(
        Namespace(
            metadata=ObjectMeta(
                name=name,
                labels={group_key("test"): "true", ENABLED: "true"},
                annotations=annotations,
            )
        )
    )
    # Pods are rejected until the namespace's default ServiceAccount exists.
    eventually_sync(
        lambda: kube.get(ServiceAccount, "default", namespace=name),
        timeout=30,
        what=f"ServiceAccount {name}/default",
    )
    yield name
    kube.delete(Namespace, name)
    release_finalizers(kube, name, finalized_kinds)


def release_finalizers(
    kube: Client, namespace: str, kinds: Sequence[type[GenericNamespacedResource]]
) -> None:
    """Remove the finalizers of the objects of ``kinds`` in ``namespace`` (deleted, its
    operator stopped), so that the namespace goes instead of staying Terminating."""
    for kind in kinds:
        objects = _listed(kube, kind, namespace)
        if objects is None:
            continue
        for obj in objects:
            meta = obj.metadata
            if meta is None or not meta.finalizers or meta.name is None:
                continue
            try:
                kube.patch(
                    kind,
                    meta.name,
                    {"metadata": {"finalizers": None}},
                    namespace=namespace,
                    patch_type=PatchType.MERGE,
                )
            except ApiError as error:
                if error.status.code != 404:  # gone meanwhile: nothing to release
                    raise


#: Seconds the finalizers' release waits for a kind whose storage is being set up again (a
#: test applied its CRD anew: the API server answers 429 "storage is (re)initializing").
STORAGE_WAIT = 30.0


def _listed(
    kube: Client, kind: type[GenericNamespacedResource], namespace: str
) -> list[Any] | None:
    """The objects of ``kind`` in ``namespace``; None when the kind is not served (its CRD
    removed: none is held). A 429 while its storage is set up again is waited out."""
    deadline = time.monotonic() + STORAGE_WAIT
    while True:
        try:
            return list(kube.list(kind, namespace=namespace))
        except Exception as error:  # lightkube's ApiError, or its HTTP error (a bare 404)
            status = _http_status(error)
            if status == 404:
                return None
            if status != 429 or time.monotonic() > deadline:
                raise
        time.sleep(0.5)


def _http_status(error: Exception) -> int | None:
    if isinstance(error, ApiError):
        return error.status.code
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)
