"""Test certificates for an EtcdCluster with TLS, as ``kubernetes.io/tls`` Secrets.

:func:`etcd_tls_secrets` makes what a user would make with cert-manager or openssl (see
README, "EtcdCluster"): a peer CA and one peer certificate for every member; a client CA
with the members' serving certificate and a client certificate for the operator (and a
second client certificate for whoever else should talk to the cluster, here the test).
Member certificates carry both server and client auth (a member is a client of its
peers, and etcd's gateway a client of its own gRPC server) and name the members by
wildcard (``*.<cluster>.<ns>.svc``), the client Service and loopback. Used by the e2e
tests (tests/e2e/test_etcdcluster_tls.py) and the unit tests.
"""

from __future__ import annotations

import base64
import ipaddress
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from appstack_testbed.pki import issue, key_pem, new_ca, x509_name

BOTH = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
CLIENT = [ExtendedKeyUsageOID.CLIENT_AUTH]


@dataclass(frozen=True)
class PEMs:
    """A CA, a certificate it signed and that certificate's key, PEM-encoded."""

    ca: bytes
    cert: bytes
    key: bytes

    def secret(self, name: str, namespace: str) -> dict[str, Any]:
        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": namespace},
            "data": {"ca.crt": b64(self.ca), "tls.crt": b64(self.cert), "tls.key": b64(self.key)},
        }


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def member_names(cluster: str, namespace: str) -> list[str]:
    """The DNS names a member certificate covers (every member, the client Service)."""
    client = f"{cluster}-client"
    return [
        f"*.{cluster}.{namespace}.svc",
        f"*.{cluster}.{namespace}.svc.cluster.local",
        client,
        f"{client}.{namespace}",
        f"{client}.{namespace}.svc",
        f"{client}.{namespace}.svc.cluster.local",
        "localhost",
    ]


@dataclass(frozen=True)
class EtcdPKI:
    """Everything :func:`etcd_tls_secrets` issued (``user`` is a spare client cert)."""

    peer: PEMs
    server: PEMs
    operator: PEMs
    user: PEMs

    def secrets(self, namespace: str, cluster: str) -> list[dict[str, Any]]:
        """``<cluster>-peer-tls``, ``<cluster>-server-tls``, ``<cluster>-operator-tls``."""
        return [
            self.peer.secret(f"{cluster}-peer-tls", namespace),
            self.server.secret(f"{cluster}-server-tls", namespace),
            self.operator.secret(f"{cluster}-operator-tls", namespace),
        ]


def _leaf(
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    common_name: str,
    usages: list[x509.ObjectIdentifier],
    sans: list[x509.GeneralName],
) -> PEMs:
    cert, key = issue(x509_name(common_name), ca[0], ca[1], usages, sans)
    return PEMs(_pem(ca[0]), _pem(cert), key_pem(key))


def etcd_tls_secrets(cluster: str, namespace: str) -> EtcdPKI:
    """A peer CA and a client CA, and the certificates of one EtcdCluster."""
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in member_names(cluster, namespace)]
    sans.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    peer_ca = new_ca(f"{cluster}-peer-ca")
    client_ca = new_ca(f"{cluster}-client-ca")
    return EtcdPKI(
        peer=_leaf(peer_ca, f"{cluster}-peer", BOTH, sans),
        server=_leaf(client_ca, f"{cluster}-server", BOTH, sans),
        operator=_leaf(client_ca, "appstack-operator", CLIENT, []),
        user=_leaf(client_ca, "e2e-user", CLIENT, []),
    )
