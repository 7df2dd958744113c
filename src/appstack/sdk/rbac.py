"""RBAC rules as controllers declare them: explicit verbs on one resource, no wildcards —
and the rules *derived* from a controller's declaration, as controller-tools derives them
from kubebuilder markers, but from the code itself.

:func:`rule` names a resource the way the API server routes it (the descriptor's group and
plural); :func:`own_rules` are what every controller needs on its own kind (read and
watch it, patch its status, block its deletion from its children). Under
OwnerReferencesPermissionEnforcement, writing a child's ownerReferences also needs
``delete`` on the child, so every kind a controller creates with an owner is deletable.
:func:`derived_rules` is a controller's whole Role from what it declares (``for_``,
``owns``, ``watches`` and explicit extras), merged per resource; :func:`cluster_role` and
:func:`role` wrap rules in RBAC objects. :func:`manager_rules` is the operator's own
(Cluster)Role — a scaffolded project's ``manager-role`` and appstack's ClusterRole alike.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from appstack.core.resource import Resource
from appstack.sdk.kind import CustomKind

Rule = dict[str, Any]


def rule(resource: Resource, *verbs: str, subresource: str | None = None) -> Rule:
    """One rule: ``verbs`` on ``resource`` (or its ``subresource``), nothing else."""
    plural = f"{resource.plural}/{subresource}" if subresource else resource.plural
    return {"apiGroups": [resource.group], "resources": [plural], "verbs": list(verbs)}


def own_rules(kind: CustomKind, *, finalizer: bool = False) -> list[Rule]:
    """Read and watch ``kind`` (and patch it, for a ``finalizer``), patch its status, and
    ``update`` its ``finalizers`` subresource: our children's ownerReferences set
    ``blockOwnerDeletion``, which the OwnerReferencesPermissionEnforcement admission
    plugin (OpenShift, and our test bed) allows only to whoever may update the owner's
    finalizers. Nothing calls that subresource; the grant is checked, never used."""
    verbs = ("get", "list", "watch", "patch") if finalizer else ("get", "list", "watch")
    return [
        rule(kind.resource, *verbs),
        rule(kind.resource, "patch", subresource="status"),
        rule(kind.resource, "update", subresource="finalizers"),
    ]


#: What a controller does with the children it owns: creates and server-side applies them,
#: deletes them (pruning; and setting their ownerReference needs it), reads them.
CHILD_VERBS = ("get", "list", "watch", "create", "patch", "delete")
READ_VERBS = ("get", "list", "watch")


def derived_rules(
    kind: CustomKind,
    *,
    owns: Iterable[Resource] = (),
    watches: Iterable[Resource] = (),
    finalizer: bool = False,
    extra: Iterable[Rule] = (),
) -> list[Rule]:
    """A controller's rules from its declaration: :func:`own_rules` of its ``kind`` (and
    :func:`crd_conversion_rules`),
    :data:`CHILD_VERBS` on each kind it ``owns``, :data:`READ_VERBS` on each it
    ``watches``, and ``extra`` rules as given — merged, so each (group, resource) appears
    once with the union of its verbs, in first-seen order."""
    rules = [
        *own_rules(kind, finalizer=finalizer),
        *(rule(resource, *CHILD_VERBS) for resource in owns),
        *(rule(resource, *READ_VERBS) for resource in watches),
        *crd_conversion_rules(kind),
        *extra,
    ]
    return merged(rules)


_CRDS = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)


def crd_conversion_rules(kind: CustomKind) -> list[Rule]:
    """When ``kind`` has several versions (:mod:`appstack.sdk.versions`): ``get`` of its own
    CRD and ``patch`` of its ``status``, by name — what migrating its storage needs
    (:mod:`appstack.sdk.kit.storage`: the stored versions trimmed) — and, when they convert,
    ``patch`` of the CRD itself: writing the conversion webhook's CA bundle (or
    developer-mode URL) into it. Nothing of anyone else's CRDs."""
    if len(kind.versions) < 2:
        return []
    converts = any(getattr(v, "to_hub", None) is not None for v in kind.versions)
    named = rule(_CRDS, "get", "patch") if converts else rule(_CRDS, "get")
    status = rule(_CRDS, "patch", subresource="status")
    named["resourceNames"] = [kind.crd_name]
    status["resourceNames"] = [kind.crd_name]
    return [named, status]


def merged(rules: Iterable[Rule]) -> list[Rule]:
    """``rules`` with the verbs of each (apiGroups, resources, resourceNames) united."""
    out: dict[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], Rule] = {}
    for each in rules:
        key = (
            tuple(each["apiGroups"]),
            tuple(each["resources"]),
            tuple(each.get("resourceNames", ())),
        )
        if key in out:
            verbs = out[key]["verbs"]
            verbs.extend(v for v in each["verbs"] if v not in verbs)
        else:
            out[key] = {**each, "verbs": list(each["verbs"])}
    return list(out.values())


def cluster_role(name: str, rules: list[Rule], labels: Mapping[str, str] | None = None) -> Rule:
    """A ClusterRole ``name`` of ``rules``."""
    return {
        "apiVersion": RBAC_API,
        "kind": "ClusterRole",
        "metadata": _meta(name, None, labels),
        "rules": rules,
    }


