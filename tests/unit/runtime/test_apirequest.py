"""The client without a server: requests built per verb, answers decoded, errors typed, and
the client's retry policy over a scripted transport (the real server: tests/e2e/test_client.py)."""

from __future__ import annotations

import orjson
import pytest

from appstack.runtime import apirequest, errors
from appstack.runtime.resources import CONFIG_MAP, DEPLOYMENT, NAMESPACE
from tests.support.scripted_transport import RecordingClock, cm, scripted_client

DEPLOY = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d", "namespace": "n"},
}


def test_each_verb_builds_its_method_path_query_and_body() -> None:
    get = apirequest.get(NAMESPACE, "kube-system")
    page = apirequest.list_page(CONFIG_MAP, label_selector="a=b", limit=3, continue_token="t")
    create = apirequest.create(DEPLOYMENT, DEPLOY)
    update = apirequest.update(DEPLOYMENT, DEPLOY)
    delete = apirequest.delete(CONFIG_MAP, "c", "n", propagation="Foreground", uid="u1")

    assert (get.method, get.path, get.body) == ("GET", "/api/v1/namespaces/kube-system", None)
    assert (page.path, page.params) == (
        "/api/v1/configmaps",
        {"limit": "3", "labelSelector": "a=b", "continue": "t"},
    )
    assert (create.method, create.path) == ("POST", "/apis/apps/v1/namespaces/n/deployments")
    assert (update.method, update.path) == ("PUT", "/apis/apps/v1/namespaces/n/deployments/d")
    assert orjson.loads(create.body or b"") == DEPLOY
    assert create.headers == {"Accept": "application/json", "Content-Type": "application/json"}
    assert get.headers == {"Accept": "application/json"}
    assert (delete.method, orjson.loads(delete.body or b"")) == (
        "DELETE",
        {"propagationPolicy": "Foreground", "preconditions": {"uid": "u1"}},
    )
    assert not get.is_write
    assert delete.is_write
    assert create.is_write
    # a review is POSTed but stores nothing: not fenced (a standby answers /metrics scrapes)
    from appstack.runtime.metricsauth import SUBJECT_ACCESS_REVIEW, TOKEN_REVIEW  # noqa: PLC0415

    for review in (TOKEN_REVIEW, SUBJECT_ACCESS_REVIEW):
        assert not apirequest.create(review, {"metadata": {}, "spec": {}}).is_write


def test_apply_and_patches_carry_their_content_type_and_field_manager() -> None:
    applied = apirequest.apply(DEPLOYMENT, DEPLOY, field_manager="me", subresource="status")
    gentle = apirequest.apply(DEPLOYMENT, DEPLOY, field_manager="me", force=False)
    patched = apirequest.patch(
        CONFIG_MAP, "c", [{"op": "remove"}], field_manager="me", namespace="n", patch_type="json"
    )
    status = apirequest.patch_status(CONFIG_MAP, "c", {"phase": "Ready"}, field_manager="me")

    assert applied.path == "/apis/apps/v1/namespaces/n/deployments/d/status"
    assert applied.params == {"fieldManager": "me", "force": "true"}
    assert applied.headers["Content-Type"] == "application/apply-patch+yaml"
    assert gentle.params == {"fieldManager": "me"}
    assert patched.headers["Content-Type"] == "application/json-patch+json"
    assert (status.method, status.path) == ("PATCH", "/api/v1/configmaps/c/status")
    assert status.headers["Content-Type"] == "application/merge-patch+json"
    assert orjson.loads(status.body or b"") == {"status": {"phase": "Ready"}}


def test_watch_lines_decode_into_events_and_error_events_into_typed_errors() -> None:
    line = orjson.dumps({"type": "ADDED", "object": cm("a", "1")})
    expired = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}

    assert apirequest.decode_watch_line(line) == {"type": "ADDED", "object": cm("a", "1")}
    assert apirequest.decode_watch_line(b"  \r") is None
    with pytest.raises(errors.Gone, match="too old"):
        apirequest.decode_watch_line(orjson.dumps({"type": "ERROR", "object": expired}))
    with pytest.raises(errors.ServerError):
        apirequest.decode_watch_line(b'{"type": "ERROR", "object": {"kind": "Status"}}')
    with pytest.raises(ValueError, match="object"):
        apirequest.decode_watch_line(b"[1, 2]")


def test_answers_map_to_typed_errors_with_their_details() -> None:
    invalid = {
        "kind": "Status",
        "code": 422,
        "reason": "Invalid",
        "message": "bad",
        "details": {"causes": [{"field": "metadata.name", "message": "no"}]},
    }
    exists = {"kind": "Status", "code": 409, "reason": "AlreadyExists", "message": "x"}

    assert [c.field for c in apirequest.error_for(422, orjson.dumps(invalid), {}).causes] == [
        "metadata.name"
    ]
    assert isinstance(apirequest.error_for(409, orjson.dumps(exists), {}), errors.AlreadyExists)
    proxy = apirequest.error_for(502, b"<html>bad gateway</html>", {})
    assert isinstance(proxy, errors.ServerError)
    assert "bad gateway" in proxy.message
    assert isinstance(apirequest.error_for(404, b"", {}), errors.NotFound)


