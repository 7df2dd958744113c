"""An operator's command-line flags (controller-runtime's names where they exist), the
options they make and its run command: :class:`OperatorOptions`, :func:`operator_flags`,
:func:`operator_command`.

:func:`operator_flags` adds every flag of the operator's run command to a click command —
appstack's ``appstack run`` and a scaffolded project's ``python -m <package>`` alike — and
:meth:`OperatorOptions.from_flags` turns what the command received into options for
:func:`appstack.sdk.operator.run_operator`. Light on purpose: importing it loads click,
never the runtime (a CLI's ``--help`` stays fast, and the operator's process tuning runs
before aiohttp is imported: :mod:`appstack.sdk.process`).
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from appstack.core import defaults
from appstack.core.duration import DEFAULT_SYNC_PERIOD, parse_duration
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.options import (
    MAX_LEASE_DURATION,
    METRICS_ADDRESS,
    MIN_LEASE_DURATION,
    MIN_WEBHOOK_CERT_VALIDITY,
    OperatorOptions,
)

if TYPE_CHECKING:
    from appstack.core.resource import Resource
    from appstack.runtime.cache import Transform
    from appstack.sdk.chart import ChartFlag
    from appstack.sdk.kit.registration import Registration
    from appstack.sdk.operator import CollectorFactory, TaskFactory

F = TypeVar("F", bound=Callable[..., Any])


#: ``$KUBECONFIG`` is not the option's environment variable: it may list several files
#: (``a:b``, merged as kubectl merges them), which the runtime's loader reads itself
#: (:mod:`appstack.runtime.kubeconfig`); as the option's value it would be one path.
KUBECONFIG = click.option(
    "--kubeconfig",
    default=None,
    help="Kubeconfig to use (default: $KUBECONFIG, its files merged as kubectl merges "
    "them, else ~/.kube/config, else in-cluster).",
)
#: kubectl's ``--context``: which of the kubeconfig's contexts.
CONTEXT = click.option(
    "--context",
    default=None,
    help="The kubeconfig context to use (default: its current-context).",
)
KUBECONFIG.__doc__ = "kubectl's ``--kubeconfig``, as a click decorator for an operator's command."
CONTEXT.__doc__ = "kubectl's ``--context``, as a click decorator for an operator's command."


def check_duration(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """A click callback: a duration flag (``90s``, ``10m``, ``1h``) refused, naming the
    flag, unless it parses."""
    try:
        parse_duration(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from error
    return value


if TYPE_CHECKING:  # generic from click 8.2 on; plain before
    _FloatType = click.ParamType[float]
    _DrainsType = click.ParamType[int | None]
else:
    _FloatType = _DrainsType = click.ParamType


class Drains(_DrainsType):
    """A click type: ``--shard-max-drains``' value — ``auto`` (None: the coordinator
    follows the number of objects) or a whole number from 1 to 1000."""

    name = "auto|1-1000"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> int | None:
        """None for ``auto``, else the number, or click's usage error naming the flag."""
        if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
            return None
        try:
            number = int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is neither auto nor a whole number", param, ctx)
        if not 1 <= number <= 1000:
            self.fail(f"{number} is not auto nor from 1 to 1000", param, ctx)
        return number


