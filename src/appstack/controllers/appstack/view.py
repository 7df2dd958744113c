"""What ``appstack status STACK`` shows of an AppStack: a tree — its Ready condition, each
member (middleware and components, from its status) and the objects the operator made for
that member (found by the ``appstack.dev/stack`` and ``appstack.dev/member`` labels), with
their readiness; like ``crossplane beta trace``. Secrets are listed by name only. Its
graph (:func:`graph`, ``appstack status NAME --graph`` or ``-o dot|mermaid``): the members in
the waves they start in, the ``dependsOn``/``uses`` edges from the spec, and who blocks whom.

Declared on its registration (:data:`.CONTROLLER`) and picked from the registry by
:mod:`appstack.cli.status_kinds` (the kind ``appstack status NAME`` shows when no kind is
given). :func:`collect` reads the cluster; :func:`tree`, :func:`render_tree` and
:func:`graph` are pure.
"""

from __future__ import annotations

from typing import Any

from appstack.api.graph import start_order
from appstack.api.kind import GROUP
from appstack.controllers.appstack.labels import MEMBER_LABEL, STACK_LABEL
from appstack.core.resource import Resource
from appstack.runtime import (
    CONFIG_MAP,
    DEPLOYMENT,
    ENDPOINT_SLICE,
    SECRET,
    SERVICE,
    STATEFUL_SET,
    Client,
    Forbidden,
)
from appstack.sdk import (
    SLICE_MANAGER_LABEL,
    GraphEdge,
    GraphNode,
    StatusGraph,
    StatusTree,
    StatusView,
)

CHILD_KINDS = (STATEFUL_SET, DEPLOYMENT, SERVICE, ENDPOINT_SLICE, CONFIG_MAP, SECRET)


def _ready_condition(obj: dict[str, Any]) -> dict[str, Any]:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return dict(condition)
    return {"status": "Unknown", "reason": "", "message": ""}


def _replicas(obj: dict[str, Any]) -> str | None:
    if obj["kind"] not in {"Deployment", "StatefulSet"}:
        return None
    want = (obj.get("spec") or {}).get("replicas", 1)
    return f"{(obj.get('status') or {}).get('readyReplicas', 0)}/{want}"


async def _children(client: Client, resource: Resource, stack: str, ns: str) -> list[Any]:
    try:
        items, _ = await client.list(resource, ns, label_selector=f"{STACK_LABEL}={stack}")
    except Forbidden:  # e.g. no right to list Secrets: show the rest
        return []
    for item in items:
        item.setdefault("kind", resource.kind)
    if resource is ENDPOINT_SLICE:  # ours (external middleware), not the endpoint controller's
        return [i for i in items if _labels(i).get(SLICE_MANAGER_LABEL) == GROUP]
    return items


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


async def collect(client: Client, stack: dict[str, Any]) -> StatusTree:
    """The AppStack ``stack`` (as read) with its members and their objects."""
    name, namespace = stack["metadata"]["name"], stack["metadata"]["namespace"]
    children = [c for r in CHILD_KINDS for c in await _children(client, r, name, namespace)]
    return tree(stack, children)


def _needs(stack: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """Per component of the spec, what it ``dependsOn`` and ``uses`` (as written, sorted)."""
    needs: dict[str, dict[str, list[str]]] = {}
    for component in (stack.get("spec") or {}).get("components") or []:
        needs[component["name"]] = {
            "dependsOn": sorted(set(component.get("dependsOn") or [])),
            "uses": sorted(set(component.get("uses") or [])),
        }
    return needs


def tree(stack: dict[str, Any], children: list[dict[str, Any]]) -> StatusTree:
    """The tree of ``stack`` given the ``children`` the operator made for it (pure): each
    member of its status with the objects labelled as that member's, and what it needs."""
    status = stack.get("status") or {}
    ready = _ready_condition(stack)
    needs = _needs(stack)
    members = []
    for member in status.get("members") or []:
        objects = [
            {"kind": c["kind"], "name": c["metadata"]["name"], "ready": _replicas(c)}
            for c in children
            if _labels(c).get(MEMBER_LABEL) == member["name"]
        ]
        wants = needs.get(member["name"], {"dependsOn": [], "uses": []})
        members.append({**member, **wants, "objects": objects})
    return {
        "kind": "AppStack",
        "name": stack["metadata"]["name"],
        "namespace": stack["metadata"]["namespace"],
        "ready": ready["status"],
        "reason": ready.get("reason", ""),
        "message": ready.get("message", ""),
        "readyMembers": status.get("readyMembers", ""),
        "members": members,
    }


def graph(shown: StatusTree) -> StatusGraph:
    """The stack's dependency graph (pure): its members with their state, an edge per
    ``dependsOn`` and ``uses`` (a member both depends on and uses: one edge, ``uses``), and
    the waves they start in — the controller's own order
    (:func:`~appstack.api.graph.start_order`; none for a cycle admission let through)."""
    members = shown["members"]
    nodes = [
        GraphNode(
            name=member["name"],
            kind=member["kind"],
            state=member["state"],
            ready=member["state"] == "Ready",
            # why it is not ready; waiting is what BLOCKED BY says
            message=""
            if member["state"] in {"Ready", "WaitingForDependencies"}
            else member.get("message") or "",
        )
        for member in members
    ]
    known = {member["name"] for member in members}
    edges: list[GraphEdge] = []
    dependencies: dict[str, list[str]] = {}
    for member in members:
        uses = set(member.get("uses") or [])
        depends = set(member.get("dependsOn") or []) - uses
        targets = sorted(uses | depends)
        dependencies[member["name"]] = [t for t in targets if t in known]
        edges.extend(
            GraphEdge(member["name"], target, "uses" if target in uses else "dependsOn")
            for target in targets
            if target in known
        )
    try:
        waves = start_order(dependencies) if dependencies else []
    except ValueError:  # a cycle: drawn without waves
        waves = []
    title = (
        f"AppStack {shown['namespace']}/{shown['name']}: "
        f"{shown['reason'] or shown['ready']} ({shown['readyMembers'] or '-'} ready)"
    )
    return StatusGraph(title=title, nodes=nodes, edges=edges, waves=waves)


def render_tree(tree: dict[str, Any]) -> str:
    """The tree as text: NAME, READY, STATUS columns, members and their objects indented."""
    rows = [("NAME", "READY", "STATUS")]
    rows.append(
        (
            f"AppStack/{tree['name']}",
            tree["readyMembers"] or "-",
            f"{tree['reason'] or tree['ready']}: {tree['message']}".strip(": "),
        )
    )
    members = tree["members"]
    for i, member in enumerate(members):
        last = i == len(members) - 1
        message = member.get("message") or ""
        state = member["state"] + (f" ({message})" if message.lower() not in {"", "ready"} else "")
        rows.append(
            (
                f"{'└─' if last else '├─'} {member['name']} ({member['kind']})",
                member["ready"],
                state,
            )
        )
        for j, obj in enumerate(member["objects"]):
            branch = "└─" if j == len(member["objects"]) - 1 else "├─"
            rows.append(
                (
                    f"{'   ' if last else '│  '}{branch} {obj['kind']}/{obj['name']}",
                    obj["ready"] or "",
                    "",
                )
            )
    width = [max(len(r[c]) for r in rows) for c in range(2)]
    return (
        "\n".join(f"{r[0]:<{width[0]}}   {r[1]:<{width[1]}}   {r[2]}".rstrip() for r in rows) + "\n"
    )


VIEW = StatusView(collect=collect, render=render_tree, graph=graph)
