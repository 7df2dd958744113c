"""Kinds are declared once (api/kind.py) and every controller is registered once
(controllers/registry.py); rendering and the manifests derive from that. No cluster."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from appstack.api.appservice import AppService
from appstack.api.kind import GROUP, group_key
from appstack.cli.render import PLACEHOLDER_UID, render_documents
from appstack.controllers.registry import ALL, by_kind
from appstack.controllers.util.workloads import deployment_ready, deployment_rollout
from appstack.manifests import crds, rbac
from tests.support.paths import REPO_ROOT as ROOT


def test_each_kind_is_derived_from_its_declaration() -> None:
    kind = AppService.KIND
    assert kind.api_version == f"{GROUP}/v1"
    assert (kind.kind, kind.plural, kind.singular) == ("AppService", "appservices", "appservice")
    assert str(kind.resource) == f"appservices.{GROUP}"
    assert kind.resource.path("ns", "web") == f"/apis/{GROUP}/v1/namespaces/ns/appservices/web"
    assert group_key("stack") == f"{GROUP}/stack"


def test_api_version_and_kind_default_to_and_must_match_the_declaration() -> None:
    app = AppService.model_validate({"metadata": {"name": "x"}, "spec": {"image": "nginx"}})
    assert (app.api_version, app.kind) == (f"{GROUP}/v1", "AppService")
    with pytest.raises(ValidationError, match="apiVersion"):
        AppService.model_validate({"apiVersion": f"{GROUP}/v2", "spec": {"image": "nginx"}})
    with pytest.raises(ValidationError, match="kind"):
        AppService.model_validate({"kind": "AppStack", "spec": {"image": "nginx"}})


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


def test_render_prints_exactly_the_children_the_reconcilers_apply() -> None:
    docs = [
        d
        for name in ("appservice.yaml", "dataservice.yaml", "etcdcluster.yaml")
        for d in yaml.safe_load_all((ROOT / "examples" / name).read_text())
        if d
    ]
    expected: list[dict[str, Any]] = []
    for doc in docs:
        controller = by_kind(doc["kind"])
        if controller is None:
            expected.append(doc)
            continue
        parsed = controller.kind.model.model_validate(doc)
        obj = parsed.to_dict()
        obj["metadata"] = {"namespace": "default", **obj["metadata"], "uid": PLACEHOLDER_UID}
        expected += controller.children(obj, parsed.spec)
    assert render_documents(docs) == expected
    assert len(expected) > len(docs)


def test_a_deployment_is_rolled_out_when_every_wanted_replica_is_current() -> None:
    def dep(want: int, updated: int, available: int, seen: int = 2) -> dict[str, Any]:
        status = {"observedGeneration": seen, "replicas": want}
        status |= {"updatedReplicas": updated, "availableReplicas": available}
        return {"metadata": {"generation": 2}, "spec": {"replicas": want}, "status": status}

    assert deployment_ready(dep(3, 3, 3)) == (True, "3/3")
    assert deployment_ready(dep(3, 3, 2)) == (False, "2/3")
    assert deployment_ready(dep(3, 3, 3, seen=1)) == (False, "3/3")
    assert deployment_ready(None) == (False, "0/0")
    assert not deployment_rollout(dep(3, 3, 3), want=4).done
