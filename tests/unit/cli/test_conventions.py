"""The CLI's conventions (issue #51), through click's CliRunner: exit 1 for an error, 2
only for a usage error; one name per setting (``--leader-elect``, its old spelling a
hidden alias that warns); durations as durations; a server that answers 200 but is no
Kubernetes API server said in one line."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from structlog.testing import capture_logs

from appstack.cli import main
from appstack.sdk import operator as assembly

NO_PORTS = ["--metrics-bind-address", "0", "--health-probe-bind-address", "0"]


# ---------------------------------------------------------------------------- exit codes
def test_a_bad_option_is_a_usage_error_exit_2() -> None:
    for command in (["run", "--no-such-flag"], ["status", "x", "--no-such-flag"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, result.output
        assert "--no-such-flag" in result.output
    refused = CliRunner().invoke(main, ["run", "--leader-elect-lease-duration=1h"])
    assert refused.exit_code == 2
    assert "--leader-elect-lease-duration" in refused.output


def test_run_with_a_kubeconfig_that_does_not_exist_exits_1_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(assembly, "configure_logging", lambda *args, **kwargs: None)
    monkeypatch.setenv("OPERATOR_PROCESS_TUNING", "off")
    missing = tmp_path / "nonexistent"
    with capture_logs() as logs:
        result = CliRunner().invoke(main, ["run", "--kubeconfig", str(missing), *NO_PORTS])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    (line,) = [log for log in logs if log["event"] == "cannot start"]
    assert line["error"] == f"kubeconfig {missing} does not exist"


def test_status_with_a_kubeconfig_that_does_not_exist_exits_1(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    result = CliRunner().invoke(main, ["status", "x", "--kubeconfig", str(missing)])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"error: kubeconfig {missing} does not exist"


@pytest.mark.parametrize("code", [0, 1])
def test_run_exits_with_the_operators_code(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    from appstack.sdk import operator  # noqa: PLC0415

    monkeypatch.setattr(operator, "run_operator", lambda *args, **kwargs: code)
    assert CliRunner().invoke(main, ["run", *NO_PORTS]).exit_code == code


def test_appstack_run_is_the_sdks_run_command_with_appstacks_own_flags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #47: ``appstack run`` is :func:`appstack.sdk.operator_command`, as a
    scaffolded operator's ``python -m <package>``: its controllers, cache table and CRDs'
    hint reach the SDK's assembly, and its own flags reach its controllers' options (the
    AppStack controller's external-address policy, EtcdCluster's backup image); the same
    flags are what the SDK reads as its chart's values (:func:`appstack.sdk.chart_flags`)."""
    from appstack.api.identity import CRDS_HINT  # noqa: PLC0415
    from appstack.cli.run import run  # noqa: PLC0415
    from appstack.controllers.registry import ALL, CACHE  # noqa: PLC0415
    from appstack.sdk import chart_flags  # noqa: PLC0415

    ran: dict[str, Any] = {}

    def run_operator(controllers: Any, identity: Any, options: Any, **kwargs: Any) -> int:
        ran.update(controllers=controllers, identity=identity, options=options, **kwargs)
        return 0

    monkeypatch.setattr(assembly, "run_operator", run_operator)
    args = [
        *NO_PORTS,
        "--allow-external-ips",
        "--external-deny-cidr=10.0.0.0/8",
        "--backup-image=registry.example/appstack:1",
    ]
    result = CliRunner().invoke(main, ["run", *args])
    assert result.exit_code == 0, result.output
    assert ran["controllers"] == list(ALL)
    assert ran["cache"] is CACHE
    assert ran["crds_hint"] == CRDS_HINT
    own = ran["controller_options"]
    policy = own["appstack"]["external_ips"]
    assert policy.allow is True
    assert [str(n) for n in policy.deny] == ["10.0.0.0/8"]
    assert own["etcdcluster"]["backup_image"] == "registry.example/appstack:1"
    # its chart's values, as the SDK makes them (the backup image is the operator's own)
    assert [f.value for f in chart_flags(run)] == [
        "allowExternalIPs",
        "externalDenyCIDRs",
        "allowExternalClusterNames",
    ]


# ----------------------------------------------------------------- one name per setting
def _deployment_args(output: str) -> list[str]:
    (deployment,) = (d for d in yaml.safe_load_all(output) if d and d["kind"] == "Deployment")
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def test_manifests_takes_the_operators_flag_name_leader_elect() -> None:
    on = CliRunner().invoke(main, ["manifests", "-o", "-", "--leader-elect"])
    assert on.exit_code == 0, on.output
    assert "--leader-elect" in _deployment_args(on.stdout)
    off = CliRunner().invoke(main, ["manifests", "-o", "-", "--no-leader-elect", "--replicas=1"])
    assert off.exit_code == 0, off.output
    assert "--leader-elect" not in _deployment_args(off.stdout)
    assert off.stderr == ""
    refused = CliRunner().invoke(main, ["manifests", "-o", "-", "--no-leader-elect"])
    assert refused.exit_code == 2
    assert "--no-leader-elect runs one replica only: add --replicas=1" in refused.output
    help_text = CliRunner().invoke(main, ["manifests", "--help"]).output
    assert "--leader-elect / --no-leader-elect" in help_text
    assert "--leader-election" not in help_text  # the old spelling: hidden


