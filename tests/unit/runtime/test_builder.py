"""The builder (runtime/builder.py): with ``Builder.for_(..., status_changes=False)`` an
update that changed only the primary's status (the reconciler's own status write) does not
wake it; anything else does."""

from __future__ import annotations

import copy
from typing import Any

from appstack.runtime.builder import only_status_changed


def _app() -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": "a", "namespace": "ns", "generation": 1, "resourceVersion": "5"},
        "spec": {"image": "nginx"},
        "status": {"observedGeneration": 1},
    }


def test_only_a_status_change_is_skipped() -> None:
    old = _app()
    new = copy.deepcopy(old)
    new["metadata"]["resourceVersion"] = "6"
    new["status"] = {"observedGeneration": 1, "ready": "1/1"}
    assert only_status_changed(old, new)

    for change in (
        lambda o: o["spec"].update(image="nginx:2"),
        lambda o: o["metadata"].update(generation=2),
        lambda o: o["metadata"].update(labels={"x": "y"}),
        lambda o: o["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z"),
        lambda o: o["metadata"].update(finalizers=["f"]),
    ):
        changed = copy.deepcopy(new)
        change(changed)
        assert not only_status_changed(old, changed)
