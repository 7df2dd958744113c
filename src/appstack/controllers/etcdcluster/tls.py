"""TLS of an EtcdCluster's members, from ``spec.tls`` (pure, unit-tested).

Peer and client TLS are independent. Each named Secret (type ``kubernetes.io/tls``, keys
``ca.crt``, ``tls.crt``, ``tls.key``) is mounted read-only into the members at
``/etc/etcd/tls/<role>``:

* peer TLS: ``https`` peer URLs, ``--peer-cert-file``/``--peer-key-file``,
  ``--peer-trusted-ca-file`` and ``--peer-client-cert-auth`` (a peer must present a
  certificate signed by the peer CA). etcd's extra check that a peer's certificate names
  its source IP is skipped: member IPs are not known when certificates are issued;
  peers are authenticated by the peer CA (give peers a CA of their own);
* client TLS: ``https`` client URLs, ``--cert-file``/``--key-file``,
  ``--trusted-ca-file`` and ``--client-cert-auth`` (every client needs a certificate
  signed by that CA). Health moves to a plain ``/health`` listener on port 2381 (no data
  is served there) so that the kubelet's readiness probe needs no certificate.

The operator's own client certificate (``operatorSecretName``) is read by
:mod:`.tlsclient`; backup Jobs mount it (:func:`etcdctl_flags`). :func:`secret_problem`
says what is wrong with a referenced Secret by key names only — never its data;
:func:`handshake_problem` when no member accepts the operator's connection.
Used by :mod:`.desired`, :mod:`.backup`, :mod:`.observe` and the reconciler.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from appstack.api.etcdcluster import EtcdClusterSpec, TLSSpec
from appstack.sdk import KubeObject, Manifest, Problem, VolumeDict, VolumeMountDict

KEYS = ("ca.crt", "tls.crt", "tls.key")
ROOT = "/etc/etcd/tls"
HEALTH_PORT = 2381
_PEM = {"ca.crt": "CERTIFICATE-----", "tls.crt": "CERTIFICATE-----", "tls.key": "PRIVATE KEY-----"}


def _tls(obj: KubeObject) -> dict[str, Any]:
    return (obj.get("spec") or {}).get("tls") or {}


def peer_scheme(obj: KubeObject) -> str:
    """``https`` when the cluster's peer traffic is TLS (``spec.tls`` is immutable)."""
    return "https" if _tls(obj).get("peerSecretName") else "http"


def client_scheme(obj: KubeObject) -> str:
    return "https" if _tls(obj).get("clientSecretName") else "http"


def secret_names(tls: TLSSpec | None) -> dict[str, str]:
    """Role (peer, client, operator) → the Secret it names."""
    if tls is None:
        return {}
    roles = {
        "peer": tls.peer_secret_name,
        "client": tls.client_secret_name,
        "operator": tls.operator_secret_name,
    }
    return {role: name for role, name in roles.items() if name}


def _files(role: str) -> tuple[str, str, str]:
    """The mounted ``ca.crt``, ``tls.crt`` and ``tls.key`` of ``role``."""
    return f"{ROOT}/{role}/ca.crt", f"{ROOT}/{role}/tls.crt", f"{ROOT}/{role}/tls.key"


def _volume(role: str, secret: str) -> VolumeDict:
    return {"name": f"tls-{role}", "secret": {"secretName": secret, "defaultMode": 0o440}}


def _mount(role: str) -> VolumeMountDict:
    return {"name": f"tls-{role}", "mountPath": f"{ROOT}/{role}", "readOnly": True}


def member_flags(spec: EtcdClusterSpec) -> list[str]:
    """etcd's TLS flags for a member (none for a plain cluster)."""
    flags: list[str] = []
    if spec.tls is not None and spec.tls.peer_secret_name:
        ca, cert, key = _files("peer")
        skip = "peer-skip-client-san-verification"
        if spec.version.startswith("3.5."):
            skip = f"experimental-{skip}"
        flags += [
            f"--peer-cert-file={cert}",
            f"--peer-key-file={key}",
            f"--peer-trusted-ca-file={ca}",
            "--peer-client-cert-auth=true",
            f"--{skip}=true",
        ]
    if spec.tls is not None and spec.tls.client_secret_name:
        ca, cert, key = _files("client")
        flags += [
            f"--cert-file={cert}",
            f"--key-file={key}",
            f"--trusted-ca-file={ca}",
            "--client-cert-auth=true",
            f"--listen-metrics-urls=http://$(POD_IP):{HEALTH_PORT}",
        ]
    return flags


def with_member_tls(pod: Manifest, spec: EtcdClusterSpec) -> Manifest:
    """Member ``pod`` with its TLS flags, the Secrets mounted and (client TLS) its
    readiness probe on the plain health port."""
    names = secret_names(spec.tls)
    names.pop("operator", None)
    if not names:
        return pod
    container = pod["spec"]["containers"][0]
    container["args"] += member_flags(spec)
    for role, secret in names.items():
        pod["spec"]["volumes"].append(_volume(role, secret))
        container["volumeMounts"].append(_mount(role))
    if "client" in names:
        container["readinessProbe"]["httpGet"]["port"] = HEALTH_PORT
        container["ports"].append({"name": "health", "containerPort": HEALTH_PORT})
    return pod


def etcdctl_flags(
    spec: EtcdClusterSpec,
) -> tuple[list[str], list[VolumeDict], list[VolumeMountDict]]:
    """What an ``etcdctl`` container needs to reach the members with client TLS: its
    flags, the operator Secret's volume and mount (all empty for plain clients)."""
    if spec.tls is None or not spec.tls.operator_secret_name:
        return [], [], []
    ca, cert, key = _files("operator")
    flags = [f"--cacert={ca}", f"--cert={cert}", f"--key={key}"]
    return flags, [_volume("operator", spec.tls.operator_secret_name)], [_mount("operator")]


def secret_problem(role: str, name: str, secret: dict[str, Any] | None) -> Problem | None:
    """What is wrong with the Secret ``name`` used for ``role``: missing, a key missing,
    or a key that is not PEM of the expected kind. Names keys only, never their data."""
    if secret is None:
        return Problem("TLSSecretNotFound", f"Secret {name} ({role} TLS) not found")
    data = secret.get("data") or {}
    missing = [k for k in KEYS if not data.get(k)]
    if missing:
        return Problem(
            "TLSSecretInvalid", f"Secret {name} ({role} TLS) has no key {', '.join(missing)}"
        )
    for key, marker in _PEM.items():
        try:
            text = base64.b64decode(data[key], validate=True)
        except (binascii.Error, ValueError):
            text = b""
        if b"-----BEGIN " not in text or marker.encode() not in text:
            return Problem("TLSSecretInvalid", f"Secret {name} ({role} TLS): key {key} is not PEM")
    return None


def handshake_problem(errors: dict[str, str], *, answered: int) -> Problem | None:
    """``TLSHandshakeFailed`` when members were asked, none answered and every one of them
    failed in the TLS handshake (a certificate refused either way, or a name mismatch):
    only a Secret can fix that, waiting cannot. ``errors``: pod → why it did not answer."""
    if answered or not errors:
        return None
    if not all("[SSL:" in why for why in errors.values()):  # OpenSSL's own error text
        return None
    pod = min(errors)
    return Problem(
        "TLSHandshakeFailed",
        f"no member accepts the operator's TLS connection (check operatorSecretName and "
        f"the members' certificates); {pod}: {errors[pod]}",
    )
