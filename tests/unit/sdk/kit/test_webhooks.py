"""Webhooks declared beside a controller (sdk/kit/webhooks.py): their paths and names, the
typed handlers (objects parsed with the kind's model; what the model refuses is denied
naming the field), the generated configurations (rules, selectors, Service or URL, CA
bundle), and the serving in both modes against the in-memory API server."""

from __future__ import annotations

import asyncio
import base64
import datetime
import os
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from pydantic import BaseModel, Field

from appstack.runtime import (
    CONFIG_MAP,
    NAMESPACE,
    SECRET,
    FakeApiServer,
    NotFound,
    allow,
    deny,
)
from appstack.runtime.client import Client
from appstack.runtime.servingcert import self_signed
from appstack.runtime.webhook import AdmissionRequest, Verdict, answer
from appstack.sdk import CustomObject, OperatorIdentity, custom_kind, webhook_review
from appstack.sdk.kit.webhooks import (
    MUTATING,
    VALIDATING,
    ClientConfig,
    KindWebhook,
    Mutator,
    Validator,
    WebhookReader,
    WebhookReview,
    WebhookServing,
    bind,
    configurations,
    handler_timeout,
    namespace_selector,
    path,
    webhook_name,
)

IDENTITY = OperatorIdentity(project="gizmo", domain="gizmo.example.com")


class GizmoSpec(BaseModel):
    size: int = Field(1, ge=0)


class GizmoStatus(BaseModel):
    pass


@custom_kind(group="gizmo.example.com", plural="gizmos")
class Gizmo(CustomObject):
    spec: GizmoSpec
    status: GizmoStatus | None = None


def _check(review: WebhookReview) -> Verdict:
    assert isinstance(review.object, Gizmo)
    if review.object.spec.size > 3:
        return deny("at most 3", field="spec.size")
    return allow("dry run" if review.dry_run else "checked")


async def _default(review: WebhookReview) -> dict[str, Any] | None:
    assert review.raw is not None
    review.raw["spec"].setdefault("size", 2)
    return review.raw


def _request(obj: dict[str, Any] | None, **more: Any) -> AdmissionRequest:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u", "operation": "CREATE", "object": obj, **more},
    }
    return AdmissionRequest.from_review(review)


def _gizmo(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "gizmo.example.com/v1",
        "kind": "Gizmo",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": spec,
    }


KIND = Gizmo.KIND
VALIDATOR = Validator(_check, operations=("CREATE",))
MUTATOR = Mutator(_default)


def test_paths_and_names_follow_kubebuilder_and_are_domain_names() -> None:
    assert path(VALIDATOR, KIND.resource) == "/validate-gizmo-example-com-v1-gizmo"
    assert path(MUTATOR, CONFIG_MAP) == "/default-core-v1-configmap"
    assert webhook_name(VALIDATOR, KIND.resource) == "validate.gizmos.gizmo.example.com"
    assert webhook_name(MUTATOR, CONFIG_MAP) == "default.configmaps.core.k8s.io"


async def test_a_typed_validator_reads_the_model_and_its_refusals_name_the_field() -> None:
    webhook = bind(VALIDATOR, KIND.resource, KIND)
    assert not webhook.mutating
    assert await answer(webhook, _request(_gizmo(size=5)), 5) == deny(
        "at most 3", field="spec.size"
    )
    assert await answer(webhook, _request(_gizmo(size=1), dryRun=True), 5) == allow("dry run")
    refused = await answer(webhook, _request(_gizmo(size=-1)), 5)
    assert isinstance(refused, Verdict)
    assert (refused.allowed, refused.field, refused.code) == (False, "spec.size", 422)


async def test_a_mutator_returns_the_changed_object_and_a_built_in_kind_has_no_model() -> None:
    webhook = bind(MUTATOR, KIND.resource, KIND)
    assert webhook.mutating
    assert (await answer(webhook, _request(_gizmo()), 5)).object == _gizmo(size=2)
    seen: list[WebhookReview] = []

    def note(review: WebhookReview) -> None:
        seen.append(review)

    await answer(bind(Validator(note), CONFIG_MAP, None), _request({"metadata": {}}), 5)
    assert seen[0].object is None
    assert seen[0].operation == "CREATE"


