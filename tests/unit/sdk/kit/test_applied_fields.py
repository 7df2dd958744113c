"""What our last apply set, and whether the wanted object leaves some of it out
(sdk/kit/compare.py): a child with every wanted field is still stale when a field
we applied before (an env var, resources, a port) is no longer wanted; and the cache and
read-your-writes keep only our own apply's managedFields entry (runtime/informer.py)."""

from __future__ import annotations

import json
from typing import Any

from appstack.runtime.cache import Cache
from appstack.runtime.informer import keep_applied_by
from appstack.runtime.resources import DEPLOYMENT
from appstack.runtime.watcher import Applied
from appstack.sdk.kit.compare import already_so, applied_fields, is_subset, would_remove
from tests.support.scripted_transport import scripted_client


def _k(**keys: Any) -> str:
    return "k:" + json.dumps(keys, separators=(",", ":"))


# What the API server records for an apply of _want() (fieldsV1, as it writes it).
_APPLIED: dict[str, Any] = {
    "f:metadata": {"f:labels": {"f:app": {}}, "f:ownerReferences": {_k(uid="u1"): {}}},
    "f:spec": {
        "f:replicas": {},
        "f:template": {
            "f:spec": {
                "f:containers": {
                    _k(name="app"): {
                        ".": {},
                        "f:name": {},
                        "f:image": {},
                        "f:env": {_k(name="A"): {".": {}, "f:name": {}, "f:value": {}}},
                        "f:ports": {
                            _k(containerPort=80, protocol="TCP"): {".": {}, "f:containerPort": {}}
                        },
                        "f:resources": {"f:limits": {"f:cpu": {}}},
                    }
                },
                "f:finalizers": {'v:"x"': {}},
            }
        },
    },
}


def _want() -> dict[str, Any]:
    container = {
        "name": "app",
        "image": "nginx",
        "env": [{"name": "A", "value": "1"}],
        "ports": [{"containerPort": 80}],  # protocol: defaulted by the server, a key
        "resources": {"limits": {"cpu": "1"}},
    }
    return {
        "metadata": {
            "name": "web",
            "labels": {"app": "web"},
            "ownerReferences": [{"uid": "u1", "name": "web"}],
        },
        "spec": {
            "replicas": 1,
            "template": {"spec": {"containers": [container], "finalizers": ["x"]}},
        },
    }


def _container(want: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = want["spec"]["template"]["spec"]["containers"][0]
    return container


def test_nothing_is_removed_when_the_wanted_object_is_what_was_applied() -> None:
    assert not would_remove(_APPLIED, _want())
    more = _want()
    _container(more)["env"].append({"name": "B", "value": "2"})  # more is not less
    assert not would_remove(_APPLIED, more)
    assert not would_remove({}, _want())  # never applied: nothing of ours to remove


def test_a_removed_field_map_key_or_list_item_is_noticed() -> None:
    no_resources = _want()
    del _container(no_resources)["resources"]
    assert would_remove(_APPLIED, no_resources)
    no_env = _want()
    _container(no_env)["env"] = [{"name": "B", "value": "1"}]
    assert would_remove(_APPLIED, no_env)
    other_port = _want()
    _container(other_port)["ports"] = [{"containerPort": 9090}]
    assert would_remove(_APPLIED, other_port)
    udp = _want()
    _container(udp)["ports"] = [{"containerPort": 80, "protocol": "UDP"}]
    assert would_remove(_APPLIED, udp)
    no_label = _want()
    no_label["metadata"]["labels"] = {}
    assert would_remove(_APPLIED, no_label)
    no_finalizer = _want()
    no_finalizer["spec"]["template"]["spec"]["finalizers"] = []
    assert would_remove(_APPLIED, no_finalizer)
    by_index = {"f:args": {"i:1": {}}}
    assert not would_remove(by_index, {"args": ["a", "b"]})
    assert would_remove(by_index, {"args": ["a"]})


def _entry(manager: str, operation: str, **more: Any) -> dict[str, Any]:
    return {"manager": manager, "operation": operation, "fieldsV1": {"f:x": {}}, **more}


def _deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "resourceVersion": "4",
            "managedFields": [
                _entry("kube-controller-manager", "Update"),
                _entry("appstack", "Update", subresource="status"),
                _entry("appstack", "Apply"),
                _entry("kubectl", "Apply"),
            ],
        },
    }


def test_only_our_own_apply_entry_is_kept_and_read() -> None:
    kept = keep_applied_by(_deployment(), "appstack")
    assert kept["metadata"]["managedFields"] == [_entry("appstack", "Apply")]
    assert applied_fields(kept, "appstack") == {"f:x": {}}
    assert applied_fields(kept, "someone") == {}
    assert "managedFields" not in keep_applied_by(_deployment(), "nobody")["metadata"]


def test_the_cache_keeps_only_its_clients_apply_entry() -> None:
    client, _ = scripted_client(field_manager="appstack")  # the entries above are "appstack"'s
    cache = Cache(client, ["ns"])
    informer = cache.informers(DEPLOYMENT)["ns"]
    informer._deliver(Applied(informer._prepare(_deployment())))  # as the watcher hands it
    stored = cache.get(DEPLOYMENT, "ns/web")
    assert stored is not None
    assert stored["metadata"]["managedFields"] == [_entry(client.field_manager, "Apply")]


def test_a_child_is_already_so_only_if_nothing_we_applied_is_dropped() -> None:
    current = _want()
    current["metadata"]["managedFields"] = [
        {"manager": "appstack", "operation": "Apply", "fieldsV1": _APPLIED}
    ]
    assert already_so(_want(), current, "appstack")
    trimmed = _want()
    del _container(trimmed)["resources"]
    assert is_subset(trimmed, current)  # every wanted field is there...
    assert not already_so(trimmed, current, "appstack")  # ...but resources must go
    assert already_so(trimmed, current, "someone-else")  # not ours to remove


def test_only_our_apply_entry_is_kept_with_its_fields_as_written() -> None:
    obj = _deployment()
    obj["metadata"]["managedFields"][2]["fieldsV1"] = json.loads(json.dumps(_APPLIED))
    entries = keep_applied_by(obj, "appstack")["metadata"]["managedFields"]
    assert [e["manager"] for e in entries] == ["appstack"]
    assert entries[0]["fieldsV1"] == _APPLIED
