"""The TLS server context ``/metrics`` is served with (runtime/servingcert.py): a self-signed
certificate naming its hosts (made by runtime/selfsigned.py in a child process) loaded from
memory, and mounted certificate files loaded again when they change. Served over a real
connection: tests/e2e/test_metrics_tls.py."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import pytest
from cryptography import x509

from appstack.runtime.servingcert import CertFiles, self_signed, self_signed_context


def test_the_self_signed_certificate_names_its_hosts_and_loads_from_memory() -> None:
    cert, key = self_signed(["operator-0", "localhost", "127.0.0.1"])
    parsed = x509.load_pem_x509_certificate(cert)
    names = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["operator-0", "localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert b"PRIVATE KEY" in key
    assert isinstance(self_signed_context(), ssl.SSLContext)


def test_mounted_certificate_files_are_loaded_again_when_they_change(tmp_path: Path) -> None:
    def write(name: str) -> None:
        cert, key = self_signed([name])
        (tmp_path / "tls.crt").write_bytes(cert)
        (tmp_path / "tls.key").write_bytes(key)

    write("first")
    files = CertFiles(tmp_path)
    assert not files.reload_if_changed()  # nothing changed
    (tmp_path / "tls.key").write_bytes(b"half-written")
    os.utime(tmp_path / "tls.key", (1, 1))
    assert not files.reload_if_changed()  # a pair that does not load is tried again later
    write("second")
    os.utime(tmp_path / "tls.crt", (2, 2))
    assert files.reload_if_changed()
    with pytest.raises(FileNotFoundError):
        CertFiles(tmp_path / "missing")  # a missing certificate fails start-up
