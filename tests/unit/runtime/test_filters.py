"""Event filters (runtime/filters.py): each built-in filter, their composition, Kubernetes'
label selector syntax, and the builder handing only the events a filter lets through to
the controller's queue."""

from __future__ import annotations

from typing import Any

import pytest

from appstack.runtime import (
    Filter,
    Request,
    annotated,
    annotations_changed,
    generation_changed,
    labelled,
    labels_changed,
    parse_selector,
    when,
)
from appstack.runtime.builder import _enqueue


def _obj(labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "s", "namespace": "ns", "labels": labels or {}, **meta}}


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ("", {}, True),
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a!=b", {"a": "b"}, False),
        ("a", {"a": ""}, True),
        ("!a", {"a": "x"}, False),
        ("!a", {}, True),
        ("env in (prod, staging)", {"env": "staging"}, True),
        ("env in (prod)", {}, False),
        ("env notin (prod)", {}, True),
        ("env notin (prod)", {"env": "prod"}, False),
        ("example.com/replicate=true,tier", {"example.com/replicate": "true", "tier": "1"}, True),
        ("example.com/replicate=true, tier", {"example.com/replicate": "true"}, False),
        ("a=", {"a": ""}, True),
    ],
)
def test_label_selectors_read_as_the_api_server_reads_them(
    selector: str, labels: dict[str, str], matches: bool
) -> None:
    assert parse_selector(selector)(labels) is matches


@pytest.mark.parametrize("bad", ["a b", "=b", "a in ()", "a in (x", "a=b,,c", "a=(b)"])
def test_a_selector_the_api_server_would_refuse_is_refused_by_name(bad: str) -> None:
    with pytest.raises(ValueError, match="label selector"):
        parse_selector(bad)


def test_the_change_filters_pass_creations_and_deletions_and_only_their_changes() -> None:
    old = _obj({"a": "1"}, generation=1, annotations={"n": "1"})
    relabelled = _obj({"a": "2"}, generation=1, annotations={"n": "1"})
    respec = _obj({"a": "1"}, generation=2, annotations={"n": "1"})
    noted = _obj({"a": "1"}, generation=1, annotations={"n": "2"})
    for f in (generation_changed(), labels_changed(), annotations_changed()):
        assert f.created(old)
        assert f.deleted(old)
        assert not f.updated(old, old)
    assert generation_changed().updated(old, respec)
    assert not generation_changed().updated(old, relabelled)
    assert labels_changed().updated(old, relabelled)
    assert not labels_changed().updated(old, noted)
    assert annotations_changed().updated(old, noted)


def test_labelled_annotated_and_when_see_an_object_that_stops_matching_once_more() -> None:
    marked, unmarked = _obj({"copy": "yes"}), _obj({})
    f = labelled("copy=yes")
    assert f.created(marked)
    assert not f.created(unmarked)
    assert f.updated(marked, unmarked)  # it left the selection: its reconciler hears of it
    assert not f.updated(unmarked, unmarked)
    assert f.deleted(marked)
    assert not f.deleted(unmarked)
    note = annotated("example.com/skip")
    assert note.created(_obj(annotations={"example.com/skip": ""}))
    assert not annotated("k", "v").created(_obj(annotations={"k": "w"}))
    big = when(lambda o: len(o["metadata"]["labels"]) > 1, "more than one label")
    assert big.description == "more than one label"
    assert big.created(_obj({"a": "1", "b": "2"}))


def test_filters_compose_with_and_or_not() -> None:
    yes = Filter(description="yes")
    no = ~yes
    obj = _obj()
    assert not no.created(obj)
    assert (yes & no).description == "(yes and not yes)"
    assert not (yes & no).updated(obj, obj)
    assert (yes | no).deleted(obj)
    copy = labelled("copy-of") & ~annotated("paused")
    assert copy.created(_obj({"copy-of": "x"}))
    assert not copy.created(_obj({"copy-of": "x"}, annotations={"paused": ""}))


class _Queue:
    def __init__(self) -> None:
        self.requests: list[Request] = []

    def enqueue(self, request: Request) -> None:
        self.requests.append(request)


def test_the_builder_enqueues_only_what_its_filter_lets_through() -> None:
    queue = _Queue()
    handler = _enqueue(
        queue,  # type: ignore[arg-type]
        lambda obj: [Request(obj["metadata"]["namespace"], obj["metadata"]["name"])],
        filter=labelled("replicate=true"),
    )
    source, other = _obj({"replicate": "true"}), _obj({}, name="other")
    handler.on_add(source)
    handler.on_add(other)
    handler.on_update(other, other)
    handler.on_update(source, _obj({}))  # unlabelled: once more
    handler.on_delete(other)
    assert queue.requests == [Request("ns", "s"), Request("ns", "s")]
