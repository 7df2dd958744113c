"""What ``appstack status appservice/NAME`` shows of an AppService: its Ready and Available
conditions, ready replicas, and each pod with its readiness and why a container waits
(``ErrImagePull``, ``CrashLoopBackOff``). Declared on its registration (:data:`.CONTROLLER`)
and picked from the registry by :mod:`appstack.cli.status_kinds`.
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.util import statusview
from appstack.runtime import Client
from appstack.sdk import StatusTree


async def collect(client: Client, obj: dict[str, Any]) -> StatusTree:
    """The AppService's conditions and ready replicas, and its pods."""
    status = obj.get("status") or {}
    tree = statusview.head(obj, "Ready", status.get("ready", ""))
    available = statusview.conditions(obj).get("Available") or {}
    tree["available"] = available.get("status", "Unknown")
    tree["items"] += await statusview.pod_rows(client, obj)
    return tree


VIEW = statusview.rows_view(collect, details=("available",))