class Duration(_FloatType):
    """A click type: a duration flag's value in seconds (a float), written as Go and
    controller-runtime write durations (``90s``, ``10m``, ``1h30m``, ``500ms``) or as a bare
    number of seconds (``15``, ``2.5``: what these flags took before); refused, naming the
    flag, unless it parses and lies from ``minimum`` to ``maximum`` (seconds). Zero only
    where ``zero`` allows it; never a negative duration."""

    name = "duration"

    def __init__(
        self, minimum: float | None = None, maximum: float | None = None, *, zero: bool = False
    ) -> None:
        self.minimum, self.maximum, self.zero = minimum, maximum, zero

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        """Seconds in ``value`` (a duration, a bare number of seconds, or already a
        number: a default), or click's usage error naming the flag."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = float(value)
        else:
            text = str(value).strip()
            if self.zero and _ZERO.fullmatch(text):
                seconds = 0.0
            else:
                try:
                    seconds = parse_duration(text)
                except ValueError as error:
                    self.fail(str(error), param, ctx)
        if seconds < 0 or (seconds == 0 and not self.zero):
            self.fail(f"{value!r}: a duration must be more than zero", param, ctx)
        low, high = self.minimum, self.maximum
        if low is not None and seconds < low:
            self.fail(f"must be {self._range()}, got {seconds:g}s", param, ctx)
        if high is not None and seconds > high:
            self.fail(f"must be {self._range()}, got {seconds:g}s", param, ctx)
        return seconds

    def _range(self) -> str:
        low, high = self.minimum, self.maximum
        if high is None:
            return f"at least {low:g}s"
        return f"from {low or 0:g}s to {high:g}s"

    def __repr__(self) -> str:
        return "DURATION"


_ZERO = re.compile(r"0+(\.0*)?(ms|s|m|h)?")


def operator_flags(identity: OperatorIdentity) -> Callable[[F], F]:
    """A decorator adding the operator's flags to a click command (their help names the
    operator's own metrics-reader role, enabled label and install command)."""
    flags = [
        KUBECONFIG,
        CONTEXT,
        click.option(
            "--namespace",
            "namespaces",
            multiple=True,
            help="Only watch this namespace (repeatable; default: all namespaces).",
        ),
        click.option(
            "--concurrency",
            default=defaults.CONCURRENCY,
            show_default=True,
            help="Concurrent reconciles per controller (each waits on the API server most of "
            "the time: enough of them keep a burst of changes moving at the server's pace).",
        ),
        click.option(
            "--sync-period",
            default=DEFAULT_SYNC_PERIOD,
            show_default=True,
            callback=check_duration,
            help="Every controller reconciles every object again this often without an event "
            "(e.g. 90s, 10m, 1h), repairing what no watch reports; from the cache, writing "
            "nothing when nothing changed.",
        ),
        click.option(
            "--leader-elect/--no-leader-elect",
            default=False,
            show_default=True,
            help="Run leader election so that only one replica reconciles.",
        ),
        click.option(
            "--leader-election-namespace",
            envvar="POD_NAMESPACE",
            default="default",
            show_default="$POD_NAMESPACE or default",
            help="Namespace of the Lease.",
        ),
        click.option(
            "--leader-election-id",
            default="",
            show_default="the operator's own Lease name",
            help="Name of the Lease (two installs in one namespace need different ones).",
        ),
        click.option(
            "--leader-election-kubeconfig",
            default=None,
            help="Kubeconfig for Lease calls only (default: --kubeconfig; always its own "
            "connections).",
        ),
        click.option(
            "--leader-elect-lease-duration",
            "lease_duration",
            type=Duration(MIN_LEASE_DURATION, MAX_LEASE_DURATION),
            default="15s",
            show_default=True,
            help="How long a non-leader waits after the last renewal it saw before taking "
            f"over ({MIN_LEASE_DURATION:g}s to {MAX_LEASE_DURATION:g}s; e.g. 30s, or seconds).",
        ),
        click.option(
            "--leader-elect-renew-deadline",
            "renew_deadline",
            type=Duration(),
            default="10s",
            show_default=True,
            help="How long after the last successful renewal the leader stops writing and "
            "exits (must be below the lease duration).",
        ),
        click.option(
            "--leader-elect-retry-period",
            "retry_period",
            type=Duration(),
            default="2s",
            show_default=True,
            help="The wait between acquire/renew attempts.",
        ),
        click.option(
            "--sharding/--no-sharding",
            default=False,
            show_default=True,
            help="Every replica reconciles its own share of the objects (a Lease per "
            "replica, the owner in a label on each object, handed over without overlap). "
            "Turns leader election on: its Lease elects the replica that assigns the "
            "objects; the --leader-elect-* settings time every Lease.",
        ),
        click.option(
            "--shard-max-drains",
            type=Drains(),
            default="auto",
            show_default=True,
            help="With --sharding: objects asked to move at once, per kind: a number from 1 "
            "to 1000, or auto (1% of the kind's objects, at least 10). Higher moves keys "
            "faster on a scale-out (about this many per coordinator look) at the cost of "
            "more reconciles waiting for their new owner at a time (docs/sharding.md).",
        ),
        click.option(
            "--graceful-shutdown-timeout",
            "shutdown_timeout",
            type=Duration(zero=True),
            default=defaults.SHUTDOWN_TIMEOUT,
            show_default=True,
            help="On SIGTERM, how long in-flight reconciles may finish before they are "
            "cancelled (keep below the pod's terminationGracePeriodSeconds).",
        ),
        click.option(
            "--auth-failure-threshold",
            type=Duration(zero=True),
            default="60s",
            show_default=True,
            help="/healthz fails once the API server has rejected our credentials (401, or "
            "403 on list/watch) for this long.",
        ),
        click.option(
            "--metrics-bind-address",
            default=METRICS_ADDRESS,
            show_default=True,
            help="Address of /metrics ('0' disables).",
        ),
        click.option(
            "--metrics-auth/--no-metrics-auth",
            default=True,
            show_default=True,
            help="Serve /metrics only to bearer tokens allowed 'get' on it (TokenReview + "
            f"SubjectAccessReview; bind {identity.project}-metrics-reader-NAMESPACE to the "
            "scraper).",
        ),
        click.option(
            "--metrics-secure/--no-metrics-secure",
            default=True,
            show_default=True,
            help="Serve /metrics over HTTPS (--no-metrics-secure: plain HTTP, for scrapers "
            "that cannot do TLS).",
        ),
        click.option(
            "--metrics-cert-dir",
            default=None,
            help="Directory with tls.crt and tls.key for /metrics (a mounted "
            "kubernetes.io/tls Secret, e.g. cert-manager's; reloaded when they change). "
            "Default: a self-signed certificate made at start-up, in memory.",
        ),
        click.option(
            "--webhook-bind-address",
            "webhook_address",
            default=":9443",
            show_default=True,
            help="Address of the admission webhooks (only when the operator declares some).",
        ),
        click.option(
            "--webhook-host",
            default=None,
            help="Developer mode: the host the API server reaches the webhooks at (e.g. "
            "127.0.0.1 for a local cluster); the operator applies its webhook configurations "
            "itself and deletes them on exit. Default: in-cluster, through a Service.",
        ),
        click.option(
            "--webhook-service",
            default="",
            help="In-cluster: the Service in front of the webhooks, in the operator's "
            f"namespace (default {identity.project}-webhook-service); its certificate is "
            "written into the installed webhook configurations' caBundle.",
        ),
        click.option(
            "--webhook-cert-dir",
            default=None,
            help="In-cluster: directory with tls.crt and tls.key for the webhooks (a mounted "
            "kubernetes.io/tls Secret, e.g. cert-manager's; reloaded when they change; the "
            "caBundle left to cert-manager's CA injector). Default: a certificate the "
            f"replicas share in the Secret {identity.project}-webhook-server-cert, made "
            "and renewed by the operator.",
        ),
        click.option(
            "--webhook-cert-validity",
            type=Duration(MIN_WEBHOOK_CERT_VALIDITY),
            default="8760h",
            show_default=True,
            help="How long the shared webhook certificate the operator makes is valid; it "
            "is renewed a third of that before it ends, without a restart.",
        ),
        click.option(
            "--health-probe-bind-address",
            default=":8081",
            show_default=True,
            help="Address of /healthz and /readyz ('0' disables).",
        ),
        click.option(
            "--log-format",
            type=click.Choice(["auto", "json", "console"]),
            default="auto",
            show_default=True,
            help="auto: JSON unless stderr is a terminal.",
        ),
        click.option(
            "--log-level",
            type=click.Choice(
                ["debug", "info", "warning", "error", "critical"], case_sensitive=False
            ),
            default=defaults.LOG_LEVEL,
            show_default=True,
        ),
        click.option(
            "--enable-all-namespaces/--no-enable-all-namespaces",
            default=False,
            show_default=True,
            help="Act in every watched namespace, not only those a cluster administrator "
            f"labelled {identity.enabled_label}=true. For single-team clusters: whoever may "
            "create its kinds anywhere then gets the operator's writes there. Install with "
            "the same setting, or the install's admission policies refuse them.",
        ),
    ]

    def decorate(command: F) -> F:
        for flag in reversed(flags):
            command = flag(command)
        return command

    return decorate