def test_configurations_send_the_kinds_requests_to_the_service_or_the_url() -> None:
    declared = [KindWebhook(VALIDATOR, KIND.resource, KIND), KindWebhook(MUTATOR, CONFIG_MAP)]
    service = ClientConfig(
        service="gizmo-webhook-service", namespace="gizmo-system", ca_bundle=b"PEM"
    )
    validating, mutating = configurations(declared, IDENTITY, service)
    assert validating["kind"] == VALIDATING.kind
    assert validating["metadata"]["name"] == "gizmo-validating-webhooks"
    assert mutating["kind"] == MUTATING.kind
    [hook] = validating["webhooks"]
    assert hook["rules"] == [
        {
            "apiGroups": ["gizmo.example.com"],
            "apiVersions": ["v1"],
            "resources": ["gizmos"],
            "operations": ["CREATE"],
            "scope": "Namespaced",
        }
    ]
    assert (hook["sideEffects"], hook["failurePolicy"], hook["timeoutSeconds"]) == (
        "None",
        "Fail",
        10,
    )
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["clientConfig"] == {
        "service": {
            "namespace": "gizmo-system",
            "name": "gizmo-webhook-service",
            "path": "/validate-gizmo-example-com-v1-gizmo",
            "port": 443,
        },
        "caBundle": base64.b64encode(b"PEM").decode(),
    }
    assert hook["namespaceSelector"] == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["gizmo-system", "kube-system"],
            }
        ],
        "matchLabels": {IDENTITY.enabled_label: "true"},
    }
    assert mutating["webhooks"][0]["rules"][0]["apiGroups"] == [""]
    [only] = configurations(declared[:1], IDENTITY, ClientConfig(url="https://127.0.0.1:9443/"))
    assert only["webhooks"][0]["clientConfig"] == {
        "url": "https://127.0.0.1:9443/validate-gizmo-example-com-v1-gizmo"
    }
    assert "matchLabels" not in namespace_selector(IDENTITY, enable_all=True)
    with pytest.raises(ValueError, match="1 to 30"):
        configurations([KindWebhook(Validator(_check, timeout=40), CONFIG_MAP)], IDENTITY, service)
    with pytest.raises(ValueError, match="url or a service"):
        ClientConfig().at("/x")


def test_the_failure_policy_is_declared_and_the_operator_times_out_before_the_api_server() -> None:
    ignored = KindWebhook(Validator(_check, failure_policy="Ignore", timeout=2), CONFIG_MAP)
    url = ClientConfig(url="https://127.0.0.1:9443")
    [configuration] = configurations([ignored], IDENTITY, url)
    hook = configuration["webhooks"][0]
    assert (hook["failurePolicy"], hook["timeoutSeconds"]) == ("Ignore", 2)
    with pytest.raises(ValueError, match="Fail or Ignore"):
        configurations(
            [KindWebhook(Mutator(_check, failure_policy="fail"), CONFIG_MAP)], IDENTITY, url
        )
    # the operator's own timeout error comes first: 1 s -> 0.75 s, 2 -> 1.5, 10 -> 9
    assert [handler_timeout(Validator(_check, timeout=t)) for t in (1, 2, 10, 30)] == [
        0.75,
        1.5,
        9.0,
        29.0,
    ]
    assert bind(Validator(_check, timeout=2), CONFIG_MAP, None).timeout == 1.5


