"""The controller runtime: client, informer cache, workqueue, reconcile loop, manager,
leader election, metrics, health and events.

What a user needs to write a controller is importable from here (see ``__all__``)::

    from appstack.runtime import Builder, Client, Manager, Request, Result, Resource

    WIDGET = Resource("example.com", "v1", "Widget", "widgets")

    class WidgetReconciler:
        async def reconcile(self, request: Request) -> Result | None: ...

    async with await Client.connect() as client:
        manager = Manager(client)
        Builder(manager, "widget").for_(WIDGET).complete(WidgetReconciler())
        await manager.run()

It names no product: who writes (the client's ``field_manager`` and ``user_agent``), who
reports Events (``EventRecorder(controller=..., instance=...)``) and the prefix of its own
metrics (``Metrics(prefix=...)``) are the program's to pass; without them, the program's
name (``sys.argv[0]``, as client-go) and no prefix (the controller-runtime, workqueue,
leader-election and REST client metrics keep controller-runtime's names).

Of the rest of its distribution it imports only :mod:`appstack.core.resource`
(:class:`Resource` and the cache keys, below every other package) and
:mod:`appstack.core.lazy` (its lazy door); the operator and its
controllers are built on it, never the other way round (import-linter contracts). Its
third-party dependencies: ``aiohttp`` (the client's transport and the ``/healthz``,
``/readyz``, ``/metrics`` server), ``orjson``, ``structlog``, ``prometheus-client``,
``PyYAML`` (kubeconfig files) and ``cryptography`` (a self-signed ``/metrics`` certificate,
made in a child process); ``kubernetes_asyncio`` only for kubeconfig users it does not read
itself (``auth-provider``, basic auth: the ``legacy-auth`` extra).

Every name the operator, its controllers, its CLI, the test bed and the benchmarks import
from the runtime's modules is exported here (``__all__``, kept exact by
``tests/unit/runtime/test_runtime.py``); the modules' other names are details. Programs built
on it import it only from here. Names load on first use: importing the package costs nothing
until then.
"""

import typing

from appstack.core.lazy import load as _load

if typing.TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs; at run time, lazily
    from appstack.runtime.builder import (
        Builder,
        Mapper,
        request_for,
    )
    from appstack.runtime.cache import (
        NAMESPACES,
        ByObject,
        Cache,
        Transform,
        namespace_metadata,
    )
    from appstack.runtime.certdata import (
        load_cert_chain,
    )
    from appstack.runtime.client import (
        Client,
    )
    from appstack.runtime.clock import (
        Clock,
        FakeClock,
        RealClock,
    )
    from appstack.runtime.controller import (
        Controller,
        Reconciler,
        Request,
        Result,
    )
    from appstack.runtime.conversion import (
        Conversion,
        ConversionError,
    )
    from appstack.runtime.discovery import (
        crd_names,
        crd_serves,
        unserved,
        wait_served,
    )
    from appstack.runtime.errors import (
        AlreadyExists,
        ApiError,
        BadRequest,
        Conflict,
        Forbidden,
        Gone,
        Invalid,
        MethodNotAllowed,
        NotFound,
        ServerError,
        ServerTimeout,
        TerminalError,
        TooManyRequests,
        TransportError,
        Unauthorized,
        WatchStalled,
    )
    from appstack.runtime.events import (
        EventRecorder,
        EventType,
    )
    from appstack.runtime.fake import (
        FakeApiServer,
    )
    from appstack.runtime.filters import (
        Filter,
        annotated,
        annotations_changed,
        generation_changed,
        labelled,
        labels_changed,
        parse_selector,
        when,
    )
    from appstack.runtime.finalizer import (
        add as add_finalizer,
    )
    from appstack.runtime.finalizer import (
        finalize,
    )
    from appstack.runtime.finalizer import (
        has as has_finalizer,
    )
    from appstack.runtime.finalizer import (
        remove as remove_finalizer,
    )
    from appstack.runtime.informer import (
        FOREIGN_METADATA,
        EventHandler,
        FuncHandler,
        Informer,
        prefixed,
    )
    from appstack.runtime.kubeconfig import (
        KubeconfigError,
        current_namespace,
    )
    from appstack.runtime.leaderelection import (
        LeaderElectionConfig,
        LeadershipLost,
        NotLeader,
    )
    from appstack.runtime.logging import (
        Format as LogFormat,
    )
    from appstack.runtime.logging import (
        configure as configure_logging,
    )
    from appstack.runtime.managedfields import (
        keep_applied_by,
    )
    from appstack.runtime.manager import (
        Manager,
    )
    from appstack.runtime.metrics import (
        Metrics,
    )
    from appstack.runtime.metricsauth import (
        SUBJECT_ACCESS_REVIEW,
        TOKEN_REVIEW,
        MetricsAuth,
    )
    from appstack.runtime.ratelimit import (
        ItemExponentialBackoff,
    )
    from appstack.runtime.resources import (
        CONFIG_MAP,
        CRON_JOB,
        DEPLOYMENT,
        ENDPOINT_SLICE,
        EVENT,
        JOB,
        LEASE,
        NAMESPACE,
        PDB,
        POD,
        PVC,
        SECRET,
        SERVICE,
        SERVICE_ACCOUNT,
        STATEFUL_SET,
        Obj,
        Resource,
        object_key,
        split_key,
    )
    from appstack.runtime.servingcert import (
        CertFiles,
        IssuedCertificate,
        issue_certificate,
        self_signed,
        self_signed_context,
        tls_server_context,
    )
    from appstack.runtime.sharding import (
        Coordinator,
        KeyFenced,
        ShardingConfig,
        ShardLabels,
        ShardMetrics,
        owner,
        root_key,
        shard_child_labels,
    )
    from appstack.runtime.store import (
        IndexFunc,
        Store,
        controller_key,
    )
    from appstack.runtime.tasks import (
        Task,
    )
    from appstack.runtime.tlsbuffer import (
        limit_tls_read_buffer,
    )
    from appstack.runtime.webhook import (
        AdmissionRequest,
        Answer,
        Verdict,
        Webhook,
        WebhookServer,
        allow,
        deny,
        json_patch,
    )

