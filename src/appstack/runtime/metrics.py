"""Prometheus metrics with controller-runtime's names, so existing dashboards work unchanged.

Reconcile: ``controller_runtime_reconcile_total{controller,result}``,
``controller_runtime_reconcile_errors_total``,
``controller_runtime_terminal_reconcile_errors_total``,
``controller_runtime_reconcile_time_seconds``,
``controller_runtime_max_concurrent_reconciles``, ``controller_runtime_active_workers``.
Workqueue (label ``name``): ``workqueue_depth``, ``workqueue_adds_total``,
``workqueue_queue_duration_seconds``, ``workqueue_work_duration_seconds``,
``workqueue_retries_total``. Leader election: ``leader_election_master_status{name}``,
``leader_election_writes_refused_total{name}`` (writes the fence refused).
Client: ``rest_client_requests_total{code,method,host}``. Admission webhooks
(:mod:`.webhook`): ``controller_runtime_webhook_requests_total{webhook,code}``,
``controller_runtime_webhook_latency_seconds{webhook}``,
``controller_runtime_webhook_requests_in_flight{webhook}``.

The runtime's own metrics, which controller-runtime does not have, are named with the
``prefix`` the program gives :class:`Metrics` (its Prometheus namespace: ``<prefix>_...``;
none by default). Events: ``<prefix>_events_dropped_total`` (Events not recorded because
too many were waiting). Scrapes: ``<prefix>_metrics_auth_reviews_total{result}``
(TokenReviews asked to check a scraper's token: allowed, unauthenticated, forbidden,
error) and ``<prefix>_metrics_auth_throttled_total`` (scrapes answered 429 without a
review: over the review budget, :mod:`.metricsauth`). Client:
``<prefix>_rest_client_warnings_total{host}`` (the API server's ``Warning:`` headers).

Everything lives in one :class:`Metrics` object with its own registry (tests create as many
managers as they like). Used by the client, the workqueue, controllers and the manager.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

_RECONCILE_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    3.5,
    4.0,
    4.5,
    5,
    6,
    7,
    8,
    9,
    10,
    15,
    20,
    25,
    30,
    40,
    50,
    60,
)
_QUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 2))  # 10ns .. 10s, as client-go


class Metrics:
    """Every metric of one manager, in its own Prometheus registry (:meth:`exposition`).

    ``prefix`` (e.g. ``"my_operator"``) names the metrics that are the runtime's own rather
    than controller-runtime's: ``my_operator_events_dropped_total``; without one,
    ``events_dropped_total``. The controller-runtime, workqueue, leader-election and REST
    client metrics keep controller-runtime's names whatever the prefix."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.registry = CollectorRegistry()
        r = self.registry
        # process_* (CPU, memory, fds, start time) and python_* (version, GC), as every
        # Prometheus client exports them: dashboards and alerts expect them.
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.terminal_reconcile_errors = Counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=_RECONCILE_BUCKETS,
            registry=r,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=r,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=r,
        )
        self.queue_depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", ["name"], registry=r
        )
        self.queue_adds = Counter(
            "workqueue_adds_total",
            "Total number of adds handled by workqueue",
            ["name"],
            registry=r,
        )
        self.queue_latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name"],
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            ["name"],
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        self.queue_retries = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            ["name"],
            registry=r,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, "
            "0 indicates backup, 1 indicates master.",
            ["name"],
            registry=r,
        )
        self.writes_refused = Counter(
            "leader_election_writes_refused",
            "Writes refused locally because the Lease may have been lost.",
            ["name"],
            registry=r,
        )
        self.rest_requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=r,
        )
        # the webhook server's (:mod:`.webhook`), as controller-runtime's
        self.webhook_requests = Counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.",
            ["webhook", "code"],
            registry=r,
        )
        self.webhook_latency = Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            ["webhook"],
            registry=r,
        )
        self.webhook_in_flight = Gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            ["webhook"],
            registry=r,
        )
        self.events_dropped = Counter(
            "events_dropped",
            "Kubernetes Events not recorded because too many were waiting to be sent.",
            namespace=prefix,
            registry=r,
        )
        self.informer_kind_served = Gauge(
            "informer_kind_served",
            "1 while the API server serves the kind an informer keeps, 0 while it answers "
            "404 (its CRD deleted or not installed): the cache then holds none of it.",
            ["resource"],
            namespace=prefix,
            registry=r,
        )
        self.metrics_auth_reviews = Counter(
            "metrics_auth_reviews",
            "TokenReviews asked to check a /metrics scraper's token, by result.",
            ["result"],
            namespace=prefix,
            registry=r,
        )
        self.rest_warnings = Counter(
            "rest_client_warnings",
            "Warnings the API server sent in Warning headers (code 299), by host.",
            ["host"],
            namespace=prefix,
            registry=r,
        )
        self.metrics_auth_throttled = Counter(
            "metrics_auth_throttled",
            "/metrics scrapes answered 429 without a TokenReview: over the review budget.",
            namespace=prefix,
            registry=r,
        )

    def queue(self, name: str) -> WorkQueueMetrics:
        return WorkQueueMetrics(self, name)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class WorkQueueMetrics:
    """One workqueue's Prometheus metrics (label ``name``), as the queue reports them
    (:class:`appstack.runtime.workqueue.QueueObserver`)."""

    def __init__(self, metrics: Metrics, name: str) -> None:
        self._depth = metrics.queue_depth.labels(name)
        self._adds = metrics.queue_adds.labels(name)
        self._latency = metrics.queue_latency.labels(name)
        self._work = metrics.work_duration.labels(name)
        self._retries = metrics.queue_retries.labels(name)

    def added(self) -> None:
        self._adds.inc()

    def depth(self, depth: int) -> None:
        self._depth.set(depth)

    def queued_for(self, seconds: float) -> None:
        self._latency.observe(seconds)

    def worked_for(self, seconds: float) -> None:
        self._work.observe(seconds)

    def retried(self) -> None:
        self._retries.inc()