async def test_developer_mode_applies_its_configurations_and_deletes_them_on_stop() -> None:
    api = FakeApiServer([VALIDATING, MUTATING])
    client = Client(api)
    declared = [
        KindWebhook(VALIDATOR, KIND.resource, KIND),
        KindWebhook(MUTATOR, KIND.resource, KIND),
    ]
    serving = WebhookServing(declared, IDENTITY, address="127.0.0.1:0", host="127.0.0.1")
    assert not serving.ready()
    await serving.start(client)
    try:
        assert serving.ready()
        [validating] = api.objects(VALIDATING)
        url = validating["webhooks"][0]["clientConfig"]["url"]
        assert url == f"https://127.0.0.1:{serving.server.port}/validate-gizmo-example-com-v1-gizmo"
        bundle = base64.b64decode(validating["webhooks"][0]["clientConfig"]["caBundle"])
        trusting = ssl.create_default_context(cadata=bundle.decode())  # the API server's view
        review = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": "u", "operation": "CREATE", "object": _gizmo(size=9)},
        }
        async with aiohttp.ClientSession() as http, http.post(url, json=review, ssl=trusting) as r:
            answer = await r.json()
        assert answer["response"]["status"]["message"] == "spec.size: at most 3"
    finally:
        await serving.stop(client)
    assert not serving.ready()
    for resource in (VALIDATING, MUTATING):
        with pytest.raises(NotFound):
            await client.get(
                resource, f"gizmo-{'validating' if resource is VALIDATING else 'mutating'}-webhooks"
            )


async def _system(client: Client) -> None:
    await client.create(NAMESPACE, {"metadata": {"name": "gizmo-system"}})


async def test_in_cluster_mode_writes_its_ca_bundle_into_the_installed_configurations() -> None:
    api = FakeApiServer([VALIDATING])
    client = Client(api)
    await _system(client)
    declared = [KindWebhook(VALIDATOR, KIND.resource, KIND)]
    serving = WebhookServing(declared, IDENTITY, address="127.0.0.1:0", service="gizmo-webhooks")
    installed = ClientConfig(service="gizmo-webhooks", namespace="gizmo-system")
    [configuration] = configurations(declared, IDENTITY, installed)
    configuration["webhooks"].append({**configuration["webhooks"][0], "name": "someone.elses.io"})
    await client.create(VALIDATING, configuration)
    await serving.start(client)
    try:
        assert serving.ready()
        ours, theirs = (await client.get(VALIDATING, "gizmo-validating-webhooks"))["webhooks"]
        assert serving.cert is not None
        assert base64.b64decode(ours["clientConfig"]["caBundle"]) == serving.cert
        assert "caBundle" not in theirs["clientConfig"]
        sans = x509.load_pem_x509_certificate(serving.cert).extensions
        names = sans.get_extension_for_class(x509.SubjectAlternativeName).value
        assert "gizmo-webhooks.gizmo-system.svc" in names.get_values_for_type(x509.DNSName)
    finally:
        await serving.stop(client)
    await client.get(VALIDATING, "gizmo-validating-webhooks")  # installed: kept


def test_a_serving_needs_a_host_or_a_service() -> None:
    with pytest.raises(ValueError, match="host"):
        WebhookServing([], IDENTITY)


async def test_in_cluster_mode_is_not_ready_until_its_configurations_are_installed() -> None:
    client = Client(FakeApiServer([VALIDATING]))
    await _system(client)
    declared = [KindWebhook(VALIDATOR, KIND.resource, KIND)]
    serving = WebhookServing(
        declared, IDENTITY, address="127.0.0.1:0", service="gizmo-webhooks", retry=0.05
    )
    await serving.start(client)
    try:
        assert serving.server.listening
        assert not serving.ready()
        installed = ClientConfig(service="gizmo-webhooks", namespace="gizmo-system")
        [configuration] = configurations(declared, IDENTITY, installed)
        await client.create(VALIDATING, configuration)
        for _ in range(100):
            if serving.ready():
                break
            await asyncio.sleep(0.05)
        assert serving.ready()
    finally:
        await serving.stop(client)


async def _served_cert(port: int) -> bytes:
    """The certificate (DER) the server on ``port`` presents."""
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=insecure)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
    assert der is not None
    return bytes(der)


async def _installed(client: Client, declared: list[KindWebhook]) -> None:
    installed = ClientConfig(service="gizmo-webhooks", namespace="gizmo-system")
    [configuration] = configurations(declared, IDENTITY, installed)
    await client.create(VALIDATING, configuration)


async def _bundle(client: Client) -> bytes:
    hook = (await client.get(VALIDATING, "gizmo-validating-webhooks"))["webhooks"][0]
    return base64.b64decode(hook["clientConfig"]["caBundle"])


