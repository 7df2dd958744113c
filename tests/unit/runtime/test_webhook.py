"""The webhook server (runtime/webhook.py): AdmissionReview parsing, verdicts as the API
server reads them, the JSONPatch diff (applied back by an RFC 6902 apply written here), and
the HTTPS server itself — routes, bounded bodies, timeouts, malformed reviews, metrics."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import ssl
from typing import Any

import aiohttp
import pytest

from appstack.runtime.certdata import load_cert_chain
from appstack.runtime.metrics import Metrics
from appstack.runtime.servingcert import self_signed
from appstack.runtime.webhook import (
    AdmissionRequest,
    Verdict,
    Webhook,
    WebhookServer,
    allow,
    deny,
    json_patch,
    review_response,
)


def _unpointer(pointer: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]


def apply_patch(doc: Any, patch: list[dict[str, Any]]) -> Any:
    """RFC 6902 add/remove/replace, as the API server applies them."""
    doc = copy.deepcopy(doc)
    for op in patch:
        parts = _unpointer(op["path"])
        if not parts:
            assert op["op"] == "replace"
            doc = copy.deepcopy(op["value"])
            continue
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last: Any = parts[-1]
        if isinstance(parent, list):
            last = len(parent) if last == "-" else int(last)
        if op["op"] == "remove":
            assert last in parent if isinstance(parent, dict) else last < len(parent)
            del parent[last]
        elif op["op"] == "add":
            if isinstance(parent, list):
                parent.insert(last, copy.deepcopy(op["value"]))
            else:
                parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "replace":
            if isinstance(parent, dict):
                assert last in parent  # replace needs the member to exist
            parent[last] = copy.deepcopy(op["value"])
        else:
            raise AssertionError(op)
    return doc


CASES = [
    ({}, {}),
    ({"a": 1}, {"a": 2}),
    ({"a": 1}, {"b": 1}),
    ({"a": {"b": {"c": 1}}}, {"a": {"b": {"c": 1, "d": [1, 2]}}}),
    ({"a": [1, 2, 3]}, {"a": [1, 5, 3]}),
    ({"a": [1, 2, 3]}, {"a": [1, 2]}),
    ({"a": [1]}, {"a": [1, {"x": None}]}),
    ({"a": [{"k": 1}, {"k": 2}]}, {"a": [{"k": 1}, {"k": 3, "j": 1}]}),
    ({"a/b": 1, "c~d": 2}, {"a/b": 3}),
    ({"a": 1}, {"a": True}),
    ({"a": 1}, {"a": 1.0}),
    ({"a": None}, {"a": {}}),
    ({"a": {}}, {"a": "text"}),
    ({"metadata": {"labels": {"x": "1"}}}, {"metadata": {"labels": {"x": "1", "y": "2"}}}),
    ([1, 2], [3]),
]


@pytest.mark.parametrize(("old", "new"), CASES)
def test_the_patch_turns_the_old_object_into_the_new_one(old: Any, new: Any) -> None:
    patch = json_patch(old, new)
    assert json.loads(json.dumps(apply_patch(old, patch))) == json.loads(json.dumps(new))
    assert (patch == []) == (json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True))


def test_the_patch_escapes_pointers_and_keeps_unchanged_members_out() -> None:
    patch = json_patch({"a/b": 1, "same": {"x": 1}}, {"a/b": 2, "same": {"x": 1}})
    assert patch == [{"op": "replace", "path": "/a~1b", "value": 2}]


def _review(**request: Any) -> dict[str, Any]:
    base = {"uid": "u1", "operation": "CREATE", "object": {"metadata": {"name": "w"}}}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {**base, **request},
    }


def test_a_review_is_read_into_a_request() -> None:
    request = AdmissionRequest.from_review(
        _review(
            operation="UPDATE",
            namespace="ns",
            oldObject={"metadata": {"name": "w"}},
            userInfo={"username": "alice"},
            dryRun=True,
        )
    )
    assert (request.operation, request.name, request.namespace) == ("UPDATE", "w", "ns")
    assert request.dry_run
    assert request.user_info["username"] == "alice"
    assert request.old_object == {"metadata": {"name": "w"}}


@pytest.mark.parametrize(
    ("review", "said"),
    [
        ([], "not a JSON object"),
        ({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}, "expected"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, "no request"),
        (_review(uid=""), "no uid"),
        (_review(operation="PATCH"), "unknown operation"),
        (_review(object=[1]), "not an object"),
    ],
)
def test_a_malformed_review_is_refused_saying_why(review: Any, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        AdmissionRequest.from_review(review)


def test_a_denial_names_its_field_with_code_422_and_a_plain_one_403() -> None:
    field = review_response("u", deny("must be odd", field="spec.replicas"))["response"]
    assert field["allowed"] is False
    assert field["status"]["code"] == 422
    assert field["status"]["reason"] == "Invalid"
    assert field["status"]["message"] == "spec.replicas: must be odd"
    assert field["status"]["details"]["causes"][0]["field"] == "spec.replicas"
    plain = review_response("u", deny("no"))["response"]["status"]
    assert plain == {"code": 403, "message": "no", "reason": "Forbidden"}


def test_an_allowed_answer_carries_warnings_and_a_patch_only_when_changed() -> None:
    obj = {"spec": {"a": 1}}
    same = review_response("u", allow("careful", object=obj), original=obj)["response"]
    assert same == {"uid": "u", "allowed": True, "warnings": ["careful"]}
    changed = review_response("u", allow(object={"spec": {"a": 2}}), original=obj)["response"]
    assert changed["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(changed["patch"]))
    assert apply_patch(obj, patch) == {"spec": {"a": 2}}


# --------------------------------------------------------------------------- the server
@pytest.fixture(scope="module")
def pems() -> tuple[bytes, bytes]:
    return self_signed(["127.0.0.1"])


def _contexts(pems: tuple[bytes, bytes]) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.minimum_version = ssl.TLSVersion.TLSv1_2
    load_cert_chain(server, *pems)
    client = ssl.create_default_context(cadata=pems[0].decode())
    return server, client


async def _slow(_request: AdmissionRequest) -> Verdict:
    await asyncio.sleep(5)
    return allow()


def _failing(_request: AdmissionRequest) -> Verdict:
    raise RuntimeError("bug")


def _mutate(request: AdmissionRequest) -> dict[str, Any]:
    assert request.object is not None
    request.object.setdefault("metadata", {}).setdefault("labels", {})["seen"] = "yes"
    return request.object


def _validate(request: AdmissionRequest) -> Verdict:
    spec = (request.object or {}).get("spec", {})
    if spec.get("size", 0) > 3:
        return deny("at most 3", field="spec.size")
    return allow(*(["dry run"] if request.dry_run else []))


async def test_the_server_answers_each_path_with_its_handler(pems: tuple[bytes, bytes]) -> None:
    server_tls, client_tls = _contexts(pems)
    metrics = Metrics()
    server = WebhookServer(
        [
            Webhook("/validate", _validate, name="v"),
            Webhook("/mutate", _mutate, mutating=True, name="m"),
            Webhook("/slow", _slow),
            Webhook("/failing", _failing),
        ],
        address="127.0.0.1:0",
        tls=server_tls,
        metrics=metrics,
        timeout=0.2,
        max_body=10_000,
    )
    assert not server.listening
    await server.start()
    try:
        assert server.listening
        base = f"https://127.0.0.1:{server.port}"
        async with aiohttp.ClientSession() as http:

            async def post(path: str, body: Any, raw: bytes | None = None) -> Any:
                data = raw if raw is not None else json.dumps(body).encode()
                headers = {"Content-Type": "application/json"}
                async with http.post(base + path, data=data, headers=headers, ssl=client_tls) as r:
                    text = await r.text()
                    return r.status, (json.loads(text) if r.status == 200 else text)

            status, review = await post("/validate", _review(object={"spec": {"size": 5}}))
            assert status == 200
            assert review["response"]["uid"] == "u1"
            assert review["response"]["status"]["message"] == "spec.size: at most 3"
            status, review = await post("/validate", _review(object={"spec": {}}, dryRun=True))
            assert review["response"] == {"uid": "u1", "allowed": True, "warnings": ["dry run"]}
            status, review = await post("/mutate", _review())
            patch = json.loads(base64.b64decode(review["response"]["patch"]))
            assert apply_patch({"metadata": {"name": "w"}}, patch)["metadata"]["labels"] == {
                "seen": "yes"
            }
            status, review = await post("/slow", _review())
            assert review["response"]["status"]["code"] == 500
            assert "within 0.2s" in review["response"]["status"]["message"]
            status, review = await post("/failing", _review())
            assert review["response"]["allowed"] is False
            assert "bug" not in review["response"]["status"]["message"]
            status, text = await post("/validate", None, raw=b"{not json")
            assert status == 400
            status, text = await post("/validate", None, raw=b'{"kind": "Pod"}')
            assert status == 400
            assert "expected an AdmissionReview" in text
            status, text = await post("/validate", None, raw=b"x" * 20_000)
            assert status == 413
            assert json.loads(text)["message"] == (
                "the review is larger than the webhook server's limit (10000 bytes)"
            )
            async with http.post(base + "/nowhere", data=b"{}", ssl=client_tls) as r:
                assert r.status == 404
        exposition = metrics.exposition().decode()
        assert 'controller_runtime_webhook_requests_total{code="200",webhook="v"} 2.0' in exposition
        assert 'controller_runtime_webhook_requests_total{code="400",webhook="v"} 2.0' in exposition
        assert 'controller_runtime_webhook_requests_total{code="413",webhook="v"} 1.0' in exposition
        assert 'controller_runtime_webhook_latency_seconds_count{webhook="m"} 1.0' in exposition
        assert 'controller_runtime_webhook_requests_in_flight{webhook="v"} 0.0' in exposition
    finally:
        await server.stop()
    assert not server.listening


def test_two_webhooks_on_one_path_are_refused() -> None:
    with pytest.raises(ValueError, match="share a path"):
        WebhookServer([Webhook("/a", _validate), Webhook("/a", _mutate)], address=":0", tls=None)
    with pytest.raises(ValueError, match="starts with"):
        Webhook("a", _validate)
