"""``AppStack`` types: a whole system in one resource — middleware
(managed by us, or external) plus components started in dependency order.

Validation: names unique across middleware and components (DNS-1035), every
``dependsOn``/``uses`` reference known, ``uses`` only middleware, exactly one of
managed/external, external credentials only by ``secretRef`` — all checked at admission
(CEL) and by these models; dependency cycles are found by the models (the controller
reports them as ``Ready=False``, reason ``InvalidSpec``, with the cycle spelled out).
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
from appstack.sdk.kind import AGE, READY_MESSAGE, READY_REASON, CustomObject
from appstack.sdk.model import Condition, KubeModel
from appstack.sdk.names import DNS_1035, name_rules

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
        names = [m.name for m in self.middleware or []] + [c.name for c in self.components]
        _unique_names(self)
        services = [m.service_name for m in self.middleware or []]
        services += [c.service_name for c in self.components]
        taken = sorted({n for n in services if n is not None and services.count(n) > 1})
        if taken:
            raise ValueError(
                f"components: serviceName must be unique in the stack: {', '.join(taken)}"
            )
        middleware = {m.name: m for m in self.middleware or []}
        with_ports = {c.name for c in self.components if c.ports}
        known = set(names)
        for i, component in enumerate(self.components):
            where = f"components[{i}] ({component.name})"
            for ref in component.depends_on or []:
                if ref not in known:
                    raise ValueError(f"{where}: dependsOn {ref!r} is not a member of this stack")
            for ref in component.uses or []:
                if ref not in middleware and ref not in with_ports:
                    raise ValueError(
                        f"{where}: uses {ref!r} is not middleware, or a component with ports, "
                        "of this stack"
                    )
            defined = set(component.env or {}) | {e.name for e in component.envs or []}
            clash = sorted(defined & self._url_injected(component))
            if clash:
                raise ValueError(
                    f"component {component.name}: {', '.join(clash)} is injected by uses; "
                    f"remove it from env/envs"
                )
        written = [n for c in self.components for n in c.config_maps_written("")]
        if len(set(written)) != len(written):
            raise ValueError("configs: two components would write the same ConfigMap")
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


def _unique_names(spec: AppStackSpec) -> None:
    """The three name rules of :data:`_STACK_RULES`, each naming its field."""
    components = [c.name for c in spec.components]
    middleware = [m.name for m in spec.middleware or []]
    for label, names in (("components: component", components), ("middleware", middleware)):
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"{label} names must be unique: {', '.join(twice)}")
    both = sorted(set(components) & set(middleware))
    if both:
        raise ValueError(
            f"components: a component may not have the name of a middleware: {', '.join(both)}"
        )


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
