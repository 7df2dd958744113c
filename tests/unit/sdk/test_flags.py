"""The run command an operator's ``__main__`` makes (:func:`appstack.sdk.operator_command`):
its controllers and its cache table are loaded only when it runs, and reach the assembly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from structlog.testing import capture_logs

from appstack.runtime import POD, KubeconfigError, LeadershipLost, Resource, Transform
from appstack.sdk import (
    ChartFlag,
    ChartOption,
    OperatorIdentity,
    chart_flags,
    operator_command,
    own_flags,
)
from appstack.sdk import operator as assembly
from appstack.sdk.options import OperatorOptions

IDENTITY = OperatorIdentity(project="guestbook", domain="webapp.example.com")


def _status_only(pod: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": pod["metadata"], "status": pod.get("status") or {}}


def test_the_controllers_and_the_cache_table_reach_the_assembly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: dict[str, Any] = {}
    loaded: list[str] = []

    def run_operator(controllers: Any, identity: Any, options: Any, **kwargs: Any) -> int:
        ran.update(controllers=controllers, identity=identity, options=options, **kwargs)
        return 0

    def controllers() -> list[Any]:
        loaded.append("controllers")
        return []

    def cache() -> dict[Resource, Transform]:
        loaded.append("cache")
        return {POD: _status_only}

    monkeypatch.setattr(assembly, "run_operator", run_operator)
    command = operator_command(controllers, IDENTITY, version="1.2.3", cache=cache)
    assert loaded == []  # nothing until it runs
    result = CliRunner().invoke(command, ["--namespace", "team"])
    assert result.exit_code == 0, result.output
    assert sorted(loaded) == ["cache", "controllers"]
    assert ran["cache"] == {POD: _status_only}
    assert ran["version"] == "1.2.3"
    assert ran["identity"] is IDENTITY
    assert ran["options"].namespaces == ["team"]


def test_without_a_cache_table_objects_are_kept_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: dict[str, Any] = {}
    monkeypatch.setattr(assembly, "run_operator", lambda *args, **kwargs: ran.update(kwargs) or 0)
    result = CliRunner().invoke(operator_command(lambda: [], IDENTITY), [])
    assert result.exit_code == 0, result.output
    assert ran["cache"] is None


# ------------------------------------------------------- an operator's own flags (#47)
GREETING = click.option("--greeting", default="hello", help="What the guestbook says.")
STRICT = click.option("--strict/--no-strict", default=False, help="Refuse unknown guests.")
HOSTS = click.option("--allowed-host", "allowed_hosts", multiple=True, help="A host.")
LEVEL = click.option("--level", type=click.Choice(["low", "high"]), default="low")
SIZE = click.option("--size", type=int, default=3)


def test_an_operators_own_flags_reach_its_controllers_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #47 (appstack's own run command went around operator_command): the operator's
    own flags come after the SDK's, and what they receive goes, by name, to
    ``controller_options``, whose answer reaches the assembly with the CRDs' hint."""
    ran: dict[str, Any] = {}
    received: dict[str, Any] = {}
    monkeypatch.setattr(assembly, "run_operator", lambda *args, **kw: ran.update(kw) or 0)

    def options(**own: Any) -> dict[str, dict[str, Any]]:
        received.update(own)
        return {"guestbook": {"greeting": own["greeting"]}}

    command = operator_command(
        lambda: [],
        IDENTITY,
        flags=[GREETING, STRICT, HOSTS],
        controller_options=options,
        crds_hint="make install",
    )
    args = ["--greeting=hi", "--strict", "--allowed-host=a", "--allowed-host=b", "--namespace=x"]
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 0, result.output
    assert received == {"greeting": "hi", "strict": True, "allowed_hosts": ("a", "b")}
    assert ran["controller_options"] == {"guestbook": {"greeting": "hi"}}
    assert ran["crds_hint"] == "make install"
    assert [p.name for p in own_flags(command)] == ["greeting", "strict", "allowed_hosts"]
    help_text = CliRunner().invoke(command, ["--help"]).output
    assert "What the guestbook says." in help_text
    with pytest.raises(ValueError, match="controller_options"):
        operator_command(lambda: [], IDENTITY, flags=[GREETING])


