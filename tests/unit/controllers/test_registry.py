"""The registry (controllers/registry.py) names every kind's controller once, and the CRDs
and the operator's RBAC derive from it."""

from __future__ import annotations

from appstack.api.kind import GROUP
from appstack.controllers.registry import ALL, by_kind
from appstack.manifests import crds, rbac


def test_the_registry_names_each_kind_once_and_drives_crds_and_rbac() -> None:
    kinds = [c.kind.kind for c in ALL]
    assert len(set(kinds)) == len(kinds) == len({c.name for c in ALL})
    assert [crd["metadata"]["name"] for crd in crds.all_crds()] == [c.kind.crd_name for c in ALL]
    rules = rbac.cluster_role()["rules"]
    for controller in ALL:
        assert by_kind(controller.kind.kind) is controller
        plural = controller.kind.plural
        assert any(plural in r["resources"] and GROUP in r["apiGroups"] for r in rules)
        assert any(f"{plural}/status" in r["resources"] for r in rules)
    assert by_kind("Nope") is None
