"""``appstack status KIND/NAME`` for the kinds other than AppStack: what a user looks at
first, gathered from the object's status and what the operator made for it.

* ``appservice/NAME`` — the Ready and Available conditions, replicas, and each pod with its
  phase, readiness and the reason a container waits (``ErrImagePull``, ``CrashLoopBackOff``);
* ``etcd/NAME`` — members (leader, learners, health, version), the client URL, backups;
* ``crontab/NAME`` — the schedule, the newest run and how it went, and each Job kept;
* ``mdbc/NAME`` — the phase, ready members and each member pod.

:func:`collect` reads the cluster (by the instance label every child carries);
:func:`render` is pure and draws the same NAME/READY/STATUS tree as the AppStack view.
Used by ``appstack status`` (:mod:`appstack.cli.install`).
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.registry import ALL
from appstack.core.resource import Resource
from appstack.runtime import crd_names, errors, unserved
from appstack.runtime.client import Client
from appstack.runtime.resources import JOB, POD
from appstack.sdk.kit.meta import INSTANCE_LABEL
from appstack.sdk.operator import MissingCRDs

Tree = dict[str, Any]


def resolve(kind: str) -> Resource | None:
    """Our kind named by its kind, plural, singular or short name (any case)."""
    wanted = kind.lower()
    for controller in ALL:
        names = {
            controller.kind.kind.lower(),
            controller.kind.plural,
            controller.kind.singular,
            *controller.kind.short_names,
        }
        if wanted in names:
            return controller.kind.resource
    return None


def kind_names() -> str:
    """Our kinds as ``status`` takes them: each kind's singular name with its short
    names, e.g. ``appservice (appsvc), ..., mongodbcommunity (mdbc)``."""
    return ", ".join(
        controller.kind.singular
        + (f" ({', '.join(controller.kind.short_names)})" if controller.kind.short_names else "")
        for controller in ALL
    )


async def require_served(client: Client) -> None:
    """Raise :class:`~appstack.sdk.operator.MissingCRDs` if the API server does not
    serve some of our kinds (a 404 then means no CRD, not no object)."""
    missing = await unserved(client, [controller.kind.resource for controller in ALL])
    if missing:
        raise MissingCRDs(crd_names(missing))


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def _head(obj: dict[str, Any], up: str, ready: str) -> Tree:
    cond = _conditions(obj).get(up) or {"status": "Unknown", "reason": "", "message": ""}
    meta = obj["metadata"]
    return {
        "kind": obj["kind"],
        "name": meta["name"],
        "namespace": meta["namespace"],
        "ready": cond.get("status", "Unknown"),
        "reason": cond.get("reason", ""),
        "message": cond.get("message", ""),
        "count": ready,
        "items": [],
    }


async def _labelled(client: Client, resource: Resource, obj: dict[str, Any]) -> list[Any]:
    meta = obj["metadata"]
    selector = f"{INSTANCE_LABEL}={meta['name']}"
    try:
        items, _ = await client.list(resource, meta["namespace"], label_selector=selector)
    except errors.Forbidden:
        return []
    return sorted(items, key=lambda i: str(i["metadata"]["name"]))


def _pod_state(pod: dict[str, Any]) -> tuple[str, str]:
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    ready = f"{sum(1 for c in containers if c.get('ready'))}/{len(containers) or 1}"
    for container in [*(status.get("initContainerStatuses") or []), *containers]:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            note = waiting.get("message") or ""
            return ready, f"{waiting['reason']}{': ' + note if note else ''}"
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return ready, f"{cond.get('reason', '')}: {cond.get('message', '')}"
    return ready, str(status.get("phase", "Pending"))


async def _pod_rows(client: Client, obj: dict[str, Any]) -> list[Tree]:
    """One row per pod labelled as the object's: its name, ready count and state."""
    rows = []
    for pod in await _labelled(client, POD, obj):
        ready, state = _pod_state(pod)
        rows.append({"name": f"Pod/{pod['metadata']['name']}", "ready": ready, "status": state})
    return rows


