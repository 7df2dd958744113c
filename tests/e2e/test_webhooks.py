"""Admission webhooks served by the operator (issue #49), through the real API server: an
operator run in this process (``OperatorRunner``) declares a validating and a mutating
webhook of a kind of its own (a throw-away CRD) and serves them in developer mode (the API
server on this machine reaches ``https://127.0.0.1:<port>``; the operator applies its
configurations with its self-signed certificate as the CA bundle). An invalid object is
refused with the handler's field-level message; the mutating handler's change is stored; a
server-side dry run reaches the handler with ``dryRun``; a warning reaches kubectl and the
runtime's client; the configurations are gone once the operator stops. Then two replicas in
in-cluster mode share one certificate through a Secret and keep answering while it is
renewed (reached through a round-robin TCP proxy standing in for the Service: the API
server runs on this machine). Last, cert-manager mode: a mounted certificate served, the CA
bundle left to cert-manager's injector (played by the test). And what goes wrong: the
operator down (``failurePolicy`` Fail refuses, saying the webhook could not be called;
Ignore admits), a handler that raises or is too slow, a body over the server's limit —
each a clear admission error, the operator answering the next request.

The configurations are cluster-wide: they are named after this module's own project (a
uuid), match only its own kind, and only in namespaces labelled enabled for that project —
the test's namespace alone — so no other test running beside it is ever refused."""

from __future__ import annotations

import asyncio
import base64
import itertools
import ssl
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.runtime import (
    CONFIG_MAP,
    NAMESPACE,
    SECRET,
    ApiError,
    Client,
    NotFound,
    Resource,
    Result,
    allow,
    deny,
    self_signed,
)
from appstack.runtime.webhook import Verdict
from appstack.sdk import (
    CustomObject,
    KindReconciler,
    KubeModel,
    KubeObject,
    Mutator,
    OperatorIdentity,
    OperatorRunner,
    Problem,
    Registration,
    Validator,
    WebhookReview,
    crd,
    custom_kind,
)
from appstack.sdk.kit.webhooks import (
    MUTATING,
    VALIDATING,
    ClientConfig,
    WebhookServing,
    configurations,
)
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.tcpproxy import TcpProxy
from appstack_testbed.waiting import eventually

SUFFIX = uuid.uuid4().hex[:6]
GROUP = f"hooks{SUFFIX}.example.com"
IDENTITY = OperatorIdentity(project=f"hooks{SUFFIX}", domain=GROUP)
CRD = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
CONFIGURATIONS = {
    VALIDATING: f"{IDENTITY.project}-validating-webhooks",
    MUTATING: f"{IDENTITY.project}-mutating-webhooks",
}


class GadgetSpec(KubeModel):
    size: int = 1
    tier: str | None = None


class GadgetStatus(KubeModel):
    seen: bool | None = None


@custom_kind(group=GROUP, plural="gadgets")
class Gadget(CustomObject):
    spec: GadgetSpec
    status: GadgetStatus | None = None


GADGET = Gadget.KIND.resource
ASKED: list[tuple[str, bool]] = []  # (object name, dryRun) as the validator was asked


def check(review: WebhookReview) -> Verdict:
    assert isinstance(review.object, Gadget)
    ASKED.append((review.request.name, review.dry_run))
    size = review.object.spec.size
    if size > 3:
        return deny(f"{size} is too large: at most 3", field="spec.size")
    if size == 3:
        return allow("size 3 is the largest there is")
    return allow()


async def default(review: WebhookReview) -> dict[str, Any] | None:
    """The tier, when none is given: the namespace's ``gadget-defaults`` ConfigMap says
    which (read with the operator's client), else ``standard``."""
    obj = review.raw
    assert obj is not None
    assert review.client is not None
    if "tier" not in obj["spec"]:
        try:
            defaults = await review.client.get(
                CONFIG_MAP, "gadget-defaults", review.request.namespace
            )
        except NotFound:
            defaults = {}
        obj["spec"]["tier"] = (defaults.get("data") or {}).get("tier", "standard")
    obj["metadata"].setdefault("labels", {})["hooks.example.com/defaulted"] = "true"
    return obj


