"""An operator's unit test with no cluster (sdk/testing.py, issue #48): the SDK's own
reconciler kit — a KindReconciler writing a child and its status, an invalid spec
refused in status, a deleted child restored, the child garbage-collected with its owner —
running in memory through the real client, cache and controllers, in well under a second.
``OperatorRunner`` runs against a real cluster (tests/e2e/test_operator_runner.py); here
only what it says before it runs. ``webhook_review``: a handler asked as the operator asks
it (the object parsed with the model, the old one on update, a copy to change)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import Field, ValidationError

from appstack.runtime import CONFIG_MAP, Result, Verdict, allow, deny
from appstack.sdk import (
    Condition,
    CustomObject,
    InMemoryOperator,
    KindReconciler,
    KubeModel,
    KubeObject,
    OperatorIdentity,
    OperatorRunner,
    Problem,
    Registration,
    WebhookReview,
    child_labels,
    child_metadata,
    condition,
    custom_kind,
    now_rfc3339,
    previous_conditions,
    webhook_review,
)

IDENTITY = OperatorIdentity(project="notes", domain="notes.example.com")


class NoteSpec(KubeModel):
    text: str = Field(min_length=1)


class NoteStatus(KubeModel):
    conditions: list[Condition] | None = None


@custom_kind(group="notes.example.com", plural="notes")
class Note(CustomObject):
    spec: NoteSpec
    status: NoteStatus | None = None


NOTE = Note.KIND.resource


class NoteReconciler(KindReconciler[NoteSpec]):
    kind = Note.KIND
    owns = (CONFIG_MAP,)

    def status(self, obj: KubeObject, problem: Problem | None) -> NoteStatus:
        ready = condition(
            "Ready",
            "False" if problem else "True",
            problem.reason if problem else "Written",
            problem.message if problem else "the ConfigMap holds it",
            generation=obj["metadata"].get("generation"),
            previous=previous_conditions(obj),
            now=now_rfc3339(),
        )
        return NoteStatus(conditions=[ready])

    def invalid_status(self, obj: KubeObject, problem: Problem) -> NoteStatus:
        return self.status(obj, problem)

    async def apply(self, obj: KubeObject, spec: NoteSpec) -> Result | None:
        name = obj["metadata"]["name"]
        child = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": child_metadata(obj, name, child_labels(name, "note", IDENTITY.managed_by)),
            "data": {"text": spec.text},
        }
        _, problems = await self.writer.sync_all(obj, [child])
        await self.writer.write_status(obj, self.status(obj, problems[0] if problems else None))
        return None


def _note(name: str, text: str) -> dict[str, Any]:
    return {
        "apiVersion": "notes.example.com/v1",
        "kind": "Note",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"text": text},
    }


def _ready(obj: dict[str, Any] | None) -> str | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == "Ready":
            return str(c["status"])
    return None


async def test_a_reconciler_runs_in_memory_against_the_fake_api_server() -> None:
    started = time.monotonic()
    controller = Registration(name="note", reconciler=NoteReconciler)
    async with InMemoryOperator([controller], IDENTITY) as running:
        await running.client.create(NOTE, _note("hello", "hi"))
        cm = await running.until(lambda: running.get(CONFIG_MAP, "hello", "default"))
        assert cm["data"] == {"text": "hi"}
        assert cm["metadata"]["ownerReferences"][0]["kind"] == "Note"

        async def ready() -> bool:
            return _ready(await running.get(NOTE, "hello", "default")) == "True"

        await running.until(ready)

        # an edited spec reaches the child (server-side apply by the operator)
        await running.client.patch(NOTE, "hello", {"spec": {"text": "bye"}}, namespace="default")

        async def rewritten() -> bool:
            got = await running.get(CONFIG_MAP, "hello", "default")
            return bool(got and got["data"] == {"text": "bye"})

        await running.until(rewritten)

        # a deleted child comes back
        await running.client.delete(CONFIG_MAP, "hello", "default")

        async def back() -> bool:
            got = await running.get(CONFIG_MAP, "hello", "default")
            return bool(got and got["metadata"]["uid"] != cm["metadata"]["uid"])

        await running.until(back)

        # an invalid spec (no admission here: the model's own validation) says so in status
        await running.client.create(NOTE, _note("empty", ""))

        async def refused() -> bool:
            return _ready(await running.get(NOTE, "empty", "default")) == "False"

        await running.until(refused)
        assert await running.get(CONFIG_MAP, "empty", "default") is None

        # the owner deleted: the garbage collector takes its child
        await running.client.delete(NOTE, "hello", "default")

        async def collected() -> bool:
            return await running.get(CONFIG_MAP, "hello", "default") is None

        await running.until(collected)
    assert time.monotonic() - started < 5


def test_a_runner_not_entered_says_how_to_run_it() -> None:
    runner = OperatorRunner([], IDENTITY)
    with pytest.raises(RuntimeError, match=r"use `async with OperatorRunner\(...\)`"):
        _ = runner.client
    # its defaults: no leader election, no HTTP endpoint, every namespace
    assert runner.options.leader_elect is False
    assert runner.options.metrics_address is None
    assert runner.options.health_address is None
    assert runner.options.namespaces == []
    # webhooks, if any: developer mode on a free port of 127.0.0.1 (the test bed's API
    # server reaches it); where they are is known once running
    assert (runner.options.webhook_host, runner.options.webhook_address) == (
        "127.0.0.1",
        "127.0.0.1:0",
    )
    with pytest.raises(RuntimeError, match="not running"):
        _ = runner.webhook_port
    elsewhere = OperatorRunner([], IDENTITY, webhook_host="10.0.0.5", webhook_address=":0")
    assert (elsewhere.options.webhook_host, elsewhere.options.webhook_address) == (
        "10.0.0.5",
        ":0",
    )


def test_a_kind_model_without_a_status_field_is_refused_naming_it() -> None:
    with pytest.raises(TypeError, match=r"Lamp has no 'status' field: .*`status: LampStatus"):

        @custom_kind(group="lamps.example.com", plural="lamps")
        class Lamp(CustomObject):
            spec: LampSpec


class LampSpec(KubeModel):
    on: bool = False


def _check_note(review: WebhookReview) -> Verdict:
    assert isinstance(review.object, Note)
    if review.object.spec.text == "secret":
        return deny("secret is not a note", field="spec.text")
    if (
        isinstance(review.old_object, Note)
        and review.old_object.spec.text != review.object.spec.text
    ):
        return allow("the text changes")
    return allow()


def test_webhook_review_asks_a_handler_as_the_operator_does() -> None:
    """A create, parsed with the kind's model; an update with the old object; who asks."""
    refused = _check_note(webhook_review(Note.KIND, _note("a", "secret")))
    assert (refused.allowed, refused.field, refused.code) == (False, "spec.text", 422)
    review = webhook_review(Note.KIND, _note("a", "new"), old=_note("a", "old"), user="ann")
    assert (review.operation, review.dry_run) == ("UPDATE", False)
    assert (review.request.name, review.request.namespace) == ("a", "default")
    assert review.request.user_info["username"] == "ann"
    assert review.request.resource == {"group": NOTE.group, "version": "v1", "resource": "notes"}
    assert _check_note(review).warnings == ("the text changes",)


def test_webhook_review_gives_a_copy_to_change_and_the_models_refusal() -> None:
    sent = _note("a", "text")
    review = webhook_review(Note.KIND, sent, dry_run=True)
    assert review.raw is not None
    review.raw["spec"]["text"] = "changed"
    assert sent["spec"]["text"] == "text"
    assert review.dry_run
    with pytest.raises(ValidationError):  # the operator denies it before any handler
        webhook_review(Note.KIND, _note("a", ""))


def test_webhook_review_of_a_kind_not_declared_has_the_dicts_only() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    review = webhook_review(CONFIG_MAP, config_map, operation="DELETE")
    assert (review.object, review.operation, review.raw) == (None, "DELETE", config_map)