@pytest.mark.parametrize(
    ("old", "new", "elected"),
    [
        ("--no-leader-election", "--no-leader-elect", False),
        ("--leader-election", "--leader-elect", True),
    ],
)
def test_the_old_spelling_still_works_with_a_one_line_warning(
    old: str, new: str, elected: bool
) -> None:
    result = CliRunner().invoke(main, ["manifests", "-o", "-", old, "--replicas=1"])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"warning: {old} is deprecated: use {new}\n"
    assert ("--leader-elect" in _deployment_args(result.stdout)) is elected


# ------------------------------------------------------------------ durations as durations
def test_uninstall_timeout_is_a_duration() -> None:
    help_text = CliRunner().invoke(main, ["uninstall", "--help"]).output
    assert "--timeout DURATION" in help_text
    assert "[default: 5m]" in help_text
    refused = CliRunner().invoke(main, ["uninstall", "--yes", "--timeout", "soon"])
    assert refused.exit_code == 2
    assert "'soon' is not a duration" in refused.output


def test_uninstall_timeout_takes_durations_and_bare_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import appstack.cli.uninstall as removal  # noqa: PLC0415
    from appstack.runtime import Client  # noqa: PLC0415

    waited: list[float] = []

    async def connect(*args: Any, **kwargs: Any) -> Any:
        class _Client:
            async def __aenter__(self) -> _Client:
                return self

            async def __aexit__(self, *exc: object) -> None:
                pass

        return _Client()

    async def uninstall(client: Any, echo: Any, timeout: float, namespace: Any) -> None:
        waited.append(timeout)

    monkeypatch.setattr(Client, "connect", connect)
    monkeypatch.setattr(removal, "uninstall", uninstall)
    for given in ("90s", "2m", "45"):
        result = CliRunner().invoke(main, ["uninstall", "--yes", "--timeout", given])
        assert result.exit_code == 0, result.output
    assert CliRunner().invoke(main, ["uninstall", "--yes"]).exit_code == 0
    assert waited == [90.0, 120.0, 45.0, 300.0]


# -------------------------------------------------------- a 200 from what is no API server
class _Answers200(http.server.BaseHTTPRequestHandler):
    """A web server, a proxy, the wrong port: 200 to everything, with its own body."""

    body = b""
    content_type = ""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture(
    params=[
        (b'{"hello": "world"}', "application/json"),
        (b"[1, 2, 3]", "application/json"),
        (b"<html><body>It works!</body></html>", "text/html"),
        (b"", "text/plain"),
    ],
    ids=["json", "json-list", "html", "empty"],
)
def not_an_api_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A kubeconfig pointing at it, and its URL."""
    body, content_type = request.param
    handler = type("Handler", (_Answers200,), {"body": body, "content_type": content_type})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    config = tmp_path / "config"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: '{url}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    try:
        yield config, url
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("target", ["x", "appservice/x", "etcd/x", "crontab/x"])
@pytest.mark.parametrize("watch", [[], ["--watch"]], ids=["once", "watch"])
def test_status_against_a_server_that_is_no_api_server_says_so_in_one_line(
    not_an_api_server: tuple[Path, str], target: str, watch: list[str]
) -> None:
    config, url = not_an_api_server
    result = CliRunner().invoke(main, ["status", target, "--kubeconfig", str(config), *watch])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.stdout == ""
    error, hint = result.stderr.splitlines()
    assert error == f"error: the server at {url} did not answer as a Kubernetes API server"
    assert hint.startswith("hint: is this the cluster's kubeconfig")


@pytest.mark.parametrize("scope", [[], ["--namespace", "ops"]], ids=["all", "one-install"])
def test_uninstall_against_a_server_that_is_no_api_server_fails_instead_of_succeeding(
    not_an_api_server: tuple[Path, str], scope: list[str]
) -> None:
    """Before: every list read as empty, and "appstack uninstalled." with exit 0."""
    config, url = not_an_api_server
    result = CliRunner().invoke(main, ["uninstall", "--yes", "--kubeconfig", str(config), *scope])
    assert result.exit_code == 1, result.output
    assert "uninstalled" not in result.output
    error, hint = result.stderr.splitlines()
    assert error == f"error: the server at {url} did not answer as a Kubernetes API server"
    assert hint.startswith("hint: is this the cluster's kubeconfig")
