"""What is kept of an object's managed fields (runtime/managedfields.py): one field
manager's own server-side apply entry, with its fields as the API server wrote them — not
its updates, not its status writes, not another manager's apply; none left, no key."""

from __future__ import annotations

import json
from typing import Any

from appstack.runtime.managedfields import MANAGED_FIELDS, keep_applied_by


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


def test_only_our_own_apply_entry_is_kept() -> None:
    kept = keep_applied_by(_deployment(), "appstack")
    assert kept["metadata"]["managedFields"] == [_entry("appstack", "Apply")]
    assert "managedFields" not in keep_applied_by(_deployment(), "nobody")["metadata"]


def test_only_our_apply_entry_is_kept_with_its_fields_as_written() -> None:
    obj = _deployment()
    obj["metadata"]["managedFields"][2]["fieldsV1"] = json.loads(json.dumps(_APPLIED))
    entries = keep_applied_by(obj, "appstack")["metadata"]["managedFields"]
    assert [e["manager"] for e in entries] == ["appstack"]
    assert entries[0]["fieldsV1"] == _APPLIED


def test_without_a_manager_or_any_entry_the_key_goes_and_the_object_is_changed_in_place() -> None:
    obj = _deployment()
    assert keep_applied_by(obj, None) is obj
    assert "managedFields" not in obj["metadata"]
    bare: dict[str, Any] = {"metadata": {"name": "x", "managedFields": None}}
    assert keep_applied_by(bare, "appstack") == {"metadata": {"name": "x"}}
    assert keep_applied_by({}, "appstack") == {}  # no metadata: nothing to cut
    assert MANAGED_FIELDS == ("metadata", "managedFields")