@functools.cache
def _sdk_flag_names() -> frozenset[str]:
    """The parameter names of :func:`operator_flags` (an identity's names change their help,
    never which flags there are)."""
    probe = operator_flags(OperatorIdentity(project="probe", domain="probe.example"))
    return frozenset(p.name for p in click.command()(probe(lambda **_: None)).params if p.name)


#: What a chart value's name may be: one key of values.yaml, as Helm reads ``.Values.<key>``.
CHART_VALUE = re.compile(r"^[a-z][A-Za-z0-9]*$")


class ChartOption(click.Option):
    """An operator's own flag (``click.option(..., cls=ChartOption, ...)`` given to
    :func:`operator_command`'s ``flags``) that says how it is a value of the operator's
    chart (:func:`chart_flags`): ``chart_value`` its name in values.yaml instead of the
    long flag in camelCase (``allowExternalIPs`` for ``--allow-external-ips``); ``in_chart``
    false when it is not a value at all (the chart sets it some other way, or it is for a
    developer's process only). Otherwise a ``click.Option``."""

    def __init__(
        self,
        param_decls: Sequence[str] | None = None,
        *,
        chart_value: str = "",
        in_chart: bool = True,
        **attrs: Any,
    ) -> None:
        super().__init__(param_decls, **attrs)
        if chart_value and not CHART_VALUE.match(chart_value):
            raise ValueError(f"chart_value {chart_value!r}: a values.yaml key, e.g. someSetting")
        self.chart_value = chart_value
        self.in_chart = in_chart


