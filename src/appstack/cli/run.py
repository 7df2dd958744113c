"""``appstack run``: the operator's flags (controller-runtime's names where they exist) ->
:class:`appstack.operator.OperatorOptions`. Registered on the CLI group by
:mod:`appstack.cli`; the operator itself is imported only when the command runs."""

from __future__ import annotations

import sys
from typing import cast

import click

from appstack.cli import lean
from appstack.core import defaults
from appstack.core.duration import DEFAULT_SYNC_PERIOD, parse_duration

KUBECONFIG = click.option(
    "--kubeconfig",
    envvar="KUBECONFIG",
    default=None,
    help="Kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or in-cluster).",
)


@click.command()
@KUBECONFIG
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="Only watch this namespace (repeatable; default: all namespaces).",
)
@click.option(
    "--concurrency",
    default=defaults.CONCURRENCY,
    show_default=True,
    help="Concurrent reconciles per controller (each waits on the API server most of the "
    "time: enough of them keep a burst of changes moving at the server's pace).",
)
@click.option(
    "--sync-period",
    default=DEFAULT_SYNC_PERIOD,
    show_default=True,
    help="Every controller reconciles every object again this often without an event "
    "(e.g. 90s, 10m, 1h), repairing what no watch reports; from the cache, writing nothing "
    "when nothing changed.",
)
@click.option(
    "--leader-elect/--no-leader-elect",
    default=False,
    show_default=True,
    help="Run leader election so that only one replica reconciles.",
)
@click.option(
    "--leader-election-namespace",
    envvar="POD_NAMESPACE",
    default="default",
    show_default="$POD_NAMESPACE or default",
    help="Namespace of the Lease.",
)
@click.option(
    "--leader-election-kubeconfig",
    default=None,
    help="Kubeconfig for Lease calls only (default: --kubeconfig; always its own connections).",
)
@click.option(
    "--leader-elect-lease-duration",
    "lease_duration",
    default=15.0,
    show_default=True,
    help="Seconds a non-leader waits after the last renewal it saw before taking over.",
)
@click.option(
    "--leader-elect-renew-deadline",
    "renew_deadline",
    default=10.0,
    show_default=True,
    help="Seconds after the last successful renewal at which the leader stops writing and "
    "exits (must be below the lease duration).",
)
@click.option(
    "--leader-elect-retry-period",
    "retry_period",
    default=2.0,
    show_default=True,
    help="Seconds between acquire/renew attempts.",
)
@click.option(
    "--graceful-shutdown-timeout",
    "shutdown_timeout",
    default=20.0,
    show_default=True,
    help="On SIGTERM, seconds in-flight reconciles may finish before they are cancelled "
    "(keep below the pod's terminationGracePeriodSeconds).",
)
@click.option(
    "--auth-failure-threshold",
    default=60.0,
    show_default=True,
    help="/healthz fails once the API server has rejected our credentials (401, or 403 on "
    "list/watch) for this many seconds.",
)
@click.option(
    "--metrics-bind-address",
    default=":8080",
    show_default=True,
    help="Address of /metrics ('0' disables).",
)
@click.option(
    "--metrics-auth/--no-metrics-auth",
    default=True,
    show_default=True,
    help="Serve /metrics only to bearer tokens allowed 'get' on it (TokenReview + "
    "SubjectAccessReview; bind appstack-metrics-reader-NAMESPACE to the scraper).",
)
@click.option(
    "--metrics-secure/--no-metrics-secure",
    default=True,
    show_default=True,
    help="Serve /metrics over HTTPS (--no-metrics-secure: plain HTTP, for scrapers that "
    "cannot do TLS).",
)
@click.option(
    "--metrics-cert-dir",
    default=None,
    help="Directory with tls.crt and tls.key for /metrics (a mounted kubernetes.io/tls "
    "Secret, e.g. cert-manager's; reloaded when they change). Default: a self-signed "
    "certificate made at start-up, in memory.",
)
@click.option(
    "--health-probe-bind-address",
    default=":8081",
    show_default=True,
    help="Address of /healthz and /readyz ('0' disables).",
)
@click.option(
    "--log-format",
    type=click.Choice(["auto", "json", "console"]),
    default="auto",
    show_default=True,
    help="auto: JSON unless stderr is a terminal.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error", "critical"], case_sensitive=False),
    default=defaults.LOG_LEVEL,
    show_default=True,
)
@click.option(
    "--allow-external-ips/--no-allow-external-ips",
    default=False,
    show_default=True,
    help="Let external middleware be an IP address (an EndpointSlice the operator writes); "
    "loopback, link-local, metadata and --external-deny-cidr ranges are refused even then.",
)
@click.option(
    "--external-deny-cidr",
    "external_deny_cidrs",
    multiple=True,
    help="A range external middleware may not point at, e.g. the cluster's pod and service "
    "ranges (repeatable).",
)
@click.option(
    "--allow-external-cluster-names/--no-allow-external-cluster-names",
    default=False,
    show_default=True,
    help="Let external middleware be a host name inside the cluster or the node (localhost, "
    "kubernetes.default, <svc>.<ns>.svc, *.cluster.local, metadata names).",
)
@click.option(
    "--enable-all-namespaces/--no-enable-all-namespaces",
    default=False,
    show_default=True,
    help="Act in every watched namespace, not only those a cluster administrator labelled "
    "appstack.dev/enabled=true. For single-team clusters: whoever may create our kinds "
    "anywhere then gets the operator's writes there. Install with the same flag "
    "(appstack manifests --enable-all-namespaces), or its admission policies refuse them.",
)
def run(
    *,
    kubeconfig: str | None,
    namespaces: tuple[str, ...],
    concurrency: int,
    sync_period: str,
    leader_elect: bool,
    leader_election_namespace: str,
    leader_election_kubeconfig: str | None,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    shutdown_timeout: float,
    auth_failure_threshold: float,
    metrics_bind_address: str,
    metrics_auth: bool,
    metrics_secure: bool,
    metrics_cert_dir: str | None,
    health_probe_bind_address: str,
    log_format: str,
    log_level: str,
    allow_external_ips: bool,
    allow_external_cluster_names: bool,
    external_deny_cidrs: tuple[str, ...],
    enable_all_namespaces: bool,
) -> None:
    """Run the operator (all controllers) against a cluster."""
    lean.import_aiohttp()  # before the operator's modules import it
    from appstack.operator import OperatorOptions, run_operator  # noqa: PLC0415
    from appstack.runtime.leaderelection import LeaderElectionConfig  # noqa: PLC0415
    from appstack.runtime.logging import Format  # noqa: PLC0415

    try:
        LeaderElectionConfig("-", "-", "-", lease_duration, renew_deadline, retry_period)
        sync_seconds = parse_duration(sync_period)
    except ValueError as error:
        raise click.UsageError(str(error)) from error

    options = OperatorOptions(
        kubeconfig=kubeconfig,
        namespaces=list(namespaces),
        concurrency=concurrency,
        sync_period=sync_seconds,
        leader_elect=leader_elect,
        leader_election_namespace=leader_election_namespace,
        leader_election_kubeconfig=leader_election_kubeconfig,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=retry_period,
        shutdown_timeout=shutdown_timeout,
        auth_failure_threshold=auth_failure_threshold,
        metrics_address=None if metrics_bind_address == "0" else metrics_bind_address,
        metrics_auth=metrics_auth,
        metrics_secure=metrics_secure,
        metrics_cert_dir=metrics_cert_dir,
        health_address=None if health_probe_bind_address == "0" else health_probe_bind_address,
        log_format=cast(Format, log_format),
        log_level=log_level,
        allow_external_ips=allow_external_ips,
        allow_external_cluster_names=allow_external_cluster_names,
        external_deny_cidrs=list(external_deny_cidrs),
        enable_all_namespaces=enable_all_namespaces,
    )
    sys.exit(run_operator(options))
