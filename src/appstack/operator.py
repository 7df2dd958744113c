"""Assemble and run the operator process: client → manager (cache, leader election, HTTP
endpoints) → every registered controller → run until SIGTERM. Used by ``appstack run``.

Lease calls get their own client (own connection pool, optionally their own kubeconfig),
so renewals never queue behind watches and reconciles; the main client's writes are
fenced by the elector. Every request carries the user agent ``appstack/<version>
(<identity>)``, so the API server's audit log tells the replicas apart. Exit codes: 0 after
SIGTERM (bounded drain, Lease released), 1 when leadership is lost, 2 at start-up when a
CRD of ours is not installed (one clear error instead of informers retrying forever).
"""

from __future__ import annotations

import asyncio
import gc
import linecache
import os
import socket
import ssl
import uuid
from dataclasses import dataclass, field
from typing import Any

import structlog

from appstack import __version__
from appstack.api.identity import IDENTITY
from appstack.controllers import appstack as appstack_controller
from appstack.controllers.appstack.addresses import ExternalIPPolicy, parse_networks
from appstack.controllers.kind_metrics import KindMetrics
from appstack.controllers.rbac import LEASE_NAME
from appstack.controllers.registry import ALL
from appstack.core.duration import DEFAULT_SYNC_PERIOD, parse_duration
from appstack.runtime import logging as rt_logging
from appstack.runtime.client import Client
from appstack.runtime.discovery import crd_names, unserved
from appstack.runtime.events import EventRecorder
from appstack.runtime.leaderelection import LeaderElectionConfig, LeadershipLost
from appstack.runtime.manager import Manager
from appstack.runtime.metrics import Metrics
from appstack.runtime.metricsauth import MetricsAuth
from appstack.runtime.servingcert import CertFiles, self_signed_context
from appstack.runtime.tlsbuffer import limit_tls_read_buffer

log = structlog.get_logger("appstack.operator")

# Who the operator is to the API server and to Prometheus; the runtime names no product.
#: The field manager of its server-side applies and patches (managedFields' owner).
FIELD_MANAGER = "appstack"
#: The reportingController of its Events.
EVENT_SOURCE = "appstack.dev/operator"
#: The prefix of the runtime's own metrics: appstack_events_dropped_total, ...
METRIC_PREFIX = "appstack"


@dataclass
class OperatorOptions:
    kubeconfig: str | None = None
    namespaces: list[str] = field(default_factory=list)
    concurrency: int = 32  # see docs/performance.md: "Choosing --concurrency"
    leader_elect: bool = False
    leader_election_namespace: str = "default"
    leader_election_kubeconfig: str | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    shutdown_timeout: float = 20.0
    auth_failure_threshold: float = 60.0
    metrics_address: str | None = ":8080"
    metrics_auth: bool = True
    metrics_secure: bool = True  # HTTPS; False: plain HTTP
    metrics_cert_dir: str | None = None  # tls.crt + tls.key; None: self-signed in memory
    health_address: str | None = ":8081"
    log_format: rt_logging.Format = "auto"
    log_level: str = "info"
    sync_period: float = parse_duration(DEFAULT_SYNC_PERIOD)
    allow_external_ips: bool = False
    external_deny_cidrs: list[str] = field(default_factory=list)
    allow_external_cluster_names: bool = False
    enable_all_namespaces: bool = False  # else only namespaces labelled appstack.dev/enabled

    def reconciler_options(self) -> dict[str, dict[str, Any]]:
        """Per controller name: what its reconciler is configured with."""
        policy = ExternalIPPolicy(
            self.allow_external_ips,
            parse_networks(self.external_deny_cidrs),
            self.allow_external_cluster_names,
        )
        return {appstack_controller.CONTROLLER.name: {"external_ips": policy}}


