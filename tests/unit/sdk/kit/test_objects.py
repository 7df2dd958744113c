"""Any kind as the primary (sdk/kit/objects.py, issue #48): an ObjectReconciler's
registration, the RBAC derived from its declaration, what the cache keeps of its primary
(the API server's label selector), the start-up wait for a CRD someone else installs, and
its reconcile — finalizer, the object that left the selection, namespaces not enabled —
against a scripted API server. The Secret-copier of docs/any-kind.md runs on the local
cluster in tests/e2e/test_tutorial.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
import structlog

from appstack.runtime import (
    CONFIG_MAP,
    NAMESPACES,
    SECRET,
    SERVICE,
    Cache,
    Client,
    Request,
    Resource,
    Result,
    labels_changed,
)
from appstack.sdk import (
    ObjectReconciler,
    OperatorIdentity,
    Registration,
    cache_policy,
    object_rules,
)
from appstack.sdk import operator as assembly
from tests.support.scripted_transport import ScriptedTransport

IDENTITY = OperatorIdentity(project="copier", domain="copier.example.com")
CERTIFICATE = Resource("cert-manager.io", "v1", "Certificate", "certificates")


class Copier(ObjectReconciler):
    primary = SECRET
    selector = "copier.example.com/replicate=true"
    writes = (SECRET,)
    finalizer = "copier.example.com/copies"
    filter = labels_changed()

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.applied: list[str] = []
        self.cleaned: list[str] = []

    def every_source(self, _namespace: dict[str, Any]) -> list[Request]:
        return [Request("ns", "from-the-running-reconciler")]

    watches = ((NAMESPACES, every_source),)

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        self.applied.append(obj["metadata"]["name"])
        return None

    async def cleanup(self, obj: dict[str, Any]) -> Result | None:
        self.cleaned.append(obj["metadata"]["name"])
        return None


class Labeller(ObjectReconciler):
    primary = SERVICE
    owns = (CONFIG_MAP,)

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        return None


class Certificates(ObjectReconciler):
    primary = CERTIFICATE

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        return None


COPIER = Registration(name="copier", reconciler=Copier)


def test_a_registration_of_any_kind_names_its_primary_and_not_a_kind_of_ours() -> None:
    assert COPIER.primary == SECRET
    assert not COPIER.custom
    with pytest.raises(TypeError, match="reconciles Secret objects, not a kind"):
        _ = COPIER.kind


def test_its_rules_are_what_its_declaration_uses() -> None:
    assert COPIER.rules == object_rules(Copier)
    assert COPIER.rules == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "verbs": ["get", "list", "watch", "patch", "create", "delete"],
        },
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
    ]
    owning = Registration(name="labeller", reconciler=Labeller).rules
    assert owning == [
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["services/finalizers"], "verbs": ["update"]},
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": ["get", "list", "watch", "create", "patch", "delete"],
        },
    ]


def test_the_api_server_chooses_the_primarys_objects() -> None:
    table = cache_policy([COPIER], IDENTITY)
    secrets = table[SECRET]
    assert secrets.label_selector == "copier.example.com/replicate=true"
    assert secrets.namespaces == "copier.example.com/enabled=true"  # as any primary
    other = Registration(name="owner", reconciler=Labeller)
    assert cache_policy([other], IDENTITY)[SERVICE].label_selector is None


def test_two_controllers_choosing_a_primary_differently_fail_at_start_naming_both() -> None:
    class Other(Copier):
        selector = "other=true"

    with pytest.raises(ValueError, match="copier and other cache"):
        cache_policy([COPIER, Registration(name="other", reconciler=Other)], IDENTITY)


def _discovery(*plurals: str) -> dict[str, Any]:
    return {"kind": "APIResourceList", "resources": [{"name": p} for p in plurals]}


async def test_the_operator_waits_for_a_crd_someone_else_installs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(assembly.asyncio, "sleep", sleep)
    transport = ScriptedTransport()
    transport.answer(404, b"404 page not found")  # cert-manager.io/v1 not there yet
    transport.answer(200, _discovery("issuers"))  # the group, not the kind
    transport.answer(200, _discovery("certificates", "issuers"))
    foreign = Registration(name="certificates", reconciler=Certificates)
    with structlog.testing.capture_logs() as logs:
        await assembly.require_crds(Client(transport), [foreign], retry=(1.0, 3.0))
    assert waits == [1.0, 2.0]
    waiting = [log for log in logs if log["event"].startswith("waiting for kinds")]
    assert [w["crds"] for w in waiting] == [["certificates.cert-manager.io"]] * 2


class _Recorder:
    async def event(self, *args: Any, **kwargs: Any) -> None:
        return None


def _secret(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "ns", "uid": "u1", "resourceVersion": "7", **meta},
    }


def _copier(transport: ScriptedTransport, cached: dict[str, Any] | None) -> Copier:
    client = Client(transport)
    cache = Cache(client)
    reconciler = Copier(client, cache, _Recorder())  # type: ignore[arg-type]
    if cached is not None:
        cache.get = lambda resource, key: cached  # type: ignore[method-assign]
    else:
        cache.get = lambda resource, key: None  # type: ignore[method-assign]
    return reconciler


async def test_a_source_gets_the_finalizer_then_apply() -> None:
    transport = ScriptedTransport()
    transport.answer(200, _secret(finalizers=["copier.example.com/copies"]))
    copier = _copier(transport, _secret())
    await copier.reconcile(Request("ns", "db"))
    assert copier.applied == ["db"]
    (patch,) = [request for request, _ in transport.sent]
    assert patch.method == "PATCH"
    assert patch.body is not None
    assert json.loads(patch.body)["metadata"]["finalizers"] == ["copier.example.com/copies"]


async def test_a_source_that_left_the_selection_is_cleaned_up_and_let_go() -> None:
    held = _secret(finalizers=["copier.example.com/copies"])  # its label removed
    transport = ScriptedTransport().answer(200, held).answer(200, _secret())
    copier = _copier(transport, None)  # not in the cache: the selector dropped it
    await copier.reconcile(Request("ns", "db"))
    assert copier.cleaned == ["db"]
    get, patch = [request for request, _ in transport.sent]
    assert get.method == "GET"
    assert patch.method == "PATCH"
    assert patch.body is not None
    assert json.loads(patch.body)["metadata"]["finalizers"] == []


async def test_a_source_gone_for_good_needs_nothing() -> None:
    transport = ScriptedTransport().answer(404, {"kind": "Status", "reason": "NotFound"})
    copier = _copier(transport, None)
    assert await copier.reconcile(Request("ns", "db")) is None
    assert copier.cleaned == []


def test_a_watch_mapper_that_is_a_method_reads_the_running_reconciler() -> None:
    from appstack.sdk.kit.registration import _bound  # noqa: PLC0415

    copier = _copier(ScriptedTransport(), None)
    mapper = _bound(Copier.every_source, copier)
    assert mapper({}) == [Request("ns", "from-the-running-reconciler")]
    plain = _bound(print, copier)  # type: ignore[arg-type]
    assert plain is print