async def _appservice(client: Client, obj: dict[str, Any]) -> Tree:
    status = obj.get("status") or {}
    tree = _head(obj, "Ready", status.get("ready", ""))
    available = _conditions(obj).get("Available") or {}
    tree["available"] = available.get("status", "Unknown")
    tree["items"] += await _pod_rows(client, obj)
    return tree


async def _etcd(client: Client, obj: dict[str, Any]) -> Tree:
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    tree = _head(obj, "Available", f"{status.get('readyMembers', 0)}/{spec.get('replicas', '')}")
    tree["leader"] = status.get("leader", "")
    tree["clientURL"] = status.get("clientURL", "")
    tree["lastBackup"] = status.get("lastBackup", "")
    tree["lastBackupTime"] = status.get("lastBackupTime", "")
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
        tree["items"].append(
            {
                "name": f"Member/{member.get('name', member.get('id', ''))}",
                "ready": member.get("version", ""),
                "status": f"{role}, {health}",
            }
        )
    return tree


async def _crontab(client: Client, obj: dict[str, Any]) -> Tree:
    status = obj.get("status") or {}
    tree = _head(obj, "Ready", f"{status.get('active', 0)} active")
    tree["schedule"] = (obj.get("spec") or {}).get("cronSpec", "")
    tree["lastRun"] = status.get("lastRun", "")
    tree["lastRunResult"] = status.get("lastRunResult", "")
    tree["lastSuccessfulTime"] = status.get("lastSuccessfulTime", "")
    for job in await _labelled(client, JOB, obj):
        done = {
            c["type"]
            for c in (job.get("status") or {}).get("conditions") or []
            if c.get("status") == "True"
        }
        result = "Succeeded" if "Complete" in done else "Failed" if "Failed" in done else "Running"
        succeeded = (job.get("status") or {}).get("succeeded", 0)
        completions = (job.get("spec") or {}).get("completions", 1)
        tree["items"].append(
            {
                "name": f"Job/{job['metadata']['name']}",
                "ready": f"{succeeded}/{completions}",
                "status": result,
            }
        )
    return tree


async def _mongodb(client: Client, obj: dict[str, Any]) -> Tree:
    status = obj.get("status") or {}
    tree = _head(
        obj, "Ready", f"{status.get('members', 0)}/{(obj.get('spec') or {}).get('members', '')}"
    )
    tree["phase"] = status.get("phase", "")
    tree["items"] += await _pod_rows(client, obj)
    return tree


VIEWS = {
    "AppService": _appservice,
    "EtcdCluster": _etcd,
    "CronTab": _crontab,
    "MongoDBCommunity": _mongodb,
}


async def collect(client: Client, resource: Resource, name: str, namespace: str) -> Tree:
    """The view of ``resource`` ``namespace/name`` (NotFound if it does not exist)."""
    obj = await client.get(resource, name, namespace)
    obj.setdefault("kind", resource.kind)
    return await VIEWS[resource.kind](client, obj)


def _detail(tree: Tree) -> str:
    parts = [f"{tree['reason'] or tree['ready']}: {tree['message']}".strip(": ")]
    keys = (
        "phase",
        "available",
        "leader",
        "schedule",
        "lastRun",
        "lastRunResult",
        "lastBackup",
        "recovery",
    )
    for key in keys:
        if tree.get(key):
            parts.append(f"{key} {tree[key]}")
    return "; ".join(p for p in parts if p)


def render(tree: Tree) -> str:
    """NAME, READY, STATUS columns: the object, then its pods/members/jobs indented."""
    rows = [
        ("NAME", "READY", "STATUS"),
        (f"{tree['kind']}/{tree['name']}", tree["count"] or "-", _detail(tree)),
    ]
    items = tree["items"]
    for i, item in enumerate(items):
        branch = "└─" if i == len(items) - 1 else "├─"
        rows.append((f"{branch} {item['name']}", item["ready"], item["status"]))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    return "".join(
        f"{row[0].ljust(widths[0])}   {row[1].ljust(widths[1])}   {row[2]}".rstrip() + "\n"
        for row in rows
    )
