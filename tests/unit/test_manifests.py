"""The committed deploy/ files are exactly what the code generates; RBAC has no wildcards."""

from __future__ import annotations

from pathlib import Path

import yaml

from appstack.controllers.registry import ALL
from appstack.manifests import admission, bundle, rbac, workload

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def test_the_committed_manifests_match_the_code() -> None:
    stale = bundle.stale(DEPLOY)
    assert stale == [], f"run `appstack manifests` and commit: {stale}"


def test_rbac_names_every_verb_and_resource_explicitly() -> None:
    for rule in rbac.cluster_role()["rules"]:
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field]
    resources = {r for rule in rbac.cluster_role()["rules"] for r in rule["resources"]}
    assert {
        "appservices",
        "appservices/status",
        "deployments",
        "services",
        "events",
        "appservices/finalizers",
    } <= resources
    assert "leases" not in resources  # only in the operator's namespace: a Role


def test_the_lease_is_granted_by_name_in_the_operator_namespace_only() -> None:
    role = rbac.leader_election_role()
    assert role["kind"] == "Role"
    assert role["metadata"]["namespace"] == rbac.NAMESPACE
    named, create = role["rules"]
    assert named["resources"] == ["leases"]
    assert named["resourceNames"] == ["appstack-operator"]
    assert named["verbs"] == ["get", "update"]
    assert create["verbs"] == ["create"]  # resourceNames cannot restrict create
    assert "resourceNames" not in create


def test_the_secrets_policy_binds_the_operator_to_labelled_opaque_secrets() -> None:
    policy, binding = admission.policies()
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConditions"][0]["expression"] == (
        "request.userInfo.username == 'system:serviceaccount:appstack-system:appstack-operator'"
    )
    rules = spec["matchConstraints"]["resourceRules"]
    assert rules[0]["resources"] == ["secrets"]
    assert rules[0]["operations"] == ["CREATE", "UPDATE"]
    expressions = " ".join(v["expression"] for v in spec["validations"])
    assert "object.type == 'Opaque'" in expressions
    assert "app.kubernetes.io/managed-by" in expressions
    assert binding["spec"] == {
        "policyName": policy["metadata"]["name"],
        "validationActions": ["Deny"],
    }


def test_the_operator_runs_locked_down_with_leader_election() -> None:
    deployment = workload.deployment()
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--leader-elect" in container["args"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["runAsNonRoot"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_install_yaml_is_one_bundle_of_everything() -> None:
    kinds = [d["kind"] for d in yaml.safe_load_all((DEPLOY / "install.yaml").read_text())]
    assert kinds.count("CustomResourceDefinition") == len(ALL)
    assert [k for k in kinds if k != "CustomResourceDefinition"] == [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ClusterRole",  # appstack-metrics-reader, for scrapers
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "Deployment",
    ]
