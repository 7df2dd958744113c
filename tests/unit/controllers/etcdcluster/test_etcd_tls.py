"""EtcdCluster TLS: the model's rules, member flags and mounts, backup Jobs, the Secret
checks and the operator's SSLContext (pure; certificates from appstack_testbed.etcd_pki)."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from appstack.api.etcdcluster import (
    BackupSpec,
    EtcdCluster,
    EtcdClusterSpec,
    RestoreSpec,
    TLSSpec,
)
from appstack.controllers.etcdcluster import backup, desired, status, tls, tlsclient
from appstack.controllers.etcdcluster.observe import Observation
from appstack.controllers.etcdcluster.plan import MemberView, Observed, Step
from appstack.controllers.etcdcluster.tlsclient import client_context
from appstack.sdk.kit.conditions import Problem
from appstack_testbed.etcd_pki import etcd_tls_secrets, member_names
from tests.support.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
TLS = {"peerSecretName": "p", "clientSecretName": "s", "operatorSecretName": "o"}


def obj(tls_spec: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": 3, "storage": "10Gi"}
    if tls_spec is not None:
        spec["tls"] = tls_spec
    meta = {"name": "e", "namespace": "ns", "uid": "u-1"}
    return {"apiVersion": "appstack.dev/v1", "kind": "EtcdCluster", "metadata": meta, "spec": spec}


def spec_of(o: dict[str, Any], **extra: Any) -> EtcdClusterSpec:
    """The spec of the whole object ``o``, validated as admission validates it (CEL too)."""
    return EtcdCluster.model_validate({**o, "spec": {**o["spec"], **extra}}).spec


def member(o: dict[str, Any], **extra: Any) -> dict[str, Any]:
    initial = {"e-0": desired.peer_url(o, "e-0")}
    return desired.member_pod(o, spec_of(o, **extra), "e-0", initial, new_cluster=True, voter=True)


def test_the_model_refuses_what_admission_refuses() -> None:
    def refused(tls_spec: dict[str, str]) -> list[tuple[tuple[str | int, ...], str]]:
        with pytest.raises(ValidationError) as caught:
            spec_of(obj(tls_spec))
        return [(e["loc"], e["msg"]) for e in caught.value.errors()]

    both = "client TLS needs both clientSecretName"
    for half in ({"clientSecretName": "s"}, {"peerSecretName": "p", "operatorSecretName": "o"}):
        ((field, said),) = refused(half)
        assert field == ("spec", "tls", "operatorSecretName")
        assert said.startswith(both), said
    assert refused({}) == [
        (("spec", "tls", "peerSecretName"), "tls needs peerSecretName, clientSecretName or both")
    ]
    assert spec_of(obj({"peerSecretName": "p"})).tls is not None


def test_a_plain_cluster_has_no_tls_flags_mounts_or_health_port() -> None:
    pod = member(obj(None))
    container = pod["spec"]["containers"][0]
    assert not [a for a in container["args"] if "cert" in a or "https" in a]
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["data"]
    assert container["readinessProbe"]["httpGet"]["port"] == 2379


def test_peer_and_client_tls_members() -> None:
    o = obj(TLS)
    assert desired.peer_url(o, "e-1") == "https://e-1.e.ns.svc:2380"
    assert desired.client_url(o, "e-1") == "https://e-1.e.ns.svc:2379"
    assert desired.pod_of_peer_url(o, desired.peer_url(o, "e-1")) == "e-1"
    pod = member(o)
    container = pod["spec"]["containers"][0]
    args = container["args"]
    for flag in (
        "--listen-client-urls=https://$(POD_IP):2379",
        "--listen-peer-urls=https://$(POD_IP):2380",
        "--initial-cluster=e-0=https://e-0.e.ns.svc:2380",
        "--peer-cert-file=/etc/etcd/tls/peer/tls.crt",
        "--peer-key-file=/etc/etcd/tls/peer/tls.key",
        "--peer-trusted-ca-file=/etc/etcd/tls/peer/ca.crt",
        "--peer-client-cert-auth=true",
        "--peer-skip-client-san-verification=true",
        "--cert-file=/etc/etcd/tls/client/tls.crt",
        "--key-file=/etc/etcd/tls/client/tls.key",
        "--trusted-ca-file=/etc/etcd/tls/client/ca.crt",
        "--client-cert-auth=true",
        "--listen-metrics-urls=http://$(POD_IP):2381",
    ):
        assert flag in args
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["tls-peer"]["secret"] == {"secretName": "p", "defaultMode": 0o440}
    assert volumes["tls-client"]["secret"]["secretName"] == "s"
    assert "tls-operator" not in volumes  # the operator's key stays with the operator
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["tls-peer"] == {
        "name": "tls-peer",
        "mountPath": "/etc/etcd/tls/peer",
        "readOnly": True,
    }
    assert container["readinessProbe"]["httpGet"]["port"] == tls.HEALTH_PORT
    old = member(o, version="3.5.21")["spec"]["containers"][0]["args"]
    assert "--experimental-peer-skip-client-san-verification=true" in old


def test_peer_tls_alone_keeps_clients_plain() -> None:
    o = obj({"peerSecretName": "p"})
    args = member(o)["spec"]["containers"][0]["args"]
    assert "--listen-client-urls=http://$(POD_IP):2379" in args
    assert "--listen-peer-urls=https://$(POD_IP):2380" in args
    assert not [a for a in args if a.startswith(("--cert-file", "--listen-metrics"))]


def test_backup_jobs_present_the_operator_certificate_and_restores_advertise_https() -> None:
    o = obj(TLS)
    plan = BackupSpec.model_validate({"intervalMinutes": 5, "pvcName": "b"})
    job = backup.backup_job(
        o,
        spec_of(o),
        plan,
        0,
        "e-1",
        image="appstack:1",
        at=datetime.datetime(2026, 11, 27, tzinfo=datetime.timezone.utc),
    )
    pod = job["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert args[0] == "--endpoints=https://e-1.e.ns.svc:2379"
    assert "--cert=/etc/etcd/tls/operator/tls.crt" in args
    assert "--cacert=/etc/etcd/tls/operator/ca.crt" in args
    assert {"name": "tls-operator", "secret": {"secretName": "o", "defaultMode": 0o440}} in pod[
        "volumes"
    ]
    source = RestoreSpec.model_validate({"pvcName": "b", "path": "e-0.db"})
    init = backup.restore_init(o, spec_of(o), source, "e-0=https://e-0.e.ns.svc:2380")
    assert "--initial-advertise-peer-urls=https://$(POD_NAME).e.ns.svc:2380" in init["args"]
    plain = backup.backup_job(
        obj(None),
        spec_of(obj(None)),
        plan,
        0,
        "e-1",
        image="appstack:1",
        at=datetime.datetime(2026, 11, 27, tzinfo=datetime.timezone.utc),
    )
    assert not [
        a for a in plain["spec"]["template"]["spec"]["containers"][0]["args"] if "cert" in a
    ]


def test_secret_problems_name_keys_never_data() -> None:
    pki = etcd_tls_secrets("e", "ns")
    good = pki.peer.secret("p", "ns")
    assert tls.secret_problem("peer", "p", good) is None
    missing = tls.secret_problem("peer", "p", None)
    assert missing is not None
    assert (missing.reason, missing.message) == (
        "TLSSecretNotFound",
        "Secret p (peer TLS) not found",
    )
    short = {"data": {"tls.crt": good["data"]["tls.crt"]}}
    problem = tls.secret_problem("client", "s", short)
    assert problem is not None
    assert problem.message == "Secret s (client TLS) has no key ca.crt, tls.key"
    swapped = {"data": {**good["data"], "tls.key": good["data"]["tls.crt"]}}
    problem = tls.secret_problem("peer", "p", swapped)
    assert problem is not None
    assert problem.reason == "TLSSecretInvalid"
    assert problem.message == "Secret p (peer TLS): key tls.key is not PEM"
    garbage = {"data": {**good["data"], "ca.crt": "%%%"}}
    problem = tls.secret_problem("peer", "p", garbage)
    assert problem is not None
    assert problem.message == "Secret p (peer TLS): key ca.crt is not PEM"
    for value in good["data"].values():
        assert value not in str(problem)


def test_the_operator_context_presents_its_certificate_and_trusts_the_ca() -> None:
    pki = etcd_tls_secrets("e", "ns")
    context = client_context(pki.operator.secret("o", "ns")["data"])
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "e-client-ca"),),)]
    wrong = {**pki.operator.secret("o", "ns")["data"]}
    wrong["tls.key"] = pki.user.secret("u", "ns")["data"]["tls.key"]  # not this cert's key
    with pytest.raises(ssl.SSLError):
        client_context(wrong)


async def test_the_operator_contexts_kept_are_bounded_the_least_recently_used_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #46 P2: one context per operator Secret read, never emptied — a tenant cycling
    names (or clusters coming and going) grew it for ever. Now at most ``CONTEXTS``."""
    monkeypatch.setattr(tlsclient, "CONTEXTS", 2)
    pki = etcd_tls_secrets("e", "ns")
    reads: list[str] = []

    class Secrets:
        async def get(self, _res: object, name: str, namespace: str) -> dict[str, Any]:
            reads.append(namespace)
            secret = pki.operator.secret(name, namespace)
            secret["metadata"].update(uid=f"uid-{namespace}", resourceVersion="1")
            return secret

    secrets = tlsclient.TLSSecrets(Secrets())  # type: ignore[arg-type]
    spec = TLSSpec.model_validate({"operatorSecretName": "o", "clientSecretName": "o"})
    checked = {ns: await secrets.check(ns, spec) for ns in ("a", "b", "a", "c")}
    assert all(c.context is not None and c.problem is None for c in checked.values())
    # b, used least recently, was dropped when c came
    assert list(secrets._contexts) == [("a", "o"), ("c", "o")]
    again = await secrets.check("a", spec)
    assert again.context is checked["a"].context  # still cached: not loaded again


