"""EtcdCluster with TLS from Secrets: admission, a missing Secret, and real etcd members
(on the process node) with peer and client TLS — healthy, a key through the client
Service with a client certificate, plain HTTP and certificate-less requests refused, a
scale 3 → 5 and a snapshot Job over TLS, a refused operator certificate; peer TLS alone
across the 3.5 → 3.6 upgrade. Certificates come from appstack_testbed.etcd_pki."""

from __future__ import annotations

import ssl
import time
from typing import Any

import pytest

from appstack.controllers.etcdcluster import ETCD_CLUSTER
from appstack.controllers.etcdcluster.etcdapi import EtcdClient, EtcdError
from appstack.controllers.etcdcluster.tlsclient import client_context
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import EVENT, POD, PVC, SECRET
from appstack_testbed.etcd_pki import EtcdPKI, PEMs, etcd_tls_secrets
from appstack_testbed.etcd_releases import ETCD_PREVIOUS
from appstack_testbed.pytest_plugin import RealNodeHandle
from tests.e2e.conftest import RunningOperator, events_of, events_until, until
from tests.e2e.etcd_load import first_snapshot, retry, snapshot_claim, wait_healthy
from tests.e2e.test_etcdcluster import report, seed
from tests.e2e.test_etcdcluster_kind import seed as kwok_seed

NAME = "secure"
TLS = {
    "peerSecretName": f"{NAME}-peer-tls",
    "clientSecretName": f"{NAME}-server-tls",
    "operatorSecretName": f"{NAME}-operator-tls",
}


def context_of(pems: PEMs) -> ssl.SSLContext:
    return client_context(pems.secret("x", "x")["data"])


async def create_secrets(client: Client, namespace: str) -> EtcdPKI:
    pki = etcd_tls_secrets(NAME, namespace)
    for secret in pki.secrets(namespace, NAME):
        await client.create(SECRET, secret)
    return pki