def test_an_operators_own_flags_are_chart_values_of_their_types() -> None:
    """Each own flag as a chart value (:func:`appstack.sdk.chart_flags`): camelCase of its
    long name, its default and help; a switch a boolean with its ``--no-`` form, a
    repeatable flag a list, a choice an enum, an int an integer; the SDK's flags are not
    among them."""
    command = operator_command(
        lambda: [],
        IDENTITY,
        flags=[GREETING, STRICT, HOSTS, LEVEL, SIZE],
        controller_options=lambda **_: {},
    )
    flags = {flag.value: flag for flag in chart_flags(command)}
    assert list(flags) == ["greeting", "strict", "allowedHost", "level", "size"]
    assert (flags["greeting"].flag, flags["greeting"].default) == ("--greeting", "hello")
    assert flags["greeting"].help == "What the guestbook says."
    assert (flags["strict"].default, flags["strict"].off) == (False, "--no-strict")
    assert flags["strict"].schema == {"type": "boolean"}
    assert flags["allowedHost"].default == ()
    assert flags["allowedHost"].schema["type"] == "array"
    assert flags["level"].schema["enum"] == ["", "low", "high"]
    assert (flags["size"].default, flags["size"].schema) == (3, {"type": "integer"})
    assert chart_flags(operator_command(lambda: [], IDENTITY)) == []


def test_a_chart_option_names_its_value_or_keeps_out_of_the_chart() -> None:
    """A :class:`appstack.sdk.ChartOption` says its chart value's name (``allowExternalIPs``,
    not the derived ``allowExternalIps``) or that it is not a value (``in_chart=False``);
    the command parses it as any option; a name that is no values.yaml key is refused
    where it is declared."""
    ips = click.option(
        "--allow-external-ips/--no-allow-external-ips",
        cls=ChartOption,
        chart_value="allowExternalIPs",
        default=False,
    )
    token = click.option("--dev-token", cls=ChartOption, in_chart=False, default="")
    command = operator_command(
        lambda: [], IDENTITY, flags=[ips, token, GREETING], controller_options=lambda **_: {}
    )
    flags = chart_flags(command)
    assert [flag.value for flag in flags] == ["allowExternalIPs", "greeting"]
    assert (flags[0].flag, flags[0].off) == ("--allow-external-ips", "--no-allow-external-ips")
    with command.make_context("run", ["--allow-external-ips", "--dev-token=t"]) as context:
        assert (context.params["allow_external_ips"], context.params["dev_token"]) == (True, "t")
    for wrong in ("metrics.secure", "Upper", "with-dash", "x y"):
        with pytest.raises(ValueError, match=r"a values\.yaml key"):
            click.option("--x", cls=ChartOption, chart_value=wrong)(lambda **_: None)


@pytest.mark.parametrize("seconds", ["0.5", "301", "2147483647"])
def test_a_lease_duration_out_of_its_range_is_refused_naming_the_flag(
    monkeypatch: pytest.MonkeyPatch, seconds: str
) -> None:
    """From 1 s to 300 s: the install's admission policy refuses a longer Lease from the
    operator's token (appstack.sdk.guards.writes.lease_policy), so a flag beyond
    it would be a Lease the operator could never write."""
    monkeypatch.setattr(assembly, "run_operator", lambda *args, **kwargs: 0)
    command = operator_command(lambda: [], IDENTITY)
    result = CliRunner().invoke(command, [f"--leader-elect-lease-duration={seconds}"])
    assert result.exit_code == 2, result.output
    assert "--leader-elect-lease-duration" in result.output
    assert CliRunner().invoke(command, ["--leader-elect-lease-duration=300"]).exit_code == 0
    with pytest.raises(ValueError, match="from 1s to 300s"):
        assembly.check(OperatorOptions(lease_duration=float(seconds)))


