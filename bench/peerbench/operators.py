"""The operators ``bench/peers.py`` compares, each run as its own process watching one
namespace, and how to start, probe and stop them.

* ``appstack``: ``appstack run`` with default flags; ``appstack-tuned`` adds the flags
  given with ``--tuned`` (default ``--concurrency=16``); ``appstack-base`` runs another
  source tree (``--base-source``, e.g. ``git archive main`` unpacked) with defaults, to
  show what a change bought in the same run;
* ``seed``: the seed's own controller, kosmos-io/simple-controller built from its
  repository (:mod:`peerbench.seed`: binary and CRD by path), on its own ``kosmos.io``
  AppServices, cluster-wide, metrics on ``:8080`` as its ``main.go`` fixes;
* ``go-seed-reimplementation``: OUR re-implementation of the seed's algorithm against
  ``appstack.dev`` (``bench/peers/go-seed-reimplementation``, built by
  :mod:`peerbench.gobuild`) — not the seed; kept to compare with it;
* ``kopf``: ``bench/peers/kopf_peer.py`` under ``kopf run --standalone``.

appstack and the Go peers serve ``/metrics`` (``rest_client_requests_total``) on a free
loopback port; kopf serves a liveness endpoint only. Used by :mod:`peerbench.run`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from appstack.controllers.appservice import APP_SERVICE
from appstack.core.resource import Resource
from peerbench import seed
from peerbench.gobuild import ensure_go_seed
from peerbench.procstat import usage

# appstack runs with the modules its image has: the development venv also holds ``rich``
# (for import-linter and twine), which structlog would import (+4 MiB); the image's lock
# file has none (as bench/converge.py does).
IMAGE_MODULES = "import sys; sys.modules['rich'] = None; "

KOPF_PEER = Path(__file__).resolve().parents[1] / "peers" / "kopf_peer.py"


@dataclass(frozen=True)
class Peer:
    """One operator under test (``writes_status``: convergence also waits for
    ``status.observedGeneration == generation``)."""

    key: str
    label: str
    writes_status: bool
    has_metrics: bool
    extra_args: tuple[str, ...] = field(default=())
    # Run appstack from this source tree (``PYTHONPATH``), e.g. an export of main.
    source: str | None = None
    # The kind of the AppServices it reconciles (the bench creates and watches those).
    app_resource: Resource = APP_SERVICE
    # A binary given by path (the seed's own controller).
    binary: str | None = None
    # Its /metrics port when the peer fixes it (else a free one is passed to it).
    metrics_port: int | None = None


#: Our Go re-implementation of the seed, under a name and label no table mistakes for it.
REIMPLEMENTATION = "go-seed-reimplementation"
REIMPLEMENTATION_LABEL = (
    "our Go re-implementation of the seed's controller (appstack.dev, controller-runtime "
    "0.16.3, 1 worker)"
)
#: What older runs (JSON lines, ``--from-log``) called the re-implementation.
LEGACY_KEYS = {"go-seed": REIMPLEMENTATION}


def peers(
    tuned: tuple[str, ...], base_source: str | None = None, seed_binary: str | None = None
) -> dict[str, Peer]:
    """The peers by key (``seed`` only with ``seed_binary``)."""
    known = {
        "appstack-base": Peer(
            "appstack-base", f"appstack, defaults, at {base_source}", True, True, source=base_source
        ),
        "appstack": Peer("appstack", "appstack, defaults", True, True),
        "appstack-tuned": Peer(
            "appstack-tuned", f"appstack `{' '.join(tuned)}`", True, True, tuned
        ),
        REIMPLEMENTATION: Peer(REIMPLEMENTATION, REIMPLEMENTATION_LABEL, False, True),
        "kopf": Peer(
            "kopf", "a straightforward kopf operator (kopf 1.45, sync handlers)", True, False
        ),
    }
    if seed_binary:
        known["seed"] = Peer(
            "seed",
            seed.LABEL,
            False,
            True,
            app_resource=seed.APP_SERVICE,
            binary=seed_binary,
            metrics_port=seed.METRICS_PORT,
        )
    return known


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def command(peer: Peer, kubeconfig: str, namespace: str, port: int) -> list[str]:
    if peer.key.startswith("appstack"):
        return [
            sys.executable, "-c", IMAGE_MODULES + "from appstack.cli import main; main()", "run",
            f"--kubeconfig={kubeconfig}", f"--namespace={namespace}",
            f"--metrics-bind-address=127.0.0.1:{port}", "--no-metrics-auth",
            "--no-metrics-secure", "--health-probe-bind-address=0", "--log-level=warning",
            *peer.extra_args,
        ]  # fmt: skip
    if peer.key == "seed" and peer.binary:
        return [peer.binary]  # it parses no flags: $KUBECONFIG, metrics on :8080
    if peer.key == REIMPLEMENTATION:
        return [
            str(ensure_go_seed()), f"--kubeconfig={kubeconfig}",
            f"--metrics-bind-address=127.0.0.1:{port}", "--zap-log-level=error",
        ]  # fmt: skip
    kopf = Path(sys.executable).with_name("kopf")
    return [
        str(kopf), "run", "--standalone", "--quiet", f"--namespace={namespace}",
        f"--liveness=http://127.0.0.1:{port}/healthz", str(KOPF_PEER),
    ]  # fmt: skip


class Running:
    """A started peer: its process, port and log file."""

    def __init__(self, peer: Peer, kubeconfig: str, namespace: str, log_dir: Path) -> None:
        self.peer = peer
        if peer.metrics_port is not None and not seed.port_free(peer.metrics_port):
            raise RuntimeError(f"{peer.key} serves :{peer.metrics_port}, which is taken")
        self.port = peer.metrics_port or free_port()
        self.log_path = log_dir / f"{peer.key}-{namespace}.log"
        self._log: IO[bytes] = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        env = {**os.environ, "KUBECONFIG": kubeconfig}
        if peer.source:
            env["PYTHONPATH"] = str(Path(peer.source) / "src")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            command(peer, kubeconfig, namespace, self.port),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def _answers(self) -> bool:
        path = "/metrics" if self.peer.has_metrics else "/healthz"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2):
                return True
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self, timeout: float = 120) -> float:
        """Until its endpoint answers and its start-up CPU burst is over; seconds taken."""
        while not self._answers():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.peer.key} exited; see {self.log_path}")
            if time.perf_counter() - self.started > timeout:
                raise TimeoutError(f"{self.peer.key} not ready after {timeout}s")
            time.sleep(0.1)
        ready = time.perf_counter() - self.started
        self.wait_quiet(timeout=30)
        return ready

    def wait_quiet(self, timeout: float = 60, window: float = 1.0, cpu: float = 0.03) -> None:
        """Until the process spends less than ``cpu`` CPU-s per ``window`` (work settled)."""
        deadline = time.perf_counter() + timeout
        before = usage(self.proc.pid).cpu_s
        while time.perf_counter() < deadline:
            time.sleep(window)
            now = usage(self.proc.pid).cpu_s
            if now - before < cpu:
                return
            before = now

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
