"""A workload read from the cache may be one none of our kinds controls, cached as metadata
only (issue #34: no spec, no status): reading its rollout says "not ready", it does not
fail (AppStack reads a waiting component's Deployment by name)."""

from __future__ import annotations

from appstack.controllers.util.workloads import deployment_ready, statefulset_ready


def _metadata_only(kind: str) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "shop-web", "namespace": "ns", "uid": "u", "generation": 2},
    }


def test_a_workload_cached_as_metadata_only_is_not_ready() -> None:
    assert deployment_ready(_metadata_only("Deployment")) == (False, "0/0")
    ready, _ = statefulset_ready(_metadata_only("StatefulSet"))
    assert not ready
