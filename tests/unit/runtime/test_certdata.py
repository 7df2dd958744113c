"""A certificate and key given as data, loaded into an SSL context without a writable
filesystem (runtime/certdata.py): from anonymous memory files on Linux, else from a private
temporary directory removed at once; a key that does not match fails the load."""

from __future__ import annotations

import os
import ssl
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from appstack.runtime.certdata import load_cert_chain
from appstack.runtime.selfsigned import make


class _Recording(ssl.SSLContext):
    """A client context that notes the files it is handed and their modes."""

    seen: list[tuple[str, str | None, int]]

    def load_cert_chain(self, certfile: Any, keyfile: Any = None, password: Any = None) -> None:
        mode = os.stat(certfile).st_mode & 0o777
        self.seen.append((str(certfile), None if keyfile is None else str(keyfile), mode))
        super().load_cert_chain(certfile, keyfile, password)


def _context() -> _Recording:
    context = _Recording(ssl.PROTOCOL_TLS_CLIENT)
    context.seen = []
    return context


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memory files are Linux's")
def test_on_linux_the_pair_is_read_from_memory_files_closed_at_once() -> None:
    cert, key = make(["client"])
    before = _open_descriptors()
    context = _context()
    load_cert_chain(context, cert, key)
    assert [(c.rsplit("/", 1)[0], k is not None) for c, k, _ in context.seen] == [
        ("/proc/self/fd", True)
    ]
    assert _open_descriptors() == before  # nothing left open


def test_a_key_given_with_the_certificate_is_read_from_it() -> None:
    cert, key = make(["client"])
    context = _context()
    load_cert_chain(context, cert + key, None)
    assert context.seen[0][1] is None  # no separate key file


def test_a_key_of_another_certificate_fails_the_load() -> None:
    cert, _ = make(["one"])
    _, other_key = make(["two"])
    with pytest.raises(ssl.SSLError):
        load_cert_chain(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), cert, other_key)


def test_without_memory_files_a_private_directory_is_used_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "memfd_create", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    cert, key = make(["client"])
    context = _context()
    load_cert_chain(context, cert, key)
    ((cert_file, key_file, mode),) = context.seen
    assert Path(cert_file).parent.parent == tmp_path
    assert Path(key_file or "").parent == Path(cert_file).parent
    if sys.platform != "win32":
        assert mode == 0o600  # readable by the process's user only
    assert list(tmp_path.iterdir()) == []  # removed once loaded
