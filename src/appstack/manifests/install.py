"""What one install consists of, for given :class:`InstallOptions`: the operator's
namespace and image, and either a cluster-wide install (a ClusterRole, the operator
watching every namespace) or a namespaced one (a Role + RoleBinding in each watched
namespace, the operator started with ``--namespace`` for each). Pure.

Used by ``appstack manifests`` (deploy/, stdout, the Helm chart's expected output) and by
the e2e tests, which apply exactly these objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from appstack.controllers.rbac import operator_rules
from appstack.core import defaults
from appstack.core.duration import DEFAULT_SYNC_PERIOD
from appstack.manifests import admission, crds, rbac, workload
from appstack.sdk import HelmText, process_rules

#: The fewest shards a sharded install runs (the chart's autoscaling.minReplicas' too).
SHARDS_MIN = HelmText.SHARDS_MIN

Obj = dict[str, Any]


def check_autoscale(low: int, high: int) -> None:
    """``ValueError`` unless ``low``:``high`` are an autoscaled install's bounds (its fewest
    and most shards): ``appstack manifests --autoscale`` says the same."""
    if low < SHARDS_MIN or high < low:
        raise ValueError(f"at least {SHARDS_MIN} shards, MAX not below MIN")


@dataclass(frozen=True)
class InstallOptions:
    """Where the operator runs, which image, which namespaces it watches (none: all), and
    its ``--sync-period``."""

    namespace: str = rbac.NAMESPACE
    image: str = workload.IMAGE
    watch_namespaces: tuple[str, ...] = ()
    replicas: int = 2
    sync_period: str = DEFAULT_SYNC_PERIOD
    #: Act in every namespace, not only those labelled ``appstack.dev/enabled=true``.
    enable_all_namespaces: bool = False
    log_level: str = defaults.LOG_LEVEL
    concurrency: int = defaults.CONCURRENCY
    metrics_cert_secret: str | None = None
    flags: workload.OperatorFlags = field(default_factory=workload.OperatorFlags)
    #: Sharded (docs/sharding.md): this many replicas, each active on its own share of the
    #: objects (``--sharding``), with the RBAC and guards that needs; 0: not sharded.
    shards: int = 0
    #: Sharded and autoscaled: (fewest, most) shards, set by a HorizontalPodAutoscaler (the
    #: Deployment then has no replicas of its own); None: ``shards`` replicas, fixed.
    autoscale: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.autoscale is None:
            return
        if not self.sharded:
            raise ValueError("autoscaling needs a sharded install (shards)")
        check_autoscale(*self.autoscale)

    @property
    def cluster_wide(self) -> bool:
        return not self.watch_namespaces

    @property
    def sharded(self) -> bool:
        return self.shards > 0


@dataclass(frozen=True)
class Install:
    """The objects of one install, grouped as deploy/ lays them out."""

    namespace: Obj
    crds: list[Obj]
    service_account: Obj
    rbac: list[Obj] = field(default_factory=list)
    admission: list[Obj] = field(default_factory=list)
    deployment: Obj = field(default_factory=dict)
    budget: Obj = field(default_factory=dict)
    metrics_service: Obj = field(default_factory=dict)
    #: Autoscaled: the HorizontalPodAutoscaler of the Deployment; else empty.
    autoscaler: Obj = field(default_factory=dict)

    def workload(self) -> list[Obj]:
        """The Deployment and what goes with it (deploy/operator.yaml)."""
        scaled = [self.autoscaler] if self.autoscaler else []
        return [self.deployment, self.budget, *scaled, self.metrics_service]

    def objects(self) -> list[Obj]:
        """Everything, in the order it can be applied."""
        return [
            self.namespace,
            *self.crds,
            self.service_account,
            *self.rbac,
            *self.admission,
            *self.workload(),
        ]


def cluster_wide_rbac(namespace: str, *, sharded: bool = False) -> list[Obj]:
    """A cluster-wide install's own grants: the ClusterRole + binding (every namespace,
    :func:`appstack.sdk.manager_grants`)."""
    return rbac.grants(namespace, operator_rules(sharded=sharded))


def watched_rbac(watched: str, namespace: str, *, sharded: bool = False) -> list[Obj]:
    """A namespaced install's grants in one watched namespace: a Role + RoleBinding."""
    rules = operator_rules(cluster_wide=False, sharded=sharded)
    return rbac.grants(namespace, rules, watched=watched)


