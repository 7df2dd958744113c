"""What ``appstack status mdbc/NAME`` shows of a MongoDBCommunity: its Ready condition and
phase, ready members of those wanted, and each member pod. Declared on its registration
(:data:`.CONTROLLER`) and picked from the registry by :mod:`appstack.cli.status_kinds`.
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.util import statusview
from appstack.runtime import Client
from appstack.sdk import StatusTree


async def collect(client: Client, obj: dict[str, Any]) -> StatusTree:
    """The replica set's phase and ready members, and its member pods."""
    status = obj.get("status") or {}
    wanted = (obj.get("spec") or {}).get("members", "")
    tree = statusview.head(obj, "Ready", f"{status.get('members', 0)}/{wanted}")
    tree["phase"] = status.get("phase", "")
    tree["items"] += await statusview.pod_rows(client, obj)
    return tree


VIEW = statusview.rows_view(collect, details=("phase",))
