"""The install builders' options that appstack's own ``deploy/`` and chart use and any
operator built on the SDK can (:mod:`appstack.sdk.install`, issue #47 "one generator"): the
PodDisruptionBudget, the replicas spread over nodes, the FlowSchema of the Lease requests,
the Namespace's Pod Security level, the operator's flags, its own role's grants, its
alerts and the container's and pod's extras — each adds nothing unless asked, so a scaffolded
project's ``config/`` stays as it was. That appstack's install is built by them:
tests/unit/manifests/test_one_generator.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
import pytest

from appstack.sdk import (
    disruption_budget,
    lease_flow_schema,
    manager_args,
    manager_container,
    manager_deployment,
    manager_grants,
    manager_pod_security,
    namespace_object,
    prometheus_rule,
    spread_affinity,
)
from appstack.sdk.flags import operator_flags
from appstack.sdk.identity import OperatorIdentity

SELECTOR = {"app.kubernetes.io/name": "gadget-operator"}
LABELS = {"app.kubernetes.io/managed-by": "gadget"}


def _container(
    env: Sequence[dict[str, Any]] = (),
    image_pull_policy: str | None = None,
    volume_mounts: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    return manager_container(
        "manager",
        "gadget:1",
        ["--leader-elect"],
        resources={},
        env=env,
        image_pull_policy=image_pull_policy,
        volume_mounts=volume_mounts,
    )


def test_a_disruption_budget_lets_one_replica_go_at_a_time_unless_told() -> None:
    budget = disruption_budget("gadget", "ops", labels=LABELS, selector=SELECTOR)
    assert budget["apiVersion"] == "policy/v1"
    assert budget["metadata"] == {
        "name": "gadget",
        "namespace": "ops",
        "labels": {**LABELS, **SELECTOR},
    }
    assert budget["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": SELECTOR}}
    half = disruption_budget("gadget", "ops", labels={}, selector=SELECTOR, max_unavailable="50%")
    assert half["spec"]["maxUnavailable"] == "50%"


def test_spread_affinity_prefers_the_selected_replicas_on_different_nodes() -> None:
    selector = dict(SELECTOR)
    affinity = spread_affinity(selector)
    (term,) = affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term == {
        "weight": 100,
        "podAffinityTerm": {
            "labelSelector": {"matchLabels": SELECTOR},
            "topologyKey": "kubernetes.io/hostname",
        },
    }
    selector["extra"] = "x"  # a copy: the caller's selector changed later changes nothing
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == SELECTOR
    zones = spread_affinity(SELECTOR, topology_key="topology.kubernetes.io/zone", weight=50)
    (zoned,) = zones["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert zoned["weight"] == 50
    assert zoned["podAffinityTerm"]["topologyKey"] == "topology.kubernetes.io/zone"


@pytest.mark.parametrize("weight", [0, 101])
def test_a_weight_the_api_server_refuses_is_refused_first(weight: int) -> None:
    with pytest.raises(ValueError, match=f"weight {weight} is not between 1 and 100"):
        spread_affinity(SELECTOR, weight=weight)


def test_the_lease_flow_schema_matches_only_the_operators_lease_requests() -> None:
    schema = lease_flow_schema("gadget-leases", account=("ops", "gadget"), labels=LABELS)
    assert schema["apiVersion"] == "flowcontrol.apiserver.k8s.io/v1"
    assert schema["metadata"] == {"name": "gadget-leases", "labels": LABELS}  # cluster-scoped
    spec = schema["spec"]
    assert spec["priorityLevelConfiguration"] == {"name": "leader-election"}
    assert spec["matchingPrecedence"] == 190  # before workload-leader-election's 200
    (matched,) = spec["rules"]
    assert matched["subjects"] == [
        {"kind": "ServiceAccount", "serviceAccount": {"name": "gadget", "namespace": "ops"}}
    ]
    assert matched["resourceRules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "update"],
            "namespaces": ["*"],
        }
    ]
    later = lease_flow_schema("l", account=("ops", "gadget"), labels={}, precedence=500)
    assert later["spec"]["matchingPrecedence"] == 500


@pytest.mark.parametrize("precedence", [0, 10000])
def test_a_precedence_out_of_range_is_refused(precedence: int) -> None:
    with pytest.raises(ValueError, match=f"precedence {precedence} is not between 1 and 9999"):
        lease_flow_schema("l", account=("ops", "gadget"), labels={}, precedence=precedence)


def test_the_container_extras_come_after_what_every_install_has() -> None:
    plain = _container()
    assert [e["name"] for e in plain["env"]] == ["POD_NAMESPACE", "POD_NAME"]
    assert "imagePullPolicy" not in plain
    assert "volumeMounts" not in plain
    mount = {"name": "certs", "mountPath": "/certs", "readOnly": True}
    extended = _container(
        env=[{"name": "GADGET_MODE", "value": "fast"}],
        image_pull_policy="IfNotPresent",
        volume_mounts=[mount],
    )
    assert [e["name"] for e in extended["env"]] == ["POD_NAMESPACE", "POD_NAME", "GADGET_MODE"]
    assert extended["imagePullPolicy"] == "IfNotPresent"
    assert extended["volumeMounts"] == [mount]
    # written last, in this order: deploy/'s bytes depend on it
    assert list(extended)[-2:] == ["imagePullPolicy", "volumeMounts"]


def test_the_pod_extras_come_after_its_containers() -> None:
    def pod(
        image_pull_secrets: Sequence[str] = (),
        volumes: Sequence[dict[str, Any]] = (),
        affinity: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        made = manager_deployment(
            "gadget",
            "ops",
            labels=LABELS,
            selector=SELECTOR,
            container=_container(),
            pod_security=manager_pod_security(),
            service_account="gadget",
            affinity=affinity,
            image_pull_secrets=image_pull_secrets,
            volumes=volumes,
        )
        spec: dict[str, Any] = made["spec"]["template"]["spec"]
        return spec

    assert "imagePullSecrets" not in pod()
    assert "volumes" not in pod()
    volume = {"name": "certs", "secret": {"secretName": "gadget-certs"}}
    spec = pod(image_pull_secrets=("regcred",), volumes=[volume], affinity=spread_affinity({}))
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert spec["volumes"] == [volume]
    assert list(spec)[-4:] == ["affinity", "containers", "imagePullSecrets", "volumes"]


def test_the_operators_flags_each_setting_only_when_given() -> None:
    assert manager_args(metrics_port=8443, health_port=8081) == [
        "--leader-elect",
        "--metrics-bind-address=:8443",
        "--health-probe-bind-address=:8081",
        "--log-format=json",
    ]
    every = manager_args(
        metrics_port=8080,
        health_port=8081,
        leader_elect=False,
        sharding=True,
        sync_period="10m",
        log_level="debug",
        concurrency=0,  # given, even if falsy
        metrics_cert_dir="/certs",
        namespaces=["a", "b"],
        enable_all_namespaces=True,
    )
    assert every == [
        "--sharding",
        "--metrics-bind-address=:8080",
        "--health-probe-bind-address=:8081",
        "--log-format=json",
        "--sync-period=10m",
        "--log-level=debug",
        "--concurrency=0",
        "--metrics-cert-dir=/certs",
        "--namespace=a",
        "--namespace=b",
        "--enable-all-namespaces",
    ]


def test_the_flags_are_the_sdk_operators_own() -> None:
    """Every flag an install starts the operator with is one the SDK's operator parses."""

    @click.command()
    @operator_flags(OperatorIdentity(project="gadget", domain="gadget.example.com"))
    def command(**_: object) -> None:
        """The operator's command line."""

    known = {opt for param in command.params for opt in param.opts + param.secondary_opts}
    every = manager_args(
        metrics_port=1,
        health_port=2,
        sharding=True,
        sync_period="1m",
        log_level="info",
        concurrency=1,
        metrics_cert_dir="/c",
        namespaces=["a"],
        enable_all_namespaces=True,
    )
    assert {arg.split("=")[0] for arg in every} <= known