# --------------------------------------------------------------------- durations (#51)
@pytest.mark.parametrize(
    ("flag", "given", "field", "seconds"),
    [
        ("--leader-elect-lease-duration", "30s", "lease_duration", 30.0),
        ("--leader-elect-lease-duration", "45", "lease_duration", 45.0),  # bare: seconds
        ("--leader-elect-lease-duration", "5m", "lease_duration", 300.0),
        ("--leader-elect-renew-deadline", "7.5s", "renew_deadline", 7.5),
        ("--leader-elect-retry-period", "500ms", "retry_period", 0.5),
        ("--leader-elect-retry-period", "1", "retry_period", 1.0),
        ("--graceful-shutdown-timeout", "1m", "shutdown_timeout", 60.0),
        ("--graceful-shutdown-timeout", "0", "shutdown_timeout", 0.0),  # cancel at once
        ("--graceful-shutdown-timeout", "0s", "shutdown_timeout", 0.0),
        ("--auth-failure-threshold", "2m", "auth_failure_threshold", 120.0),
        ("--auth-failure-threshold", "3", "auth_failure_threshold", 3.0),
    ],
)
def test_duration_flags_take_go_durations_and_bare_seconds(
    monkeypatch: pytest.MonkeyPatch, flag: str, given: str, field: str, seconds: float
) -> None:
    ran: dict[str, Any] = {}
    monkeypatch.setattr(assembly, "run_operator", lambda *args, **kw: ran.update(o=args[2]) or 0)
    result = CliRunner().invoke(operator_command(lambda: [], IDENTITY), [f"{flag}={given}"])
    assert result.exit_code == 0, result.output
    assert getattr(ran["o"], field) == seconds


def test_duration_flags_default_to_controller_runtimes_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: dict[str, Any] = {}
    monkeypatch.setattr(assembly, "run_operator", lambda *args, **kw: ran.update(o=args[2]) or 0)
    result = CliRunner().invoke(operator_command(lambda: [], IDENTITY), [])
    assert result.exit_code == 0, result.output
    options = ran["o"]
    assert (options.lease_duration, options.renew_deadline, options.retry_period) == (15, 10, 2)
    assert (options.shutdown_timeout, options.auth_failure_threshold) == (20, 60)
    assert options == OperatorOptions()  # the same as the options' own defaults
    help_text = CliRunner().invoke(operator_command(lambda: [], IDENTITY), ["--help"]).output
    assert "[default: 15s]" in help_text
    assert "--graceful-shutdown-timeout DURATION" in help_text


@pytest.mark.parametrize(
    ("flag", "given", "said"),
    [
        ("--leader-elect-renew-deadline", "soon", "'soon' is not a duration"),
        ("--leader-elect-retry-period", "0", "must be more than zero"),
        ("--leader-elect-retry-period", "-1s", "is not a duration"),
        ("--graceful-shutdown-timeout", "-5", "is not a duration"),
        ("--auth-failure-threshold", "1 m", "is not a duration"),
        ("--leader-elect-lease-duration", "6m", "must be from 1s to 300s, got 360s"),
        ("--leader-elect-lease-duration", "500ms", "must be from 1s to 300s, got 0.5s"),
    ],
)
def test_a_duration_that_does_not_parse_is_a_usage_error_naming_the_flag(
    monkeypatch: pytest.MonkeyPatch, flag: str, given: str, said: str
) -> None:
    monkeypatch.setattr(assembly, "run_operator", lambda *args, **kwargs: 0)
    result = CliRunner().invoke(operator_command(lambda: [], IDENTITY), [f"{flag}={given}"])
    assert result.exit_code == 2, result.output
    assert flag in result.output
    assert said in result.output


