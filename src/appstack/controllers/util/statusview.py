"""The rows ``appstack status KIND/NAME`` shows of one object: the object (its count, its
ready condition's reason and message, then the details its kind names) and one row per
pod, member or Job made for it — NAME, READY and STATUS columns.

Each kind's ``view`` module gathers its tree with these helpers (:func:`head`,
:func:`labelled`, :func:`pod_rows`) and declares its
:class:`~appstack.sdk.kit.observers.StatusView` with :func:`rows_view` on its registration
(AppService, CronTab, EtcdCluster, MongoDBCommunity; the AppStack draws a tree of its
own); :mod:`appstack.cli.status_kinds` picks the view from the registry, and
:func:`basic_view` serves a kind that declares none. :func:`render` is pure.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from appstack.core.resource import Resource
from appstack.runtime import POD, Client, Forbidden
from appstack.sdk import INSTANCE_LABEL, StatusTree, StatusView

Collect = Callable[[Client, dict[str, Any]], Awaitable[StatusTree]]


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The object's conditions by type."""
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def head(obj: dict[str, Any], up: str, count: str) -> StatusTree:
    """The tree of ``obj`` without items: ready as its ``up`` condition says, and ``count``
    (e.g. ``2/3``) in the READY column."""
    cond = conditions(obj).get(up) or {"status": "Unknown", "reason": "", "message": ""}
    meta = obj["metadata"]
    return {
        "kind": obj["kind"],
        "name": meta["name"],
        "namespace": meta["namespace"],
        "ready": cond.get("status", "Unknown"),
        "reason": cond.get("reason", ""),
        "message": cond.get("message", ""),
        "count": count,
        "items": [],
    }


async def labelled(client: Client, resource: Resource, obj: dict[str, Any]) -> list[Any]:
    """The objects of ``resource`` labelled as made for ``obj`` (by the instance label every
    child carries), by name; none if we may not list them."""
    meta = obj["metadata"]
    selector = f"{INSTANCE_LABEL}={meta['name']}"
    try:
        items, _ = await client.list(resource, meta["namespace"], label_selector=selector)
    except Forbidden:
        return []
    return sorted(items, key=lambda i: str(i["metadata"]["name"]))


def pod_state(pod: dict[str, Any]) -> tuple[str, str]:
    """A pod's ready containers (``1/2``) and state: why a container waits
    (``ErrImagePull``, ``CrashLoopBackOff``), why it is not scheduled, else its phase."""
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


async def pod_rows(client: Client, obj: dict[str, Any]) -> list[StatusTree]:
    """One row per pod labelled as the object's: its name, ready count and state."""
    rows = []
    for pod in await labelled(client, POD, obj):
        ready, state = pod_state(pod)
        rows.append({"name": f"Pod/{pod['metadata']['name']}", "ready": ready, "status": state})
    return rows


def _detail(tree: StatusTree, details: Sequence[str]) -> str:
    parts = [f"{tree['reason'] or tree['ready']}: {tree['message']}".strip(": ")]
    for key in details:
        if tree.get(key):
            parts.append(f"{key} {tree[key]}")
    return "; ".join(p for p in parts if p)


def render(tree: StatusTree, details: Sequence[str] = ()) -> str:
    """NAME, READY, STATUS columns: the object (its condition, then each of ``details``,
    the tree's own keys, that has a value), then its pods/members/jobs indented."""
    rows = [
        ("NAME", "READY", "STATUS"),
        (f"{tree['kind']}/{tree['name']}", tree["count"] or "-", _detail(tree, details)),
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


def rows_view(collect: Collect, details: Sequence[str] = ()) -> StatusView:
    """The view of a kind whose ``collect`` builds a :func:`head` tree with items, drawn by
    :func:`render` with the kind's ``details`` (keys of its tree, in order)."""

    def draw(tree: StatusTree) -> str:
        return render(tree, details)

    return StatusView(collect=collect, render=draw)


def basic_view(up: str) -> StatusView:
    """The view of a kind that declares none: the object and its ``up`` condition."""

    async def collect(client: Client, obj: dict[str, Any]) -> StatusTree:
        return head(obj, up, "")

    return rows_view(collect)
