"""Interned strings in the informer's cache: two decoded objects share one copy of each
short string value, nothing changes in value, unique and long values are left alone, and
the cache stores interned objects."""

from __future__ import annotations

import sys
import tracemalloc
from typing import Any

import orjson
import pytest

from appstack.runtime import interning
from appstack.runtime.cache import Cache
from appstack.runtime.interning import MAX_LENGTH, intern_strings
from appstack.runtime.resources import DEPLOYMENT
from appstack.runtime.watcher import Applied
from tests.support.scripted_transport import scripted_client


def _deployment(name: str, uid: str) -> bytes:
    """A Deployment as the API server sends it, decoded from JSON as the informer is."""
    return orjson.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": name,
                "namespace": "team-a",
                "uid": f"uid-{uid}",
                "resourceVersion": "1234",
                "labels": {"app.kubernetes.io/managed-by": "appstack"},
                "annotations": {"note": "x" * (MAX_LENGTH + 1)},
            },
            "spec": {
                "strategy": {"type": "RollingUpdate"},
                "template": {
                    "spec": {
                        "containers": [{"name": "app", "image": "nginx:1.27", "ports": [80]}],
                        "args": ["--port", "80"],
                    }
                },
            },
            "status": {"conditions": [{"type": "Available", "status": "True"}]},
        }
    )


def _strings(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return [node] if isinstance(node, str) else []


def test_equal_short_strings_become_one_object_and_values_do_not_change() -> None:
    a_raw, b_raw = _deployment("a", "1"), _deployment("b", "2")
    a, b = intern_strings(orjson.loads(a_raw)), intern_strings(orjson.loads(b_raw))
    assert a == orjson.loads(a_raw)
    assert b == orjson.loads(b_raw)
    assert a["spec"]["strategy"]["type"] is b["spec"]["strategy"]["type"]
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]
    assert a["status"]["conditions"][0]["status"] is b["status"]["conditions"][0]["status"]
    # in lists too
    args_a = a["spec"]["template"]["spec"]["args"]
    assert args_a[0] is b["spec"]["template"]["spec"]["args"][0]


def test_unique_and_long_values_are_left_alone() -> None:
    a, b = orjson.loads(_deployment("a", "1")), orjson.loads(_deployment("b", "1"))
    intern_strings(a)
    intern_strings(b)
    assert a["metadata"]["uid"] == b["metadata"]["uid"]
    assert a["metadata"]["uid"] is not b["metadata"]["uid"]
    assert a["metadata"]["resourceVersion"] is not b["metadata"]["resourceVersion"]
    assert a["metadata"]["annotations"]["note"] is not b["metadata"]["annotations"]["note"]


def test_interned_objects_take_less_memory() -> None:
    raws = [_deployment(f"app-{i}", str(i)) for i in range(200)]

    def cached(intern: bool) -> int:
        tracemalloc.start()
        kept = [intern_strings(orjson.loads(r)) if intern else orjson.loads(r) for r in raws]
        size = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(kept) == len(raws)
        return size

    plain, interned = cached(False), cached(True)
    assert interned < plain * 0.85, (plain, interned)


def test_the_informer_caches_interned_objects() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["team-a"])
    informer = cache.informers(DEPLOYMENT)["team-a"]
    for name, uid in (("a", "1"), ("b", "2")):
        informer._deliver(Applied(orjson.loads(_deployment(name, uid))))
    a, b = cache.get(DEPLOYMENT, "team-a/a"), cache.get(DEPLOYMENT, "team-a/b")
    assert a is not None
    assert b is not None
    assert a["spec"]["strategy"]["type"] is b["spec"]["strategy"]["type"]
    assert set(map(id, _strings(a))) & set(map(id, _strings(b)))


def test_fields_v1_is_not_walked_for_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``fieldsV1`` tree names fields in its keys and holds no string values: walking it
    (half the dicts of a cached Deployment) would intern nothing."""
    entry = orjson.loads('{"manager": "appstack", "fieldsV1": {"f:spec": {"f:x": {}}}}')
    fields = entry["fieldsV1"]
    walked: list[Any] = []

    def counting(part: Any, *args: Any) -> Any:
        walked.append(part)
        return intern_strings(part, *args)

    monkeypatch.setattr(interning, "intern_strings", counting)  # the recursive calls
    intern_strings(entry)
    assert not any(part is fields for part in walked)
    assert entry["manager"] is sys.intern("appstack")
    assert entry["fieldsV1"] == {"f:spec": {"f:x": {}}}