async def one_exclusive(review: WebhookReview) -> Verdict:
    """One Gadget of tier ``exclusive`` a namespace: another object decides, which no CEL
    rule of this one can see."""
    assert isinstance(review.object, Gadget)
    assert review.client is not None
    if review.object.spec.tier != "exclusive":
        return allow()
    for other in await review.client.list(GADGET, review.request.namespace):
        name = other["metadata"]["name"]
        if name != review.request.name and (other.get("spec") or {}).get("tier") == "exclusive":
            return deny(f"tier exclusive is Gadget {name}'s: one a namespace", field="spec.tier")
    return allow()


class GadgetReconciler(KindReconciler[GadgetSpec]):
    kind = Gadget.KIND

    def status(self, obj: KubeObject, problem: Problem | None) -> GadgetStatus:
        return GadgetStatus(seen=True)

    def invalid_status(self, obj: KubeObject, problem: Problem) -> GadgetStatus:
        return GadgetStatus(seen=False)

    async def apply(self, obj: KubeObject, spec: GadgetSpec) -> Result | None:
        return None


REGISTRATION = Registration(
    name="gadgets",
    reconciler=GadgetReconciler,
    webhooks=(Validator(check), Validator(one_exclusive, name="exclusive"), Mutator(default)),
)
#: the same check, the API server told to admit what it cannot have checked
IGNORED = Registration(
    name="gadgets",
    reconciler=GadgetReconciler,
    webhooks=(Validator(check, failure_policy="Ignore"),),
)


async def misbehave(review: WebhookReview) -> Verdict:
    """A handler with bugs: it raises on tier ``crash``, is too slow on tier ``slow``."""
    assert isinstance(review.object, Gadget)
    if review.object.spec.tier == "crash":
        raise RuntimeError("a bug in the handler")
    if review.object.spec.tier == "slow":
        await asyncio.sleep(5)
    return allow()


MISBEHAVING = Registration(
    name="gadgets",
    reconciler=GadgetReconciler,
    webhooks=(Validator(misbehave, timeout=2),),  # the operator answers within 1.5 s
)


