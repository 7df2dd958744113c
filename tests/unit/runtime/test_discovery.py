"""Which kinds the API server serves (runtime/discovery.py), asked once per group/version of
its discovery documents: a kind whose plural its group/version does not list, or whose
group/version the server does not know at all, is not served; the CRDs to install are named
``<plural>.<group>``, once each."""

from __future__ import annotations

import pytest

from appstack.runtime import errors
from appstack.runtime.discovery import crd_names, unserved
from appstack.runtime.resources import CONFIG_MAP, DEPLOYMENT, SECRET, STATEFUL_SET, Resource
from tests.support.scripted_transport import scripted_client

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
