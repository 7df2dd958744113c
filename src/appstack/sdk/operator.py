"""An operator's assembly, as one call: :func:`run_operator` (controllers, identity, options).

client → CRD check → manager (shared cache, leader election with its own client and a
write fence, ``/healthz`` ``/readyz``, ``/metrics`` over HTTPS with token authentication)
→ Event recorder (de-duplicated, paced behind reconciles) → what the cache keeps of each
kind, one table for all controllers, and every controller (:func:`wire`, only in enabled
namespaces) → run until SIGTERM. Every name the operator is known by comes from its
:class:`~appstack.sdk.identity.OperatorIdentity`: the field manager, the user agent
``<project>/<version> (<pod>_<suffix>)`` (the API server's audit log tells the replicas
apart), the Lease, the Events' source, the runtime's metric prefix, the labels of its
children. Exit codes: 0 after SIGTERM (bounded drain, Lease released); 1 for every runtime
failure — leadership lost, or at start-up a CRD of its kinds not installed (one clear error
instead of informers retrying forever) or a kubeconfig that cannot be used (missing,
unreadable, no such context): one log line each, no traceback; 2 only for a usage error
(click's: an unknown option, a flag's value refused), before anything runs. An API server
that does not answer at start-up is waited for (a log line per attempt, with backoff;
``/readyz`` not ready meanwhile). Readiness and kinds others install: at start-up the
primary of a controller is required (its CRD missing: not ready, waiting); once started,
a kind whose CRD is deleted is reported — a warning,
``<prefix>_informer_kind_served{resource}`` at 0, ``manager.cache.unserved()`` — its cache
emptied and its informers waiting for the CRD to come back, while the operator stays ready
and live for its other kinds (a kind a controller only owns or watches never holds the
start back). Used by appstack's operator (:mod:`appstack.operator`) and by every operator
scaffolded with ``appstack init`` (its ``__main__``, through
:func:`appstack.sdk.flags.operator_command`).
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import structlog
from prometheus_client.registry import Collector

from appstack.runtime import (
    Cache,
    CertFiles,
    Client,
    EventRecorder,
    ItemExponentialBackoff,
    KubeconfigError,
    LeaderElectionConfig,
    LeadershipLost,
    Manager,
    Metrics,
    MetricsAuth,
    ShardingConfig,
    ShardLabels,
    Task,
    TransportError,
    configure_logging,
    crd_names,
    self_signed_context,
    unserved,
)
from appstack.runtime.cache import Transform
from appstack.runtime.controller import Controller
from appstack.runtime.resources import Resource
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kit.caching import cache_policy
from appstack.sdk.kit.conversion import converting_kinds
from appstack.sdk.kit.kind_metrics import KindMetrics
from appstack.sdk.kit.registration import Registration
from appstack.sdk.kit.storage import storage_migration
from appstack.sdk.kit.webhooks import WebhookServing
from appstack.sdk.options import MAX_LEASE_DURATION, MIN_LEASE_DURATION, OperatorOptions
from appstack.sdk.process import settle_heap, tune_connections

log = structlog.get_logger(__name__)

#: What to do about a kubeconfig that cannot be used (the run command's flag and variable).
KUBECONFIG_HINT = "point KUBECONFIG or --kubeconfig at the cluster's kubeconfig file"

#: What an operator adds to its metrics from its cache (e.g. per-kind gauges).
CollectorFactory = Callable[[Cache], Collector]
#: A background task of the operator, made from its manager (its client, cache, metrics):
#: :class:`appstack.runtime.Task`, run as :mod:`appstack.runtime.tasks` says.
TaskFactory = Callable[[Manager], Task]


def instance() -> str:
    """Pod name (or host name) plus a random suffix: unique per process."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def check(options: OperatorOptions) -> None:
    """Raise :class:`ValueError` if the options do not fit together (leader election's
    durations), or the lease duration is out of its range (the install's admission policy
    refuses a longer Lease: :data:`~appstack.sdk.options.MAX_LEASE_DURATION`)."""
    if not MIN_LEASE_DURATION <= options.lease_duration <= MAX_LEASE_DURATION:
        raise ValueError(
            f"the lease duration must be from {MIN_LEASE_DURATION:g}s to "
            f"{MAX_LEASE_DURATION:g}s, got {options.lease_duration:g}s"
        )
    LeaderElectionConfig(
        "-", "-", "-", options.lease_duration, options.renew_deadline, options.retry_period
    )


