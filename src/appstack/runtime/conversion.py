"""CRD conversion webhooks (controller-runtime's ``/convert``): the API server's
``ConversionReview`` (``apiextensions.k8s.io/v1``) answered in Python, served by the same
HTTPS server as the admission webhooks (:class:`~appstack.runtime.webhook.WebhookServer`,
which routes a :class:`Conversion` beside its :class:`~appstack.runtime.webhook.Webhook`
objects, with the same body limit, timeout and metrics).

A :class:`Conversion` is a path and a converter: ``convert(obj, desired_api_version)``
returns the object at the desired version (a dict), or raises — a :class:`ConversionError`
(its message shown to the client as it is) or anything else (logged with its traceback,
the client told only that conversion failed). One failing object fails the whole review,
as the API server requires. Pure request/response functions (:func:`review_request`,
:func:`review_response`) are what the server and the unit tests use; an SDK makes the
converter from a kind's typed versions.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

log = structlog.get_logger(__name__)

API_VERSION = "apiextensions.k8s.io/v1"

#: What converts one object: ``(object, desired apiVersion) -> object``, maybe a coroutine.
Converter = Callable[[dict[str, Any], str], dict[str, Any] | Awaitable[dict[str, Any]]]


class ConversionError(Exception):
    """A conversion refused on purpose: its message is what the client is told."""


@dataclass(frozen=True)
class Conversion:
    """One conversion webhook: the ``path`` the API server posts to (``/convert``), its
    ``converter``, and its ``name`` (the metrics' ``webhook`` label; default: the path)."""

    path: str
    converter: Converter
    name: str = ""

    def __post_init__(self) -> None:
        if not self.path.startswith("/"):
            raise ValueError(f"a conversion webhook path starts with '/': {self.path!r}")

    @property
    def label(self) -> str:
        """Its metrics' ``webhook`` label: its name, else its path."""
        return self.name or self.path


@dataclass(frozen=True)
class ConversionRequest:
    """What the API server asks: convert ``objects`` to ``desired_api_version``."""

    uid: str
    desired_api_version: str
    objects: tuple[dict[str, Any], ...]


def review_envelope(review: Any, api_version: str, kind: str) -> tuple[dict[str, Any], str]:
    """The request of a review the API server sends a webhook (a ``ConversionReview``
    here, an ``AdmissionReview`` in :mod:`.webhook`) and its uid; ValueError, saying what
    is wrong, when the body is not a ``kind`` of ``api_version`` with a request and a uid."""
    if not isinstance(review, dict):
        raise ValueError("the body is not a JSON object")
    if review.get("apiVersion") != api_version or review.get("kind") != kind:
        article = "an" if kind[0] in "AEIOU" else "a"
        raise ValueError(
            f"expected {article} {kind} of {api_version}, got "
            f"{review.get('kind')!r} of {review.get('apiVersion')!r}"
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise ValueError(f"the {kind} has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ValueError("the request has no uid")
    return request, uid


def review_request(review: Any) -> ConversionRequest:
    """The request of a ``ConversionReview``; ValueError, saying what is wrong, when the
    body is not one."""
    request, uid = review_envelope(review, API_VERSION, "ConversionReview")
    desired = request.get("desiredAPIVersion")
    if not isinstance(desired, str) or "/" not in desired:
        raise ValueError(f"the request's desiredAPIVersion is not group/version: {desired!r}")
    objects = request.get("objects") or []
    if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
        raise ValueError("the request's objects are not a list of objects")
    return ConversionRequest(uid, desired, tuple(objects))


def review_response(
    uid: str, converted: Sequence[dict[str, Any]] | None, failure: str = ""
) -> dict[str, Any]:
    """The ``ConversionReview`` answering ``uid``: the ``converted`` objects, or the
    ``failure`` message (no objects)."""
    response: dict[str, Any] = {"uid": uid}
    if failure or converted is None:
        response["result"] = {"status": "Failure", "message": failure or "conversion failed"}
        response["convertedObjects"] = []
    else:
        response["result"] = {"status": "Success"}
        response["convertedObjects"] = list(converted)
    return {"apiVersion": API_VERSION, "kind": "ConversionReview", "response": response}


async def convert(
    conversion: Conversion, request: ConversionRequest, timeout: float
) -> dict[str, Any]:
    """The review answering ``request``: every object converted within ``timeout``
    seconds (all of them), or a failure naming the object that could not be."""
    converted: list[dict[str, Any]] = []
    deadline = asyncio.get_running_loop().time() + timeout
    for obj in request.objects:
        name = _name(obj)
        if obj.get("apiVersion") == request.desired_api_version:
            converted.append(obj)  # the API server does not ask this, but it costs nothing
            continue
        try:
            result = conversion.converter(obj, request.desired_api_version)
            if inspect.isawaitable(result):
                left = deadline - asyncio.get_running_loop().time()
                result = await asyncio.wait_for(result, max(left, 0.001))
            if not isinstance(result, dict):
                raise TypeError(f"a converter returned {type(result).__name__}, not a dict")
        except ConversionError as error:
            log.info("conversion refused", webhook=conversion.label, object=name, error=str(error))
            return review_response(request.uid, None, f"{name}: {error}")
        except asyncio.TimeoutError:
            log.warning("conversion timed out", webhook=conversion.label, timeout=timeout)
            return review_response(request.uid, None, f"{name}: not converted within {timeout:g}s")
        except Exception:
            log.exception("conversion failed", webhook=conversion.label, object=name)
            return review_response(
                request.uid,
                None,
                f"{name}: conversion to {request.desired_api_version} failed "
                "(see the operator's log)",
            )
        converted.append(result)
    return review_response(request.uid, converted)


def _name(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    namespace, name = metadata.get("namespace"), metadata.get("name", "?")
    return (
        f"{obj.get('kind', 'object')} {namespace}/{name}"
        if namespace
        else f"{obj.get('kind', 'object')} {name}"
    )