def role(
    name: str, namespace: str, rules: list[Rule], labels: Mapping[str, str] | None = None
) -> Rule:
    """A Role ``name`` in ``namespace`` of ``rules``."""
    return {
        "apiVersion": RBAC_API,
        "kind": "Role",
        "metadata": _meta(name, namespace, labels),
        "rules": rules,
    }


def binding(
    name: str,
    role_ref: Rule,
    account: tuple[str, str],
    labels: Mapping[str, str] | None = None,
) -> Rule:
    """Binds ``role_ref`` (a Role or ClusterRole made above) to ServiceAccount
    ``account`` (namespace, name): a RoleBinding in the Role's namespace, else a
    ClusterRoleBinding."""
    namespace = role_ref["metadata"].get("namespace")
    namespace_of_account, account_name = account
    return {
        "apiVersion": RBAC_API,
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": _meta(name, namespace, labels),
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role_ref["kind"],
            "name": role_ref["metadata"]["name"],
        },
        "subjects": [
            {"kind": "ServiceAccount", "name": account_name, "namespace": namespace_of_account}
        ],
    }


RBAC_API = "rbac.authorization.k8s.io/v1"


def _meta(name: str, namespace: str | None, labels: Mapping[str, str] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    return meta


# What the runtime and the kit need of an operator process, whatever its controllers:
# Events (created, then patched into a series), the namespaces it acts in (the namespace
# gate: read by name; cluster-wide also listed and watched), and the reviews that guard
# /metrics. Resources as the API server routes them (no runtime import: pure).
_EVENTS = Resource("events.k8s.io", "v1", "Event", "events")
_NAMESPACES = Resource("", "v1", "Namespace", "namespaces", namespaced=False)
_TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False)
_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False
)
_LEASES = Resource("coordination.k8s.io", "v1", "Lease", "leases")


def process_rules(*, cluster_wide: bool = True) -> list[Rule]:
    """What every operator process needs besides its controllers' rules: Events, its
    namespaces (``get``; cluster-wide also ``list`` and ``watch``: a Role cannot list
    them), and the reviews behind authenticated ``/metrics`` (:func:`metrics_auth_rules`)."""
    namespaces = ("get", "list", "watch") if cluster_wide else ("get",)
    return [
        rule(_EVENTS, "create", "patch"),
        rule(_NAMESPACES, *namespaces),
        *metrics_auth_rules(),
    ]


#: The API groups Kubernetes serves itself — never from a CRD (``gateway.networking.k8s.io``
#: or ``snapshot.storage.k8s.io``, under ``k8s.io`` too, are CRDs: not listed).
BUILTIN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "metrics.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)


def crd_read_rule(controller_rules: Iterable[Rule]) -> Rule | None:
    """Read and watch, by name, the CRD of every kind ``controller_rules`` name that a CRD
    serves (any group but :data:`BUILTIN_GROUPS`): what lets an informer
    whose kind is not served — a foreign CRD not installed yet, or any CRD deleted while the
    operator runs — wait on a watch of that one CRD and list the moment it is back
    (:func:`appstack.runtime.wait_served`, a ``metadata.name`` field selector, which RBAC
    matches against ``resourceNames``), instead of listing now and then. None if they name
    no such kind. Only a ClusterRole can grant it (CRDs are cluster-scoped)."""
    names = sorted(
        {
            f"{resource.split('/')[0]}.{group}"
            for each in controller_rules
            for group in each["apiGroups"]
            if group not in BUILTIN_GROUPS and group != "*"
            for resource in each["resources"]
            if resource != "*"
        }
    )
    if not names:
        return None
    return {**rule(_CRDS, *READ_VERBS), "resourceNames": names}


def manager_rules(
    controller_rules: Iterable[Rule], domain: str, *, cluster_wide: bool = True
) -> list[Rule]:
    """The operator's own (Cluster)Role's rules: its controllers' (each registration's
    ``rules``, derived from what it declares), then what its process needs
    (:func:`process_rules`; a namespaced install's Role cannot list namespaces), cluster-wide
    the CRDs of the kinds it uses, by name (:func:`crd_read_rule`), then the admission
    guards' marker of its ``domain`` (:func:`marker_rule`) — merged (:func:`merged`), each
    resource once with the union of its verbs."""
    controller_rules = list(controller_rules)
    process = process_rules(cluster_wide=cluster_wide)
    crds = crd_read_rule(controller_rules) if cluster_wide else None
    return merged([*controller_rules, *process, *([crds] if crds else []), marker_rule(domain)])