async def test_replicas_share_one_certificate_through_a_secret_and_rotate_it_together() -> None:
    client = Client(FakeApiServer([VALIDATING]))
    await _system(client)
    declared = [KindWebhook(VALIDATOR, KIND.resource, KIND)]
    await _installed(client, declared)
    replicas = [
        WebhookServing(declared, IDENTITY, address="127.0.0.1:0", service="gizmo-webhooks", grace=0)
        for _ in range(2)
    ]
    await asyncio.gather(*(r.start(client) for r in replicas))  # both race to create it
    try:
        first, second = replicas
        assert first.ready()
        assert second.ready()
        secret = await client.get(SECRET, "gizmo-webhook-server-cert", "gizmo-system")
        assert secret["type"] == "kubernetes.io/tls"
        assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
        assert first.cert == second.cert == base64.b64decode(secret["data"]["tls.crt"])
        assert first.cert is not None
        old = ssl.PEM_cert_to_DER_cert(first.cert.decode())
        for replica in replicas:
            assert replica.server.port is not None
            assert await _served_cert(replica.server.port) == old
        assert await _bundle(client) == first.cert

        # the certificate is due (the first replica's clock says): it renews it; the
        # second, whose clock says the new one is not, reads it; both serve the new one
        assert first.shared is not None
        assert second.shared is not None
        later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=300)
        first.shared.now = lambda: later
        await first._rotate(client, await first.shared.refresh())
        await second._rotate(client, await second.shared.refresh())
        assert first.cert is not None
        assert first.cert == second.cert
        assert first.cert != ssl.DER_cert_to_PEM_cert(old).encode()
        new = ssl.PEM_cert_to_DER_cert(first.cert.decode())
        for replica in replicas:
            assert replica.server.port is not None
            assert await _served_cert(replica.server.port) == new
        # the old certificate stays trusted beside the new
        trusted = await _bundle(client)
        assert trusted.startswith(first.cert)
        assert ssl.DER_cert_to_PEM_cert(old).encode().strip() in trusted
        assert trusted.count(b"BEGIN CERTIFICATE") == 2
    finally:
        for replica in replicas:
            await replica.stop(client)


def _write_pair(directory: Path, names: list[str]) -> bytes:
    cert, key = self_signed(names)
    (directory / "tls.key").write_bytes(key)
    (directory / "tls.crt").write_bytes(cert)
    return cert


async def test_a_mounted_certificate_is_served_reloaded_and_its_ca_left_to_cert_manager(
    tmp_path: Path,
) -> None:
    client = Client(FakeApiServer([VALIDATING]))
    await _system(client)
    declared = [KindWebhook(VALIDATOR, KIND.resource, KIND)]
    await _installed(client, declared)
    first = _write_pair(tmp_path, ["gizmo-webhooks.gizmo-system.svc"])
    serving = WebhookServing(
        declared,
        IDENTITY,
        address="127.0.0.1:0",
        service="gizmo-webhooks",
        cert_dir=str(tmp_path),
        check=0.05,
    )
    await serving.start(client)
    try:
        assert serving.ready()  # cert-manager injects the CA: nothing to wait for
        hook = (await client.get(VALIDATING, "gizmo-validating-webhooks"))["webhooks"][0]
        assert "caBundle" not in hook["clientConfig"]
        with pytest.raises(NotFound):
            await client.get(SECRET, "gizmo-webhook-server-cert", "gizmo-system")
        assert serving.server.port is not None
        assert await _served_cert(serving.server.port) == ssl.PEM_cert_to_DER_cert(first.decode())
        os_time = serving.cert_files
        assert os_time is not None
        renewed = _write_pair(tmp_path, ["gizmo-webhooks.gizmo-system.svc"])
        stamp = os_time._seen[0] + 1  # a new mtime, whatever the filesystem's resolution
        for name in ("tls.crt", "tls.key"):
            os.utime(tmp_path / name, (stamp, stamp))
        wanted = ssl.PEM_cert_to_DER_cert(renewed.decode())
        for _ in range(100):
            if await _served_cert(serving.server.port) == wanted:
                break
            await asyncio.sleep(0.05)
        assert await _served_cert(serving.server.port) == wanted
    finally:
        await serving.stop(client)