def _gadget(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": Gadget.KIND.api_version,
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


async def _gone(client: Client, resource: Resource, name: str) -> bool:
    try:
        await client.get(resource, name)
    except NotFound:
        return True
    return False


async def _served(client: Client) -> bool:
    try:
        await client.list_page(GADGET, "default", limit=1)
    except ApiError:
        return False
    return True


@pytest.fixture
async def gadget_crd(kubeconfig: Path) -> Any:
    async with await Client.connect(str(kubeconfig), field_manager="hooks-test") as admin:
        await admin.create(CRD, crd(Gadget.KIND))
        try:
            await eventually(lambda: _served(admin), timeout=60, what="the Gadget CRD served")
            yield admin
        finally:
            for resource, name in CONFIGURATIONS.items():  # whatever happened to the operator
                await admin.delete(resource, name)
            await admin.delete(CRD, Gadget.KIND.crd_name)
            # gone before the next test of the module creates it again
            await eventually(
                lambda: _gone(admin, CRD, Gadget.KIND.crd_name), timeout=60, what="CRD deleted"
            )


async def test_the_operators_webhooks_refuse_default_and_warn_through_the_api_server(
    kubeconfig: Path, namespace: str, gadget_crd: Client, kube_cluster: ClusterHandle
) -> None:
    admin = gadget_crd
    local = kube_cluster.require_local()
    enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
    await admin.patch(NAMESPACE, namespace, enable)
    async with OperatorRunner([REGISTRATION], IDENTITY, kubeconfig=str(kubeconfig)) as running:
        # ready: the configurations applied, pointing at this operator's server, its CA
        validating = await admin.get(VALIDATING, CONFIGURATIONS[VALIDATING])
        # only this test's namespace is ever sent to it
        selector = validating["webhooks"][0]["namespaceSelector"]
        assert selector["matchLabels"] == {IDENTITY.enabled_label: "true"}
        client_config = validating["webhooks"][0]["clientConfig"]
        assert client_config["url"].startswith(f"https://127.0.0.1:{running.webhook_port}/")
        assert running.webhook_ca is not None
        assert client_config["caBundle"] == base64.b64encode(running.webhook_ca).decode()

        # refused, the field named, with the handler's message
        with pytest.raises(ApiError) as refused:
            await admin.create(GADGET, _gadget("big", namespace, size=5))
        assert refused.value.code == 422
        assert "denied the request: spec.size: 5 is too large: at most 3" in str(refused.value)
        assert ("big", False) in ASKED

        # defaulted by the mutating webhook, as stored
        await admin.create(GADGET, _gadget("plain", namespace, size=1))
        stored = await admin.get(GADGET, "plain", namespace)
        assert stored["spec"]["tier"] == "standard"
        assert stored["metadata"]["labels"]["hooks.example.com/defaulted"] == "true"

        # a default computed from another object: the namespace's defaults ConfigMap
        defaults = {"metadata": {"name": "gadget-defaults", "namespace": namespace}}
        await admin.create(CONFIG_MAP, {**defaults, "data": {"tier": "gold"}})
        await admin.create(GADGET, _gadget("golden", namespace, size=1))
        assert (await admin.get(GADGET, "golden", namespace))["spec"]["tier"] == "gold"

        # refused for what another object holds, the field named
        await admin.create(GADGET, _gadget("first", namespace, tier="exclusive"))
        with pytest.raises(ApiError) as taken:
            await admin.create(GADGET, _gadget("second", namespace, tier="exclusive"))
        assert taken.value.code == 422
        said = "denied the request: spec.tier: tier exclusive is Gadget first's: one a namespace"
        assert said in str(taken.value)

        # a server-side dry run reaches the handler with dryRun, and stores nothing
        manifest = yaml.safe_dump(_gadget("dry", namespace, size=2))
        await asyncio.to_thread(
            local.kubectl, "create", "--dry-run=server", "-f", "-", stdin=manifest
        )
        assert ("dry", True) in ASKED
        with pytest.raises(NotFound):
            await admin.get(GADGET, "dry", namespace)

        # a warning reaches the client
        manifest = yaml.safe_dump(_gadget("largest", namespace, size=3))
        created = await asyncio.to_thread(local.kubectl, "create", "-f", "-", stdin=manifest)
        assert "Warning: size 3 is the largest there is" in created.stderr
        with admin.warnings() as said:  # and the runtime's client
            await admin.create(GADGET, _gadget("largest-too", namespace, size=3))
        assert said == ["size 3 is the largest there is"]

        exposition = running.manager.metrics.exposition().decode()
        assert "controller_runtime_webhook_requests_total{" in exposition
    # developer mode: the operator deletes what it applied when it stops
    for resource, name in CONFIGURATIONS.items():
        assert await _gone(admin, resource, name)


async def test_a_mounted_certificate_is_served_and_its_ca_bundle_left_to_cert_manager(
    kubeconfig: Path, namespace: str, gadget_crd: Client, tmp_path: Path
) -> None:
    """cert-manager mode (``--webhook-cert-dir``, what config/certmanager sets) against the
    real API server, cert-manager's part played by the test (it cannot be installed here):
    the certificate its Certificate would issue into the Secret, as the kubelet mounts it;
    the configuration installed with the CA injector's annotation and the ``caBundle`` the
    injector would write. The operator serves that certificate, writes no ``caBundle`` of its
    own, and its webhook answers the API server."""
    admin = gadget_crd
    enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
    await admin.patch(NAMESPACE, namespace, enable)
    cert, key = self_signed(["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    async with OperatorRunner(
        [REGISTRATION],
        IDENTITY,
        kubeconfig=str(kubeconfig),
        webhook_host=None,
        webhook_cert_dir=str(tmp_path),
    ) as running:
        assert (running.webhook_url, running.webhook_ca) == (None, None)  # cert-manager's
        port = running.webhook_port
        assert port is not None
        assert await _served_cert(port) == ssl.PEM_cert_to_DER_cert(cert.decode())
        injected = ClientConfig(url=f"https://127.0.0.1:{port}", ca_bundle=cert)
        selector = {"matchLabels": {IDENTITY.enabled_label: "true"}}
        (installed,) = configurations(
            REGISTRATION.declared_webhooks[:1],  # the validator
            IDENTITY,
            injected,
            selector=selector,
            inject_ca_from=f"{namespace}/serving-cert",
        )
        await admin.create(VALIDATING, installed)

        async def refused() -> str | None:
            try:
                await admin.create(GADGET, _gadget("big", namespace, size=5))
            except ApiError as error:
                return str(error)
            await admin.delete(GADGET, "big", namespace)  # before the API server saw it
            return None

        said = await eventually(refused, timeout=30, what="the mounted certificate's webhook")
        assert "denied the request: spec.size: 5 is too large: at most 3" in said
        await admin.create(GADGET, _gadget("small", namespace, size=1))
        stored = await admin.get(VALIDATING, CONFIGURATIONS[VALIDATING])
        bundle = stored["webhooks"][0]["clientConfig"]["caBundle"]
        assert base64.b64decode(bundle) == cert  # the injector's, untouched


class _Replica(WebhookServing):
    """An in-cluster replica (its certificate shared through the Secret, its CA bundle
    written into the installed configuration) that the API server reaches at 127.0.0.1,
    through the proxy below, instead of through a Service: its certificate names that."""

    @property
    def names(self) -> list[str]:
        return ["127.0.0.1"]


class _RoundRobin(TcpProxy):
    """The Service's part: each new connection to the next replica."""

    def __init__(self) -> None:
        super().__init__(None)
        self.ports: list[int] = []
        self.turn = itertools.count()

    async def _target(self, reader: Any, writer: Any) -> tuple[str, int]:
        return "127.0.0.1", self.ports[next(self.turn) % len(self.ports)]


async def _served_cert(port: int) -> bytes:
    """The certificate (DER) the server on ``port`` presents."""
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=insecure)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
    return bytes(der)


async def test_two_replicas_share_one_certificate_and_keep_answering_through_its_rotation(
    kubeconfig: Path, namespace: str, gadget_crd: Client
) -> None:
    """Two replicas in in-cluster mode against the real API server: the first creates the
    Secret, the second serves the same certificate; a denied and an allowed request; the
    certificate (valid 30 s) renewed by one replica at two thirds of its life and served
    by both, every admission request meanwhile answered by the webhook (none refused for
    TLS reasons)."""
    admin = gadget_crd
    enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
    await admin.patch(NAMESPACE, namespace, enable)
    proxy = _RoundRobin()
    await proxy.start()
    try:
        url = ClientConfig(url=f"https://127.0.0.1:{proxy.port}")
        selector = {"matchLabels": {IDENTITY.enabled_label: "true"}}
        declared = REGISTRATION.declared_webhooks[:1]  # the validator
        (installed,) = configurations(declared, IDENTITY, url, selector=selector)
        await admin.create(VALIDATING, installed)  # as the install has it: no caBundle
        replicas = [
            _Replica(
                declared,
                IDENTITY,
                address="127.0.0.1:0",
                service=f"{IDENTITY.project}-webhook-service",
                namespace=namespace,
                cert_validity=30,
                retry=0.5,
            )
            for _ in range(2)
        ]
        async with await Client.connect(str(kubeconfig), field_manager="hooks-replicas") as own:
            await asyncio.gather(*(r.start(own) for r in replicas))
            try:
                await _rotation(admin, namespace, replicas, proxy)
            finally:
                for replica in replicas:
                    await replica.stop(own)
    finally:
        await proxy.stop()


async def _rotation(
    admin: Client, namespace: str, replicas: Sequence[WebhookServing], proxy: _RoundRobin
) -> None:
    proxy.ports = [r.server.port for r in replicas if r.server.port is not None]
    await eventually(lambda: all(r.ready() for r in replicas), timeout=30, what="both ready")
    secret = await admin.get(SECRET, f"{IDENTITY.project}-webhook-server-cert", namespace)
    assert secret["type"] == "kubernetes.io/tls"
    first, second = replicas
    assert first.cert is not None
    assert first.cert == second.cert
    old = [await _served_cert(port) for port in proxy.ports]
    assert old[0] == old[1]

    # a denied and an allowed request, whichever replica answers
    with pytest.raises(ApiError) as refused:
        await admin.create(GADGET, _gadget("big", namespace, size=5))
    assert "denied the request: spec.size: 5 is too large: at most 3" in str(refused.value)
    await admin.create(GADGET, _gadget("small", namespace, size=1))

    # requests flow while the certificate is renewed (about 20 s after it was made)
    answered, failures = 0, []
    started = time.monotonic()

    async def rotated() -> bool:
        return all([await _served_cert(port) != old[0] for port in proxy.ports])

    async def flow() -> bool:
        nonlocal answered
        for name, size in ((f"r{answered}", 1), (f"big{answered}", 9)):
            try:
                await admin.create(GADGET, _gadget(name, namespace, size=size))
                if size > 3:
                    failures.append(f"{name}: admitted")
            except ApiError as error:
                if size <= 3 or "too large" not in str(error):
                    failures.append(f"{name}: {error}")
        answered += 1
        return await rotated()

    await eventually(flow, timeout=45, what="both replicas serving the renewed certificate")
    await flow()  # and once more after
    assert not failures, failures
    new = [await _served_cert(port) for port in proxy.ports]
    assert new[0] == new[1] != old[0]
    bundle = (await admin.get(VALIDATING, CONFIGURATIONS[VALIDATING]))["webhooks"][0]
    assert base64.b64decode(bundle["clientConfig"]["caBundle"]).count(b"BEGIN CERTIFICATE") == 2
    print(f"rotation after {time.monotonic() - started:.1f}s, {answered} request pairs answered")


async def _refused(admin: Client, namespace: str, names: Any, size: int = 1) -> str | None:
    """Create a gadget (a new name each time): the refusal's message, or None (created)."""
    try:
        await admin.create(GADGET, _gadget(next(names), namespace, size=size))
    except ApiError as error:
        return str(error)
    return None


async def test_with_the_operator_down_fail_refuses_saying_so_and_ignore_admits(
    kubeconfig: Path, namespace: str, gadget_crd: Client
) -> None:
    """The operator stopped, its configuration left as it was (an in-cluster operator's
    stays installed; developer mode deletes its own on stop, so the test puts it back):
    under ``failurePolicy: Fail`` every request of the kind is refused, the message saying
    the webhook could not be called; under ``Ignore`` the same object is admitted."""
    admin = gadget_crd
    enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
    await admin.patch(NAMESPACE, namespace, enable)
    async with OperatorRunner([REGISTRATION], IDENTITY, kubeconfig=str(kubeconfig)) as running:
        client = ClientConfig(url=running.webhook_url, ca_bundle=running.webhook_ca)
        with pytest.raises(ApiError, match="too large"):  # up, it answers
            await admin.create(GADGET, _gadget("big", namespace, size=5))
    assert await _gone(admin, VALIDATING, CONFIGURATIONS[VALIDATING])
    selector = {"matchLabels": {IDENTITY.enabled_label: "true"}}
    names = (f"g{i}" for i in itertools.count())

    (failing,) = configurations(
        REGISTRATION.declared_webhooks[:1], IDENTITY, client, selector=selector
    )
    assert failing["webhooks"][0]["failurePolicy"] == "Fail"
    await admin.create(VALIDATING, failing)
    said = await eventually(
        lambda: _refused(admin, namespace, names), timeout=30, what="refused, the operator down"
    )
    assert "Internal error occurred: failed calling webhook" in said, said
    assert f'"validate.gadgets.{GROUP}"' in said, said
    assert "connection refused" in said, said
    print(f"operator down, Fail: {said}")

    (ignoring,) = configurations(IGNORED.declared_webhooks, IDENTITY, client, selector=selector)
    assert ignoring["webhooks"][0]["failurePolicy"] == "Ignore"
    await admin.apply(VALIDATING, ignoring)

    async def admitted() -> bool:
        return await _refused(admin, namespace, names) is None

    await eventually(admitted, timeout=30, what="admitted under Ignore, the operator down")
    # unchecked: what the webhook would have refused is admitted too
    assert await _refused(admin, namespace, names, size=5) is None


async def test_a_handler_that_raises_or_is_too_slow_and_a_body_too_large_are_clear_refusals(
    kubeconfig: Path, namespace: str, gadget_crd: Client
) -> None:
    """What the user sees when the handler goes wrong: an exception is a refusal that says
    the webhook failed (the traceback in the operator's log, not in the answer), a handler
    slower than the webhook's ``timeoutSeconds`` (2) is refused by the operator itself
    saying so (at 1.5 s, before the API server gives up), a review over the server's body
    limit is refused (413); the operator keeps answering after each."""
    admin = gadget_crd
    enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
    await admin.patch(NAMESPACE, namespace, enable)
    async with OperatorRunner([MISBEHAVING], IDENTITY, kubeconfig=str(kubeconfig)) as running:
        hook = f'admission webhook "validate.gadgets.{GROUP}" denied the request'

        # the API server's first call opens its connection to the webhook (TLS, on a
        # loaded machine a second or more of the 2 s): an allowed review first, until one
        # is answered, so the timings below measure the handler and not the handshake
        async def warm() -> bool:
            try:
                await admin.create(GADGET, _gadget("warm", namespace, size=1))
            except ApiError as error:
                if error.status.code != 409:  # created by an attempt timed out after it
                    raise
            return True

        await eventually(
            warm,
            timeout=30,
            interval=0.5,
            retry_on=(ApiError,),
            what="a first review answered",
        )
        with pytest.raises(ApiError) as crashed:
            await admin.create(GADGET, {**_gadget("crash", namespace), "spec": {"tier": "crash"}})
        said = str(crashed.value)
        assert f"{hook}: the webhook failed to decide (see the operator's log)" in said, said
        assert "a bug" not in said
        assert "Traceback" not in said
        await admin.create(GADGET, _gadget("after-crash", namespace, size=1))  # still serving

        started = time.monotonic()
        with pytest.raises(ApiError) as slow:
            await admin.create(GADGET, {**_gadget("slow", namespace), "spec": {"tier": "slow"}})
        assert f"{hook}: the webhook did not answer within 1.5s" in str(slow.value), slow.value
        assert time.monotonic() - started < 2.5
        print(f"too slow: {slow.value}")
        await admin.create(GADGET, _gadget("after-slow", namespace, size=1))

        serving = running.webhooks
        assert serving is not None
        serving.server.max_body = 32 * 1024  # the API server's 3 MiB cannot be reached
        large = _gadget("large", namespace, size=1)
        large["metadata"]["annotations"] = {"example.com/blob": "x" * 64 * 1024}
        with pytest.raises(ApiError) as too_large:
            await admin.create(GADGET, large)
        said = str(too_large.value)
        assert "failed calling webhook" in said, said
        assert "the review is larger than the webhook server's limit (32768 bytes)" in said
        print(f"body over the limit: {said}")
        await admin.create(GADGET, _gadget("after-large", namespace, size=1))
        exposition = running.manager.metrics.exposition().decode()
        assert 'controller_runtime_webhook_requests_total{code="413",' in exposition