def shard_labels(identity: OperatorIdentity) -> ShardLabels:
    """The label keys a sharded operator puts on its primary objects: the owning shard
    ``shard.<domain>/<project>``, a drain asked ``drain.shard.<domain>/<project>``."""
    return ShardLabels(*identity.shard_labels)


class ShardingRefused(ValueError):
    """The operator cannot shard as it stands (a primary that another controller follows)."""


def sharding_config(
    controllers: Sequence[Registration], identity: OperatorIdentity, options: OperatorOptions
) -> ShardingConfig:
    """How the operator shards (``--sharding``, docs/sharding.md): its controllers'
    primaries (each with the label selector that chooses its objects, if any) under its
    identity's labels (:func:`shard_labels`; its shard Leases labelled
    ``<domain>/shard-of``, a stopping one's ``<domain>/shard-leaving``), the coordinator
    looking as often as the Lease is retried (at most every second) and draining at most
    ``shard_max_drains`` keys of a kind at once (None: 1 % of its objects, at least 10). A
    primary that
    another controller also owns or watches is refused (:class:`ShardingRefused`): its
    objects would follow their root's shard, which the SDK does not label yet. The
    children of the kinds :func:`sharded_children` names are split between the shards too
    (each child labelled with its root's shard and uid)."""
    primaries = {c.primary for c in controllers}
    for c in controllers:
        followed = {*c.owns, *(r for r, _ in c.reconciler.watches), *c.reconciler.references}
        for resource in primaries & followed - {c.primary}:
            raise ShardingRefused(
                f"--sharding: {resource} is reconciled by its own controller and also "
                f"followed by controller {c.name}; shard only root kinds"
            )
    chosen = {c.primary: getattr(c.reconciler, "selector", None) or None for c in controllers}
    return ShardingConfig(
        labels=shard_labels(identity),
        lease_label=identity.key("shard-of"),
        leaving_label=identity.key("shard-leaving"),
        primaries=tuple(sorted(chosen.items(), key=lambda item: str(item[0]))),
        max_drains=options.shard_max_drains,
        interval=min(1.0, options.retry_period),
        children=sharded_children(controllers),
        root_label=identity.shard_root_label,
    )


def sharded_children(
    controllers: Sequence[Registration],
) -> tuple[tuple[Resource, tuple[Resource, ...]], ...]:
    """Per primary kind, the child kinds a sharded operator's shards each cache only their
    share of: those its controller owns (written by the children writer, labelled with
    their root's shard) that no controller watches or refers to (Pods a Deployment makes,
    a user's Secret: no label of ours on them), nor reconciles."""
    followed = {
        *(r for c in controllers for r, _ in c.reconciler.watches),
        *(r for c in controllers for r in c.reconciler.references),
        *(c.primary for c in controllers),
    }
    split = ((c.primary, tuple(r for r in c.owns if r not in followed)) for c in controllers)
    return tuple(sorted(((p, kinds) for p, kinds in split if kinds), key=lambda i: str(i[0])))


def metrics_tls(options: OperatorOptions) -> tuple[ssl.SSLContext | None, CertFiles | None]:
    """The server context /metrics is served with, and the files to watch for renewal."""
    if not options.metrics_secure or options.metrics_address is None:
        return None, None
    if options.metrics_cert_dir:
        files = CertFiles(options.metrics_cert_dir)
        return files.context, files
    return self_signed_context(), None


class MissingCRDs(Exception):
    """The API server does not serve some of the operator's kinds: their CRDs are not
    installed."""

    def __init__(self, names: list[str], hint: str = "") -> None:
        super().__init__(
            f"the API server does not serve {', '.join(names)}: install the CRDs first"
            + (f" ({hint})" if hint else "")
        )
        self.names = names


#: Waits between attempts to reach the API server at start-up: doubling, at most this.
FIRST_RETRY, LAST_RETRY = 1.0, 30.0


