"""Makes the self-signed certificate ``/metrics`` is served with when no certificate files
are given: run by :func:`appstack.runtime.servingcert.self_signed` as a child process
(``python -c ... selfsigned.py NAME...``), it prints ``{"cert": PEM, "key": PEM}`` as JSON
on its standard output, with the certificate's validity (``not_before``, ``not_after``,
ISO 8601) — ``--valid-seconds=N`` first makes it valid for N seconds instead of a year (a
webhook's shared certificate is renewed before it ends). Kept apart, importing nothing of
this package, so that the operator process never loads ``cryptography`` (≈ 10 MiB held for
the process's lifetime, for one certificate made at start-up; docs/performance.md).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)


def make(names: list[str], validity: datetime.timedelta = VALIDITY) -> tuple[bytes, bytes]:
    """A self-signed ECDSA P-256 server certificate for ``names`` (DNS names or IP
    addresses; the first is the subject), valid for ``validity`` (a year): (certificate
    PEM, key PEM); valid from a little earlier (5 minutes, at most a tenth of ``validity``:
    clocks differ)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0][:64])])
    sans: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            sans.append(x509.DNSName(name))
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - min(datetime.timedelta(minutes=5), validity / 10))
        .not_valid_after(now + validity)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _main(argv: list[str]) -> dict[str, str]:
    validity = VALIDITY
    if argv and argv[0].startswith("--valid-seconds="):
        validity = datetime.timedelta(seconds=float(argv.pop(0).partition("=")[2]))
    cert, key = make(argv, validity)
    made = x509.load_pem_x509_certificate(cert)
    return {
        "cert": cert.decode(),
        "key": key.decode(),
        "not_before": made.not_valid_before_utc.isoformat(),
        "not_after": made.not_valid_after_utc.isoformat(),
    }


if __name__ == "__main__":
    json.dump(_main(sys.argv[1:]), sys.stdout)