def test_only_throttling_or_a_server_asking_for_it_is_retried_and_never_for_long() -> None:
    def delay(code: int, **headers: str) -> float | None:
        return apirequest.retry_delay(apirequest.error_for(code, b"", headers), cap=10.0)

    assert delay(429) == 1.0
    assert delay(429, **{"Retry-After": "3"}) == 3.0
    assert delay(429, **{"Retry-After": "600"}) == 10.0
    assert delay(500) is None
    assert delay(503, **{"Retry-After": "5"}) == 5.0
    assert delay(500, **{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.1  # past: soon
    assert delay(409, **{"Retry-After": "2"}) is None


async def test_the_client_retries_throttled_requests_on_its_clock_then_gives_up() -> None:
    clock = RecordingClock()
    client, transport = scripted_client(clock)
    transport.answer(429, {"kind": "Status", "code": 429}, {"Retry-After": "2"})
    transport.answer(200, cm("a", "1"))
    assert await client.get(CONFIG_MAP, "a", "ns") == cm("a", "1")
    assert clock.slept == [2.0]

    for _ in range(6):
        transport.answer(429, {"kind": "Status", "code": 429})
    with pytest.raises(errors.TooManyRequests):
        await client.get(CONFIG_MAP, "a", "ns")
    assert len(transport.sent) == 2 + 6  # five retries after the first attempt


async def test_the_client_follows_pages_counts_every_request_and_reports_missing_objects() -> None:
    client, transport = scripted_client()
    transport.page(["a", "b"], "5", token="t").page(["c"], "6")
    transport.answer(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
    transport.fail(errors.TransportError("refused"))

    items, resource_version = await client.list(CONFIG_MAP, "ns", page_size=2)
    deleted = await client.delete(CONFIG_MAP, "gone", "ns")
    with pytest.raises(errors.TransportError):
        await client.create(CONFIG_MAP, cm("x", "1"))

    assert [i["metadata"]["name"] for i in items] == ["a", "b", "c"]
    assert resource_version == "6"
    assert deleted is False
    text = client.metrics.exposition().decode()
    assert 'rest_client_requests_total{code="200",host="scripted:6443",method="GET"} 2.0' in text
    assert 'code="404",host="scripted:6443",method="DELETE"} 1.0' in text
    assert 'code="<error>",host="scripted:6443",method="POST"} 1.0' in text


async def test_a_watch_refused_at_once_raises_its_typed_error() -> None:
    client, transport = scripted_client()
    transport.answer(403, {"kind": "Status", "code": 403, "reason": "Forbidden"})
    with pytest.raises(errors.Forbidden):
        async for _ in client.watch(CONFIG_MAP, resource_version="1"):
            pass


def test_a_listed_item_gets_the_apiversion_and_kind_its_list_left_out() -> None:
    page = {
        "apiVersion": "apps/v1",
        "kind": "DeploymentList",
        "metadata": {"resourceVersion": "42", "continue": "next"},
        "items": [
            {"metadata": {"name": "a"}, "spec": {}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "b"}},
        ],
    }
    items, version, more = apirequest.decode_list_page(page)
    assert (version, more) == ("42", "next")
    assert [(i["apiVersion"], i["kind"], i["metadata"]["name"]) for i in items] == [
        ("apps/v1", "Deployment", "a"),
        ("apps/v1", "Deployment", "b"),
    ]
    # A list whose kind is not "<Kind>List" (a Table, say) leaves its items alone.
    table = {"apiVersion": "meta.k8s.io/v1", "kind": "Table", "items": [{"x": 1}]}
    odd, _, last = apirequest.decode_list_page(table)
    assert odd == [{"x": 1}]
    assert last is None


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (['299 - "v1alpha1 is deprecated"'], [(299, "-", "v1alpha1 is deprecated")]),
        (  # a quoted text's escapes: \" and \\ stand for " and \
            ['299 - "name \\"web\\" is taken, see C:\\\\x"'],
            [(299, "-", 'name "web" is taken, see C:\\x')],
        ),
        (  # several: in one value, comma-separated, and in several headers; a warn-date
            [
                '299 - "one", 299 - "two, with a comma" "Wed, 02 Dec 2026 22:00:00 GMT"',
                '199 agent:8443 "three"',
            ],
            [(299, "-", "one"), (299, "-", "two, with a comma"), (199, "agent:8443", "three")],
        ),
        (
            ['299 - "kept", garbage', '299 - "next header"'],
            [(299, "-", "kept"), (299, "-", "next header")],
        ),
        (["299 - unquoted", '29 - "short code"', '299 "no agent"', '299 - "unterminated'], []),
        (['299 - "a"x', "", "   ,  "], []),
    ],
)
def test_warning_headers_are_parsed_as_rfc_7234_says_and_malformed_ones_ignored(
    headers: list[str], expected: list[tuple[int, str, str]]
) -> None:
    assert [tuple(w) for w in apirequest.parse_warnings(headers)] == expected