#: Where each public name lives (its one home): ``module`` or ``module:attribute`` where
#: the public name is not the module's own (``add_finalizer`` is
#: :func:`appstack.runtime.finalizer.add`).
_HOMES = {
    "FakeApiServer": "fake",
    "Filter": "filters",
    "annotated": "filters",
    "annotations_changed": "filters",
    "generation_changed": "filters",
    "labelled": "filters",
    "labels_changed": "filters",
    "parse_selector": "filters",
    "when": "filters",
    "Builder": "builder",
    "Mapper": "builder",
    "request_for": "builder",
    "NAMESPACES": "cache",
    "ByObject": "cache",
    "Cache": "cache",
    "Transform": "cache",
    "namespace_metadata": "cache",
    "load_cert_chain": "certdata",
    "Client": "client",
    "Clock": "clock",
    "FakeClock": "clock",
    "RealClock": "clock",
    "Conversion": "conversion",
    "ConversionError": "conversion",
    "Controller": "controller",
    "Reconciler": "controller",
    "Request": "controller",
    "Result": "controller",
    "crd_names": "discovery",
    "unserved": "discovery",
    "crd_serves": "discovery",
    "wait_served": "discovery",
    "AlreadyExists": "errors",
    "ApiError": "errors",
    "BadRequest": "errors",
    "Conflict": "errors",
    "Forbidden": "errors",
    "Gone": "errors",
    "Invalid": "errors",
    "MethodNotAllowed": "errors",
    "NotFound": "errors",
    "ServerError": "errors",
    "ServerTimeout": "errors",
    "TerminalError": "errors",
    "TooManyRequests": "errors",
    "TransportError": "errors",
    "Unauthorized": "errors",
    "WatchStalled": "errors",
    "EventRecorder": "events",
    "EventType": "events",
    "add_finalizer": "finalizer:add",
    "finalize": "finalizer",
    "has_finalizer": "finalizer:has",
    "remove_finalizer": "finalizer:remove",
    "FOREIGN_METADATA": "informer",
    "EventHandler": "informer",
    "FuncHandler": "informer",
    "Informer": "informer",
    "prefixed": "informer",
    "KubeconfigError": "kubeconfig",
    "current_namespace": "kubeconfig",
    "LeaderElectionConfig": "leaderelection",
    "LeadershipLost": "leaderelection",
    "NotLeader": "leaderelection",
    "LogFormat": "logging:Format",
    "configure_logging": "logging:configure",
    "keep_applied_by": "managedfields",
    "Manager": "manager",
    "Metrics": "metrics",
    "SUBJECT_ACCESS_REVIEW": "metricsauth",
    "TOKEN_REVIEW": "metricsauth",
    "MetricsAuth": "metricsauth",
    "ItemExponentialBackoff": "ratelimit",
    "CONFIG_MAP": "resources",
    "CRON_JOB": "resources",
    "DEPLOYMENT": "resources",
    "ENDPOINT_SLICE": "resources",
    "EVENT": "resources",
    "JOB": "resources",
    "LEASE": "resources",
    "NAMESPACE": "resources",
    "PDB": "resources",
    "POD": "resources",
    "PVC": "resources",
    "SECRET": "resources",
    "SERVICE": "resources",
    "SERVICE_ACCOUNT": "resources",
    "STATEFUL_SET": "resources",
    "Obj": "resources",
    "Resource": "resources",
    "object_key": "resources",
    "split_key": "resources",
    "CertFiles": "servingcert",
    "IssuedCertificate": "servingcert",
    "issue_certificate": "servingcert",
    "self_signed": "servingcert",
    "self_signed_context": "servingcert",
    "tls_server_context": "servingcert",
    "Coordinator": "sharding",
    "KeyFenced": "sharding",
    "ShardingConfig": "sharding",
    "ShardLabels": "sharding",
    "ShardMetrics": "sharding",
    "owner": "sharding",
    "root_key": "sharding",
    "shard_child_labels": "sharding",
    "IndexFunc": "store",
    "Store": "store",
    "controller_key": "store",
    "Task": "tasks",
    "limit_tls_read_buffer": "tlsbuffer",
    "AdmissionRequest": "webhook",
    "Answer": "webhook",
    "Verdict": "webhook",
    "Webhook": "webhook",
    "WebhookServer": "webhook",
    "allow": "webhook",
    "deny": "webhook",
    "json_patch": "webhook",
}

