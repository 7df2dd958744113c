"""Which kinds the API server serves (runtime/discovery.py), asked once per group/version of
its discovery documents: a kind whose plural its group/version does not list, or whose
group/version the server does not know at all, is not served; the CRDs to install are named
``<plural>.<group>``, once each. A kind gone after start-up is waited for by watching its
CRD, that one object, until it serves the kind."""

from __future__ import annotations

from typing import Any

import pytest

from appstack.runtime import errors
from appstack.runtime.discovery import crd_names, crd_serves, unserved, wait_served
from appstack.runtime.resources import CONFIG_MAP, DEPLOYMENT, SECRET, STATEFUL_SET, Resource
from tests.support.scripted_transport import event, scripted_client

WIDGET = Resource("example.com", "v1", "Widget", "widgets")
GADGET = Resource("example.com", "v1", "Gadget", "gadgets")
OLD = Resource("example.com", "v2alpha1", "Widget", "widgets")


def _document(*plurals: str) -> dict[str, object]:
    return {"kind": "APIResourceList", "resources": [{"name": p} for p in plurals]}


async def test_a_kind_not_in_its_group_versions_document_is_not_served() -> None:
    client, transport = scripted_client()
    transport.answer(200, _document("configmaps", "secrets", "pods"))  # /api/v1
    transport.answer(200, _document("deployments"))  # /apis/apps/v1: no statefulsets
    transport.answer(200, _document("widgets", "widgets/status"))  # /apis/example.com/v1
    resources = [CONFIG_MAP, SECRET, DEPLOYMENT, STATEFUL_SET, WIDGET, GADGET]
    assert await unserved(client, resources) == [STATEFUL_SET, GADGET]
    # one document per group/version, the core group under /api
    paths = [request.path for request, _ in transport.sent]
    assert paths == ["/api/v1", "/apis/apps/v1", "/apis/example.com/v1"]
    assert all(request.method == "GET" for request, _ in transport.sent)


async def test_a_group_version_the_server_does_not_know_serves_none_of_its_kinds() -> None:
    client, transport = scripted_client()
    transport.answer(404, {"kind": "Status", "reason": "NotFound", "code": 404})
    transport.answer(200, {"kind": "APIResourceList"})  # a document without resources
    assert await unserved(client, [OLD, WIDGET]) == [OLD, WIDGET]
    assert [r.path for r, _ in transport.sent] == [
        "/apis/example.com/v2alpha1",
        "/apis/example.com/v1",
    ]


async def test_everything_served_and_nothing_asked_are_empty() -> None:
    client, transport = scripted_client()
    assert await unserved(client, []) == []
    assert transport.sent == []
    transport.answer(200, _document("widgets", "gadgets"))
    assert await unserved(client, [WIDGET, GADGET]) == []


async def test_other_errors_are_not_read_as_not_served() -> None:
    client, transport = scripted_client()
    transport.answer(403, {"kind": "Status", "reason": "Forbidden", "code": 403})
    with pytest.raises(errors.Forbidden):  # not "not served": the caller hears of it
        await unserved(client, [WIDGET])


def test_crd_names_are_sorted_and_named_once() -> None:
    assert crd_names([WIDGET, GADGET, OLD, WIDGET]) == [
        "gadgets.example.com",
        "widgets.example.com",
    ]
    assert crd_names([]) == []


def _crd(
    *, established: bool = True, served: bool = True, deleting: bool = False
) -> dict[str, Any]:
    meta: dict[str, object] = {"name": "widgets.example.com", "resourceVersion": "5"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {
            "versions": [{"name": "v2alpha1", "served": True}, {"name": "v1", "served": served}]
        },
        "status": {
            "conditions": [
                {"type": "NamesAccepted", "status": "True"},
                {"type": "Established", "status": "True" if established else "False"},
            ]
        },
    }


def test_a_crd_serves_a_kind_once_established_with_its_version_served_and_not_deleted() -> None:
    assert crd_serves(_crd(), WIDGET)
    assert crd_serves(_crd(), OLD)
    assert not crd_serves(_crd(established=False), WIDGET)
    assert not crd_serves(_crd(served=False), WIDGET)
    assert not crd_serves(_crd(deleting=True), WIDGET)
    assert not crd_serves(_crd(), Resource("example.com", "v3", "Widget", "widgets"))
    assert not crd_serves(None, WIDGET)
    assert not crd_serves({"metadata": {}}, WIDGET)


def _list(*items: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "CustomResourceDefinitionList",
        "metadata": {"resourceVersion": "7"},
        "items": list(items),
    }


async def test_waiting_watches_the_one_crd_until_it_serves_the_kind() -> None:
    client, transport = scripted_client()
    transport.answer(200, _list())  # no such CRD yet
    transport.stream(
        event("ADDED", _crd(established=False)),
        event("MODIFIED", _crd()),
        event("MODIFIED", _crd()),
    )
    assert await wait_served(client, WIDGET, recheck=60) is True
    (listed, _), (watched, _) = transport.sent
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert (listed.path, watched.path) == (path, path)
    assert listed.params["fieldSelector"] == "metadata.name=widgets.example.com"
    assert watched.params["fieldSelector"] == "metadata.name=widgets.example.com"
    assert (watched.params["resourceVersion"], watched.params["timeoutSeconds"]) == ("7", "60")


async def test_waiting_tells_nothing_when_the_crd_serves_the_kind_already_or_cannot_be_read() -> (
    None
):
    client, transport = scripted_client()
    transport.answer(200, _list(_crd()))  # served already: the LIST's 404 was a moment early
    transport.answer(403, {"kind": "Status", "reason": "Forbidden", "code": 403})
    transport.answer(200, _list()).stream()  # nothing happened until the watch's timeout
    transport.fail(errors.TransportError("connection refused", "scripted:6443"))
    for _ in range(4):
        assert await wait_served(client, WIDGET) is False
    assert transport.remaining == 0