def identity() -> str:
    """Pod name (or host name) plus a random suffix: unique per process."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def user_agent(me: str) -> str:
    return f"appstack/{__version__} ({me})"


def metrics_tls(options: OperatorOptions) -> tuple[ssl.SSLContext | None, CertFiles | None]:
    """The server context /metrics is served with, and the files to watch for renewal."""
    if not options.metrics_secure or options.metrics_address is None:
        return None, None
    if options.metrics_cert_dir:
        files = CertFiles(options.metrics_cert_dir)
        return files.context, files
    return self_signed_context(), None


async def _run(options: OperatorOptions) -> None:
    me = identity()
    tls, cert_files = metrics_tls(options)
    election = (
        LeaderElectionConfig(
            LEASE_NAME,
            options.leader_election_namespace,
            me,
            lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline,
            retry_period=options.retry_period,
        )
        if options.leader_elect
        else None
    )
    limit_tls_read_buffer()  # before the first connection: 16 KiB instead of 256 KiB each
    client = await Client.connect(
        options.kubeconfig,
        user_agent=user_agent(me),
        field_manager=FIELD_MANAGER,
        metrics=Metrics(prefix=METRIC_PREFIX),
    )
    try:
        await require_crds(client)
    except BaseException:
        await client.close()
        raise
    election_client = (
        await Client.connect(
            options.leader_election_kubeconfig or options.kubeconfig,
            user_agent=user_agent(me),
            field_manager=FIELD_MANAGER,
            metrics=client.metrics,
        )
        if election
        else None
    )
    manager = Manager(
        client,
        namespaces=options.namespaces or None,
        leader_election=election,
        metrics_address=options.metrics_address,
        health_address=options.health_address,
        election_client=election_client,
        shutdown_timeout=options.shutdown_timeout,
        auth_failure_threshold=options.auth_failure_threshold,
        metrics_auth=MetricsAuth(client) if options.metrics_auth else None,
        metrics_tls=tls,
    )
    recorder = EventRecorder(client, controller=EVENT_SOURCE, instance=me, busy=manager.backlog)
    # What users run, per kind, read from the cache at each scrape (kind_metrics.py).
    manager.metrics.registry.register(KindMetrics(manager.cache))
    reconciler_options = options.reconciler_options()
    for controller in ALL:
        controller.setup(
            manager,
            recorder,
            identity=IDENTITY,
            concurrency=controller.workers(options.concurrency),
            sync_period=options.sync_period,
            enable_all_namespaces=options.enable_all_namespaces,
            **reconciler_options.get(controller.name, {}),
        )
    manager.install_signal_handlers()
    settle_heap()
    log.info(
        "starting",
        identity=me,
        namespaces=options.namespaces or "all",
        enabled="all" if options.enable_all_namespaces else "labelled",
        leader_elect=options.leader_elect,
        sync_period=options.sync_period,
        metrics_tls="files" if cert_files else "self-signed" if tls else "off",
    )
    renewing = asyncio.create_task(cert_files.watch()) if cert_files else None
    try:
        await manager.run()
    except LeadershipLost:
        await recorder.close(timeout=0)  # the fence refuses its writes now: drop the queue
        raise
    finally:
        if renewing is not None:
            renewing.cancel()
        await recorder.close(timeout=min(5.0, options.shutdown_timeout))
        await client.close()
        if election_client is not None:
            await election_client.close()


class MissingCRDs(Exception):
    """The API server does not serve some of our kinds: their CRDs are not installed."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(
            f"the API server does not serve {', '.join(names)}: install the CRDs first "
            "(kubectl apply --server-side -f deploy/crds/, or "
            "helm show crds charts/appstack | kubectl apply --server-side -f -)"
        )
        self.names = names


async def require_crds(client: Client) -> None:
    """Raise :class:`MissingCRDs` unless every registered kind is served — instead of
    informers retrying list/watch forever. If the API server cannot be asked (not
    reachable yet), go on: the informers retry as before."""
    try:
        missing = await unserved(client, [controller.kind.resource for controller in ALL])
    except Exception as error:  # only a definite answer stops us
        log.warning("cannot check which kinds the API server serves", error=str(error))
        return
    if missing:
        raise MissingCRDs(crd_names(missing))


def settle_heap() -> None:
    """Once the modules are imported and the controllers built: collect what start-up left
    behind, move every surviving object (modules, classes, validators: ~56,000 containers)
    out of the garbage collector's sight — they live as long as the process, and without
    this every full collection walks them again (gc.freeze) — and collect the youngest
    generation after 10,000 net new containers instead of 700: decoding a watch event
    makes hundreds, nearly all freed by reference counting, so the collector ran every few
    events. Objects still die when nothing refers to them; only garbage in reference
    cycles waits longer. Measured on cache ingest (docs/performance.md): the collector's
    share of the CPU 13 % -> 2 %, the same peak memory. First the source lines pydantic
    read to find the models' attribute docstrings are dropped (linecache: 54 files at
    start-up, -0.3 MiB idle); a traceback reads its lines again if it needs them."""
    linecache.clearcache()
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, *gc.get_threshold()[1:])


def run_operator(options: OperatorOptions) -> int:
    rt_logging.configure(options.log_format, options.log_level, cache_loggers=True)
    try:
        asyncio.run(_run(options))
    except LeadershipLost:
        return 1
    except MissingCRDs as error:
        log.error("cannot start", error=str(error), missing=error.names)
        return 2
    return 0
