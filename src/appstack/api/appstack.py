"""``AppStack`` types: a whole system in one resource — middleware
(managed by us, or external) plus components started in dependency order.

Validation: names unique across middleware and components (DNS-1035), every
``dependsOn``/``uses`` reference known, ``uses`` only middleware, exactly one of
managed/external, external credentials only by ``secretRef`` — CEL rules written once,
checked at admission and by these models client-side (:mod:`appstack.sdk.cel`); dependency
cycles, and what else no CEL rule can afford, are found by the models in Python (the
controller reports them as ``Ready=False``, reason ``InvalidSpec``, with the cycle spelled
out).
The member types live in :mod:`appstack.api.appstack_middleware` and
:mod:`appstack.api.appstack_component`. Types only, no I/O.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from appstack.api.appstack_component import Component
from appstack.api.appstack_middleware import Middleware
from appstack.api.appstack_rules import MEMBER_NAME_RULES, SERVICE_NAME_RULE
from appstack.api.graph import find_cycle
from appstack.api.kind import custom_kind
from appstack.api.security import POD_SECURITY, PodSecurityLevel
from appstack.sdk import (
    AGE,
    DNS_1035,
    READY_MESSAGE,
    READY_REASON,
    Condition,
    CustomObject,
    KubeModel,
    name_rules,
)

_REFS = (
    "(self.components.exists(x, x.name == d) || (has(self.middleware) && "
    "self.middleware.exists(m, m.name == d)))"
)
_STACK_RULES: list[Any] = [
    {
        "rule": "self.components.all(c, self.components.exists_one(d, d.name == c.name))",
        "message": "component names must be unique",
        "fieldPath": ".components",
    },
    {
        "rule": "!has(self.middleware) || self.middleware.all(m, "
        "self.middleware.exists_one(n, n.name == m.name))",
        "message": "middleware names must be unique",
        "fieldPath": ".middleware",
    },
    {
        "rule": "!has(self.middleware) || self.components.all(c, "
        "!self.middleware.exists(m, m.name == c.name))",
        "message": "a component may not have the name of a middleware",
        "fieldPath": ".components",
    },
    {
        "rule": "self.components.all(c, !has(c.serviceName) || "
        "(self.components.exists_one(d, has(d.serviceName) && d.serviceName == c.serviceName) "
        "&& (!has(self.middleware) || "
        "!self.middleware.exists(m, has(m.serviceName) && m.serviceName == c.serviceName))))"
        " && (!has(self.middleware) || self.middleware.all(m, !has(m.serviceName) || "
        "self.middleware.exists_one(n, has(n.serviceName) && n.serviceName == m.serviceName)))",
        "message": "serviceName must be unique in the stack",
        "fieldPath": ".components",
    },
    {
        "rule": f"self.components.all(c, !has(c.dependsOn) || c.dependsOn.all(d, {_REFS}))",
        "message": "dependsOn must name members of this stack",
        "fieldPath": ".components",
    },
    {
        "rule": "self.components.all(c, !has(c.uses) || c.uses.all(u, (has(self.middleware) && "
        "self.middleware.exists(m, m.name == u)) || "
        "self.components.exists(d, d.name == u && has(d.ports) && size(d.ports) > 0)))",
        "message": "uses must name middleware, or a component with ports, of this stack",
        "fieldPath": ".components",
    },
]


class AppStackSpec(KubeModel):
    """Middleware and components; components start when what they depend on is ready."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _STACK_RULES})

    middleware: list[Middleware] | None = Field(
        default=None,
        max_length=16,
        # Keyed by name, so that changes are compared per middleware (immutable fields).
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    components: list[Component] = Field(min_length=1, max_length=64)
    pod_security: PodSecurityLevel | None = Field(
        default=None,
        description=f"{POD_SECURITY} For the components; managed middleware always runs "
        "restricted, as its image's own user.",
    )

    @model_validator(mode="after")
    def _graph(self) -> AppStackSpec:
        """What no CEL rule can afford (the rules above cover the rest): a variable that
        ``uses`` injects set by hand, two components writing one ConfigMap, a cycle — and
        the one thing the controller resolves that the rules above also refuse: every
        dependency names a member (what ``uses`` names has a connection to inject). A spec
        admitted without those rules (a CRD older than the operator) is then InvalidSpec,
        not a reconcile that fails on a member it cannot find."""
        usable = {m.name for m in self.middleware or []}
        usable |= {c.name for c in self.components if c.ports}
        members = usable | {c.name for c in self.components}
        for component in self.components:
            for ref in sorted(set(component.depends_on or []) - members):
                raise ValueError(
                    f"components: {component.name}: dependsOn {ref!r} is not a member of this stack"
                )
            for ref in sorted(set(component.uses or []) - usable):
                raise ValueError(
                    f"components: {component.name}: uses {ref!r} is not middleware, or a "
                    "component with ports, of this stack"
                )
        for component in self.components:
            defined = set(component.env or {}) | {e.name for e in component.envs or []}
            clash = sorted(defined & self._url_injected(component))
            if clash:
                raise ValueError(
                    f"component {component.name}: {', '.join(clash)} is injected by uses; "
                    f"remove it from env/envs"
                )
        writers: dict[str, set[str]] = {}
        for component in self.components:
            for name in component.config_maps_written("<stack>"):
                writers.setdefault(name, set()).add(component.name)
        shared = sorted(n for n, by in writers.items() if len(by) > 1)
        if shared:
            raise ValueError(
                f"configs: {', '.join(shared)} would be written by two components "
                f"({', '.join(sorted(writers[shared[0]]))}): name configs uniquely in the stack"
            )
        cycle = find_cycle({c.name: c.dependencies() for c in self.components})
        if cycle:
            raise ValueError(f"dependency cycle: {' -> '.join(cycle)}")
        return self

    def _url_injected(self, component: Component) -> set[str]:
        """The variables beyond HOST/PORT/USERNAME/PASSWORD that ``uses`` injects (URL of a
        third-party service or of a component, its TOKEN and AUTH_METHOD)."""
        middleware = {m.name: m for m in self.middleware or []}
        names: set[str] = set()
        for used in component.uses or []:
            p = used.upper().replace("-", "_")
            mw = middleware.get(used)
            if mw is None or (mw.external is not None and mw.external.url is not None):
                names |= {f"{p}_URL", f"{p}_TOKEN", f"{p}_AUTH_METHOD"}
        return names


class MemberStatus(KubeModel):
    name: str
    kind: str = Field(description="Component, or Middleware/<type>.")
    ready: str = Field(description="Ready replicas / desired, e.g. 1/1.")
    state: Literal["WaitingForDependencies", "Progressing", "Ready", "Failed"]
    message: str = ""


class AppStackStatus(KubeModel):
    """The observed state, written by the operator."""

    observed_generation: int | None = None
    ready_members: str | None = Field(default=None, description="Ready members / all, e.g. 9/11.")
    members: list[MemberStatus] | None = None
    conditions: list[Condition] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


@custom_kind(
    plural="appstacks",
    short_names=("stack",),
    printer_columns=(
        {
            "name": "Ready",
            "type": "string",
            "jsonPath": ".status.readyMembers",
            "description": "Ready members / all members",
        },
        {**READY_REASON, "name": "Status"},
        READY_MESSAGE,
        AGE,
    ),
)
class AppStack(CustomObject):
    """A whole system: middleware (managed or external) and components, started in order."""

    NAME_RULES = (
        *name_rules(DNS_1035, 63, "it starts the name of every Service of the stack"),
        *MEMBER_NAME_RULES,
        SERVICE_NAME_RULE,
    )

    spec: AppStackSpec
    status: AppStackStatus | None = None
