"""``uses: [mysql]`` → environment variables that tell a component how to reach ``mysql``.

Naming convention (documented in the README once AppStack is served), for a member named
``order-db``: the prefix is ``ORDER_DB`` and the component gets

* ``ORDER_DB_HOST`` — the stable in-cluster Service name (managed or external alike);
* ``ORDER_DB_PORT`` — its port;
* ``ORDER_DB_USERNAME`` / ``ORDER_DB_PASSWORD`` — ``secretKeyRef`` env vars, never values:
  from the generated Secret ``<stack>-<member>-credentials`` (managed) or from the user's
  ``secretRef`` (external; omitted when none is given).
"""

from __future__ import annotations

import re
from typing import Any

from appstack.api.appstack_middleware import Middleware
from appstack.controllers.appstack.catalog import CATALOG


def prefix(member: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", member.upper())


def credentials_secret(stack: str, member: str) -> str:
    return f"{stack}-{member}-credentials"


def service_name(stack: str, member: str) -> str:
    return f"{stack}-{member}"


def connection_env(stack: str, middleware: Middleware) -> list[dict[str, Any]]:
    p = prefix(middleware.name)
    engine = CATALOG[middleware.type]
    port = middleware.external.port if middleware.external else engine.port
    env: list[dict[str, Any]] = [
        {"name": f"{p}_HOST", "value": service_name(stack, middleware.name)},
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
        env.append(
            {
                "name": f"{p}_USERNAME",
                "valueFrom": {"secretKeyRef": {"name": secret, "key": user_key}},
            }
        )
    env.append(
        {
            "name": f"{p}_PASSWORD",
            "valueFrom": {"secretKeyRef": {"name": secret, "key": password_key}},
        }
    )
    return env
