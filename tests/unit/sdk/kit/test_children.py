"""The child writer (sdk/kit/children.py).

Create-once children (:meth:`ChildWriter.ensure_once`, behind ``create_once``): the object
as it now is comes back — created, found, or found after another writer created it between
our read and our create — so that a caller can put its version on a pod template; one that
is not ours is a conflict and comes back as None. Children written together are told apart
by name (:class:`Synced`). The status writer's pacing map (``ChildWriter._changed_at``: when
each owner's status was last written or a child of it changed) forgets owners whose entry no
longer puts anything off, so owners deleted meanwhile are not kept for the life of the
process."""

from __future__ import annotations

import json
from typing import Any

import pytest

from appstack.runtime.cache import Cache
from appstack.runtime.events import EventRecorder
from appstack.runtime.resources import CONFIG_MAP, SECRET, SERVICE
from appstack.runtime.sharding import _CHILD_LABELS
from appstack.sdk.kit.children import PROGRESS_INTERVAL, ChildWriter, Synced
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


async def test_in_a_sharded_reconcile_its_owner_and_its_shard_labels_are_one_write() -> None:
    """A kept child adopted inside a sharded operator's reconcile: its owner and its root's
    shard labels (what the shard's split cache selects it by) go in one PATCH, not two."""
    writer, transport = _writer()
    shard = {"shard.example.com/op": "op-shard-a", "root.shard.example.com/op": "root-uid"}
    adopted = _secret({**REF, "controller": True}, rv="8")
    adopted["metadata"]["labels"] = {**LABELS, **shard}
    transport.answer(200, _secret(None))
    transport.answer(200, adopted)
    token = _CHILD_LABELS.set(shard)
    try:
        current, problem = await writer.ensure_once(OWNER, SECRET, WANT, "generated")
    finally:
        _CHILD_LABELS.reset(token)
    assert problem is None
    assert current == adopted
    assert [r.method for r, _ in transport.sent] == ["GET", "PATCH"]
    patch = json.loads(transport.sent[1][0].body or b"{}")
    assert patch["metadata"]["labels"] == shard
    assert patch["metadata"]["ownerReferences"] == [{**REF, "controller": True}]
    assert patch["metadata"]["resourceVersion"] == "7"  # the version read: nothing in between


async def test_one_that_is_not_ours_is_a_conflict_and_comes_back_as_none() -> None:
    writer, transport = _writer()
    theirs = {**REF, "uid": "someone-else", "controller": True}
    transport.answer(200, _secret(theirs))
    current, problem = await writer.ensure_once(OWNER, SECRET, WANT, "generated")
    assert current is None
    assert problem is not None
    assert [r.method for r, _ in transport.sent] == ["GET"]


def test_children_written_together_are_told_apart_by_name() -> None:
    """Two Services of one owner (a replica set's headless and client Services) are both
    kept; asking for "the" Service then is an error, not one of them at random."""
    synced = Synced()
    synced["Service", "db-hl"] = {"metadata": {"name": "db-hl"}}
    synced["Service", "db"] = {"metadata": {"name": "db"}}
    synced["StatefulSet", "db"] = None
    assert synced["Service", "db-hl"] == {"metadata": {"name": "db-hl"}}
    assert synced.wrote("Service")
    assert not synced.wrote("Deployment")
    assert synced.one("StatefulSet") is None
    assert synced.one("Deployment") is None
    with pytest.raises(LookupError, match="2 children of kind Service"):
        synced.one("Service")


def test_entries_that_put_nothing_off_are_swept_as_the_map_grows() -> None:
    client, _ = scripted_client()
    writer = ChildWriter(
        client, Cache(client, ["ns"]), EventRecorder(client), CONFIG_MAP, [SERVICE]
    )
    for i in range(1000):  # a wave of owners, all deleted since
        writer._mark_changed(f"ns/old-{i}", 0.0)
    assert len(writer._changed_at) <= 1000
    later = PROGRESS_INTERVAL + 1.0
    for i in range(1000):  # the next wave: the first wave's entries go, these stay
        writer._mark_changed(f"ns/new-{i}", later)
    assert not [key for key in writer._changed_at if key.startswith("ns/old-")]
    assert len(writer._changed_at) == 1000
    writer._mark_changed("ns/new-0", later + 0.5)  # a recent entry is kept, and updated
    assert writer._changed_at["ns/new-0"] == later + 0.5
