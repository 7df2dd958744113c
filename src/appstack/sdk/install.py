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

What an install may add beyond a scaffolded ``config/`` has its builder here too, for any
operator built on the SDK: the PodDisruptionBudget of a replicated operator
(:func:`disruption_budget`), its replicas kept on different nodes
(:func:`spread_affinity`), the HorizontalPodAutoscaler that sets a sharded operator's
replicas — its shards — from its load (:func:`autoscaler`, :func:`cpu_utilization`,
:data:`SHARD_SCALING_BEHAVIOR`), the API Priority and Fairness FlowSchema that gives its Lease
requests the cluster's ``leader-election`` priority (:func:`lease_flow_schema`), and the
container's and pod's extras (``env``, ``image_pull_policy``, ``volume_mounts`` of
:func:`~appstack.sdk.manager_container`; ``image_pull_secrets``, ``volumes`` of
:func:`manager_deployment`) — appstack's ``deploy/`` and chart use them all.

The RBAC objects wrap the rules of :mod:`appstack.sdk.rbac` (the operator's own role's:
:func:`appstack.sdk.rbac.manager_rules`); the CRDs are :func:`appstack.sdk.crds.crd`, the
admission policies :mod:`appstack.sdk.guards`. Pure: plain dicts, the keys in the order
they are written out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from appstack.sdk.rbac import (
    Rule,
    binding,
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


#: The Pod Security Standards' levels (``pod-security.kubernetes.io/enforce``).
POD_SECURITY_LEVELS = ("privileged", "baseline", "restricted")
POD_SECURITY_ENFORCE = "pod-security.kubernetes.io/enforce"


def config_map(
    name: str, namespace: str, data: Mapping[str, str], labels: Mapping[str, str] | None = None
) -> Obj:
    """A ConfigMap of ``data`` (file or key → text), with ``labels`` if given."""
    metadata: Obj = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": dict(data)}


def namespace_object(
    name: str, labels: Mapping[str, str], *, pod_security: str | None = None
) -> Obj:
    """The Namespace ``name`` the operator runs in, with ``labels`` and, if given, the Pod
    Security level it enforces (``pod_security``: ``restricted`` admits the operator's own
    pod, :func:`~appstack.sdk.manager_pod_security`, and refuses anything less locked
    down); another level than :data:`POD_SECURITY_LEVELS` is a ValueError."""
    if pod_security is not None and pod_security not in POD_SECURITY_LEVELS:
        levels = ", ".join(POD_SECURITY_LEVELS)
        raise ValueError(f"namespace_object: pod_security {pod_security!r} is not one of {levels}")
    enforce = {POD_SECURITY_ENFORCE: pod_security} if pod_security else {}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {**labels, **enforce}},
    }


def manager_grants(
    name: str,
    rules: list[Rule],
    *,
    account: tuple[str, str],
    labels: Mapping[str, str],
    namespace: str | None = None,
    binding_name: str | None = None,
) -> list[Obj]:
    """The operator's own role of ``rules`` (:func:`appstack.sdk.rbac.manager_rules`) and
    its binding to ServiceAccount ``account`` (namespace, name): a ClusterRole and
    ClusterRoleBinding when ``namespace`` is None (the operator watches every namespace), or
    a Role and RoleBinding in ``namespace`` — each namespace an operator started with
    ``--namespace`` watches gets such a pair (rules derived with ``cluster_wide=False``),
    and its own namespace one of :func:`appstack.sdk.rbac.process_rules` if it does not
    watch it. The binding is named ``binding_name``, or as the role."""
    made = role(name, namespace, rules, labels) if namespace else cluster_role(name, rules, labels)
    return [made, binding(binding_name or name, made, account, labels)]


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
    return cluster_role(name, [METRICS_READ_RULE], labels)


#: The label that aggregates a ClusterRole into the cluster's role of that name.
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"


#: The roles of the people who use an operator's kinds, by access (kubebuilder's
#: ``<kind>_admin/editor/viewer_role``): the verbs on the kinds, and the cluster's roles
#: each is aggregated into — a namespace's editors use the kinds with no binding of the
#: operator's. The editor has what the cluster's ``edit`` has on its own kinds
#: (``deletecollection`` too); the admin is bound by hand (everything, aggregated nowhere).
USER_ROLES: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "admin": (("*",), ()),
    "editor": (
        ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
        ("admin", "edit"),
    ),
    "viewer": (("get", "list", "watch"), ("view",)),
}


