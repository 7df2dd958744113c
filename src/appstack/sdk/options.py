"""How an operator runs: :class:`OperatorOptions`, its flags' values with their defaults
(made by :meth:`OperatorOptions.from_flags` from the command line,
:func:`appstack.sdk.flags.operator_flags`; read by :func:`appstack.sdk.operator.serve`).
Light: dataclasses and click only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import click

from appstack.core import defaults
from appstack.core.duration import DEFAULT_SYNC_PERIOD, parse_duration

#: Where an operator serves ``/metrics`` unless told (``--metrics-bind-address``).
METRICS_ADDRESS = ":8080"

LogFormat = Literal["auto", "json", "console"]

#: The range of ``--leader-elect-lease-duration`` (seconds). The upper bound is also the
#: install's: its admission policy refuses a Lease written by the operator's token with a
#: longer duration (:func:`appstack.sdk.guards.writes.lease_policy`), so a stolen
#: token cannot hold the Lease — and every replica off — for longer than this after its
#: last renewal.
MIN_LEASE_DURATION = 1.0
MAX_LEASE_DURATION = 300.0
#: How long the webhooks' shared serving certificate is valid (seconds), by default a
#: year, and at least this (it is renewed a third of its lifetime before it ends).
WEBHOOK_CERT_VALIDITY = 365 * 86400.0
MIN_WEBHOOK_CERT_VALIDITY = 30.0


@dataclass
class OperatorOptions:
    """How the operator runs: its flags (:func:`operator_flags`), with their defaults."""

    kubeconfig: str | None = None
    context: str | None = None  # of the kubeconfig; None: its current-context
    namespaces: list[str] = field(default_factory=list)
    concurrency: int = defaults.CONCURRENCY  # see docs/performance.md: "Choosing --concurrency"
    leader_elect: bool = False
    leader_election_namespace: str = "default"
    leader_election_id: str = ""  # the Lease's name; empty: the identity's lease_name
    leader_election_kubeconfig: str | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    # every replica active on its own share of the primary objects (docs/sharding.md);
    # leader election on (its Lease elects the coordinator), with the Lease settings above
    sharding: bool = False
    # sharded: keys drained at once per kind while keys move (a scale-out, a shard back):
    # how fast they move against how many reconciles wait for their new owner at a time;
    # None ("auto"): 1 % of the kind's objects, at least 10 (runtime's auto_drains)
    shard_max_drains: int | None = None
    shutdown_timeout: float = parse_duration(defaults.SHUTDOWN_TIMEOUT)
    auth_failure_threshold: float = 60.0
    metrics_address: str | None = METRICS_ADDRESS
    metrics_auth: bool = True
    metrics_secure: bool = True  # HTTPS; False: plain HTTP
    metrics_cert_dir: str | None = None  # tls.crt + tls.key; None: self-signed in memory
    health_address: str | None = ":8081"
    log_format: LogFormat = "auto"
    log_level: str = defaults.LOG_LEVEL
    sync_period: float = parse_duration(DEFAULT_SYNC_PERIOD)
    enable_all_namespaces: bool = False  # else only the namespaces labelled enabled
    # admission webhooks (only when a registration declares some): where they listen;
    # the host the API server reaches them at (developer mode: the operator applies its
    # webhook configurations itself) or else the Service in-cluster (its name; empty:
    # <project>-webhook-service in the operator's namespace)
    webhook_address: str = ":9443"
    webhook_host: str | None = None
    webhook_service: str = ""
    # in-cluster: a mounted certificate (tls.crt + tls.key, e.g. cert-manager's; its CA
    # injected by cert-manager), else the replicas' shared one, valid this long (seconds)
    webhook_cert_dir: str | None = None
    webhook_cert_validity: float = WEBHOOK_CERT_VALIDITY

    @classmethod
    def from_flags(cls, **flags: Any) -> OperatorOptions:
        """The options of what :func:`operator_flags` gave a command (other keyword
        arguments are the command's own: not accepted here). Raises :class:`click.UsageError`
        on a sync period that does not parse; :func:`appstack.sdk.operator.check` says
        whether the rest fit together."""
        sync = flags.pop("sync_period")
        metrics = flags.pop("metrics_bind_address")
        health = flags.pop("health_probe_bind_address")
        try:
            sync_seconds = parse_duration(sync)
        except ValueError as error:
            raise click.UsageError(str(error)) from error
        return cls(
            namespaces=list(flags.pop("namespaces")),
            sync_period=sync_seconds,
            metrics_address=None if metrics == "0" else metrics,
            health_address=None if health == "0" else health,
            **flags,
        )
