"""Serving certificates for tests, as cert-manager writes them into a ``kubernetes.io/tls``
Secret: a CA (``ca.crt``) and a certificate it signed (``tls.crt``, ``tls.key``) for the
names a client connects by. Used by the e2e tests of ``/metrics`` over HTTPS with a mounted
certificate (appstack's process, a scaffolded operator's chart)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from appstack_testbed.pki import issue, key_pem, new_ca, x509_name


def serving_cert_files(directory: Path, dns_names: Sequence[str], ips: Sequence[str] = ()) -> Path:
    """``directory`` (made) with ``ca.crt``, and ``tls.crt`` and ``tls.key`` of a server
    certificate that CA signed for ``dns_names`` (the first its common name) and ``ips``."""
    ca_cert, ca_key = new_ca("metrics-ca")
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert, key = issue(
        x509_name(dns_names[0].split(".")[0]),
        ca_cert,
        ca_key,
        [ExtendedKeyUsageOID.SERVER_AUTH],
        sans,
    )
    directory.mkdir(parents=True)
    (directory / "ca.crt").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    (directory / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "tls.key").write_bytes(key_pem(key))
    return directory
