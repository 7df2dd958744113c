"""The operator's own role reads, by name, the CRDs of the kinds it uses — and nothing of
Kubernetes' own groups, and not when it is a namespaced install's Role (a CRD is
cluster-scoped) — so an informer whose kind is not served waits on a watch of that one CRD
(:func:`appstack.runtime.wait_served`). The grant on a real API server:
tests/e2e/test_any_kind.py."""

from __future__ import annotations

from appstack.core.resource import Resource
from appstack.sdk import (
    BUILTIN_GROUPS,
    crd_read_rule,
    manager_rules,
    rule,
    sharding_rules,
    within_namespaces,
)
from appstack.sdk.rbac import SHARD_LEASE_VERBS, leader_election_rules

CERTIFICATES = Resource("cert-manager.io", "v1", "Certificate", "certificates")
GADGETS = Resource("example.com", "v1", "Gadget", "gadgets")
SECRETS = Resource("", "v1", "Secret", "secrets")
INGRESSES = Resource("networking.k8s.io", "v1", "Ingress", "ingresses")
GATEWAYS = Resource("gateway.networking.k8s.io", "v1", "Gateway", "gateways")


def _crd_rules(rules: list[dict[str, object]]) -> list[dict[str, object]]:
    return [r for r in rules if r["resources"] == ["customresourcedefinitions"]]


def test_the_crds_of_the_kinds_it_uses_are_read_by_name_only() -> None:
    rules = [
        rule(GADGETS, "get", "list", "watch"),
        rule(GADGETS, "patch", subresource="status"),
        rule(CERTIFICATES, "get", "list", "watch"),
        rule(SECRETS, "get", "list", "watch", "create"),
        rule(INGRESSES, "get"),
        rule(GATEWAYS, "get", "list", "watch"),
    ]
    (crds,) = _crd_rules(manager_rules(rules, "example.com"))
    assert crds == {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["get", "list", "watch"],
        # a Gateway is a CRD although its group ends in k8s.io; an Ingress is not
        "resourceNames": [
            "certificates.cert-manager.io",
            "gadgets.example.com",
            "gateways.gateway.networking.k8s.io",
        ],
    }


def test_no_grant_without_such_kinds_nor_in_a_namespaced_role() -> None:
    assert crd_read_rule([rule(SECRETS, "get"), rule(INGRESSES, "get")]) is None
    assert _crd_rules(manager_rules([rule(SECRETS, "get")], "example.com")) == []
    namespaced = manager_rules([rule(GADGETS, "get")], "example.com", cluster_wide=False)
    assert _crd_rules(namespaced) == []


def test_kubernetes_own_groups_include_the_core_group() -> None:
    assert "" in BUILTIN_GROUPS
    assert "apps" in BUILTIN_GROUPS
    assert "gateway.networking.k8s.io" not in BUILTIN_GROUPS


def test_a_sharded_operator_patches_its_primaries_and_holds_any_lease_of_its_namespace() -> None:
    widgets = Resource("example.com", "v1", "Widget", "widgets")
    assert sharding_rules([widgets, widgets]) == [
        {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["patch"]}
    ]
    (leases,) = leader_election_rules("widgets", sharded=True)
    assert leases["verbs"] == list(SHARD_LEASE_VERBS)
    assert "resourceNames" not in leases  # the shard Leases have names of their own
    named, _ = leader_election_rules("widgets")
    assert named["resourceNames"] == ["widgets"]


def test_a_cluster_wide_role_within_namespaces_is_the_namespaced_installs_role() -> None:
    """A chart's ``watchNamespaces`` makes the operator's ClusterRole a Role in each
    watched namespace (:func:`appstack.sdk.within_namespaces`): exactly what a namespaced
    install's role holds — no CRD reads, no listing or watching namespaces (a Role grants
    neither) — sharded or not; the ClusterRole given is left as it was."""
    rules = [
        rule(GADGETS, "get", "list", "watch"),
        rule(GADGETS, "patch", subresource="status"),
        rule(CERTIFICATES, "get", "list", "watch", "create"),
        rule(SECRETS, "get", "list", "watch"),
    ]
    for each in (rules, [*rules, *sharding_rules([GADGETS])]):
        cluster = manager_rules(each, "example.com")
        before = [dict(r) for r in cluster]
        scoped = within_namespaces(cluster)
        assert scoped == manager_rules(each, "example.com", cluster_wide=False)
        assert cluster == before
        assert not _crd_rules(scoped)
        (namespaces,) = [r for r in scoped if r["resources"] == ["namespaces"]]
        assert namespaces["verbs"] == ["get"]