# ------------------------------------------------------------------- exit codes (#51)
def test_a_usage_error_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assembly, "run_operator", lambda *args, **kwargs: 0)
    command = operator_command(lambda: [], IDENTITY)
    result = CliRunner().invoke(command, ["--no-such-flag"])
    assert result.exit_code == 2
    assert "--no-such-flag" in result.output
    # flags that do not fit together are a usage error too
    result = CliRunner().invoke(command, ["--leader-elect-renew-deadline=20s"])
    assert result.exit_code == 2, result.output


@pytest.fixture
def quiet_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_operator without its process-wide settings: logging left as it is (captured),
    no process tuning."""
    monkeypatch.setattr(assembly, "configure_logging", lambda *args, **kwargs: None)
    monkeypatch.setenv("OPERATOR_PROCESS_TUNING", "off")


NO_PORTS = ["--metrics-bind-address", "0", "--health-probe-bind-address", "0"]


@pytest.mark.usefixtures("quiet_runs")
def test_a_kubeconfig_that_does_not_exist_exits_1_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    command = operator_command(lambda: [], IDENTITY)
    with capture_logs() as logs:
        result = CliRunner().invoke(command, ["--kubeconfig", str(missing), *NO_PORTS])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (line,) = [log for log in logs if log["event"] == "cannot start"]
    assert line["error"] == f"kubeconfig {missing} does not exist"
    assert line["hint"] == assembly.KUBECONFIG_HINT


@pytest.mark.usefixtures("quiet_runs")
@pytest.mark.parametrize(
    "failure",
    [
        assembly.MissingCRDs(["guestbooks.webapp.example.com"]),
        KubeconfigError("no kubeconfig"),
        LeadershipLost("renew deadline passed"),
    ],
    ids=["crds-missing", "kubeconfig", "leadership-lost"],
)
def test_every_runtime_failure_exits_1(monkeypatch: pytest.MonkeyPatch, failure: Exception) -> None:
    async def serve(*args: Any, **kwargs: Any) -> None:
        raise failure

    monkeypatch.setattr(assembly, "serve", serve)
    result = CliRunner().invoke(operator_command(lambda: [], IDENTITY), NO_PORTS)
    assert result.exit_code == 1, result.output
    assert assembly.run_operator([], IDENTITY) == 1


def test_shard_max_drains_reaches_the_options_and_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: dict[str, Any] = {}
    monkeypatch.setattr(assembly, "run_operator", lambda *args, **kw: ran.update(o=args[2]) or 0)
    command = operator_command(lambda: [], IDENTITY)
    result = CliRunner().invoke(command, ["--sharding", "--shard-max-drains=50"])
    assert result.exit_code == 0, result.output
    assert ran["o"].shard_max_drains == 50
    for auto in ([], ["--shard-max-drains=auto"]):  # the default: 1 % of the objects
        result = CliRunner().invoke(command, ["--sharding", *auto])
        assert result.exit_code == 0, result.output
        assert ran["o"].shard_max_drains is None
    for wrong in ("0", "1001", "many"):
        refused = CliRunner().invoke(command, [f"--shard-max-drains={wrong}"])
        assert refused.exit_code == 2
        assert "--shard-max-drains" in refused.output


def test_a_chart_flag_takes_the_installs_setting_out_of_its_arguments() -> None:
    """The install's own setting of a flag is the chart value's default, whichever form the
    arguments spell it in (``--x=V`` or ``--x V``), and leaves the arguments (the chart
    passes it again from the value)."""
    hosts = ChartFlag("allowedHost", "--allowed-host", ())
    strict = ChartFlag("strict", "--strict", False, off="--no-strict")
    size = ChartFlag("size", "--size", 3)
    args = ["--leader-elect", "--allowed-host=a", "--size", "5", "--allowed-host", "b"]
    container = {"args": [*args, "--strict"]}
    assert hosts.taken(container) == ["a", "b"]
    assert strict.taken(container) is True
    assert size.taken(container) == 5
    assert container["args"] == ["--leader-elect"]
    assert size.taken({"args": []}) == 3
    assert strict.taken({"args": ["--strict", "--no-strict"]}) is False