def user_role(
    name: str, group: str, plurals: Sequence[str], access: str, *, labels: Mapping[str, str]
) -> Obj:
    """The ClusterRole ``name`` of the people who use ``plurals`` of ``group`` with
    ``access`` (a key of :data:`USER_ROLES`: its verbs on them, ``get`` on their status, and
    its aggregation into the cluster's roles). ``KeyError`` for another access."""
    verbs, aggregate_to = USER_ROLES[access]
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
    return _service(name, namespace, labels, selector, ports)


def _service(
    name: str,
    namespace: str,
    labels: Mapping[str, str],
    selector: Mapping[str, str],
    ports: list[Obj],
) -> Obj:
    """A Service of ``ports`` to the pods ``selector`` selects."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"ports": ports, "selector": dict(selector)},
    }


def manager_args(
    *,
    metrics_port: int,
    health_port: int,
    leader_elect: bool = True,
    sharding: bool = False,
    sync_period: str | None = None,
    log_level: str | None = None,
    concurrency: int | str | None = None,
    metrics_cert_dir: str | None = None,
    namespaces: Sequence[str] = (),
    enable_all_namespaces: bool = False,
) -> list[str]:
    """The flags an install starts the operator with (the SDK's own,
    :mod:`appstack.sdk.flags`), in this order: leader election (``--leader-elect``;
    ``sharding``: ``--sharding``, docs/sharding.md), ``/metrics`` and the health probes on
    ``metrics_port`` and ``health_port``, JSON logs; then each setting given
    (``--sync-period``, ``--log-level``, ``--concurrency``, ``--metrics-cert-dir``: where a
    certificate Secret is mounted), ``--namespace`` for each of ``namespaces`` (none: every
    namespace its RBAC lets it watch) and ``--enable-all-namespaces``."""
    settings = (
        ("sync-period", sync_period),
        ("log-level", log_level),
        ("concurrency", concurrency),
        ("metrics-cert-dir", metrics_cert_dir),
    )
    return [
        *(["--leader-elect"] if leader_elect else []),
        *(["--sharding"] if sharding else []),
        f"--metrics-bind-address=:{metrics_port}",
        f"--health-probe-bind-address=:{health_port}",
        "--log-format=json",
        *(f"--{flag}={value}" for flag, value in settings if value is not None),
        *(f"--namespace={namespace}" for namespace in namespaces),
        *(["--enable-all-namespaces"] if enable_all_namespaces else []),
    ]


def manager_deployment(
    name: str,
    namespace: str,
    *,
    labels: Mapping[str, str],
    selector: Mapping[str, str],
    container: Obj,
    pod_security: Obj,
    service_account: str,
    replicas: int | str | None = 1,
    affinity: Obj | None = None,
    image_pull_secrets: Sequence[str] = (),
    volumes: Sequence[Obj] = (),
    pod: Mapping[str, Any] | None = None,
) -> Obj:
    """The operator's Deployment: ``replicas`` pods (None: no ``replicas`` of its own, for
    a HorizontalPodAutoscaler to set: :func:`autoscaler`) selected by ``selector`` (also
    among their ``labels``), each running ``container`` (:func:`~appstack.sdk.manager_container`)
    as ``service_account`` with ``pod_security`` (:func:`~appstack.sdk.manager_pod_security`),
    30 s to shut down; ``affinity`` (e.g. :func:`spread_affinity`), the Secrets its image
    is pulled with (``image_pull_secrets``, by name: a private registry), the pod's
    ``volumes`` (what the container's ``volume_mounts`` name) and the rest of the ``pod``
    spec as given."""
    template_labels = {**labels, **selector}
    spec: Obj = {
        "serviceAccountName": service_account,
        "securityContext": pod_security,
        "terminationGracePeriodSeconds": 30,
        **({"affinity": affinity} if affinity else {}),
        "containers": [container],
        **(
            {"imagePullSecrets": [{"name": name} for name in image_pull_secrets]}
            if image_pull_secrets
            else {}
        ),
        **({"volumes": list(volumes)} if volumes else {}),
        **(pod or {}),
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": template_labels},
        "spec": {
            **({"replicas": replicas} if replicas is not None else {}),
            "selector": {"matchLabels": dict(selector)},
            "template": {"metadata": {"labels": dict(template_labels)}, "spec": spec},
        },
    }


#: The label of the node a pod runs on: replicas spread over it are on different nodes.
HOSTNAME_TOPOLOGY = "kubernetes.io/hostname"
#: The largest weight of a preferred scheduling term.
MAX_WEIGHT = 100


def spread_affinity(
    selector: Mapping[str, str], *, topology_key: str = HOSTNAME_TOPOLOGY, weight: int = 100
) -> Obj:
    """A pod ``affinity`` that prefers (``weight`` of 100 at most) the operator's replicas —
    the pods ``selector`` selects — on different values of ``topology_key`` (by default
    different nodes): a node lost then takes the leader or a standby, not both. Preferred,
    not required: a one-node cluster still runs every replica. A ``weight`` outside 1..100
    (what the API server accepts) is a ValueError."""
    if not 1 <= weight <= MAX_WEIGHT:
        raise ValueError(f"spread_affinity: weight {weight} is not between 1 and {MAX_WEIGHT}")
    term = {"labelSelector": {"matchLabels": dict(selector)}, "topologyKey": topology_key}
    preferred = [{"weight": weight, "podAffinityTerm": term}]
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}


def disruption_budget(
    name: str,
    namespace: str,
    *,
    labels: Mapping[str, str],
    selector: Mapping[str, str],
    max_unavailable: int | str = 1,
) -> Obj:
    """The PodDisruptionBudget of a replicated operator: at most ``max_unavailable`` (a
    number or a percentage) of the pods ``selector`` selects evicted at a time (a drain
    leaves a standby to lead); labelled, as :func:`manager_deployment`, with ``labels`` and
    the selector's."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "labels": {**labels, **selector}},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": dict(selector)}},
    }


