"""What ``appstack status etcd/NAME`` shows of an EtcdCluster: whether it is up (its
``Available`` condition, :data:`.status.UP`), healthy voters of those wanted, its leader,
client URL, newest backup, raised alarms, last defragmentation and last disaster recovery,
and each member as etcd reports it (leader, follower or learner; healthy or not; its
version and database size). Declared on its registration
(:data:`.CONTROLLER`) and picked from the registry by :mod:`appstack.cli.status_kinds`.
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.etcdcluster.status import UP
from appstack.controllers.util import statusview
from appstack.runtime import Client
from appstack.sdk import StatusTree


async def collect(client: Client, obj: dict[str, Any]) -> StatusTree:
    """The cluster as its status reports it (nothing else is read)."""
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    tree = statusview.head(obj, UP, f"{status.get('readyMembers', 0)}/{spec.get('replicas', '')}")
    tree["leader"] = status.get("leader", "")
    tree["clientURL"] = status.get("clientURL", "")
    tree["lastBackup"] = status.get("lastBackup", "")
    tree["lastBackupTime"] = status.get("lastBackupTime", "")
    tree["alarms"] = ", ".join(status.get("alarms") or [])
    defrag = status.get("defragmentation") or {}
    if defrag.get("lastTime"):
        mib = (defrag.get("reclaimedBytes") or 0) / (1 << 20)
        tree["defragmented"] = f"{defrag['lastTime']} ({mib:.1f} MiB reclaimed)"
    recovery = status.get("recovery") or {}
    if recovery:  # the last disaster recovery, and what it lost
        tree["recovery"] = (
            f"{recovery.get('phase', '')} from {recovery.get('snapshot', '')} "
            f"({recovery.get('dataLossSeconds', '?')}s of writes lost)"
        )
    for member in status.get("members") or []:
        role = (
            "leader"
            if member.get("isLeader")
            else "learner"
            if member.get("isLearner")
            else "follower"
        )
        health = "healthy" if member.get("healthy") else "unhealthy"
        if member.get("dbSize") is not None:
            health += f", db {member['dbSize'] / (1 << 20):.1f} MiB"
        tree["items"].append(
            {
                "name": f"Member/{member.get('name', member.get('id', ''))}",
                "ready": member.get("version", ""),
                "status": f"{role}, {health}",
            }
        )
    return tree


VIEW = statusview.rows_view(
    collect, details=("leader", "lastBackup", "alarms", "defragmented", "recovery")
)