def conditions_of(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


@pytest.mark.parametrize(
    ("tls", "message"),
    [
        ({"clientSecretName": "s"}, "spec.tls.operatorSecretName: Invalid value: client TLS"),
        ({"operatorSecretName": "s"}, "spec.tls.operatorSecretName: Invalid value: client TLS"),
        ({}, "spec.tls.peerSecretName: Invalid value: tls needs peerSecretName"),
    ],
)
@pytest.mark.usefixtures("operator_kubeconfig")  # installs the CRDs
async def test_admission_refuses_incomplete_tls(
    client: Client, namespace: str, tls: dict[str, str], message: str
) -> None:
    with pytest.raises(errors.Invalid) as refused:
        await client.create(ETCD_CLUSTER, kwok_seed("bad", namespace, tls=tls))
    said = refused.value.message.replace('Invalid value: "object": ', "Invalid value: ")
    assert message in said


@pytest.mark.usefixtures("operator_kubeconfig")
async def test_tls_is_fixed_at_creation(client: Client, namespace: str) -> None:
    await client.create(ETCD_CLUSTER, kwok_seed("fixed", namespace, tls={"peerSecretName": "p"}))
    for change in ({"tls": {"peerSecretName": "other"}}, {"tls": None}):
        with pytest.raises(errors.Invalid) as refused:
            await client.patch(ETCD_CLUSTER, "fixed", {"spec": change}, namespace=namespace)
        said = refused.value.message.replace('Invalid value: "object": ', "Invalid value: ")
        assert "spec.tls: Invalid value: tls is set when the cluster is created" in said
    await client.create(ETCD_CLUSTER, kwok_seed("plain", namespace))
    patch = {"spec": {"tls": {"peerSecretName": "p"}}}
    with pytest.raises(errors.Invalid):
        await client.patch(ETCD_CLUSTER, "plain", patch, namespace=namespace)


async def test_missing_secret_is_reported_then_members_start_once_it_exists(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    """On the kwok nodes (members never run): nothing is created without the Secrets."""
    await client.create(ETCD_CLUSTER, kwok_seed(NAME, namespace, tls=TLS))

    def blocked(obj: dict[str, Any]) -> bool:
        return conditions_of(obj).get("Available", {}).get("reason") == "TLSSecretNotFound"

    cluster = await until(client, ETCD_CLUSTER, NAME, namespace, blocked, 30, "TLSSecretNotFound")
    available = conditions_of(cluster)["Available"]
    assert available["status"] == "False"
    assert available["message"].startswith(f"Secret {NAME}-")
    assert available["message"].endswith("TLS) not found")
    assert conditions_of(cluster)["Degraded"]["status"] == "True"
    warned = await events_of(client, namespace, "TLSSecretNotFound")
    assert len(warned) == 1
    assert warned[0]["type"] == "Warning"
    assert warned[0].get("series") is None  # said once, not at every look
    pods, _ = await client.list(POD, namespace)
    assert pods == []

    pki = etcd_tls_secrets(NAME, namespace)
    peer, server, operator_secret = pki.secrets(namespace, NAME)
    operator_secret["data"]["tls.key"] = operator_secret["data"]["tls.crt"]  # not a key
    for secret in (peer, server, operator_secret):
        await client.create(SECRET, secret)

    def invalid(obj: dict[str, Any]) -> bool:
        return conditions_of(obj).get("Available", {}).get("reason") == "TLSSecretInvalid"

    cluster = await until(client, ETCD_CLUSTER, NAME, namespace, invalid, 30, "TLSSecretInvalid")
    message = conditions_of(cluster)["Available"]["message"]
    assert message == f"Secret {TLS['operatorSecretName']} (operator TLS): key tls.key is not PEM"

    await client.delete(SECRET, TLS["operatorSecretName"], namespace)
    await client.create(SECRET, pki.operator.secret(TLS["operatorSecretName"], namespace))
    pod = await until(client, POD, f"{NAME}-0", namespace, bool, 30, "the first member")
    container = pod["spec"]["containers"][0]
    assert "--listen-peer-urls=https://$(POD_IP):2380" in container["args"]
    assert "--client-cert-auth=true" in container["args"]
    assert any(a.startswith(f"--initial-cluster={NAME}-0=https://") for a in container["args"])
    secrets = {v["secret"]["secretName"] for v in pod["spec"]["volumes"] if "secret" in v}
    assert secrets == {TLS["peerSecretName"], TLS["clientSecretName"]}  # not the operator's


async def refused(tls: ssl.SSLContext | None, endpoint: str, name: str, what: str) -> str:
    """Why a read through ``endpoint`` failed (it must fail)."""
    async with EtcdClient(tls=tls) as etcd:
        etcd.server_names[endpoint] = name
        with pytest.raises(EtcdError) as error:
            await etcd.get(endpoint, "secret-greeting")
    print(f"\n[etcd e2e] {what}: {error.value}")
    return str(error.value)


async def refused_without_the_right_certificate(
    pki: EtcdPKI, endpoint: str, name: str, namespace: str
) -> None:
    """Plain HTTP, no client certificate, and one of another CA are all refused (the CA
    and server name are those a client with the right certificate just used)."""
    plain = await refused(None, endpoint.replace("https://", "http://"), name, "plain HTTP")
    assert "Disconnected" in plain or "HTTPS" in plain
    no_cert = ssl.create_default_context(cadata=pki.server.ca.decode())
    said = await refused(no_cert, endpoint, name, "without a client certificate")
    assert "CERTIFICATE_REQUIRED" in said
    stranger = etcd_tls_secrets("stranger", namespace).user  # signed by another CA
    foreign = PEMs(ca=pki.server.ca, cert=stranger.cert, key=stranger.key)
    said = await refused(context_of(foreign), endpoint, name, "with a certificate of another CA")
    assert "UNKNOWN_CA" in said


async def test_three_members_with_peer_and_client_tls_serve_clients_with_certificates(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    pki = await create_secrets(client, namespace)
    start = time.monotonic()
    await client.create(ETCD_CLUSTER, seed(namespace, NAME, tls=TLS))
    cluster, _ = await wait_healthy(client, NAME, namespace, 3)
    report("bootstrap of 3 members with peer and client TLS", time.monotonic() - start)
    assert all(m["peerURL"].startswith("https://") for m in cluster["status"]["members"])
    assert cluster["status"]["clientURL"] == f"https://{NAME}-client.{namespace}.svc:2379"
    host, port = real_node.service_address(namespace, f"{NAME}-client", 2379)
    endpoint = f"https://{host}:{port}"
    service_name = f"{NAME}-client.{namespace}.svc"
    async with EtcdClient(tls=context_of(pki.user)) as etcd:
        etcd.server_names[endpoint] = service_name
        await retry(lambda: etcd.put(endpoint, "secret-greeting", "over TLS"))
        assert await etcd.get(endpoint, "secret-greeting") == "over TLS"
        ip = (await client.get(POD, f"{NAME}-0", namespace))["status"]["podIP"]
        member = f"https://{ip}:2379"
        etcd.server_names[member] = f"{NAME}-0.{NAME}.{namespace}.svc"
        _, members = await etcd.members(member)
        assert all(url.startswith("https://") for m in members for url in m.peer_urls)

    await refused_without_the_right_certificate(pki, endpoint, service_name, namespace)

    patch = {"spec": {"replicas": 5}}
    await client.patch(ETCD_CLUSTER, NAME, patch, namespace=namespace)
    cluster, took = await wait_healthy(client, NAME, namespace, 5)
    report("scale 3 -> 5 with TLS", took)
    assert len(cluster["status"]["members"]) == 5
    async with EtcdClient(tls=context_of(pki.user)) as etcd:
        etcd.server_names[endpoint] = service_name
        assert await retry(lambda: etcd.get(endpoint, "secret-greeting")) == "over TLS"

    # a snapshot Job presents the operator's certificate (etcdctl --cert ...)
    await client.create(PVC, snapshot_claim(namespace))
    _, took = await first_snapshot(
        client, NAME, namespace, {"intervalMinutes": 60, "pvcName": "snapshots"}
    )
    report("snapshot Job over TLS", took)
    await operator_certificate_swapped(client, namespace, pki)


def handshake_warnings(events: list[dict[str, Any]]) -> int:
    return sum(e["reason"] == "TLSHandshakeFailed" and e["type"] == "Warning" for e in events)


async def replace_secret(client: Client, namespace: str, secret: dict[str, Any]) -> None:
    await client.delete(SECRET, secret["metadata"]["name"], namespace)
    await client.create(SECRET, secret)


async def operator_certificate_swapped(client: Client, namespace: str, pki: EtcdPKI) -> None:
    """An operator certificate the members refuse is TLSHandshakeFailed (nothing else is
    done); the right one again (a new resourceVersion: the cached context is dropped) and
    the cluster is back."""
    name = TLS["operatorSecretName"]
    events, _ = await client.list(EVENT, namespace)
    assert handshake_warnings(events) == 0  # members starting are not that
    stranger = etcd_tls_secrets("stranger", namespace).user
    foreign = PEMs(ca=pki.server.ca, cert=stranger.cert, key=stranger.key)
    await replace_secret(client, namespace, foreign.secret(name, namespace))

    def refused(obj: dict[str, Any]) -> bool:
        return conditions_of(obj).get("Available", {}).get("reason") == "TLSHandshakeFailed"

    cluster = await until(client, ETCD_CLUSTER, NAME, namespace, refused, 60, "TLSHandshakeFailed")
    assert "UNKNOWN_CA" in conditions_of(cluster)["Available"]["message"]
    assert len(cluster["status"]["members"]) == 5  # kept, not forgotten
    events = await events_until(client, namespace, handshake_warnings, "a TLSHandshakeFailed")
    assert handshake_warnings(events) == 1  # one Event, its repeats folded into its series
    await replace_secret(client, namespace, pki.operator.secret(name, namespace))
    await wait_healthy(client, NAME, namespace, 5, timeout=60)


async def test_peer_tls_alone_upgrades_3_5_to_3_6_and_serves_plain_clients(
    client: Client,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    previous_etcd_image: str,
) -> None:
    """Peer TLS without client TLS (no operator certificate needed), across the upgrade
    that changes the spelling of etcd's peer SAN flag (``experimental-`` on 3.5)."""
    pki = etcd_tls_secrets(NAME, namespace)
    await client.create(SECRET, pki.peer.secret(TLS["peerSecretName"], namespace))
    old = ETCD_PREVIOUS.removeprefix("v")
    peer_only = {"peerSecretName": TLS["peerSecretName"]}
    await client.create(ETCD_CLUSTER, seed(namespace, NAME, version=old, tls=peer_only))
    cluster, took = await wait_healthy(client, NAME, namespace, 3, version=old)
    report(f"bootstrap of 3 members with peer TLS only ({old})", took)
    assert all(m["peerURL"].startswith("https://") for m in cluster["status"]["members"])
    assert cluster["status"]["clientURL"].startswith("http://")
    patch = {"spec": {"version": "3.6.16"}}
    await client.patch(ETCD_CLUSTER, NAME, patch, namespace=namespace)
    _, took = await wait_healthy(client, NAME, namespace, 3, timeout=300, version="3.6.16")
    report(f"upgrade {old} -> 3.6.16 with peer TLS", took)
    host, port = real_node.service_address(namespace, f"{NAME}-client", 2379)
    async with EtcdClient() as etcd:
        await retry(lambda: etcd.put(f"http://{host}:{port}", "plain", "clients"))
        assert await etcd.get(f"http://{host}:{port}", "plain") == "clients"
