"""A user's error is a line or two and a non-zero exit, never a traceback (issue #38): each
case runs the real ``appstack`` command in a child process, without a cluster — a
kubeconfig naming a closed port stands for an API server that does not answer, a small
HTTP server answering 404 to everything for one without our CRDs."""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from appstack.cli.errors import DEBUG

#: The kubeconfig hint every kubeconfig error ends with.
KUBECONFIG_HINT = "hint: point KUBECONFIG or --kubeconfig at the cluster's kubeconfig file"


def appstack(
    *args: str, env: dict[str, str] | None = None, stdin: str = "", code: str = ""
) -> subprocess.CompletedProcess[str]:
    """``appstack ARGS`` in a child process (``code`` run first, in the same process);
    its environment is this one without KUBECONFIG, plus ``env``."""
    environment = {k: v for k, v in os.environ.items() if k not in {"KUBECONFIG", DEBUG}}
    command = f"{code}\nfrom appstack.cli import main\nmain(prog_name='appstack')"
    return subprocess.run(
        [sys.executable, "-c", command, *args],
        env={**environment, **(env or {})},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def said(result: subprocess.CompletedProcess[str], code: int = 1) -> list[str]:
    """The lines a failed command printed, checked: exit ``code``, nothing on stdout, no
    traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == code, result.stderr
    assert result.stdout == ""
    return result.stderr.splitlines()


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    return path


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def down(tmp_path: Path) -> tuple[Path, str]:
    """A kubeconfig whose API server does not answer (connection refused), and its URL."""
    server = f"https://127.0.0.1:{closed_port()}"
    return kubeconfig(tmp_path / "down", server), server


class _NotFound(http.server.BaseHTTPRequestHandler):
    """What an API server says for a group it does not serve: 404, ``404 page not found``."""

    def do_GET(self) -> None:
        body = b"404 page not found\n"
        self.send_response(404)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def without_crds(tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig of an API server that serves none of our kinds."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield kubeconfig(tmp_path / "bare", f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("command", [["status", "web"], ["uninstall", "--yes"]])
def test_no_kubeconfig_at_all(tmp_path: Path, command: list[str]) -> None:
    home = tmp_path / "home"
    lines = said(appstack(*command, env={"HOME": str(home)}))
    assert lines == [
        f"error: no kubeconfig: $KUBECONFIG is not set and {home}/.kube/config does not exist",
        KUBECONFIG_HINT,
    ]


@pytest.mark.parametrize("command", [["status", "web"], ["uninstall", "--yes"]])
def test_a_kubeconfig_file_that_does_not_exist(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "nonexistent"
    listed = f"error: no kubeconfig: none of $KUBECONFIG's files exists ({missing})"
    assert said(appstack(*command, env={"KUBECONFIG": str(missing)})) == [listed, KUBECONFIG_HINT]
    expected = [f"error: kubeconfig {missing} does not exist", KUBECONFIG_HINT]
    assert said(appstack(*command, "--kubeconfig", str(missing))) == expected


def test_a_kubeconfig_that_is_not_yaml(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.write_text("clusters: [unclosed\n")
    error, hint = said(appstack("status", "web", "--kubeconfig", str(broken)))
    assert error == (
        f"error: kubeconfig {broken} is not valid YAML at line 2, column 1: "
        "expected ',' or ']', but got '<stream end>'"
    )
    assert hint == KUBECONFIG_HINT


@pytest.mark.parametrize(
    "command", [["status", "web"], ["status", "etcd/main"], ["uninstall", "--yes"]]
)
def test_an_api_server_that_does_not_answer(down: tuple[Path, str], command: list[str]) -> None:
    config, server = down
    assert said(appstack(*command, env={"KUBECONFIG": str(config)})) == [
        f"error: cannot reach the API server at {server} (connection refused)",
        "hint: is the cluster running, and is this its kubeconfig? "
        "(set KUBECONFIG or pass --kubeconfig)",
    ]


def test_debug_shows_the_traceback(down: tuple[Path, str]) -> None:
    config, _ = down
    result = appstack("status", "web", env={"KUBECONFIG": str(config), DEBUG: "1"})
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert "TransportError" in result.stderr


@pytest.mark.parametrize("target", ["web", "appservice/web", "mdbc/db"])
def test_the_crds_not_installed(without_crds: Path, target: str) -> None:
    error, hint = said(appstack("status", target, "--kubeconfig", str(without_crds)))
    assert error == (
        "error: the CRDs are not installed: the API server does not serve "
        "appservices.appstack.dev, appstacks.appstack.dev, crontabs.appstack.dev, "
        "etcdclusters.appstack.dev, mongodbcommunity.appstack.dev"
    )
    assert hint.startswith("hint: install them: make install (in a checkout), or kubectl apply")


def test_an_unknown_kind_lists_every_kind_with_its_short_names() -> None:
    assert said(appstack("status", "bogus/x")) == [
        "error: 'bogus' is not a kind of ours",
        "hint: use one of: appservice (appsvc), appstack (stack), crontab (ct), "
        "etcdcluster (etcd), mongodbcommunity (mdbc)",
    ]


def test_the_cluster_commands_without_the_test_bed() -> None:
    without_test_bed = (
        "import importlib.metadata as m\n"
        "found = m.entry_points\n"
        "m.entry_points = lambda **kw: [e for e in found(**kw) if e.name != 'cluster']"
    )
    lines = said(appstack("cluster", "up", code=without_test_bed), code=2)
    assert lines[-1] == (
        "Error: No such command 'cluster': the cluster commands (the local cluster for "
        "development, the demo and the tests) come from the test bed, appstack-testbed in the "
        "repository's testbed/; install it with `make venv` or `pip install -e testbed`"
    )


@pytest.mark.parametrize("stdin", ["", "---\n---\n", "# nothing\n"])
def test_render_of_empty_input(stdin: str) -> None:
    assert said(appstack("render", "-f", "-", stdin=stdin)) == [
        "error: no objects in <stdin>: nothing to render"
    ]


def test_render_of_an_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert said(appstack("render", "-f", str(empty))) == [
        f"error: no objects in {empty}: nothing to render"
    ]


@pytest.mark.parametrize(
    ("document", "error"),
    [
        (
            "kind: AppService\nmetadata: {name: web}\nspec: {image: nginx}\n",
            "error: document 1 (AppService web): apiVersion: required (appstack.dev/v1)",
        ),
        (
            "kind: ConfigMap\nmetadata: {name: settings}\n",
            "error: document 1 (ConfigMap settings): apiVersion: required",
        ),
        ("metadata: {name: web}\n", "error: document 1: kind: required; apiVersion: required"),
        ("apiVersion: v1\nmetadata: {name: web}\n", "error: document 1: kind: required"),
        ("just words\n", "error: document 1: not a Kubernetes object (a YAML str)"),
    ],
)
def test_render_of_an_object_without_its_type(document: str, error: str) -> None:
    assert said(appstack("render", "-f", "-", stdin=document)) == [error]


#: ``appstack run`` listening on no port.
RUN_NO_PORTS = ("run", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")


def test_run_without_a_kubeconfig_is_one_line_and_exit_1(tmp_path: Path) -> None:
    result = appstack(*RUN_NO_PORTS, "--kubeconfig", str(tmp_path / "nonexistent"))
    assert "Traceback" not in result.stdout + result.stderr
    assert result.returncode == 1
    (line,) = [line for line in result.stderr.splitlines() if "cannot start" in line]
    assert f"kubeconfig {tmp_path / 'nonexistent'} does not exist" in line
    assert "point KUBECONFIG or --kubeconfig" in line


def test_run_takes_a_kubeconfig_list_and_a_context(tmp_path: Path) -> None:
    """``KUBECONFIG=a:b`` merged and ``--context`` chosen, by the operator's own loader: an
    unknown context is named, with exit 1 and no traceback."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: here\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: here, context: {cluster: c, user: u}}]\n"
    )
    listed = {"KUBECONFIG": f"{tmp_path / 'missing'}:{config}"}
    result = appstack(*RUN_NO_PORTS, "--context", "nowhere", env=listed)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.returncode == 1
    (line,) = [line for line in result.stderr.splitlines() if "cannot start" in line]
    assert "no context 'nowhere'" in line


