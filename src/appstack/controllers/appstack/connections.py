"""``uses: [mysql]`` → environment variables that tell a component how to reach ``mysql``.

Naming convention (documented in the README once AppStack is served), for a member named
``order-db``: the prefix is ``ORDER_DB`` and the component gets

* ``ORDER_DB_HOST`` — the stable in-cluster Service name (managed or external alike);
* ``ORDER_DB_PORT`` — its port;
* ``ORDER_DB_USERNAME`` / ``ORDER_DB_PASSWORD`` — ``secretKeyRef`` env vars, never values:
  from the generated Secret ``<stack>-<member>-credentials`` (managed) or from the user's
  ``secretRef`` (external; omitted when none is given).

A third-party service given by URL (``external.url``, any ``type``) gets instead
``ORDER_DB_URL`` (the URL as written), ``ORDER_DB_AUTH_METHOD`` when one is set, and by
``secretKeyRef`` ``ORDER_DB_USERNAME``/``ORDER_DB_PASSWORD`` (``basic``) or ``ORDER_DB_TOKEN``
(``bearer``, ``apiKey``). A component with ports (``uses: [eureka]``) gets ``EUREKA_HOST``,
``EUREKA_PORT`` (its first port) and ``EUREKA_URL`` (``http://host:port``), so a member can
move between a component of the stack and a third-party service without touching its
consumers.
"""

from __future__ import annotations

import re
from typing import Any

from appstack.api.appstack_component import Component
from appstack.api.appstack_middleware import Middleware
from appstack.controllers.appstack.catalog import CATALOG
from appstack.sdk import EnvVarDict, secret_env


def prefix(member: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", member.upper())


def credentials_secret(stack: str, member: str) -> str:
    return f"{stack}-{member}-credentials"


def service_name(stack: str, member: str) -> str:
    """The stack's own name for a member's children: ``<stack>-<member>``."""
    return f"{stack}-{member}"


def member_service(stack: str, member: Middleware | Component) -> str:
    """The name of the member's Service — what others find it by: its ``serviceName``, or
    ``<stack>-<member>``."""
    return member.service_name or service_name(stack, member.name)


def component_env(stack: str, component: Component) -> list[EnvVarDict]:
    """What ``uses: [component]`` injects: its Service and first port."""
    assert component.ports  # noqa: S101 - admission and the models require ports
    p, host, port = prefix(component.name), member_service(stack, component), component.ports[0]
    return [
        {"name": f"{p}_HOST", "value": host},
        {"name": f"{p}_PORT", "value": str(port.port)},
        {"name": f"{p}_URL", "value": f"http://{host}:{port.port}"},
    ]


def url_env(middleware: Middleware) -> list[EnvVarDict]:
    """What ``uses`` injects for a third-party service given by URL."""
    external = middleware.external
    assert external is not None  # noqa: S101 - callers check
    assert external.url is not None  # noqa: S101
    p = prefix(middleware.name)
    env: list[EnvVarDict] = [{"name": f"{p}_URL", "value": external.url}]
    if external.auth_method is not None:
        env.append({"name": f"{p}_AUTH_METHOD", "value": external.auth_method})
    ref = external.secret_ref
    if ref is None:
        return env
    if external.auth_method == "basic":
        return [
            *env,
            secret_env(f"{p}_USERNAME", ref.name, ref.username_key),
            secret_env(f"{p}_PASSWORD", ref.name, ref.password_key),
        ]
    return [*env, secret_env(f"{p}_TOKEN", ref.name, ref.token_key)]


def connection_env(stack: str, member: Middleware | Component) -> list[EnvVarDict]:
    """The variables ``uses: [member]`` injects."""
    if isinstance(member, Component):
        return component_env(stack, member)
    middleware = member
    if middleware.external is not None and middleware.external.url is not None:
        return url_env(middleware)
    p = prefix(middleware.name)
    engine = CATALOG[middleware.type]
    port = (middleware.external.port if middleware.external else None) or engine.port
    env: list[EnvVarDict] = [
        {"name": f"{p}_HOST", "value": member_service(stack, middleware)},
        {"name": f"{p}_PORT", "value": str(port)},
    ]
    if middleware.external is not None:
        ref = middleware.external.secret_ref
        if ref is None:
            return env
        secret, user_key, password_key = ref.name, ref.username_key, ref.password_key
    else:
        secret, user_key, password_key = (
            credentials_secret(stack, middleware.name),
            "username",
            "password",
        )
    if engine.user_env is not None:
        env.append(secret_env(f"{p}_USERNAME", secret, user_key))
    env.append(secret_env(f"{p}_PASSWORD", secret, password_key))
    return env


def third_party_credentials_missing(
    middleware: Middleware, secrets: dict[str, dict[str, Any] | None]
) -> str | None:
    """Why a third-party service's credentials cannot be injected (None: they can): its
    Secret is missing, or lacks a key its ``authMethod`` needs. Reads key names only."""
    external = middleware.external
    if external is None or external.url is None or external.secret_ref is None:
        return None
    ref = external.secret_ref
    secret = secrets.get(ref.name)
    if secret is None:
        return f"Secret {ref.name} of {middleware.name} not found"
    keys = [ref.username_key, ref.password_key] if external.auth_method == "basic" else []
    keys = keys or [ref.token_key]
    missing = [k for k in keys if k not in (secret.get("data") or {})]
    if missing:
        return f"Secret {ref.name} of {middleware.name} has no key {', '.join(missing)}"
    return None
