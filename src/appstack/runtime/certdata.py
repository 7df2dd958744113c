"""A client certificate and key given as data, loaded into an :class:`ssl.SSLContext`
without a writable filesystem.

:meth:`ssl.SSLContext.load_cert_chain` reads only files. The operator runs with a read-only
root filesystem (its Deployment), where ``tempfile`` finds no usable directory ("No usable
temporary directory found"), and a private key should not touch a disk anyway. On Linux the
bytes go into anonymous memory files (``memfd_create``), read through ``/proc/self/fd``, and
closed at once; elsewhere into a private temporary directory, removed at once. Used by the
API client (:mod:`appstack.runtime.transport`, a kubeconfig's client certificate data) and
any other TLS client a controller builds (an etcd client's certificate, say).
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path

from appstack.runtime.program import program_name


@contextlib.contextmanager
def _memory_files(cert: bytes, key: bytes) -> Iterator[tuple[str, str]]:
    descriptors = []
    try:
        for name, content in (("tls.crt", cert), ("tls.key", key)):
            fd = os.memfd_create(name, os.MFD_CLOEXEC)
            descriptors.append(fd)
            os.write(fd, content)
        yield tuple(f"/proc/self/fd/{fd}" for fd in descriptors)  # type: ignore[misc]
    finally:
        for fd in descriptors:
            os.close(fd)


@contextlib.contextmanager
def _temporary_files(cert: bytes, key: bytes) -> Iterator[tuple[str, str]]:
    with tempfile.TemporaryDirectory(prefix=f"{program_name()}-tls-") as directory:
        cert_path, key_path = Path(directory, "tls.crt"), Path(directory, "tls.key")
        for path, content in ((cert_path, cert), (key_path, key)):
            path.touch(mode=0o600)
            path.write_bytes(content)
        yield str(cert_path), str(key_path)


def load_cert_chain(context: ssl.SSLContext, cert: bytes, key: bytes | None) -> None:
    """Load a PEM certificate (chain) and its key (None: in ``cert`` too) into ``context``."""
    files = _memory_files if hasattr(os, "memfd_create") else _temporary_files
    with files(cert, key or b"") as (cert_path, key_path):
        context.load_cert_chain(cert_path, keyfile=key_path if key else None)
