"""The AppStack's rules that span members (pure): names of the children derived from
``<stack>-<member>``, members' own Service names (``serviceName``), a component's ports,
configs and mounts. Each is written once — in CEL, checked at admission and by the models
client-side (:mod:`appstack.sdk.cel`) — or, where its CEL would cost more than the API
server allows, in Python only (:data:`SERVICE_NAME_RULE`, :func:`component_problem`). Used
by :mod:`appstack.api.appstack` and its member modules.
"""

from __future__ import annotations

from typing import Any

from appstack.sdk import (
    NameRule,
    mount_rules,
)

# Children are named <stack>-<member>: a Service name (<= 63), and for managed middleware
# a StatefulSet name (<= 52, so that its pods' controller-revision-hash label fits in 63).
MEMBER_NAME_RULES = (
    NameRule(
        "self.spec.components.all(c, size(self.metadata.name) + size(c.name) <= 62) && "
        "(!has(self.spec.middleware) || self.spec.middleware.all(m, has(m.managed) || "
        "size(self.metadata.name) + size(m.name) <= 62))",
        "<stack>-<member> names a Service and must be at most 63 characters: shorten the "
        "stack's metadata.name or the member's name",
    ),
    NameRule(
        "!has(self.spec.middleware) || self.spec.middleware.all(m, !has(m.managed) || "
        "size(self.metadata.name) + size(m.name) <= 51)",
        "<stack>-<middleware> names the StatefulSet of managed middleware and must be at most "
        "52 characters: shorten the stack's metadata.name or the middleware's name",
    ),
)


def _own_prefix(name: str, spec: Any) -> bool:
    members = [*(spec.middleware or []), *spec.components]
    return not any(
        m.service_name is not None and m.service_name.startswith(f"{name}-") for m in members
    )


# A member's serviceName must not be one of the stack's own Service names: every one starts
# with <stack>- (another member's Service, a headless -hl Service, an external one).
# (Its CEL, startsWith of every member's name against the stack's, costs five times what the
# API server allows: checked by the models and when reconciled.)
SERVICE_NAME_RULE = NameRule(
    None,
    "spec.components[*].serviceName, spec.middleware[*].serviceName: may not start with "
    "'<stack>-', the stack's own Service names (leave it unset for <stack>-<member>)",
    _own_prefix,
)


_MIGRATE = "add a middleware entry with another name and migrate the data"

# Transition rules (the middleware list is keyed by name, so each entry is compared with its
# old self): what the API server would refuse on the StatefulSet (volumeClaimTemplates are
# immutable) or what would strand the data (another engine on the same volume).
IMMUTABLE_TYPE: dict[str, Any] = {
    "rule": "self.type == oldSelf.type",
    "message": f"type cannot change: {_MIGRATE}",
    "fieldPath": ".type",
}


def immutable(field: str) -> dict[str, Any]:
    """The schema extra of a storage field that cannot change once set."""
    return {
        "x-kubernetes-validations": [
            {"rule": "self == oldSelf", "message": f"{field} cannot change: {_MIGRATE}"}
        ]
    }


STORAGE_RULES: list[Any] = [
    {
        "rule": "has(self.storageClassName) == has(oldSelf.storageClassName)",
        "message": f"managed.storage.storageClassName cannot change: {_MIGRATE}",
        "fieldPath": ".storageClassName",
    }
]


INJECTED_SUFFIXES = ("_HOST", "_PORT", "_USERNAME", "_PASSWORD", "_URI")  # _URI: mongodb

# Checked at admission. A variable of env/envs that ``uses`` also injects is found by the
# models only (a CEL rule comparing every variable with every used middleware's names costs
# more than the API server allows): the controller reports it as Ready=False, InvalidSpec.
COMPONENT_RULES: list[Any] = [
    {
        "rule": "!has(self.env) || !has(self.envs) || !self.envs.exists(e, e.name in self.env)",
        "message": "a variable may be set in env or in envs, not in both",
        "fieldPath": ".envs",
    },
    {
        "rule": "!has(self.config) || !has(self.configs)",
        "message": "set config (one ConfigMap) or configs (several), not both",
        "fieldPath": ".configs",
    },
    {
        "rule": "!has(self.configs) || self.configs.all(m, "
        "self.configs.exists_one(n, n.name == m.name) && "
        "self.configs.exists_one(n, n.mountPath == m.mountPath))",
        "message": "configs: names and mount paths must be unique",
        "fieldPath": ".configs",
    },
    {
        "rule": "!has(self.configs) || self.configs.all(m, !has(m.files) || "
        "m.name == self.name || m.name.startsWith(self.name + '-'))",
        "message": "configs: a ConfigMap with files is named after the component: its name, or "
        "its name and '-' and more (web, web-template)",
        "fieldPath": ".configs",
    },
    {
        "rule": "!has(self.ports) || self.ports.all(p, self.ports.exists_one(q, q.port == p.port))",
        "message": "port numbers must be unique",
        "fieldPath": ".ports",
    },
    {
        "rule": "!has(self.ports) || self.ports.all(p, !has(p.name) || "
        "self.ports.exists_one(q, has(q.name) && q.name == p.name))",
        "message": "port names must be unique (a port without a name is named p<port>)",
        "fieldPath": ".ports",
    },
    {
        "rule": "!has(self.ports) || "
        "self.ports.all(p, !has(p.name) || !p.name.matches('^p[0-9]+$'))",
        "message": "port names p<number> are kept for ports without a name",
        "fieldPath": ".ports",
    },
    # volumes and volumeMounts, apart from the config/configs volumes and their paths
    *mount_rules(
        other_names="(!has(self.config) || v.name != 'config') && "
        "(!has(self.configs) || !self.configs.exists(c, c.name == v.name))",
        other_paths="(!has(self.config) || self.config.mountPath != m.mountPath) && "
        "(!has(self.configs) || !self.configs.exists(c, c.mountPath == m.mountPath))",
    ),
]


# One entry of ``configs``.
CONFIG_RULES: list[Any] = [
    {
        "rule": "has(self.files) != has(self.configMap)",
        "message": "set exactly one of files, configMap",
    },
    {
        "rule": "!has(self.subPath) || !has(self.files) || self.subPath in self.files",
        "message": "subPath must be one of the files",
        "fieldPath": ".subPath",
    },
    {
        "rule": "!has(self.subPath) || (self.subPath != '.' && self.subPath != '..')",
        "message": "subPath must name a file",
        "fieldPath": ".subPath",
    },
]


def injected(member: str) -> list[str]:
    """The variables ``uses: [member]`` injects."""
    prefix = member.upper().replace("-", "_")
    return [prefix + suffix for suffix in INJECTED_SUFFIXES]


def component_problem(c: Any) -> str | None:
    """What no CEL rule of :data:`COMPONENT_RULES` can afford, in Python: a variable of
    env/envs that ``uses`` also injects (``c`` a Component)."""
    defined = set(c.env or {}) | {e.name for e in c.envs or []}
    for used in c.uses or []:
        clash = sorted(defined & set(injected(used)))
        if clash:
            return f"uses: {', '.join(clash)} is injected for {used}; remove it from env/envs"
    return None