async def require_crds(
    client: Client,
    controllers: Sequence[Registration],
    hint: str = "",
    *,
    retry: tuple[float, float] = (FIRST_RETRY, LAST_RETRY),
) -> None:
    """Raise :class:`MissingCRDs` unless every kind the operator declares is served —
    instead of informers retrying list/watch forever; wait (not ready) until the kinds its
    controllers reconcile but others install (another project's CRD: an
    :class:`~appstack.sdk.kit.objects.ObjectReconciler`'s primary) are served, one log
    line per look. While the API server cannot be reached, ask again with backoff
    (``retry``: the first wait, doubling up to the second), one log line each time saying
    where and why; the probe says not ready meanwhile (the manager runs this as its
    preflight). Any other failure to ask (e.g. forbidden) goes on: the informers retry as
    before. Only the start waits: a CRD deleted later empties that kind's cache and its
    informers wait for it to be served again, the operator staying ready (the runtime's
    :class:`~appstack.runtime.informer.Informer`)."""
    own = [c.primary for c in controllers if c.custom]
    others = [c.primary for c in controllers if not c.custom and c.primary not in own]
    backoff = ItemExponentialBackoff(*retry)
    while True:
        try:
            missing = await unserved(client, [*own, *others])
        except TransportError as error:
            delay = backoff.when("api server")
            log.warning(
                "API server not reachable, retrying",
                server=error.server,
                error=error.reason,
                retry_in=delay,
            )
            await asyncio.sleep(delay)
            continue
        except Exception as error:  # only a definite answer stops us
            log.warning("cannot check which kinds the API server serves", error=str(error))
            return
        if backoff.retries("api server"):
            log.info("API server reachable")
            backoff.forget("api server")
        mine = [resource for resource in missing if resource in own]
        if mine:
            raise MissingCRDs(crd_names(mine), hint)
        if not missing:
            return
        delay = backoff.when("installed by others")
        log.warning(
            "waiting for kinds this operator reconciles but does not install",
            crds=crd_names(missing),
            retry_in=delay,
        )
        await asyncio.sleep(delay)


def wire(
    manager: Manager,
    recorder: EventRecorder,
    controllers: Sequence[Registration],
    identity: OperatorIdentity,
    *,
    cache: Mapping[Resource, Transform] | None = None,
    concurrency: int = OperatorOptions.concurrency,
    sync_period: float | None = None,
    enable_all_namespaces: bool = False,
    controller_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Controller]:
    """Declare what ``manager``'s cache keeps of each kind — one table for every
    controller, derived from their declarations and ``cache``, the transform of each kind
    (:func:`~appstack.sdk.kit.caching.cache_policy`) — then set every controller up
    (:meth:`~appstack.sdk.kit.registration.Registration.setup`, each with its share of
    ``concurrency`` workers; ``controller_options`` maps a controller's name to its
    reconciler's own options, or to its own ``concurrency`` or ``sync_period``).
    :func:`assemble` calls it; so may a benchmark running the operator's controllers on a
    manager of its own."""
    manager.cache.configure(
        cache_policy(
            controllers,
            identity,
            transforms=cache,
            cluster_wide=not manager.cache.namespaces,
            enable_all_namespaces=enable_all_namespaces,
        )
    )
    own = controller_options or {}
    return [
        controller.setup(
            manager,
            recorder,
            identity=identity,
            enable_all_namespaces=enable_all_namespaces,
            **{
                "concurrency": controller.workers(concurrency),
                "sync_period": sync_period,
                **own.get(controller.name, {}),  # its own options, or its share overridden
            },
        )
        for controller in controllers
    ]


