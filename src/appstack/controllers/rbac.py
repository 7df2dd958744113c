"""What the operator process needs from the API: every registered controller's own rules,
then Events (de-duplicated: create, then patch the series) and its leader-election Lease."""

from __future__ import annotations

from appstack.controllers.registry import ALL
from appstack.controllers.util.rbac import Rule, rule
from appstack.runtime.resources import EVENT, LEASE

RUNTIME_RULES: list[Rule] = [rule(EVENT, "create", "patch"), rule(LEASE, "get", "create", "update")]


def operator_rules() -> list[Rule]:
    """Every rule the operator uses, controllers first (the generated Role/ClusterRole)."""
    return [rule_ for controller in ALL for rule_ in controller.rbac_rules] + RUNTIME_RULES
