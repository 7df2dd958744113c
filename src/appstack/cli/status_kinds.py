"""``appstack status [KIND/]NAME`` for every kind of ours: the kind named (by its kind,
plural, singular or short name; AppStack when no kind is given), the object read, and the
view its registration declares (``status_view``, each kind's ``view`` module) gathering
what the operator made for it and drawing it:

* ``appstack/NAME`` — a tree of its members and their objects;
* ``appservice/NAME`` — the Ready and Available conditions, replicas, and each pod with its
  phase, readiness and the reason a container waits (``ErrImagePull``, ``CrashLoopBackOff``);
* ``etcd/NAME`` — members (leader, learners, health, version), the client URL, backups;
* ``crontab/NAME`` — the schedule, the newest run and how it went, and each Job kept;
* ``mdbc/NAME`` — the phase, ready members and each member pod.

A kind that declares no view is shown with its ready condition
(:func:`~appstack.controllers.util.statusview.basic_view`). A view that declares a graph
(an AppStack's: waves, ``dependsOn``/``uses`` edges, who blocks whom) is drawn by
``--graph`` and ``-o dot|mermaid`` (:func:`graph_of`). :func:`collect` reads the cluster,
:func:`follow` again each time the object changes (``--watch``, on a watch of the API
server); :func:`require_api_server` refuses a server that is no API server (``uninstall``
asks it first); :func:`render` is pure. Used by ``appstack status``
(:mod:`appstack.cli.install`).
Nothing here names a kind but the default.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import yaml

from appstack.cli.errors import NotKubernetes
from appstack.controllers.registry import ALL, by_kind
from appstack.controllers.util.statusview import basic_view
from appstack.core.resource import Resource
from appstack.runtime import Client, Gone, NotFound, WatchStalled, crd_names, unserved
from appstack.sdk import MissingCRDs, Registration, StatusGraph, StatusView, draw_graph

Tree = dict[str, Any]

#: The kind ``appstack status NAME`` shows when no ``KIND/`` is given.
DEFAULT_KIND = "appstack"


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


def _view(controller: Registration) -> StatusView:
    return controller.status_view or basic_view(controller.ready_condition)


def _controller(kind: str) -> Registration:
    controller = by_kind(kind)
    if controller is None:
        raise KeyError(f"{kind} is not a kind of ours")
    return controller


async def require_api_server(client: Client) -> None:
    """Raise :class:`~appstack.cli.errors.NotKubernetes` unless the server ``client`` talks
    to answers ``/version`` as a Kubernetes API server does — before a command reads an
    empty answer as "nothing there" (a proxy's or a web server's 200 would otherwise make
    ``uninstall`` report success)."""
    server = str(getattr(client.transport, "base_url", "") or "")
    try:
        version = await client.request("GET", "/version", timeout=30.0, fenced=False)
    except json.JSONDecodeError as error:  # not JSON (orjson's error is one)
        raise NotKubernetes(server) from error
    except NotFound as error:  # a server without /version is no API server
        raise NotKubernetes(server) from error
    if not isinstance(version, dict) or not isinstance(version.get("gitVersion"), str):
        raise NotKubernetes(server)


async def fetch(client: Client, resource: Resource, name: str, namespace: str) -> Tree:
    """``resource`` ``namespace/name`` as the API server answers it (NotFound if it does
    not exist); :class:`NotKubernetes` when the answer is not JSON or not that object."""
    server = str(getattr(client.transport, "base_url", "") or "")
    try:
        obj = await client.get(resource, name, namespace)
    except json.JSONDecodeError as error:  # not JSON (orjson's error is one)
        raise NotKubernetes(server) from error
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or meta.get("name") != name or "resourceVersion" not in meta:
        raise NotKubernetes(server)
    obj.setdefault("kind", resource.kind)
    return obj


async def collect(client: Client, resource: Resource, name: str, namespace: str) -> Tree:
    """The view of ``resource`` ``namespace/name`` (NotFound if it does not exist;
    :class:`NotKubernetes` if the server is not an API server)."""
    obj = await fetch(client, resource, name, namespace)
    return await _view(_controller(resource.kind)).collect(client, obj)


def render(tree: Tree) -> str:
    """The tree as text, drawn by its kind's view."""
    return _view(_controller(tree["kind"])).render(tree)


def graph_of(tree: Tree) -> StatusGraph | None:
    """The graph the tree's kind draws of it, or None if its view declares no graph."""
    view = _view(_controller(tree["kind"]))
    return view.graph(tree) if view.graph is not None else None


def draw(tree: Tree, output: str, *, graph: bool = False) -> str:
    """What ``appstack status -o OUTPUT [--graph]`` prints of ``tree`` (pure): the tree
    drawn (``tree``) or as data (``json``, ``yaml``); with ``graph``, its graph drawn
    (``tree``: as a table; ``dot``, ``mermaid``) or as data. ValueError for a graph the
    tree's kind does not draw."""
    shown: object = tree
    if graph or output in {"dot", "mermaid"}:
        drawn = graph_of(tree)
        if drawn is None:
            raise ValueError(f"{tree['kind']} draws no dependency graph")
        if output in {"dot", "mermaid"}:
            return draw_graph(drawn, output)
        if output == "tree":
            return draw_graph(drawn, "text")
        shown = dataclasses.asdict(drawn)
    if output == "json":
        return json.dumps(shown, indent=2) + "\n"
    if output == "yaml":
        return str(yaml.safe_dump(shown, sort_keys=False))
    return render(tree)


def has_graph(resource: Resource) -> bool:
    """Whether the view of ``resource``'s kind declares a graph."""
    return _view(_controller(resource.kind)).graph is not None


async def follow(
    client: Client, resource: Resource, name: str, namespace: str
) -> AsyncIterator[Tree | None]:
    """The view of ``namespace/name`` now, then again each time the object changes (a watch
    from the version read, resumed where it ended; read afresh when that version expired),
    skipping a change that leaves the view as it was; None once when the object is deleted,
    then nothing more. NotFound if it does not exist at first."""
    shown: Tree | None = None
    while True:
        obj = await fetch(client, resource, name, namespace)
        version = obj["metadata"]["resourceVersion"]
        tree = await _view(_controller(resource.kind)).collect(client, obj)
        if tree != shown:
            shown = tree
            yield tree
        try:
            while True:
                async for event in client.watch(resource, namespace, resource_version=version):
                    changed = event["object"]
                    version = changed["metadata"].get("resourceVersion", version)
                    if event["type"] == "BOOKMARK" or changed["metadata"]["name"] != name:
                        continue
                    if event["type"] == "DELETED":
                        yield None
                        return
                    changed.setdefault("kind", resource.kind)
                    tree = await _view(_controller(resource.kind)).collect(client, changed)
                    if tree != shown:
                        shown = tree
                        yield tree
        except (Gone, WatchStalled):
            continue  # read it again, then watch from there