#: How an operator's replicas follow its load when it is sharded (every replica a shard):
#: one pod more or less a minute at most, and a scale-down only after five minutes of less
#: load — each step moves keys between shards (docs/sharding.md), so steps are few and
#: none is taken back at once.
SHARD_SCALING_BEHAVIOR: Obj = {
    "scaleUp": {
        "stabilizationWindowSeconds": 60,
        "selectPolicy": "Min",
        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
    },
    "scaleDown": {
        "stabilizationWindowSeconds": 300,
        "selectPolicy": "Min",
        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 120}],
    },
}


def autoscaler(
    name: str,
    namespace: str,
    *,
    labels: Mapping[str, str],
    deployment: str,
    min_replicas: int | str,
    max_replicas: int | str,
    metrics: Sequence[Mapping[str, Any]] | str,
    behavior: Mapping[str, Any] | str = SHARD_SCALING_BEHAVIOR,
) -> Obj:
    """The HorizontalPodAutoscaler (``autoscaling/v2``) of a sharded operator's Deployment
    ``deployment``: between ``min_replicas`` and ``max_replicas`` replicas — shards — as
    ``metrics`` say (e.g. :func:`cpu_utilization`), at the pace ``behavior`` allows
    (default :data:`SHARD_SCALING_BEHAVIOR`). Its Deployment then leaves ``replicas``
    unset, so that applying the install again does not undo the autoscaler's choice."""
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": metrics if isinstance(metrics, str) else [dict(m) for m in metrics],
            "behavior": behavior if isinstance(behavior, str) else dict(behavior),
        },
    }


def cpu_utilization(percent: int | str) -> list[Obj]:
    """:func:`autoscaler`'s metrics for a target of ``percent`` % of the pods' CPU requests."""
    target = {"type": "Utilization", "averageUtilization": percent}
    return [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]


#: The cluster's built-in priority level kube-controller-manager's and kube-scheduler's
#: leader elections use, and the precedence just before its FlowSchema's (200).
LEADER_ELECTION_PRIORITY = "leader-election"
LEASE_FLOW_PRECEDENCE = 190
#: The catch-all FlowSchema's precedence: one at or above it never matches first.
MAX_PRECEDENCE = 10000
#: What a leader election does with its Lease (renewing it is an ``update``).
LEASE_FLOW_VERBS = ("get", "create", "update")