@dataclass
class Assembly:
    """An operator assembled by :func:`assemble` and not yet running: its client (and the
    leader election's), its manager (cache, controllers, endpoints), its Event recorder."""

    client: Client
    manager: Manager
    recorder: EventRecorder
    election_client: Client | None = None
    cert_files: CertFiles | None = None
    webhooks: WebhookServing | None = None

    @property
    def unfenced(self) -> Client:
        """A client whose writes are not fenced by leadership: what every replica's
        webhook serving writes with (the shared certificate's Secret, the CA bundle), leader
        or not — the leader election's own client when there is one (the main client's
        writes are refused while this replica does not hold the Lease), else the client."""
        return self.election_client or self.client

    async def run(self) -> None:
        """Run until the manager stops (SIGTERM, if :meth:`Manager.install_signal_handlers`
        was called) or leadership is lost; then drain the Events and close the clients.
        The admission webhooks, if any, are served from the start to the end, on every
        replica (not only the leader's)."""
        renewing = asyncio.create_task(self.cert_files.watch()) if self.cert_files else None
        try:
            if self.webhooks is not None:
                await self.webhooks.start(self.unfenced)
            await self.manager.run()
        except LeadershipLost:
            await self.recorder.close(timeout=0)  # the fence refuses its writes: drop them
            raise
        finally:
            if renewing is not None:
                renewing.cancel()
            if self.webhooks is not None:
                await self.webhooks.stop(self.unfenced)
            await self.recorder.close(timeout=min(5.0, self.manager.shutdown_timeout))
            await self.client.close()
            if self.election_client is not None:
                await self.election_client.close()


