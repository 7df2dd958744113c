"""Create-once children (:meth:`ChildWriter.ensure_once`, behind ``create_once``): the object
as it now is comes back — created, found, or found after another writer created it between
our read and our create — so that a caller can put its version on a pod template; one that
is not ours is a conflict and comes back as None."""

from __future__ import annotations

from typing import Any

from appstack.runtime.cache import Cache
from appstack.runtime.events import EventRecorder
from appstack.runtime.resources import CONFIG_MAP, SECRET, SERVICE
from appstack.sdk.kit.children import ChildWriter
from tests.support.scripted_transport import scripted_client

OWNER = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "owner", "namespace": "ns", "uid": "owner-uid"},
}
REF = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "owner-uid"}
LABELS = {"app.kubernetes.io/managed-by": "test"}
WANT: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {
        "name": "generated",
        "namespace": "ns",
        "labels": LABELS,
        "ownerReferences": [{**REF, "controller": True}],
    },
    "stringData": {"password": "p"},
}


def _status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "status": "Failure", "reason": reason, "code": code}


def _secret(owner: dict[str, Any] | None, rv: str = "7") -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "generated",
        "namespace": "ns",
        "uid": "secret-uid",
        "resourceVersion": rv,
        "labels": LABELS,
    }
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"password": "cA=="}}


def _writer() -> tuple[ChildWriter, Any]:
    client, transport = scripted_client()
    recorder = EventRecorder(client)
    return ChildWriter(client, Cache(client, ["ns"]), recorder, CONFIG_MAP, [SERVICE]), transport


async def test_one_created_by_another_writer_between_read_and_create_is_judged_as_found() -> None:
    writer, transport = _writer()
    found = _secret({**REF, "controller": True})
    transport.answer(404, _status(404, "NotFound"))
    transport.answer(409, _status(409, "AlreadyExists"))
    transport.answer(200, found)
    current, problem = await writer.ensure_once(OWNER, SECRET, WANT, "generated")
    assert problem is None
    assert current == found  # its uid and resourceVersion: what a pod template carries
    assert [r.method for r, _ in transport.sent] == ["GET", "POST", "GET"]


async def test_a_kept_one_is_adopted_and_comes_back_as_patched() -> None:
    writer, transport = _writer()
    adopted = _secret({**REF, "controller": True}, rv="8")
    transport.answer(200, _secret(None))  # kept after its owner was deleted, our labels
    transport.answer(200, adopted)
    current, problem = await writer.ensure_once(OWNER, SECRET, WANT, "generated")
    assert problem is None
    assert current == adopted  # the version after the owner was written
    assert [r.method for r, _ in transport.sent] == ["GET", "PATCH"]


async def test_one_that_is_not_ours_is_a_conflict_and_comes_back_as_none() -> None:
    writer, transport = _writer()
    theirs = {**REF, "uid": "someone-else", "controller": True}
    transport.answer(200, _secret(theirs))
    current, problem = await writer.ensure_once(OWNER, SECRET, WANT, "generated")
    assert current is None
    assert problem is not None
    assert [r.method for r, _ in transport.sent] == ["GET"]