def test_a_namespace_enforces_a_pod_security_level_only_when_told() -> None:
    assert namespace_object("ops", LABELS)["metadata"]["labels"] == LABELS
    restricted = namespace_object("ops", LABELS, pod_security="restricted")
    assert restricted["metadata"]["labels"] == {
        **LABELS,
        "pod-security.kubernetes.io/enforce": "restricted",
    }
    with pytest.raises(ValueError, match="pod_security 'strict' is not one of privileged, "):
        namespace_object("ops", LABELS, pod_security="strict")


def test_the_operators_grants_are_cluster_wide_or_in_one_namespace() -> None:
    rules = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]
    role, bound = manager_grants("gadget", rules, account=("ops", "gadget"), labels=LABELS)
    assert (role["kind"], bound["kind"]) == ("ClusterRole", "ClusterRoleBinding")
    assert role["rules"] == rules
    assert bound["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "gadget",
    }
    assert bound["subjects"] == [{"kind": "ServiceAccount", "name": "gadget", "namespace": "ops"}]
    # a namespace the operator watches (--namespace shop): a Role there, bound to the
    # ServiceAccount of the operator's own namespace
    role, bound = manager_grants(
        "gadget-role",
        rules,
        account=("ops", "gadget"),
        labels=LABELS,
        namespace="shop",
        binding_name="gadget-rolebinding",
    )
    assert (role["kind"], role["metadata"]["namespace"]) == ("Role", "shop")
    assert (bound["kind"], bound["metadata"]["namespace"]) == ("RoleBinding", "shop")
    assert bound["metadata"]["name"] == "gadget-rolebinding"
    assert bound["roleRef"]["name"] == "gadget-role"
    assert bound["subjects"][0]["namespace"] == "ops"


def test_the_alerts_are_one_group_each_in_the_order_given() -> None:
    slow = {"alert": "GadgetSlow", "expr": "gadget_seconds > 1", "for": "5m"}
    down = {"alert": "GadgetDown", "expr": "up == 0"}
    rule = prometheus_rule("gadget", "ops", labels=LABELS, groups={"gadget": [slow, down]})
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"] == {"name": "gadget", "namespace": "ops", "labels": LABELS}
    assert rule["spec"] == {"groups": [{"name": "gadget", "rules": [slow, down]}]}
    two = prometheus_rule("g", "ops", labels={}, groups={"b": [down], "a": [slow]})
    assert [group["name"] for group in two["spec"]["groups"]] == ["b", "a"]