def test_configurations_for_cert_manager_carry_its_injection_annotation() -> None:
    declared = [KindWebhook(VALIDATOR, KIND.resource, KIND)]
    service = ClientConfig(service="gizmo-webhook-service", namespace="gizmo-system")
    [made] = configurations(
        declared, IDENTITY, service, inject_ca_from="gizmo-system/gizmo-serving-cert"
    )
    assert made["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "gizmo-system/gizmo-serving-cert"
    }
    [plain] = configurations(declared, IDENTITY, service)
    assert "annotations" not in plain["metadata"]
    with pytest.raises(ValueError, match="in-cluster"):
        WebhookServing(declared, IDENTITY, host="127.0.0.1", cert_dir="/nowhere")


async def test_a_slow_plain_handler_neither_stalls_the_loop_nor_escapes_its_timeout() -> None:
    """A handler that is not a coroutine runs in a worker thread: while it sleeps past its
    timeout the event loop keeps running (a ticker counts on), the request is refused at
    the operator's timeout, and the next request is answered."""
    release = threading.Event()

    def slow(review: WebhookReview) -> Verdict:
        release.wait(5)
        return allow()

    webhook = bind(Validator(slow, timeout=1), KIND.resource, KIND)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    running = asyncio.create_task(ticker())
    started = time.monotonic()
    try:
        refused = await answer(webhook, _request(_gizmo(size=1)), webhook.timeout)
    finally:
        running.cancel()
        release.set()
    assert refused == deny("the webhook did not answer within 0.75s", code=500)
    assert 0.7 <= time.monotonic() - started < 2
    assert ticks >= 8  # the loop ran all along: 0.75 s of 50 ms ticks
    assert await answer(webhook, _request(_gizmo(size=1)), webhook.timeout) == allow()


class _Objects:
    """A client that has some Gizmos (what a review's reader asks; writes absent)."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = list(objects)
        self.asked: list[tuple[str, str | None]] = []

    async def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.asked.append((name, namespace))
        return next(o for o in self.objects if o["metadata"]["name"] == name)

    async def list(
        self, resource: Any, namespace: str | None = None, *, label_selector: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        self.asked.append(("*", namespace))
        return [o for o in self.objects if o["metadata"]["namespace"] == namespace], "1"


async def _unique_size(review: WebhookReview) -> Verdict:
    """One Gizmo of a size per namespace: what no CEL rule of the object can see."""
    assert review.client is not None
    assert isinstance(review.object, Gizmo)
    for other in await review.client.list(KIND.resource, review.request.namespace):
        if (
            other["metadata"]["name"] != review.request.name
            and other["spec"].get("size") == review.object.spec.size
        ):
            return deny(
                f"size {review.object.spec.size} is Gizmo {other['metadata']['name']}'s",
                field="spec.size",
            )
    return allow()


async def test_a_handler_reads_other_objects_through_the_operators_client_read_only() -> None:
    """A coroutine handler reads the namespace's other objects with ``review.client`` (the
    operator's client, get and list only); the serving gives it the client it started
    with; a review made for a unit test reads what it is given."""
    other = {**_gizmo(size=2), "metadata": {"name": "taken", "namespace": "ns"}}
    client = _Objects(other)
    webhook = bind(Validator(_unique_size), KIND.resource, KIND, lambda: client)  # type: ignore[arg-type,return-value]
    asked = {"namespace": "ns", "name": "g"}
    assert await answer(webhook, _request(_gizmo(size=2), **asked), 5) == deny(
        "size 2 is Gizmo taken's", field="spec.size"
    )
    assert await answer(webhook, _request(_gizmo(size=1), **asked), 5) == allow()
    assert client.asked == [("*", "ns"), ("*", "ns")]
    reader = WebhookReview(_request(_gizmo()), client=WebhookReader(client)).client  # type: ignore[arg-type]
    assert reader is not None
    assert not hasattr(reader, "create")
    assert not hasattr(reader, "patch")
    assert (await reader.get(KIND.resource, "taken", "ns"))["spec"] == {"size": 2}
    review = webhook_review(KIND, _gizmo(size=2), client=client)  # type: ignore[arg-type]
    assert await _unique_size(review) == deny("size 2 is Gizmo taken's", field="spec.size")