def within_namespaces(rules: Iterable[Rule]) -> list[Rule]:
    """A cluster-wide operator's :func:`manager_rules` as a Role in each namespace it is
    told to watch grants them (a chart's ``watchNamespaces``): without the CRDs' read of
    :func:`crd_read_rule` and without listing and watching namespaces — a Role grants
    neither — which is :func:`manager_rules` with ``cluster_wide=False`` of the same
    controllers' rules."""
    out: list[Rule] = []
    for each in rules:
        groups, resources = each["apiGroups"], each["resources"]
        if (
            groups == [_CRDS.group]
            and resources == [_CRDS.plural]
            and "resourceNames" in each
            and list(each["verbs"]) == list(READ_VERBS)
        ):
            continue  # crd_read_rule's: only a ClusterRole grants it
        kept = copy.deepcopy(each)
        if groups == [_NAMESPACES.group] and resources == [_NAMESPACES.plural]:
            kept["verbs"] = [v for v in each["verbs"] if v not in ("list", "watch")]
            if not kept["verbs"]:
                continue
        out.append(kept)
    return out


def metrics_auth_rules() -> list[Rule]:
    """TokenReviews and SubjectAccessReviews: who may scrape ``/metrics`` (cluster-scoped,
    so always a ClusterRole)."""
    return [rule(_TOKEN_REVIEWS, "create"), rule(_ACCESS_REVIEWS, "create")]


#: The admission guards' marker (:mod:`appstack.sdk.guards`): verb :data:`MARKER` on
#: :data:`GUARD_RESOURCE` of the operator's domain, a permission nothing uses, granted only
#: by the operator's own (Cluster)Role and leader-election Role — the guards match whoever
#: holds it. :data:`CANARY` (the same resource) is never granted by name: only a wildcard
#: (an administrator) holds it, and the guards leave such requesters alone.
GUARD_RESOURCE = "admissionguards"
MARKER = "subject-to"
CANARY = "held-only-through-a-wildcard"
#: Verb ``enable`` on ``namespaces`` of the operator's domain: who may set the namespace
#: opt-in labels (:func:`enabler_grant`), beside cluster administrators.
ENABLER_RESOURCE = "namespaces"
ENABLER_VERB = "enable"


def marker_rule(domain: str) -> Rule:
    """The marker permission (:data:`MARKER`) of the operator whose domain is ``domain``:
    what its admission guards recognise it by, carried by its own binding."""
    return {"apiGroups": [domain], "resources": [GUARD_RESOURCE], "verbs": [MARKER]}


def enabler_grant(domain: str) -> tuple[str, str, str]:
    """(group, resource, verb) whose holders may set the opt-in labels of the operator of
    ``domain`` on a namespace."""
    return (domain, ENABLER_RESOURCE, ENABLER_VERB)


def leader_election_rules(lease: str, *, sharded: bool = False) -> list[Rule]:
    """The Lease ``lease``, by name (get, update), and ``create`` (RBAC cannot limit create
    by name): for a Role in the operator's own namespace only. ``sharded``: every Lease of
    that namespace instead (:data:`SHARD_LEASE_VERBS`) — the shard Leases have names of
    their own (docs/sharding.md)."""
    if sharded:
        return [rule(_LEASES, *SHARD_LEASE_VERBS)]
    named = rule(_LEASES, "get", "update")
    named["resourceNames"] = [lease]
    return [named, rule(_LEASES, "create")]


#: What a sharded operator does with the Leases of its own namespace: holds, renews and
#: releases its shard's (update, patch: marked leaving), lists and watches its peers' (the
#: coordinator, by label), deletes a departed shard's.
SHARD_LEASE_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")


def sharding_rules(primaries: Iterable[Resource]) -> list[Rule]:
    """What a sharded operator needs on its ``primaries`` beyond what its controllers
    declare: ``patch`` (the coordinator's assignment and drain labels, a shard's
    acknowledgement) — for its (Cluster)Role, merged with :func:`manager_rules`; its Leases
    are :func:`leader_election_rules` with ``sharded``. The admission guards let these
    patches change the two shard labels and nothing else (:mod:`appstack.sdk.guards`)."""
    return [rule(resource, "patch") for resource in dict.fromkeys(primaries)]


_VALIDATING_CONFIGS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    False,
)
_MUTATING_CONFIGS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
    False,
)
_SECRETS = Resource("", "v1", "Secret", "secrets")
#: What an operator does with its own webhook configurations: writes its CA bundle in.
WEBHOOK_CONFIGURATION_VERBS = ("get", "update", "patch")


def webhook_configuration_rules(validating: str | None, mutating: str | None) -> list[Rule]:
    """Read and update, by name, the operator's own webhook configurations (the
    ``validating`` and ``mutating`` one it has; None: it has none of that kind) — what
    writing its CA bundle into their ``caBundle`` needs, and nothing of anyone else's.
    Cluster-scoped: for a ClusterRole."""
    rules = []
    for resource, name in ((_VALIDATING_CONFIGS, validating), (_MUTATING_CONFIGS, mutating)):
        if name:
            named = rule(resource, *WEBHOOK_CONFIGURATION_VERBS)
            named["resourceNames"] = [name]
            rules.append(named)
    return rules


def webhook_secret_rules(secret: str) -> list[Rule]:
    """The Secret its replicas share their webhook serving certificate in, by name (get,
    update, patch), and ``create`` (RBAC cannot limit create by name): for a Role in the
    operator's own namespace only."""
    named = rule(_SECRETS, "get", "update", "patch")
    named["resourceNames"] = [secret]
    return [named, rule(_SECRETS, "create")]
