"""The TLS server context ``/metrics`` is served with (controller-runtime's secure metrics
serving): a certificate and key from files (``--metrics-cert-dir``: ``tls.crt`` and
``tls.key``, as a ``kubernetes.io/tls`` Secret mounts them, e.g. one cert-manager keeps
renewed), or else a self-signed certificate made at start-up, in memory only.

The self-signed key never touches a disk (the operator's root filesystem is read-only):
it is loaded through :func:`appstack.runtime.certdata.load_cert_chain`. Files are loaded
again when they change (:meth:`CertFiles.watch`, every ``interval`` seconds), so a renewed
Secret is served without a restart: new connections get the new certificate. The operator
passes the context to the :class:`~appstack.runtime.manager.Manager` (``metrics_tls``).
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import structlog

from appstack.runtime.certdata import load_cert_chain

log = structlog.get_logger(__name__)

CERT_FILE, KEY_FILE = "tls.crt", "tls.key"


def self_signed(names: list[str]) -> tuple[bytes, bytes]:
    """A self-signed ECDSA P-256 server certificate for ``names`` (DNS names or IP
    addresses; the first is the subject), valid for a year: (certificate PEM, key PEM).

    Made by :mod:`appstack.runtime.selfsigned` in a child process, its PEMs read from the
    child's output (no file): the ``cryptography`` modules it needs hold ≈ 10 MiB for as
    long as a process lives, and the operator needs them once, at start-up."""
    made = subprocess.run(
        [sys.executable, "-c", _RUN_FILE, str(Path(__file__).with_name("selfsigned.py")), *names],
        capture_output=True,
        check=True,
        timeout=60,
    )
    pems = json.loads(made.stdout)
    return pems["cert"].encode(), pems["key"].encode()


# The module run by path, without this package (whose __init__ imports the runtime) and
# without the current directory on sys.path.
_RUN_FILE = (
    "import sys; del sys.path[0]; del sys.argv[0]; import runpy; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def default_names() -> list[str]:
    """What a self-signed certificate names: this host, localhost and loopback."""
    return [socket.gethostname(), "localhost", "127.0.0.1", "::1"]


def _server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def self_signed_context(names: list[str] | None = None) -> ssl.SSLContext:
    """A server context with a fresh self-signed certificate (kept in memory only)."""
    context = _server_context()
    cert, key = self_signed(names or default_names())
    load_cert_chain(context, cert, key)
    return context


class CertFiles:
    """``tls.crt`` and ``tls.key`` in ``directory``, loaded into :attr:`context`, and
    loaded again by :meth:`watch` whenever either file changes."""

    def __init__(self, directory: str | Path) -> None:
        self.cert = Path(directory, CERT_FILE)
        self.key = Path(directory, KEY_FILE)
        self.context = _server_context()
        self._seen = self._stamp()
        self.context.load_cert_chain(self.cert, self.key)  # a missing/bad file fails start-up

    def _stamp(self) -> tuple[float, float]:
        return self.cert.stat().st_mtime, self.key.stat().st_mtime

    def reload_if_changed(self) -> bool:
        """Load the files again if they changed since the last load; True if so. A pair
        that does not load (e.g. caught between the two writes) is tried again later."""
        try:
            stamp = self._stamp()
            if stamp == self._seen:
                return False
            self.context.load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError) as error:
            log.warning("cannot load the metrics certificate yet", error=str(error))
            return False
        self._seen = stamp
        log.info("metrics certificate reloaded", cert=str(self.cert))
        return True

    async def watch(self, interval: float = 30.0) -> None:
        """Until cancelled: reload the files when they change."""
        while True:
            await asyncio.sleep(interval)
            self.reload_if_changed()
