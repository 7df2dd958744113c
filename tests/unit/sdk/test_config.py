"""A project's generated install (appstack.sdk.config): config/admission/ holds the SDK's
admission guards, each policy with its binding, included from config/default with a
kustomize name reference (a binding follows its policy's prefix); the namespace enabler
ClusterRole is in config/rbac; the operator acts only in enabled namespaces unless the
project enables them all; the installer bundle applies the guards after the CRDs and the
RBAC and before the Deployment."""

from __future__ import annotations

from typing import Any

import yaml

from appstack.sdk import config
from tests.support.guestbook import PROJECT

POLICIES = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
RBAC = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def _objects(text: str) -> list[dict[str, Any]]:
    return [o for o in yaml.safe_load_all(text) if o]


def _args(project: config.Project) -> list[str]:
    (container,) = config.deployment(project)["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def test_config_has_the_admission_guards_included_from_default() -> None:
    files = config.config_files(PROJECT)
    admission = sorted(p for p in files if p.startswith("admission/"))
    assert admission == [
        "admission/baseline_policy.yaml",
        "admission/kustomization.yaml",
        "admission/kustomizeconfig.yaml",
        "admission/namespace_labels_policy.yaml",
        "admission/operator_events_policy.yaml",
        "admission/operator_kinds_policy.yaml",
        "admission/operator_lease_duration_policy.yaml",
        "admission/operator_writes_policy.yaml",
    ]
    kustomization = yaml.safe_load(files["admission/kustomization.yaml"])
    assert kustomization["configurations"] == ["kustomizeconfig.yaml"]
    assert sorted(kustomization["resources"]) == [
        p.removeprefix("admission/") for p in admission if p.endswith("_policy.yaml")
    ]
    (reference,) = yaml.safe_load(files["admission/kustomizeconfig.yaml"])["nameReference"]
    assert reference["kind"] == "ValidatingAdmissionPolicy"
    assert reference["fieldSpecs"][0]["path"] == "spec/policyName"
    default = yaml.safe_load(files["default/kustomization.yaml"])
    assert "../admission" in default["resources"]
    assert default["namePrefix"] == "guestbook-"
    # before the prefix: each file a policy and its binding, named alike
    policy, binding = _objects(files["admission/operator_writes_policy.yaml"])
    assert policy["metadata"]["name"] == binding["spec"]["policyName"] == "operator-writes"
    (enabler,) = _objects(files["rbac/namespace_enabler_role.yaml"])
    assert enabler["metadata"]["name"] == "namespace-enabler"
    assert (
        "namespace_enabler_role.yaml"
        in yaml.safe_load(files["rbac/kustomization.yaml"])["resources"]
    )


def test_the_operator_acts_only_in_enabled_namespaces_unless_the_project_says_all() -> None:
    assert "--enable-all-namespaces" not in _args(PROJECT)
    assert "--enable-all-namespaces" not in config.config_files(PROJECT)["manager/manager.yaml"]
    everywhere = config.Project(
        identity=PROJECT.identity,
        package=PROJECT.package,
        controllers=PROJECT.controllers,
        kinds=PROJECT.kinds,
        enable_all_namespaces=True,
    )
    assert "--enable-all-namespaces" in _args(everywhere)
    writes = _objects(config.config_files(everywhere)["admission/operator_writes_policy.yaml"])[0]
    enabled = next(v for v in writes["spec"]["variables"] if v["name"] == "enabled")
    assert enabled["expression"] == "true"


def test_the_installer_applies_the_guards_after_the_crds_and_rbac_before_the_operator() -> None:
    bundle = config.installer(PROJECT, "registry.example/guestbook:1")
    kinds = [o["kind"] for o in bundle]
    assert kinds[0] == "CustomResourceDefinition"
    first_policy = kinds.index("ValidatingAdmissionPolicy")
    last_rbac = max(i for i, k in enumerate(kinds) if k in RBAC)
    last_crd = max(i for i, k in enumerate(kinds) if k == "CustomResourceDefinition")
    assert last_crd < last_rbac < first_policy
    assert max(i for i, k in enumerate(kinds) if k in POLICIES) < kinds.index("Deployment")
    policies = {o["metadata"]["name"] for o in bundle if o["kind"] == POLICIES[0]}
    bindings = [o for o in bundle if o["kind"] == POLICIES[1]]
    assert {b["spec"]["policyName"] for b in bindings} == policies
    assert "guestbook-operator-writes" in policies
    assert "guestbook-namespace-enabler" in {
        o["metadata"]["name"] for o in bundle if o["kind"] == "ClusterRole"
    }
    for obj in bundle:
        if obj["kind"] in POLICIES:
            assert "namespace" not in obj["metadata"]  # cluster-scoped
    # the bundle's guards are config/admission's, prefixed
    files = config.config_files(PROJECT)
    configured = [
        o for path, text in files.items() if path.startswith("admission/") for o in _objects(text)
    ]
    for obj in configured:
        if obj.get("kind") in POLICIES:
            placed = next(
                o
                for o in bundle
                if o["kind"] == obj["kind"]
                and o["metadata"]["name"] == f"guestbook-{obj['metadata']['name']}"
            )
            assert placed["spec"].get("validations") == obj["spec"].get("validations")