def test_run_waits_for_an_api_server_that_does_not_answer(down: tuple[Path, str]) -> None:
    """A retry line per attempt with its backoff, /readyz not ready meanwhile, /healthz
    alive; SIGTERM ends it cleanly."""
    config, server = down
    probe = closed_port()
    environment = {k: v for k, v in os.environ.items() if k not in {"KUBECONFIG", DEBUG}}
    flags = ["--metrics-bind-address", "0", "--health-probe-bind-address", f"127.0.0.1:{probe}"]
    with subprocess.Popen(
        [sys.executable, "-m", "appstack", "run", "--kubeconfig", str(config), *flags],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        answers: list[tuple[int, str]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(answers) < 2:
            for path in ("/readyz", "/healthz"):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{probe}{path}") as response:
                        answers.append((response.status, response.read().decode()))
                except urllib.error.HTTPError as error:
                    answers.append((error.code, error.read().decode()))
                except OSError:  # not listening yet
                    answers.clear()
                    break
            time.sleep(0.2)
        time.sleep(3.5)  # the attempts at 0 s, 1 s and 3 s
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert answers == [(503, "starting: waiting for the API server"), (200, "ok")]
    assert "Traceback" not in err
    assert process.returncode == 0, err
    retries = [json.loads(line) for line in err.splitlines() if "not reachable" in line]
    assert [r["retry_in"] for r in retries[:3]] == [1.0, 2.0, 4.0]
    assert retries[0]["event"] == "API server not reachable, retrying"
    assert retries[0]["server"] == server
    assert retries[0]["error"] == "connection refused"