def own_flags(command: click.Command) -> list[click.Option]:
    """The options of an operator's run command (:func:`operator_command`) that are its own,
    not the SDK's (:func:`operator_flags`): what its chart has as values
    (:func:`chart_flags`)."""
    sdk = _sdk_flag_names()
    return [p for p in command.params if isinstance(p, click.Option) and p.name not in sdk]


def chart_flags(command: click.Command) -> list[ChartFlag]:
    """The operator's own flags (:func:`own_flags`) as values of its chart
    (:class:`~appstack.sdk.ChartFlag`, :func:`~appstack.sdk.chart_files`' ``flags``): each
    named after its long flag in camelCase (``--allow-external-ips``:
    ``allowExternalIps``) or as its :class:`ChartOption` says, with its default, help and
    type; a switch (``--x/--no-x``) a boolean, a repeatable flag a list, a choice an enum. A
    :class:`ChartOption` with ``in_chart`` false is left out."""
    from appstack.sdk.chart import ChartFlag  # noqa: PLC0415 - the chart code, only here

    flags = []
    with command.make_context(command.name, [], resilient_parsing=True) as context:
        received = dict(context.params)  # each parameter's default, as the command gets it
    for option in own_flags(command):
        named = option.chart_value if isinstance(option, ChartOption) else ""
        if isinstance(option, ChartOption) and not option.in_chart:
            continue
        (long, *_) = sorted((o for o in option.opts if o.startswith("--")), key=len, reverse=True)
        head, *rest = long.removeprefix("--").split("-")
        value = named or head + "".join(word.capitalize() for word in rest)
        schema: dict[str, Any]
        default: Any = received.get(option.name or "")
        if option.multiple:
            default = tuple(str(d) for d in default or ())
            schema = {"type": "array", "items": {"type": "string"}}
        elif option.is_flag:
            default = bool(default)
            schema = {"type": "boolean"}
        elif isinstance(option.type, click.Choice):
            default = "" if default is None else str(default)
            schema = {"type": "string", "enum": ["", *map(str, option.type.choices)]}
        elif isinstance(option.type, click.types.IntParamType):
            default = 0 if default is None else int(default)
            schema = {"type": "integer"}
        else:
            default = "" if default is None else str(default)
            schema = {"type": "string"}
        off = next(iter(option.secondary_opts), "") if option.is_flag else ""
        flags.append(
            ChartFlag(value, long, default, schema=schema, help=option.help or "", off=off)
        )
    return flags


