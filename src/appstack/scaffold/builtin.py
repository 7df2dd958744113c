"""Kubernetes' own API groups and kinds, as ``appstack create api`` reads ``--group``: a
built-in group — kubebuilder's names (``core`` for the core group ``""``, ``apps``,
``batch``, ``networking`` for ``networking.k8s.io``, ``rbac.authorization``...) or the
group's full name (``networking.k8s.io``) — is used as it is, never suffixed with the
project's domain, and a kind of it gets a controller of any kind
(:class:`~appstack.sdk.ObjectReconciler`), never a CRD. The kinds of ``core/v1``,
``apps/v1`` and ``batch/v1`` are known (plural, scope), so a kind or version those groups
do not serve is refused; in the other groups any kind is taken, its plural by kubebuilder's
rule unless ``--plural``. Pure data and lookups, used by :mod:`appstack.scaffold.commands`.
"""

from __future__ import annotations

from dataclasses import dataclass

#: kubebuilder's core groups (its ``coreGroups``): the ``--group`` name -> the domain that
#: completes the API group ("": the name alone; ``core`` is the core group, ``""``).
GROUPS: dict[str, str] = {
    "admission": "k8s.io",
    "admissionregistration": "k8s.io",
    "apiextensions": "k8s.io",
    "apps": "",
    "auditregistration": "k8s.io",
    "authentication": "k8s.io",
    "authorization": "k8s.io",
    "autoscaling": "",
    "batch": "",
    "certificates": "k8s.io",
    "coordination": "k8s.io",
    "core": "",
    "discovery": "k8s.io",
    "events": "k8s.io",
    "extensions": "",
    "imagepolicy": "k8s.io",
    "metrics": "k8s.io",
    "networking": "k8s.io",
    "node": "k8s.io",
    "policy": "",
    "rbac.authorization": "k8s.io",
    "scheduling": "k8s.io",
    "setting": "k8s.io",
    "storage": "k8s.io",
}


@dataclass(frozen=True)
class Served:
    """A kind a built-in group serves: its plural and scope."""

    plural: str
    namespaced: bool = True


def _kinds(namespaced: dict[str, str], cluster: dict[str, str] | None = None) -> dict[str, Served]:
    kinds = {kind: Served(plural) for kind, plural in namespaced.items()}
    kinds.update({kind: Served(plural, False) for kind, plural in (cluster or {}).items()})
    return kinds


#: The kinds of the groups checked, by API group: (its versions, its kinds).
KNOWN: dict[str, tuple[tuple[str, ...], dict[str, Served]]] = {
    "": (
        ("v1",),
        _kinds(
            {
                "ConfigMap": "configmaps",
                "Endpoints": "endpoints",
                "Event": "events",
                "LimitRange": "limitranges",
                "PersistentVolumeClaim": "persistentvolumeclaims",
                "Pod": "pods",
                "PodTemplate": "podtemplates",
                "ReplicationController": "replicationcontrollers",
                "ResourceQuota": "resourcequotas",
                "Secret": "secrets",
                "Service": "services",
                "ServiceAccount": "serviceaccounts",
            },
            {"Namespace": "namespaces", "Node": "nodes", "PersistentVolume": "persistentvolumes"},
        ),
    ),
    "apps": (
        ("v1",),
        _kinds(
            {
                "ControllerRevision": "controllerrevisions",
                "DaemonSet": "daemonsets",
                "Deployment": "deployments",
                "ReplicaSet": "replicasets",
                "StatefulSet": "statefulsets",
            }
        ),
    ),
    "batch": (("v1",), _kinds({"CronJob": "cronjobs", "Job": "jobs"})),
}


@dataclass(frozen=True)
class BuiltinGroup:
    """A built-in group as the ``PROJECT`` file records it (kubebuilder's ``group`` and
    ``domain``, ``core: true``)."""

    name: str
    domain: str

    @property
    def api_group(self) -> str:
        """The API group: ``""`` for ``core``, else the name and its domain."""
        return api_group(self.name, self.domain)


def api_group(name: str, domain: str) -> str:
    """The API group of a built-in group recorded as ``name`` and ``domain``."""
    if name == "core":
        return ""
    return f"{name}.{domain}" if domain else name


def builtin_group(group: str) -> BuiltinGroup | None:
    """The built-in group ``--group`` names (kubebuilder's name, or the full API group:
    ``networking`` or ``networking.k8s.io``), or None: a group of the project's own."""
    if group in GROUPS:
        return BuiltinGroup(group, GROUPS[group])
    for name, domain in GROUPS.items():
        if domain and group == f"{name}.{domain}":
            return BuiltinGroup(name, domain)
    return None


def served(group: BuiltinGroup, version: str, kind: str) -> Served | str | None:
    """What ``group``'s ``version`` serves of ``kind``: its :class:`Served` entry; None
    when the group's kinds are not known here (any kind is taken); or, as a string, why it
    is not served (``--version`` or ``--kind`` named first)."""
    known = KNOWN.get(group.api_group)
    if known is None:
        return None
    versions, kinds = known
    shown = group.api_group or "core"
    if version not in versions:
        return f"--version {version}: the {shown} API group serves {', '.join(versions)}"
    if kind not in kinds:
        return (
            f"--kind {kind}: {shown}/{version} serves no {kind} (it serves "
            f"{', '.join(sorted(kinds))}); a kind of your own needs a group of your own"
        )
    return kinds[kind]
