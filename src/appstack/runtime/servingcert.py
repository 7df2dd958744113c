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
import datetime
import json
import socket
import ssl
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import structlog

from appstack.runtime.certdata import load_cert_chain

log = structlog.get_logger(__name__)

CERT_FILE, KEY_FILE = "tls.crt", "tls.key"


@dataclass(frozen=True)
class IssuedCertificate:
    """A certificate made by :func:`issue_certificate`: its PEM, its key's PEM, and when
    it is valid."""

    cert: bytes
    key: bytes
    not_before: datetime.datetime
    not_after: datetime.datetime


def issue_certificate(names: list[str], validity: float | None = None) -> IssuedCertificate:
    """A self-signed ECDSA P-256 server certificate for ``names`` (DNS names or IP
    addresses; the first is the subject), valid for ``validity`` seconds (None: a year).

    Made by :mod:`appstack.runtime.selfsigned` in a child process, its PEMs read from the
    child's output (no file): the ``cryptography`` modules it needs hold ≈ 10 MiB for as
    long as a process lives, and the operator needs them only now and then."""
    valid = [f"--valid-seconds={validity:g}"] if validity is not None else []
    made = subprocess.run(
        [
            sys.executable,
            "-c",
            _RUN_FILE,
            str(Path(__file__).with_name("selfsigned.py")),
            *valid,
            *names,
        ],
        capture_output=True,
        check=True,
        timeout=60,
    )
    pems = json.loads(made.stdout)
    return IssuedCertificate(
        pems["cert"].encode(),
        pems["key"].encode(),
        datetime.datetime.fromisoformat(pems["not_before"]),
        datetime.datetime.fromisoformat(pems["not_after"]),
    )


def self_signed(names: list[str]) -> tuple[bytes, bytes]:
    """A self-signed server certificate for ``names`` valid for a year (:func:`issue_certificate`):
    (certificate PEM, key PEM)."""
    made = issue_certificate(names)
    return made.cert, made.key


# The module run by path, without this package (whose __init__ imports the runtime) and
# without the current directory on sys.path.
_RUN_FILE = (
    "import sys; del sys.path[0]; del sys.argv[0]; import runpy; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def default_names() -> list[str]:
    """What a self-signed certificate names: this host, localhost and loopback."""
    return [socket.gethostname(), "localhost", "127.0.0.1", "::1"]


def tls_server_context() -> ssl.SSLContext:
    """A TLS server context (TLS 1.2 or later) with no certificate loaded yet."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def self_signed_context(names: list[str] | None = None) -> ssl.SSLContext:
    """A server context with a fresh self-signed certificate (kept in memory only)."""
    context = tls_server_context()
    cert, key = self_signed(names or default_names())
    load_cert_chain(context, cert, key)
    return context


class CertFiles:
    """``tls.crt`` and ``tls.key`` in ``directory``, loaded into :attr:`context`, and
    loaded again by :meth:`watch` whenever either file changes; ``what`` they serve
    (``metrics``, ``webhook``) names them in the log."""

    def __init__(self, directory: str | Path, what: str = "metrics") -> None:
        self.what = what
        self.cert = Path(directory, CERT_FILE)
        self.key = Path(directory, KEY_FILE)
        self.context = tls_server_context()
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
            log.warning("cannot load the certificate yet", serves=self.what, error=str(error))
            return False
        self._seen = stamp
        log.info("certificate reloaded", serves=self.what, cert=str(self.cert))
        return True

    async def watch(self, interval: float = 30.0) -> None:
        """Until cancelled: reload the files when they change."""
        while True:
            await asyncio.sleep(interval)
            self.reload_if_changed()
