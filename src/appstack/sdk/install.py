"""The objects of an operator's install, one builder per kind: what a scaffolded project's
``config/`` (:mod:`appstack.sdk.config`) and appstack's own ``deploy/`` and Helm chart
(:mod:`appstack.manifests`) both contain, built here once and parametrised by what differs
between them — names, namespace, labels, selector, ports, the operator's container and
flags, the rules. Neither generator writes these objects itself (a unit test,
``tests/unit/manifests/test_one_generator.py``, keeps it so for ``appstack.manifests``).

The admission webhooks' objects (when the operator declares webhooks) are here too: their
Service (:func:`webhook_service`) and the roles to write their CA bundle and share their
certificate (:func:`webhook_role`, :func:`webhook_cert_role`); the configurations
themselves are :func:`appstack.sdk.kit.webhooks.configurations`.

The RBAC objects wrap the rules of :mod:`appstack.sdk.rbac` (the operator's own role's:
:func:`appstack.sdk.rbac.manager_rules`); the CRDs are :func:`appstack.sdk.crds.crd`, the
admission policies :mod:`appstack.sdk.guards`. Pure: plain dicts, the keys in the order
they are written out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from appstack.sdk.rbac import (
    cluster_role,
    leader_election_rules,
    marker_rule,
    metrics_auth_rules,
    role,
    webhook_configuration_rules,
    webhook_secret_rules,
)

Obj = dict[str, Any]


def service_account(name: str, namespace: str, labels: Mapping[str, str]) -> Obj:
    """The operator's ServiceAccount ``name`` in ``namespace``."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
    }


def namespace_object(name: str, labels: Mapping[str, str]) -> Obj:
    """The Namespace ``name`` the operator runs in (``labels``: e.g. the Pod Security level
    it enforces)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": dict(labels)},
    }


def leader_election_role(
    name: str,
    namespace: str,
    *,
    lease: str,
    domain: str,
    labels: Mapping[str, str],
    sharded: bool = False,
) -> Obj:
    """The Role in the operator's own ``namespace`` for its leader-election Lease ``lease``
    (by name: :func:`appstack.sdk.rbac.leader_election_rules`; ``sharded``: every Lease of
    the namespace, the shard Leases') and the admission guards'
    marker of its ``domain``: the Lease's policy recognises the operator by it in a
    namespaced install too, whose other Roles are only in the namespaces it watches."""
    rules = [*leader_election_rules(lease, sharded=sharded), marker_rule(domain)]
    return role(name, namespace, rules, labels)


def metrics_auth_role(name: str, labels: Mapping[str, str]) -> Obj:
    """The ClusterRole of the reviews behind authenticated ``/metrics`` (TokenReviews and
    SubjectAccessReviews are cluster-scoped: a namespaced install needs it too)."""
    return cluster_role(name, metrics_auth_rules(), labels)


def metrics_reader_role(name: str, labels: Mapping[str, str]) -> Obj:
    """The ClusterRole a scraper (Prometheus' ServiceAccount) is bound to, to read
    ``/metrics``: a non-resource URL, so never a Role."""
    return cluster_role(name, [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}], labels)


#: The label that aggregates a ClusterRole into the cluster's role of that name.
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"


def user_role(
    name: str,
    group: str,
    plurals: Sequence[str],
    verbs: Sequence[str],
    *,
    aggregate_to: Sequence[str] = (),
    labels: Mapping[str, str],
) -> Obj:
    """A ClusterRole for the people who use the operator's kinds (kubebuilder's
    ``<kind>_admin/editor/viewer_role``): ``verbs`` on ``plurals`` of ``group`` and ``get``
    on their status, aggregated into each of the cluster's roles named in ``aggregate_to``
    (``admin``, ``edit``, ``view``), so a namespace's editors use the kinds with no binding
    of the operator's."""
    rules = [
        {"apiGroups": [group], "resources": list(plurals), "verbs": list(verbs)},
        {"apiGroups": [group], "resources": [f"{p}/status" for p in plurals], "verbs": ["get"]},
    ]
    aggregated = {f"{AGGREGATE_TO}{into}": "true" for into in aggregate_to}
    return cluster_role(name, rules, {**labels, **aggregated})


def metrics_service(
    name: str,
    namespace: str,
    *,
    labels: Mapping[str, str],
    selector: Mapping[str, str],
    port: int,
    port_name: str,
    target_port: int | str,
) -> Obj:
    """The Service in front of the operator's ``/metrics`` (what a ServiceMonitor scrapes):
    ``port`` named ``port_name`` to the pods' ``target_port`` (a number or a port's name)."""
    ports = [{"name": port_name, "port": port, "protocol": "TCP", "targetPort": target_port}]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"ports": ports, "selector": dict(selector)},
    }