def test_the_context_loads_without_a_writable_temporary_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue #28 P1.6: under the Deployment's read-only root filesystem ``tempfile`` finds
    no usable directory; the key is loaded from memory instead (runtime/certdata.py)."""
    import tempfile  # noqa: PLC0415

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "not-there"))
    with pytest.raises(FileNotFoundError):
        tempfile.mkdtemp()
    pki = etcd_tls_secrets("e", "ns")
    context = client_context(pki.operator.secret("o", "ns")["data"])
    assert context.verify_mode == ssl.CERT_REQUIRED


def test_status_gives_https_urls_and_a_blocked_cluster_says_which_secret() -> None:
    o = {**obj(TLS), "status": {"members": [{"name": "e-0", "id": "1"}], "readyMembers": 1}}
    o["metadata"]["generation"] = 2
    seen = Observed("e", 1, "3.6.16", {}, {}, [MemberView(1, "e-0", True, False, True)], 1, True)
    out = status.from_observation(
        o, Observation(seen, {}, 0xABC, None, {}, {}), Step("Done", "ok"), "t"
    ).to_dict()
    assert out["clientURL"] == "https://e-client.ns.svc:2379"
    assert out["members"][0]["peerURL"] == "https://e-0.e.ns.svc:2380"
    plain = status.from_observation(
        obj(None), Observation(seen, {}, 1, None, {}, {}), Step("Done", "ok"), "t"
    ).to_dict()
    assert plain["clientURL"] == "http://e-client.ns.svc:2379"
    problem = Problem("TLSSecretNotFound", "Secret s (client TLS) not found")
    blocked = status.blocked(o, problem, "t").to_dict()
    conditions = {
        c["type"]: (c["status"], c["reason"], c["message"]) for c in blocked["conditions"]
    }
    assert conditions["Available"] == ("False", "TLSSecretNotFound", problem.message)
    assert conditions["Degraded"] == ("True", "TLSSecretNotFound", problem.message)
    assert conditions["Progressing"][0] == "False"
    assert blocked["readyMembers"] == 1  # the last members are kept
    assert status.last_said(o, "Available", "False") is None
    said = status.last_said({**o, "status": blocked}, "Available", "False")
    assert said == ("TLSSecretNotFound", problem.message)


def test_a_refused_handshake_everywhere_is_a_problem_a_refused_connection_is_not() -> None:
    ssl_error = "https://10.0.0.1:2379: ClientOSError: [SSL: TLSV1_ALERT_UNKNOWN_CA] unknown ca"
    problem = tls.handshake_problem({"e-1": ssl_error, "e-0": ssl_error}, answered=0)
    assert problem is not None
    assert problem.reason == "TLSHandshakeFailed"
    assert problem.message.endswith(f"e-0: {ssl_error}")
    refused = (
        "https://10.0.0.2:2379: ClientConnectorError: Cannot connect to host 10.0.0.2:2379 "
        "ssl:<ssl.SSLContext object at 0x7f> [Connect call failed ('10.0.0.2', 2379)]"
    )
    assert tls.handshake_problem({"e-0": refused}, answered=0) is None
    assert tls.handshake_problem({"e-0": ssl_error, "e-1": refused}, answered=0) is None
    assert tls.handshake_problem({"e-0": ssl_error}, answered=1) is None
    assert tls.handshake_problem({}, answered=0) is None


def test_the_cert_manager_example_issues_the_secrets_the_cluster_names() -> None:
    docs = [
        d
        for d in yaml.safe_load_all(
            (EXAMPLES / "cert-manager" / "etcdcluster-tls.yaml").read_text()
        )
        if d
    ]
    cluster = next(d for d in docs if d["kind"] == "EtcdCluster")
    parsed = EtcdClusterSpec.model_validate(cluster["spec"])
    issued = {d["spec"]["secretName"]: d["spec"] for d in docs if d["kind"] == "Certificate"}
    names = tls.secret_names(parsed.tls)
    assert set(names) == {"peer", "client", "operator"}
    assert set(names.values()) <= set(issued)
    ns = cluster["metadata"].get("namespace", "default")
    members = f"*.{cluster['metadata']['name']}.{ns}.svc"
    assert members in issued[names["peer"]]["dnsNames"]
    assert set(member_names(cluster["metadata"]["name"], ns)) - {"localhost"} <= set(
        issued[names["client"]]["dnsNames"]
    )
    assert "client auth" in issued[names["client"]]["usages"]  # the gateway dials itself
    assert issued[names["operator"]]["usages"] == ["client auth", "digital signature"]
    same_ca = {issued[names[r]]["issuerRef"]["name"] for r in ("client", "operator")}
    assert len(same_ca) == 1  # the operator's ca.crt is the one that signed the members'
