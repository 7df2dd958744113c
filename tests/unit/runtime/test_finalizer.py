"""Finalizers (runtime/finalizer.py): add and remove patch only ``metadata.finalizers``,
guarded by the object's resourceVersion, keep everyone else's, send nothing when there is
nothing to change and take a conflict or a vanished object as "the next reconcile will
see"; :func:`finalize` runs ``apply`` or ``cleanup`` and lifts the finalizer only once
cleanup is done. Over a scripted transport."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from appstack.runtime import errors, finalizer
from appstack.runtime.apirequest import ApiRequest
from appstack.runtime.controller import Result
from appstack.runtime.resources import CONFIG_MAP, NAMESPACE, Obj
from tests.support.scripted_transport import ScriptedTransport, scripted_client

OURS = "appstack.dev/cleanup"
THEIRS = "other.example.com/protect"
PATH = "/api/v1/namespaces/ns/configmaps/web"


def _obj(
    *finalizers: str, deleting: bool = False, namespace: str | None = "ns", name: str = "web"
) -> Obj:
    meta: dict[str, Any] = {"name": name, "resourceVersion": "42"}
    if namespace is not None:
        meta["namespace"] = namespace
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if deleting:
        meta["deletionTimestamp"] = "2026-11-27T09:00:00Z"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def _requests(transport: ScriptedTransport) -> list[ApiRequest]:
    return [request for request, _ in transport.sent]


def _patched(transport: ScriptedTransport) -> tuple[str, str, Any]:
    """The one request sent: its path, content type and body."""
    [request] = _requests(transport)
    assert request.method == "PATCH"
    assert request.body is not None
    assert request.content_type is not None
    return request.path, request.content_type, orjson.loads(request.body)


def _client() -> tuple[Any, ScriptedTransport]:
    client, transport = scripted_client()
    transport.answer(200, {})  # answers the one patch, if any is sent
    return client, transport


class Steps:
    """``apply`` and ``cleanup`` that record their calls (and how many requests had been
    sent by then) and return what the test says."""

    def __init__(
        self,
        transport: ScriptedTransport,
        applied: Result | None = None,
        cleaned: Result | None = None,
    ) -> None:
        self.transport = transport
        self.applied, self.cleaned = applied, cleaned
        self.calls: list[tuple[str, int]] = []

    async def apply(self, obj: Obj) -> Result | None:
        self.calls.append(("apply", len(self.transport.sent)))
        return self.applied

    async def cleanup(self, obj: Obj) -> Result | None:
        self.calls.append(("cleanup", len(self.transport.sent)))
        return self.cleaned


# ------------------------------------------------------------------------ has, add, remove


def test_has_reads_metadata_finalizers() -> None:
    assert finalizer.has(_obj(THEIRS, OURS), OURS)
    assert not finalizer.has(_obj(THEIRS), OURS)
    assert not finalizer.has(_obj(), OURS)
    bare = _obj()
    bare["metadata"]["finalizers"] = None  # as some clients send an empty list
    assert not finalizer.has(bare, OURS)


async def test_add_appends_in_a_merge_patch_guarded_by_the_resource_version() -> None:
    client, transport = _client()
    await finalizer.add(client, CONFIG_MAP, _obj(THEIRS), OURS)
    path, content_type, body = _patched(transport)
    assert (path, content_type) == (PATH, "application/merge-patch+json")
    assert body == {"metadata": {"finalizers": [THEIRS, OURS], "resourceVersion": "42"}}


async def test_add_of_a_finalizer_already_there_sends_nothing() -> None:
    client, transport = _client()
    await finalizer.add(client, CONFIG_MAP, _obj(OURS, THEIRS), OURS)
    assert transport.sent == []


async def test_remove_keeps_every_other_finalizer_in_order() -> None:
    client, transport = _client()
    await finalizer.remove(client, CONFIG_MAP, _obj("a.io/x", OURS, "b.io/y"), OURS)
    _, _, body = _patched(transport)
    assert body == {"metadata": {"finalizers": ["a.io/x", "b.io/y"], "resourceVersion": "42"}}


async def test_removing_the_last_finalizer_sends_an_empty_list() -> None:
    client, transport = _client()
    await finalizer.remove(client, CONFIG_MAP, _obj(OURS), OURS)
    _, _, body = _patched(transport)
    assert body["metadata"]["finalizers"] == []


async def test_remove_of_a_finalizer_not_there_sends_nothing() -> None:
    client, transport = _client()
    await finalizer.remove(client, CONFIG_MAP, _obj(THEIRS), OURS)
    assert transport.sent == []


async def test_a_cluster_scoped_object_is_patched_by_its_cluster_path() -> None:
    client, transport = _client()
    await finalizer.add(client, NAMESPACE, _obj(namespace=None, name="tenant-a"), OURS)
    path, _, _ = _patched(transport)
    assert path == "/api/v1/namespaces/tenant-a"


@pytest.mark.parametrize("change", [finalizer.add, finalizer.remove])
@pytest.mark.parametrize(
    ("status", "reason"), [(409, "Conflict"), (404, "NotFound")], ids=["conflict", "gone"]
)
async def test_a_conflict_or_a_vanished_object_is_left_to_the_next_reconcile(
    change: Any, status: int, reason: str
) -> None:
    client, transport = scripted_client()
    transport.answer(status, {"kind": "Status", "code": status, "reason": reason})
    obj = _obj(OURS) if change is finalizer.remove else _obj()
    await change(client, CONFIG_MAP, obj, OURS)  # no error
    assert len(transport.sent) == 1  # and no retry with a stale version


@pytest.mark.parametrize("change", [finalizer.add, finalizer.remove])
@pytest.mark.parametrize(
    ("status", "error"),
    [(403, errors.Forbidden), (422, errors.Invalid), (500, errors.ServerError)],
    ids=["forbidden", "invalid", "server"],
)
async def test_other_errors_reach_the_caller(
    change: Any, status: int, error: type[Exception]
) -> None:
    client, transport = scripted_client()
    transport.answer(status, {"kind": "Status", "code": status})
    obj = _obj(OURS) if change is finalizer.remove else _obj()
    with pytest.raises(error):
        await change(client, CONFIG_MAP, obj, OURS)


# ------------------------------------------------------------------------ finalize


async def test_an_object_not_being_deleted_gets_the_finalizer_before_it_is_applied() -> None:
    client, transport = _client()
    steps = Steps(transport, applied=Result(requeue_after=30))
    result = await finalizer.finalize(
        client, CONFIG_MAP, _obj(), OURS, apply=steps.apply, cleanup=steps.cleanup
    )
    assert result == Result(requeue_after=30)  # apply's
    assert steps.calls == [("apply", 1)]  # after the finalizer's patch was sent
    _, _, body = _patched(transport)
    assert body["metadata"]["finalizers"] == [OURS]


async def test_an_object_that_has_the_finalizer_is_applied_without_a_write() -> None:
    client, transport = _client()
    steps = Steps(transport)
    result = await finalizer.finalize(
        client, CONFIG_MAP, _obj(OURS), OURS, apply=steps.apply, cleanup=steps.cleanup
    )
    assert result is None
    assert steps.calls == [("apply", 0)]
    assert transport.sent == []


async def test_an_object_being_deleted_is_cleaned_up_then_its_finalizer_lifted() -> None:
    client, transport = _client()
    steps = Steps(transport, cleaned=None)
    obj = _obj(THEIRS, OURS, deleting=True)
    result = await finalizer.finalize(
        client, CONFIG_MAP, obj, OURS, apply=steps.apply, cleanup=steps.cleanup
    )
    assert result is None
    assert steps.calls == [("cleanup", 0)]  # cleanup first, never apply
    _, _, body = _patched(transport)
    assert body == {"metadata": {"finalizers": [THEIRS], "resourceVersion": "42"}}


async def test_cleanup_not_done_yet_keeps_the_finalizer_and_asks_to_come_back() -> None:
    client, transport = _client()
    steps = Steps(transport, cleaned=Result(requeue_after=5))
    obj = _obj(OURS, deleting=True)
    result = await finalizer.finalize(
        client, CONFIG_MAP, obj, OURS, apply=steps.apply, cleanup=steps.cleanup
    )
    assert result == Result(requeue_after=5)
    assert steps.calls == [("cleanup", 0)]
    assert transport.sent == []


async def test_a_failing_cleanup_raises_and_keeps_the_finalizer() -> None:
    client, transport = _client()

    async def cleanup(obj: Obj) -> Result | None:
        raise RuntimeError("the database would not drop")

    with pytest.raises(RuntimeError, match="would not drop"):
        await finalizer.finalize(
            client,
            CONFIG_MAP,
            _obj(OURS, deleting=True),
            OURS,
            apply=Steps(transport).apply,
            cleanup=cleanup,
        )
    assert transport.sent == []


async def test_an_object_being_deleted_without_our_finalizer_is_left_alone() -> None:
    client, transport = _client()
    steps = Steps(transport, applied=Result(requeue=True), cleaned=Result(requeue=True))
    obj = _obj(THEIRS, deleting=True)
    result = await finalizer.finalize(
        client, CONFIG_MAP, obj, OURS, apply=steps.apply, cleanup=steps.cleanup
    )
    assert result is None
    assert steps.calls == []  # our cleanup ran before (or was never needed)
    assert transport.sent == []


async def test_a_conflict_lifting_the_finalizer_means_cleanup_runs_again_next_time() -> None:
    client, transport = scripted_client()
    transport.answer(409, {"kind": "Status", "code": 409, "reason": "Conflict"})
    transport.answer(200, {})
    steps = Steps(transport)
    stale = _obj(OURS, deleting=True)
    assert (
        await finalizer.finalize(
            client, CONFIG_MAP, stale, OURS, apply=steps.apply, cleanup=steps.cleanup
        )
        is None
    )
    newer = _obj(OURS, "late.io/joined", deleting=True)
    newer["metadata"]["resourceVersion"] = "43"
    await finalizer.finalize(
        client, CONFIG_MAP, newer, OURS, apply=steps.apply, cleanup=steps.cleanup
    )
    assert [name for name, _ in steps.calls] == ["cleanup", "cleanup"]  # so it is idempotent
    first, second = (orjson.loads(r.body or b"") for r in _requests(transport))
    assert first["metadata"] == {"finalizers": [], "resourceVersion": "42"}
    # the retry keeps the finalizer added meanwhile: no one else's is dropped
    assert second["metadata"] == {"finalizers": ["late.io/joined"], "resourceVersion": "43"}