async def assemble(
    controllers: Sequence[Registration],
    identity: OperatorIdentity,
    options: OperatorOptions,
    *,
    version: str = "",
    cache: Mapping[Resource, Transform] | None = None,
    controller_options: Mapping[str, Mapping[str, Any]] | None = None,
    collectors: Sequence[CollectorFactory] = (),
    tasks: Sequence[TaskFactory] = (),
    crds_hint: str = "",
    tune_process: bool = False,
) -> Assembly:
    """The operator, assembled (see the module docstring) but not started: what
    :func:`serve` runs, and what a test runs to have the same operator in its own process.
    ``cache`` is what the cache keeps of each kind (a transform per kind; :func:`wire`);
    ``controller_options`` maps a controller's name to its reconciler's own options;
    ``collectors`` make extra metrics from the cache (beside each kind's readiness and
    gauges, :class:`~appstack.sdk.kit.kind_metrics.KindMetrics`, always registered);
    ``tasks`` make the operator's background tasks from its manager (periodic or not, only
    while leading or on every replica: :class:`~appstack.runtime.Task`);
    ``crds_hint`` says how to install the CRDs when they are missing. Nothing process-wide
    is changed unless ``tune_process`` (asyncio's TLS read buffer made 16 KiB:
    :func:`~appstack.sdk.process.tune_connections`; :func:`serve` asks for it): an operator
    assembled inside another asyncio program leaves that program as it was."""
    sharding = sharding_config(controllers, identity, options) if options.sharding else None
    me = instance()
    agent = identity.user_agent(version or "dev", me)
    tls, cert_files = metrics_tls(options)
    election = (
        LeaderElectionConfig(
            options.leader_election_id or identity.lease_name,
            options.leader_election_namespace,
            me,
            lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline,
            retry_period=options.retry_period,
        )
        if options.leader_elect or options.sharding
        else None
    )
    if tune_process:  # before the first connection: 16 KiB TLS buffers, not 256 KiB
        tune_connections()
    client = await Client.connect(
        options.kubeconfig,
        options.context,
        user_agent=agent,
        field_manager=identity.field_manager,
        metrics=Metrics(prefix=identity.metric_prefix),
    )
    election_client = (
        await Client.connect(
            options.leader_election_kubeconfig or options.kubeconfig,
            None if options.leader_election_kubeconfig else options.context,
            user_agent=agent,
            field_manager=identity.field_manager,
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
        preflight=lambda: require_crds(client, controllers, crds_hint),
        sharding=sharding,
    )
    recorder = EventRecorder(
        client, controller=identity.event_source, instance=me, busy=manager.backlog
    )
    # what users run, per kind (its readiness and its own gauges), for every operator
    manager.metrics.registry.register(KindMetrics(manager.cache, controllers, identity))
    for collector in collectors:
        manager.metrics.registry.register(collector(manager.cache))
    for task in tasks:
        manager.add_task(task(manager))
    webhooks = webhook_serving(controllers, identity, options, manager)
    migration = storage_migration(
        client,
        [c.kind for c in controllers if c.custom],
        converting=webhooks.ready if webhooks is not None else None,
    )
    if migration is not None:
        manager.add_task(migration)
    wire(
        manager,
        recorder,
        controllers,
        identity,
        cache=cache,
        concurrency=options.concurrency,
        sync_period=options.sync_period,
        enable_all_namespaces=options.enable_all_namespaces,
        controller_options=controller_options,
    )
    return Assembly(client, manager, recorder, election_client, cert_files, webhooks)


def webhook_serving(
    controllers: Sequence[Registration],
    identity: OperatorIdentity,
    options: OperatorOptions,
    manager: Manager,
) -> WebhookServing | None:
    """The operator's admission webhooks (:mod:`appstack.sdk.kit.webhooks`) when any of
    its registrations declares one (or its conversion webhook, when a kind's versions
    convert: :mod:`appstack.sdk.versions`), with a readiness check on ``manager``; else None (no
    server, no certificate). ``--webhook-host`` is developer mode; otherwise the Service
    (``--webhook-service``) in the operator's namespace (``POD_NAMESPACE``), with the
    certificate mounted in ``--webhook-cert-dir`` (cert-manager's) or else the one its
    replicas share (valid ``--webhook-cert-validity``)."""
    declared = [webhook for c in controllers for webhook in c.declared_webhooks]
    converting = converting_kinds([c.kind for c in controllers if c.custom])
    if not declared and not converting:
        return None
    serving = WebhookServing(
        declared,
        identity,
        address=options.webhook_address,
        host=options.webhook_host,
        service=options.webhook_service or f"{identity.project}-webhook-service",
        namespace=os.environ.get("POD_NAMESPACE") or identity.namespace,
        enable_all_namespaces=options.enable_all_namespaces,
        metrics=manager.metrics,
        conversions=converting,
        cert_dir=None if options.webhook_host else options.webhook_cert_dir,
        cert_validity=options.webhook_cert_validity,
    )
    manager.add_readiness_check("webhooks", serving.ready)
    return serving


async def serve(
    controllers: Sequence[Registration],
    identity: OperatorIdentity,
    options: OperatorOptions,
    **assembly: Any,
) -> None:
    """Run the operator until SIGTERM (see the module docstring; ``assembly`` the keyword
    arguments of :func:`assemble`); raises :class:`~appstack.runtime.LeadershipLost` or
    :class:`MissingCRDs`."""
    assembled = await assemble(controllers, identity, options, **{"tune_process": True, **assembly})
    assembled.manager.install_signal_handlers()
    settle_heap()
    log.info(
        "starting",
        operator=identity.name,
        identity=assembled.recorder.instance,
        namespaces=options.namespaces or "all",
        enabled="all" if options.enable_all_namespaces else "labelled",
        leader_elect=options.leader_elect,
        sync_period=options.sync_period,
        metrics_tls=(
            "files"
            if assembled.cert_files
            else "self-signed"
            if assembled.manager.metrics_tls
            else "off"
        ),
    )
    try:
        await assembled.run()
    finally:  # the process exits next: a late signal is not a traceback on the terminal
        assembled.manager.release_signal_handlers()


def run_operator(
    controllers: Sequence[Registration],
    identity: OperatorIdentity,
    options: OperatorOptions | None = None,
    *,
    sharding: bool = False,
    **assembly: Any,
) -> int:
    """Configure logging, run the operator (:func:`serve`, ``assembly`` its keyword
    arguments) and return its exit code: 0 after SIGTERM, 1 when leadership (or a shard's
    Lease) was lost, a CRD is missing or the kubeconfig cannot be used (2 is left to usage
    errors, click's; an operator that cannot shard is 1 too). ``sharding=True`` (as
    ``options.sharding``, the ``--sharding`` flag): every replica active on its own share
    of the primary objects (docs/sharding.md)."""
    options = options or OperatorOptions()
    if sharding:
        options = replace(options, sharding=True)
    configure_logging(options.log_format, options.log_level, cache_loggers=True)
    try:
        asyncio.run(serve(controllers, identity, options, **assembly))
    except LeadershipLost:
        return 1
    except MissingCRDs as error:
        log.error("cannot start", error=str(error), missing=error.names)
        return 1
    except ShardingRefused as error:
        log.error("cannot start", error=str(error))
        return 1
    except KubeconfigError as error:  # the user's to fix: no traceback
        log.error("cannot start", error=str(error), hint=KUBECONFIG_HINT)
        return 1
    return 0
