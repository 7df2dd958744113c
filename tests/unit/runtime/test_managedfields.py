"""What is kept of an object's managed fields (runtime/managedfields.py): one field
manager's own server-side apply entry, with its fields as the API server wrote them — not
its updates, not its status writes, not another manager's apply; none left, no key."""

from __future__ import annotations

import json
from typing import Any

from appstack.runtime.managedfields import MANAGED_FIELDS, keep_applied_by
from tests.support.managed_fields import APPLIED, deployment, entry


def test_only_our_own_apply_entry_is_kept() -> None:
    kept = keep_applied_by(deployment(), "appstack")
    assert kept["metadata"]["managedFields"] == [entry("appstack", "Apply")]
    assert "managedFields" not in keep_applied_by(deployment(), "nobody")["metadata"]


def test_only_our_apply_entry_is_kept_with_its_fields_as_written() -> None:
    obj = deployment()
    obj["metadata"]["managedFields"][2]["fieldsV1"] = json.loads(json.dumps(APPLIED))
    entries = keep_applied_by(obj, "appstack")["metadata"]["managedFields"]
    assert [e["manager"] for e in entries] == ["appstack"]
    assert entries[0]["fieldsV1"] == APPLIED


def test_without_a_manager_or_any_entry_the_key_goes_and_the_object_is_changed_in_place() -> None:
    obj = deployment()
    assert keep_applied_by(obj, None) is obj
    assert "managedFields" not in obj["metadata"]
    bare: dict[str, Any] = {"metadata": {"name": "x", "managedFields": None}}
    assert keep_applied_by(bare, "appstack") == {"metadata": {"name": "x"}}
    assert keep_applied_by({}, "appstack") == {}  # no metadata: nothing to cut
    assert MANAGED_FIELDS == ("metadata", "managedFields")
