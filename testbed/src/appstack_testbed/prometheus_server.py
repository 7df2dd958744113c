"""A real Prometheus on a loopback port, for tests: given scrape configs and rule files.

:func:`running` builds Prometheus once (:mod:`appstack_testbed.prometheus`), writes
``prometheus.yml`` and the rule files into a directory, starts the server (its TSDB and log
in that directory), waits until it is ready and stops it on leaving. The yielded
:class:`PrometheusServer` reads the HTTP API: ``/api/v1/targets``, ``/api/v1/query``,
``/api/v1/rules`` and ``/api/v1/alerts``. Used by the operator's monitoring e2e tests
(tests/e2e/test_monitoring_scrape.py).
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from appstack_testbed import prometheus
from appstack_testbed.build import Printer, _stderr
from appstack_testbed.control_plane import free_ports
from appstack_testbed.process import ComponentError, ManagedProcess


@dataclass(frozen=True)
class PrometheusServer:
    """A running Prometheus: its base URL and process (for the log)."""

    url: str
    process: ManagedProcess

    def get(self, path: str, **params: str) -> Any:
        """``GET path?params``; the ``data`` of Prometheus' JSON answer."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as response:  # noqa: S310
            answer = json.loads(response.read())
        if answer.get("status") != "success":
            raise RuntimeError(f"{path}: {answer}")
        return answer["data"]

    def targets(self) -> list[dict[str, Any]]:
        """The active targets (``scrapePool``, ``health``: up/down/unknown, ``lastError``)."""
        return list(self.get("/api/v1/targets", state="active")["activeTargets"])

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant vector query: ``[{"metric": {...}, "value": [t, "v"]}, ...]``."""
        data = self.get("/api/v1/query", query=expr)
        if data["resultType"] != "vector":
            raise ValueError(f"{expr!r} is a {data['resultType']}, not a vector")
        return list(data["result"])

    def rule_groups(self) -> list[dict[str, Any]]:
        """The loaded rule groups with their rules' state, health and ``lastEvaluation``."""
        return list(self.get("/api/v1/rules")["groups"])

    def evaluated_since(self, since: float) -> bool:
        """Whether every loaded rule group has been evaluated after ``since`` (a Unix
        time): false before the first evaluation (its ``lastEvaluation`` is year 1)."""
        groups = self.rule_groups()
        return bool(groups) and all(unix_time(g["lastEvaluation"]) > since for g in groups)

    def alerts(self) -> list[dict[str, Any]]:
        """Pending and firing alerts (``labels``, ``state``, ``activeAt``)."""
        return list(self.get("/api/v1/alerts")["alerts"])

    def log_tail(self, lines: int = 40) -> str:
        return self.process.log_tail(lines)


def unix_time(rfc3339: str) -> float:
    """Prometheus' ``2026-11-25T20:39:11.123456789Z`` (nanoseconds, any offset) as a Unix time
    (``datetime.fromisoformat`` takes neither before Python 3.11)."""
    match = re.fullmatch(r"([0-9-]+T[0-9:]+)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", rfc3339)
    if not match:
        raise ValueError(f"not an RFC 3339 time: {rfc3339!r}")
    whole, fraction, offset = match.groups()
    moment = datetime.fromisoformat(whole + ("+00:00" if offset == "Z" else offset))
    return moment.timestamp() + float(f"0.{fraction or 0}")


def write_config(
    directory: Path,
    scrape_configs: list[dict[str, Any]],
    rule_files: Mapping[str, Mapping[str, Any]],
    *,
    evaluation_interval: str = "1s",
) -> Path:
    """Write ``prometheus.yml`` and each rule file (name -> ``{"groups": ...}``) into
    ``directory``; the configuration's path."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, groups in rule_files.items():
        (directory / name).write_text(yaml.safe_dump(dict(groups), sort_keys=False))
    config = {
        "global": {"evaluation_interval": evaluation_interval},
        "rule_files": [str(directory / name) for name in rule_files],
        "scrape_configs": scrape_configs,
    }
    path = directory / "prometheus.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@contextmanager
def running(
    directory: Path,
    scrape_configs: list[dict[str, Any]],
    rule_files: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    evaluation_interval: str = "1s",
    printer: Printer = _stderr,
) -> Iterator[PrometheusServer]:
    """Prometheus with ``scrape_configs`` and ``rule_files`` (see :func:`write_config`),
    its files in ``directory``; stopped on leaving."""
    binaries = prometheus.ensure(printer=printer)
    config = write_config(
        directory, scrape_configs, rule_files or {}, evaluation_interval=evaluation_interval
    )
    check = binaries.promtool("check", "config", str(config))
    if check.returncode != 0:
        raise ValueError(f"promtool check config {config}:\n{check.stdout}{check.stderr}")
    port = free_ports(("prometheus",))["prometheus"]
    process = ManagedProcess("prometheus", directory)
    process.start(
        [
            str(binaries.prometheus),
            f"--config.file={config}",
            f"--storage.tsdb.path={directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ]
    )
    server = PrometheusServer(f"http://127.0.0.1:{port}", process)
    try:
        _wait_ready(server)
        yield server
    finally:
        process.stop()


def _wait_ready(server: PrometheusServer, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{server.url}/-/ready", timeout=2) as response:  # noqa: S310
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if not server.process.running():
            raise ComponentError("prometheus", "exited", server.log_tail())
        if time.monotonic() > deadline:
            raise ComponentError("prometheus", "not ready in time", server.log_tail())
        time.sleep(0.1)