def own_namespace_rbac(namespace: str) -> list[Obj]:
    """A namespaced install's Role in its own namespace (for its Events, ...: the SDK's
    :func:`~appstack.sdk.process_rules`), needed unless that namespace is also watched."""
    return rbac.grants(namespace, process_rules(cluster_wide=False), watched=namespace)


def metrics_auth_rbac(namespace: str) -> list[Obj]:
    """The reviews that guard /metrics, a ClusterRole of their own in every install (as
    ``config/``'s): a namespaced install's only cluster-wide grant, and what the chart keeps
    when ``watchNamespaces`` turns the operator's ClusterRole into Roles."""
    return [
        rbac.metrics_auth_cluster_role(namespace),
        rbac.metrics_auth_cluster_role_binding(namespace),
    ]


def common_rbac(namespace: str, *, sharded: bool = False) -> list[Obj]:
    """Every install: the leader-election Role (the Lease, by name, in the operator's
    namespace; sharded, every Lease there), the metrics-reader ClusterRole for scrapers,
    the editor and viewer
    ClusterRoles of our kinds (aggregated into ``admin``/``edit`` and ``view``), and the
    FlowSchema that gives the operator's Lease requests the leader-election priority."""
    return [
        rbac.leader_election_role(namespace, sharded=sharded),
        rbac.leader_election_role_binding(namespace, namespace),
        rbac.metrics_reader(namespace),
        *rbac.user_roles(namespace),
        admission.enabler_role(namespace),
        rbac.lease_flow_schema(namespace),
    ]


def rbac_objects(options: InstallOptions) -> list[Obj]:
    """A ClusterRole + binding, or a Role + RoleBinding per watched namespace (plus one in
    the operator's own namespace unless watched); the /metrics reviews' ClusterRole
    (:func:`metrics_auth_rbac`); then, always, :func:`common_rbac`. The Helm chart
    templates the same functions (:mod:`appstack.manifests.chart`)."""
    namespace, sharded = options.namespace, options.sharded
    if options.cluster_wide:
        return [
            *cluster_wide_rbac(namespace, sharded=sharded),
            *metrics_auth_rbac(namespace),
            *common_rbac(namespace, sharded=sharded),
        ]
    objects: list[Obj] = []
    for watched in options.watch_namespaces:
        objects += watched_rbac(watched, namespace, sharded=sharded)
    if namespace not in options.watch_namespaces:
        objects += own_namespace_rbac(namespace)
    return [*objects, *metrics_auth_rbac(namespace), *common_rbac(namespace, sharded=sharded)]


def install(options: InstallOptions | None = None) -> Install:
    """The install for ``options`` (default: cluster-wide in appstack-system)."""
    options = options or InstallOptions()
    return Install(
        namespace=workload.namespace(options.namespace),
        crds=crds.all_crds(),
        service_account=rbac.service_account(options.namespace),
        rbac=rbac_objects(options),
        admission=admission.policies(
            options.namespace,
            enable_all=options.enable_all_namespaces,
            sharded=options.sharded,
        ),
        deployment=workload.deployment(
            options.image,
            namespace=options.namespace,
            watch_namespaces=options.watch_namespaces,
            # autoscaled: none of its own, the autoscaler's to set
            replicas=None if options.autoscale else options.shards or options.replicas,
            sharding=options.sharded,
            sync_period=options.sync_period,
            log_level=options.log_level,
            concurrency=options.concurrency,
            metrics_cert_secret=options.metrics_cert_secret,
            enable_all_namespaces=options.enable_all_namespaces,
            flags=options.flags,
        ),
        budget=workload.disruption_budget(options.namespace),
        metrics_service=workload.metrics_service(options.namespace),
        autoscaler=(
            workload.autoscaler(*options.autoscale, options.namespace)
            if options.autoscale is not None
            else {}
        ),
    )