def manager_deployment(
    name: str,
    namespace: str,
    *,
    labels: Mapping[str, str],
    selector: Mapping[str, str],
    container: Obj,
    pod_security: Obj,
    service_account: str,
    replicas: int | str = 1,
    affinity: Obj | None = None,
    pod: Mapping[str, Any] | None = None,
) -> Obj:
    """The operator's Deployment: ``replicas`` pods selected by ``selector`` (also among
    their ``labels``), each running ``container`` (:func:`~appstack.sdk.manager_container`)
    as ``service_account`` with ``pod_security`` (:func:`~appstack.sdk.manager_pod_security`),
    30 s to shut down; ``affinity`` and the rest of the ``pod`` spec as given."""
    template_labels = {**labels, **selector}
    spec: Obj = {
        "serviceAccountName": service_account,
        "securityContext": pod_security,
        "terminationGracePeriodSeconds": 30,
        **({"affinity": affinity} if affinity else {}),
        "containers": [container],
        **(pod or {}),
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": template_labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(selector)},
            "template": {"metadata": {"labels": dict(template_labels)}, "spec": spec},
        },
    }


def service_monitor(
    name: str,
    namespace: str,
    *,
    labels: Mapping[str, str],
    selector: Mapping[str, str],
    endpoints: Sequence[Obj],
    namespaces: Sequence[str] = (),
) -> Obj:
    """The Prometheus Operator's ServiceMonitor: scrape ``endpoints`` (each a port of the
    metrics Service, with its path, scheme, token and TLS settings) of the Services
    selected by ``selector`` — in ``namespaces`` if given, else in the monitor's own."""
    spec: Obj = {"endpoints": list(endpoints), "selector": {"matchLabels": dict(selector)}}
    if namespaces:
        spec["namespaceSelector"] = {"matchNames": list(namespaces)}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": spec,
    }


#: The webhook server's container port and its name (the webhook Service's target).
WEBHOOK_PORT = 9443
WEBHOOK_PORT_NAME = "webhook-server"


def webhook_service(
    name: str,
    namespace: str,
    *,
    labels: Mapping[str, str],
    selector: Mapping[str, str],
    target_port: int | str = WEBHOOK_PORT_NAME,
) -> Obj:
    """The Service the API server calls the operator's admission webhooks through: port
    443 to the pods' ``target_port`` (the container port :data:`WEBHOOK_PORT_NAME`)."""
    ports = [{"port": 443, "protocol": "TCP", "targetPort": target_port}]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"ports": ports, "selector": dict(selector)},
    }


def webhook_role(
    name: str, *, validating: str | None, mutating: str | None, labels: Mapping[str, str]
) -> Obj:
    """The ClusterRole to write the CA bundle into the operator's own webhook
    configurations, by name (:func:`appstack.sdk.rbac.webhook_configuration_rules`)."""
    return cluster_role(name, webhook_configuration_rules(validating, mutating), labels)


def webhook_cert_role(name: str, namespace: str, *, secret: str, labels: Mapping[str, str]) -> Obj:
    """The Role in the operator's own ``namespace`` for the Secret its replicas share their
    webhook serving certificate in (:func:`appstack.sdk.rbac.webhook_secret_rules`)."""
    return role(name, namespace, webhook_secret_rules(secret), labels)
