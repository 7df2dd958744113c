"""Certificates and keys for the local control plane, and kubeconfig files that use them.

One CA signs the API server's serving certificate and a client certificate per identity
(admin, controller-manager, scheduler, kwok). A separate key pair signs service-account
tokens. Everything is ECDSA P-256: quick to generate, accepted by every component.
Used by :class:`appstack_testbed.cluster.LocalCluster` when a cluster is first created;
:func:`new_ca` and :func:`issue` (in memory) also by :mod:`appstack_testbed.etcd_pki`.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=3650)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def x509_name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


@dataclass(frozen=True)
class Pair:
    """A certificate and its key, as file paths."""

    cert: Path
    key: Path


class ClusterPKI:
    """Creates (once) and locates the files under ``<cluster dir>/pki``."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory

    @property
    def ca(self) -> Pair:
        return Pair(self.dir / "ca.crt", self.dir / "ca.key")

    @property
    def serving(self) -> Pair:
        return Pair(self.dir / "apiserver.crt", self.dir / "apiserver.key")

    @property
    def service_account_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def service_account_pub(self) -> Path:
        return self.dir / "sa.pub"

    def client(self, user: str) -> Pair:
        return Pair(self.dir / f"{user}.crt", self.dir / f"{user}.key")

    def ensure(self, clients: dict[str, tuple[str, str | None]], service_ip: str) -> None:
        """Create whatever is missing. ``clients`` maps file stem → (CN, O)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.ca.cert.exists():
            self._write_ca()
        ca_cert = x509.load_pem_x509_certificate(self.ca.cert.read_bytes())
        ca_key = serialization.load_pem_private_key(self.ca.key.read_bytes(), password=None)
        if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
            raise TypeError(f"{self.ca.key} is not an ECDSA key")
        if not self.serving.cert.exists():
            sans: list[x509.GeneralName] = [
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.IPAddress(ipaddress.ip_address(service_ip)),
                x509.DNSName("localhost"),
                *(
                    x509.DNSName(n)
                    for n in (
                        "kubernetes",
                        "kubernetes.default",
                        "kubernetes.default.svc",
                        "kubernetes.default.svc.cluster.local",
                    )
                ),
            ]
            self._issue(
                self.serving,
                subject=x509_name("kube-apiserver"),
                ca_cert=ca_cert,
                ca_key=ca_key,
                usage=ExtendedKeyUsageOID.SERVER_AUTH,
                sans=sans,
            )
        for stem, (cn, org) in clients.items():
            if not self.client(stem).cert.exists():
                self._issue(
                    self.client(stem),
                    subject=x509_name(cn, org),
                    ca_cert=ca_cert,
                    ca_key=ca_key,
                    usage=ExtendedKeyUsageOID.CLIENT_AUTH,
                    sans=[],
                )
        if not self.service_account_key.exists():
            key = _key()
            self.service_account_pub.write_bytes(
                key.public_key().public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                )
            )
            _write_private(self.service_account_key, key_pem(key))

    def _write_ca(self) -> None:
        cert, key = new_ca("appstack-local-ca")
        _write_private(self.ca.key, key_pem(key))
        self.ca.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    @staticmethod
    def _issue(
        pair: Pair,
        *,
        subject: x509.Name,
        ca_cert: x509.Certificate,
        ca_key: ec.EllipticCurvePrivateKey,
        usage: x509.ObjectIdentifier,
        sans: list[x509.GeneralName],
    ) -> None:
        cert, key = issue(subject, ca_cert, ca_key, [usage], sans)
        _write_private(pair.key, key_pem(key))
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def new_ca(common_name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA certificate and its key (in memory)."""
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    subject = x509_name(common_name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return cert, key


def issue(
    subject: x509.Name,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    usages: list[x509.ObjectIdentifier],
    sans: list[x509.GeneralName],
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A certificate signed by the CA, for ``usages`` (extended key usages), and its key."""
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def _write_private(path: Path, data: bytes) -> None:
    path.touch(mode=0o600)
    path.write_bytes(data)


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(
    path: Path,
    *,
    server: str,
    ca: Path,
    client: Pair,
    cluster: str,
    user: str,
    tls_server_name: str | None = None,
) -> None:
    """A self-contained kubeconfig (certificates embedded) for one identity; with
    ``tls_server_name``, the server's certificate is checked for that name instead of the
    address (a real node reaches the API server through its cluster's gateway)."""
    entry = {"server": server, "certificate-authority-data": _b64(ca)}
    if tls_server_name:
        entry["tls-server-name"] = tls_server_name
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": entry}],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": _b64(client.cert),
                    "client-key-data": _b64(client.key),
                },
            }
        ],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
    }
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