def lease_flow_schema(
    name: str,
    *,
    account: tuple[str, str],
    labels: Mapping[str, str],
    precedence: int = LEASE_FLOW_PRECEDENCE,
) -> Obj:
    """API Priority and Fairness for the operator's leader election: the Lease requests of
    ServiceAccount ``account`` (namespace, name) go to the cluster's built-in
    ``leader-election`` priority level, as kube-controller-manager's do, so renewals never
    queue behind a flood of writes on a busy API server (a leader that cannot renew stops
    writing). ``precedence``: lower matches first (190: before the built-in
    ``workload-leader-election``, 200). Cluster-scoped; not a permission. Its Leases are
    matched in every namespace (``*``): its RBAC keeps them in its own, and a kustomize
    overlay that moves that namespace keeps matching. A ``precedence`` outside 1..9999
    (10000 is the API server's own ``catch-all``) is a ValueError."""
    if not 1 <= precedence < MAX_PRECEDENCE:
        raise ValueError(
            f"lease_flow_schema: precedence {precedence} is not between 1 and {MAX_PRECEDENCE - 1}"
        )
    account_namespace, account_name = account
    subject = {
        "kind": "ServiceAccount",
        "serviceAccount": {"name": account_name, "namespace": account_namespace},
    }
    leases = {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": list(LEASE_FLOW_VERBS),
        "namespaces": ["*"],
    }
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {
            "priorityLevelConfiguration": {"name": LEADER_ELECTION_PRIORITY},
            "matchingPrecedence": precedence,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [subject], "resourceRules": [leases]}],
        },
    }


#: kustomize's name reference for :func:`lease_flow_schema` (a ``configurations:`` entry's
#: ``nameReference``): a ``namePrefix`` that renames the operator's ServiceAccount renames
#: the FlowSchema's subject with it (kustomize does not know FlowSchemas).
LEASE_FLOW_REFERENCE = {
    "kind": "ServiceAccount",
    "version": "v1",
    "fieldSpecs": [
        {
            "kind": "FlowSchema",
            "group": "flowcontrol.apiserver.k8s.io",
            "path": "spec/rules/subjects/serviceAccount/name",
        }
    ],
}


#: The one rule of the metrics-reader ClusterRole (:func:`metrics_reader_role`): ``get`` on
#: ``/metrics``, what a scraper's account is bound to.
METRICS_READ_RULE = {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}

#: Where the operator's container mounts a metrics certificate Secret (``--metrics-cert-dir``):
#: kubebuilder's path, in every SDK operator's chart and appstack's install.
METRICS_CERT_DIR = "/tmp/k8s-metrics-server/metrics-certs"  # noqa: S108 - a mount point

#: Where a pod finds its own ServiceAccount token: what a ServiceMonitor's scraper sends.
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"  # noqa: S105


def metrics_tls(ca_secret: str | None = None, server_name: str | None = None) -> Obj:
    """How a scraper checks the operator's ``/metrics`` certificate: against ``ca.crt`` of
    ``ca_secret`` (as cert-manager writes it) for ``server_name``, or — the operator's
    self-signed certificate, the default — not at all."""
    if not ca_secret:
        return {"insecureSkipVerify": True}
    return {"ca": {"secret": {"name": ca_secret, "key": "ca.crt"}}, "serverName": server_name}


def metrics_endpoint(
    port: str,
    *,
    secure: bool = True,
    interval: str | None = None,
    ca_secret: str | None = None,
    server_name: str | None = None,
) -> Obj:
    """A ServiceMonitor endpoint for an operator's ``/metrics`` on the metrics Service's
    ``port``: the scraper's own ServiceAccount token sent (``/metrics`` answers 401
    without one, 403 unless its account may read it), every ``interval`` if given, over
    HTTPS (:func:`metrics_tls`) unless ``secure`` is False (``--no-metrics-secure``)."""
    endpoint: Obj = {
        "port": port,
        "path": "/metrics",
        **({"interval": interval} if interval else {}),
        "bearerTokenFile": SERVICE_ACCOUNT_TOKEN,
        "scheme": "https" if secure else "http",
    }
    if secure:
        endpoint["tlsConfig"] = metrics_tls(ca_secret, server_name)
    return endpoint


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


def prometheus_rule(
    name: str,
    namespace: str,
    *,
    labels: Mapping[str, str],
    groups: Mapping[str, Sequence[Obj]],
) -> Obj:
    """The Prometheus Operator's PrometheusRule of the operator's alerts: each group name
    of ``groups`` with its rules (``alert``, ``expr``, ``for``, ``labels``,
    ``annotations``, as Prometheus reads them), in the order given."""
    spec = {"groups": [{"name": group, "rules": list(rules)} for group, rules in groups.items()]}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
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
    return _service(name, namespace, labels, selector, ports)


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
