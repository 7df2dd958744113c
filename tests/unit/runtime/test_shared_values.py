"""Parts shared across cached objects (:func:`shared_value`, :func:`share_below`): equal
trees become one copy, kept while any object holds it and forgotten once none does, a part
holding a new part is not remembered, and the informer caches a Deployment and its Service
with one copy of their labels and owner and compact metadata."""

from __future__ import annotations

import copy
import sys
from typing import Any

from appstack.runtime import interning
from appstack.runtime.cache import Cache
from appstack.runtime.interning import share_below, shared_metadata, shared_value, sweep_values
from appstack.runtime.resources import DEPLOYMENT, SERVICE
from appstack.runtime.watcher import Applied
from tests.support.scripted_transport import scripted_client


def test_equal_trees_become_one_copy_other_orders_and_values_do_not() -> None:
    first = {"app": "web-shared-1", "tier": "front"}
    assert shared_value(first) is first
    again = shared_value({"app": "web-shared-1", "tier": "front"})
    assert again is first
    reordered = {"tier": "front", "app": "web-shared-1"}
    assert shared_value(reordered) is reordered  # same value, another order: its own copy
    other = {"app": "web-shared-2", "tier": "front"}
    assert shared_value(other) is other
    assert shared_value([1]) is not shared_value([True])  # JSON, not Python equality


def test_a_copy_is_kept_while_held_and_forgotten_once_no_object_holds_it() -> None:
    held = shared_value({"held-by": "a cached object"})
    dropped = shared_value({"held-by": "nobody"})
    dropped_id = id(dropped)
    del dropped
    sweep_values()
    assert shared_value({"held-by": "a cached object"}) is held
    known = {id(v) for v in interning._values.values.values()}
    assert dropped_id not in known
    assert sys.getrefcount(held) > 2


def test_share_below_shares_repeated_parts_and_not_a_part_holding_a_new_one() -> None:
    def spec(app: str) -> dict[str, Any]:
        return {
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 8081}]}]}
            },
        }

    # a part is remembered once every part in it was seen before: one level per object
    specs = [share_below(spec(f"below-{i}")) for i in range(6)]
    assert specs == [spec(f"below-{i}") for i in range(6)]
    assert specs[4]["template"]["spec"] is specs[5]["template"]["spec"]
    a = specs[0]
    again = share_below(spec("below-0"))
    assert again["selector"]["matchLabels"] is a["selector"]["matchLabels"]
    # the selector held the app's labels, new when first seen: not remembered
    assert again["selector"] is not a["selector"]


def _child(kind: str, api_version: str, uid: str) -> dict[str, Any]:
    """A child of app ``web`` as decoded (its metadata grown by the fields then dropped)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": "web",
            "namespace": "team-a",
            "uid": uid,
            "resourceVersion": "7",
            "labels": {"app.kubernetes.io/instance": "web", "app.kubernetes.io/name": "web"},
            "ownerReferences": [
                {
                    "apiVersion": "appstack.dev/v1",
                    "kind": "AppService",
                    "name": "web",
                    "uid": "owner-1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            **{f"x{i}": "" for i in range(6)},
        },
        "spec": {},
    }


def test_a_deployment_and_its_service_share_labels_and_owner_in_the_cache() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["team-a"])
    for resource, api_version in ((DEPLOYMENT, "apps/v1"), (SERVICE, "v1")):
        raw = _child(resource.kind, api_version, f"uid-{resource.kind}")
        for i in range(6):
            del raw["metadata"][f"x{i}"]
        cache.informers(resource)["team-a"]._deliver(Applied(raw))
    deployment = cache.get(DEPLOYMENT, "team-a/web")
    service = cache.get(SERVICE, "team-a/web")
    assert deployment is not None
    assert service is not None
    for key in ("labels", "ownerReferences"):
        assert deployment["metadata"][key] is service["metadata"][key]
    assert deployment["metadata"]["ownerReferences"][0]["uid"] == "owner-1"


def test_metadata_is_rebuilt_to_its_size_with_its_values() -> None:
    raw = _child("Deployment", "apps/v1", "uid-compact")
    grown = sys.getsizeof(raw["metadata"])
    for i in range(6):
        del raw["metadata"][f"x{i}"]
    want = copy.deepcopy(raw)
    out = shared_metadata(raw)
    assert out == want
    assert sys.getsizeof(out["metadata"]) < grown
