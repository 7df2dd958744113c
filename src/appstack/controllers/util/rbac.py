"""RBAC rules as controllers declare them: explicit verbs on one resource, no wildcards.

:func:`rule` names a resource the way the API server routes it (the descriptor's group and
plural); :func:`own_rules` are what every controller needs on its own kind (read and
watch it, patch its status, block its deletion from its children). Under
OwnerReferencesPermissionEnforcement, writing a child's ownerReferences also needs
``delete`` on the child, so every kind a controller creates with an owner is deletable.
The operator's ClusterRole is the concatenation of every registered controller's rules
(:mod:`appstack.controllers.rbac`).
"""

from __future__ import annotations

from typing import Any

from appstack.api.kind import CustomKind
from appstack.core.resource import Resource

Rule = dict[str, Any]


def rule(resource: Resource, *verbs: str, subresource: str | None = None) -> Rule:
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