def operator_command(
    controllers: Callable[[], Sequence[Registration]],
    identity: OperatorIdentity,
    *,
    version: str = "",
    help: str = "",
    cache: Callable[[], Mapping[Resource, Transform]] | None = None,
    collectors: Callable[[], Sequence[CollectorFactory]] | None = None,
    tasks: Callable[[], Sequence[TaskFactory]] | None = None,
    flags: Sequence[Callable[[Any], Any]] = (),
    controller_options: Callable[..., Mapping[str, Mapping[str, Any]]] | None = None,
    crds_hint: str = "",
) -> click.Command:
    """The operator's run command, every flag of :func:`operator_flags`, for an operator's
    ``__main__``: when it runs, aiohttp is imported lean
    (:func:`~appstack.sdk.process.import_aiohttp`), then ``controllers()`` (the package's
    controllers are imported only then) and ``cache()`` (what the cache keeps of each kind:
    a transform per kind, :func:`~appstack.sdk.operator.wire`; default: objects whole but
    their managed fields) and ``collectors()`` (extra Prometheus collectors made from the
    manager's cache, beside each kind's readiness and gauges, which are always served) and
    ``tasks()`` (background tasks made from the manager: :class:`appstack.runtime.Task`),
    then :func:`~appstack.sdk.operator.run_operator`; the process exits with its code.

    ``flags`` are the operator's own (``click.option(...)`` decorators, after the SDK's):
    what they receive is passed, by parameter name, to ``controller_options``, which
    returns each controller's own options by its name (its reconciler's keyword arguments:
    :func:`~appstack.sdk.operator.wire`) — and each is a value of the operator's chart
    (:func:`chart_flags`). ``crds_hint`` says how to install the CRDs when they are
    missing."""
    if flags and controller_options is None:
        raise ValueError("an operator's own flags need controller_options to receive them")

    @click.command(help=help or f"Run the {identity.name} against a cluster.")
    @operator_flags(identity)
    def run(**received: Any) -> None:
        from appstack.sdk import process  # noqa: PLC0415 - before anything imports aiohttp

        process.import_aiohttp()
        from appstack.sdk import operator  # noqa: PLC0415 - the runtime, only now

        sdk = _sdk_flag_names()
        own = {name: received.pop(name) for name in list(received) if name not in sdk}
        options = OperatorOptions.from_flags(**received)
        try:
            operator.check(options)
        except ValueError as error:
            raise click.UsageError(str(error)) from error
        per_controller = controller_options(**own) if controller_options is not None else None
        transforms = cache() if cache is not None else None
        extra = collectors() if collectors is not None else ()
        background = tasks() if tasks is not None else ()
        sys.exit(
            operator.run_operator(
                controllers(),
                identity,
                options,
                version=version,
                cache=transforms,
                collectors=extra,
                tasks=background,
                controller_options=per_controller,
                crds_hint=crds_hint,
            )
        )

    for flag in flags:  # on a command, click appends each option: in their order
        run = flag(run)
    return run