__all__ = [
    "CONFIG_MAP",
    "CRON_JOB",
    "DEPLOYMENT",
    "ENDPOINT_SLICE",
    "EVENT",
    "FOREIGN_METADATA",
    "JOB",
    "LEASE",
    "NAMESPACE",
    "NAMESPACES",
    "PDB",
    "POD",
    "PVC",
    "SECRET",
    "SERVICE",
    "SERVICE_ACCOUNT",
    "STATEFUL_SET",
    "SUBJECT_ACCESS_REVIEW",
    "TOKEN_REVIEW",
    "AdmissionRequest",
    "AlreadyExists",
    "Answer",
    "ApiError",
    "BadRequest",
    "Builder",
    "ByObject",
    "Cache",
    "CertFiles",
    "Client",
    "Clock",
    "Conflict",
    "Controller",
    "Conversion",
    "ConversionError",
    "Coordinator",
    "EventHandler",
    "EventRecorder",
    "EventType",
    "FakeApiServer",
    "FakeClock",
    "Filter",
    "Forbidden",
    "FuncHandler",
    "Gone",
    "IndexFunc",
    "Informer",
    "Invalid",
    "IssuedCertificate",
    "ItemExponentialBackoff",
    "KeyFenced",
    "KubeconfigError",
    "LeaderElectionConfig",
    "LeadershipLost",
    "LogFormat",
    "Manager",
    "Mapper",
    "MethodNotAllowed",
    "Metrics",
    "MetricsAuth",
    "NotFound",
    "NotLeader",
    "Obj",
    "RealClock",
    "Reconciler",
    "Request",
    "Resource",
    "Result",
    "ServerError",
    "ServerTimeout",
    "ShardLabels",
    "ShardMetrics",
    "ShardingConfig",
    "Store",
    "Task",
    "TerminalError",
    "TooManyRequests",
    "Transform",
    "TransportError",
    "Unauthorized",
    "Verdict",
    "WatchStalled",
    "Webhook",
    "WebhookServer",
    "add_finalizer",
    "allow",
    "annotated",
    "annotations_changed",
    "configure_logging",
    "controller_key",
    "crd_names",
    "crd_serves",
    "current_namespace",
    "deny",
    "finalize",
    "generation_changed",
    "has_finalizer",
    "issue_certificate",
    "json_patch",
    "keep_applied_by",
    "labelled",
    "labels_changed",
    "limit_tls_read_buffer",
    "load_cert_chain",
    "namespace_metadata",
    "object_key",
    "owner",
    "parse_selector",
    "prefixed",
    "remove_finalizer",
    "request_for",
    "root_key",
    "self_signed",
    "self_signed_context",
    "shard_child_labels",
    "split_key",
    "tls_server_context",
    "unserved",
    "wait_served",
    "when",
]


def __getattr__(name: str) -> typing.Any:
    return _load(__name__, _HOMES, name, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
