"""What the operator process needs from the API, besides each controller's own rules:
Events (de-duplicated: create, then patch the series) and its leader-election Lease."""

from __future__ import annotations

from typing import Any

from appstack.controllers import appservice, appstack, crontab

RUNTIME_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
    {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["get", "create", "update"],
    },
]


def operator_rules() -> list[dict[str, Any]]:
    """Every rule the operator uses, controllers first (the generated Role/ClusterRole)."""
    return [*appservice.RBAC_RULES, *appstack.RBAC_RULES, *crontab.RBAC_RULES, *RUNTIME_RULES]
