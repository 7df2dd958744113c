"""``helm test``'s check of the operator's ``/metrics`` (the SDK's
:func:`appstack.sdk.HelmText.metrics_test_pod`, both charts' test Pod), run as the Pod runs
it — ``python3 -c`` with its environment — against a real HTTPS server on this machine that
answers as ``/metrics`` does without a reader's token (403): with ``METRICS_CA`` it passes
only for a certificate that CA signed for the URL's host name, and takes the trust store's
word when the file is absent (a Secret without ``ca.crt``); without, any certificate."""

from __future__ import annotations

import http.server
import os
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from appstack.sdk import HelmText
from tests.support.certs import serving_cert_files


class _Forbidden(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(403)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(``https://localhost:<port>/metrics``, the directory of its CA and certificate)."""
    certs = serving_cert_files(tmp_path / "certs", ["localhost"])
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Forbidden)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "tls.crt", certs / "tls.key")
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://localhost:{httpd.server_address[1]}/metrics", certs
    finally:
        httpd.shutdown()
        httpd.server_close()


def _check(url: str, ca: Path | None) -> subprocess.CompletedProcess[str]:
    pod = HelmText.metrics_test_pod("t", "ns", url, {}, ca_secret="s" if ca else None)
    (container,) = pod["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    if ca is not None:
        env["METRICS_CA"] = str(ca)  # where the Pod mounts the Secret's ca.crt
    command = [sys.executable, *container["command"][1:]]
    return subprocess.run(
        command, env={**os.environ, **env}, capture_output=True, text=True, timeout=30, check=False
    )


def test_with_the_secrets_ca_only_its_certificate_passes(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, certs = server
    assert _check(url, certs / "ca.crt").returncode == 0
    other = serving_cert_files(tmp_path / "other", ["localhost"])
    refused = _check(url, other / "ca.crt")
    assert refused.returncode != 0
    assert "CERTIFICATE_VERIFY_FAILED" in refused.stderr
    wrong_name = _check(url.replace("localhost", "127.0.0.1"), certs / "ca.crt")
    assert wrong_name.returncode != 0


def test_without_ca_crt_the_trust_store_decides_and_without_a_secret_any(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = server
    absent = _check(url, tmp_path / "no-such-ca.crt")  # the Secret had no ca.crt
    assert absent.returncode != 0  # a private CA: not in the trust store
    assert "CERTIFICATE_VERIFY_FAILED" in absent.stderr
    assert _check(url, None).returncode == 0  # no certSecret: the self-signed one taken
