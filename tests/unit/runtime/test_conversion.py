"""CRD conversion webhooks (runtime/conversion.py): a ConversionReview read and answered
(review in, review out), a converter's refusal, failure and timeout as the client sees
them, and the webhook server routing ``/convert`` beside admission webhooks, bounded and
counted alike."""

from __future__ import annotations

import asyncio
import json
import ssl
from typing import Any

import aiohttp
import pytest

from appstack.runtime.certdata import load_cert_chain
from appstack.runtime.conversion import (
    Conversion,
    ConversionError,
    convert,
    review_request,
    review_response,
)
from appstack.runtime.metrics import Metrics
from appstack.runtime.servingcert import self_signed
from appstack.runtime.webhook import Webhook, WebhookServer, allow

V1, V2 = "ex.example.com/v1", "ex.example.com/v2"


def _object(name: str, version: str = V1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": version,
        "kind": "Thing",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }


def _review(*objects: dict[str, Any], desired: str = V2) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u1", "desiredAPIVersion": desired, "objects": list(objects)},
    }


def _rename(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    if obj["spec"].get("size", 0) < 0:
        raise ConversionError("size is negative")
    if obj["spec"].get("size") == 13:
        raise RuntimeError("a bug with a secret in it")
    return {**obj, "apiVersion": desired, "spec": {"replicas": obj["spec"].get("size")}}


async def _slow(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    await asyncio.sleep(5)
    return obj


RENAME = Conversion("/convert", _rename, name="convert")


def test_a_review_is_read_into_a_request() -> None:
    asked = review_request(_review(_object("a", size=1)))
    assert asked.uid == "u1"
    assert asked.desired_api_version == V2
    assert asked.objects == (_object("a", size=1),)


@pytest.mark.parametrize(
    ("review", "said"),
    [
        ([], "not a JSON object"),
        ({"kind": "AdmissionReview"}, "expected a ConversionReview"),
        ({**_review(), "request": None}, "has no request"),
        ({**_review(), "request": {"desiredAPIVersion": V2}}, "has no uid"),
        ({**_review(), "request": {"uid": "u", "desiredAPIVersion": "v2"}}, "not group/version"),
        (
            {**_review(), "request": {"uid": "u", "desiredAPIVersion": V2, "objects": [1]}},
            "not a list of objects",
        ),
    ],
)
def test_a_malformed_review_is_refused_saying_why(review: Any, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        review_request(review)


async def test_every_object_is_converted_in_order() -> None:
    asked = review_request(_review(_object("a", size=1), _object("b", V2, replicas=2)))
    answer = await convert(RENAME, asked, timeout=1)
    assert answer["kind"] == "ConversionReview"
    response = answer["response"]
    assert response["uid"] == "u1"
    assert response["result"] == {"status": "Success"}
    assert [o["spec"] for o in response["convertedObjects"]] == [{"replicas": 1}, {"replicas": 2}]
    assert {o["apiVersion"] for o in response["convertedObjects"]} == {V2}


async def test_one_refusal_fails_the_review_with_its_message() -> None:
    asked = review_request(_review(_object("a", size=1), _object("b", size=-1)))
    response = (await convert(RENAME, asked, timeout=1))["response"]
    assert response["result"] == {"status": "Failure", "message": "Thing ns/b: size is negative"}
    assert response["convertedObjects"] == []


async def test_a_failing_converter_says_so_without_its_internals() -> None:
    asked = review_request(_review(_object("a", size=13)))
    result = (await convert(RENAME, asked, timeout=1))["response"]["result"]
    assert result["status"] == "Failure"
    assert "conversion to ex.example.com/v2 failed" in result["message"]
    assert "secret" not in result["message"]


async def test_a_slow_converter_is_cut_off() -> None:
    asked = review_request(_review(_object("a", size=1)))
    result = (await convert(Conversion("/c", _slow), asked, timeout=0.1))["response"]["result"]
    assert result == {"status": "Failure", "message": "Thing ns/a: not converted within 0.1s"}


def test_a_failure_carries_no_objects() -> None:
    assert review_response("u", None)["response"]["result"]["message"] == "conversion failed"


def test_a_conversion_path_starts_with_a_slash() -> None:
    with pytest.raises(ValueError, match="starts with '/'"):
        Conversion("convert", _rename)


def test_a_conversion_cannot_share_an_admission_webhooks_path() -> None:
    with pytest.raises(ValueError, match="share a path"):
        WebhookServer(
            [Webhook("/convert", lambda _r: allow())], address=":0", tls=None, conversions=[RENAME]
        )


async def test_the_server_routes_convert_beside_admission_webhooks() -> None:
    cert, key = self_signed(["127.0.0.1"])
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    load_cert_chain(server_tls, cert, key)
    client_tls = ssl.create_default_context(cadata=cert.decode())
    metrics = Metrics()
    server = WebhookServer(
        [Webhook("/validate", lambda _r: allow(), name="v")],
        address="127.0.0.1:0",
        tls=server_tls,
        metrics=metrics,
        max_body=10_000,
        conversions=[RENAME],
    )
    await server.start()
    try:
        base = f"https://127.0.0.1:{server.port}"
        headers = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession() as http:

            async def post(body: bytes) -> tuple[int, str]:
                async with http.post(
                    base + "/convert", data=body, headers=headers, ssl=client_tls
                ) as r:
                    return r.status, await r.text()

            status, text = await post(json.dumps(_review(_object("a", size=3))).encode())
            assert status == 200
            assert json.loads(text)["response"]["convertedObjects"][0]["spec"] == {"replicas": 3}
            status, text = await post(b'{"kind": "AdmissionReview"}')
            assert status == 400
            assert "expected a ConversionReview" in text
            status, _ = await post(b"x" * 20_000)
            assert status == 413
        exposition = metrics.exposition().decode()
        assert 'requests_total{code="200",webhook="convert"} 1.0' in exposition
        assert 'requests_total{code="400",webhook="convert"} 1.0' in exposition
        assert 'latency_seconds_count{webhook="convert"} 3.0' in exposition
    finally:
        await server.stop()
