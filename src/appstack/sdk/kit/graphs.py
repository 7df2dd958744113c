"""A kind's dependency graph as a command line draws it: :class:`StatusGraph` — nodes with
their state, the edges between them (who needs whom, and how), the waves they start in —
and :func:`draw_graph`, which draws one as a text table, Graphviz DOT or Mermaid (pure,
deterministic: the same graph always gives the same text, so docs can embed it and tests
compare it to a golden file).

A kind's :class:`~appstack.sdk.kit.observers.StatusView` may declare ``graph``: the pure
function from its status tree to a :class:`StatusGraph`. ``appstack status --graph`` (and
``-o dot``/``-o mermaid``) then draws it — for appstack's AppStack (its members' waves and
``dependsOn``/``uses`` edges, and who blocks whom) and for any operator built on the SDK.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

#: The formats :func:`draw_graph` draws.
GRAPH_FORMATS = ("text", "dot", "mermaid")


@dataclass(frozen=True)
class GraphNode:
    """One node: its ``name`` (unique in the graph), what it is (``kind``), its ``state``
    (e.g. ``Ready``, ``Progressing``, ``WaitingForDependencies``, ``Failed``), whether
    that state is ready, and a ``message`` (why it is not)."""

    name: str
    kind: str = ""
    state: str = ""
    ready: bool = False
    message: str = ""


@dataclass(frozen=True)
class GraphEdge:
    """``source`` needs ``target`` (it starts after it); ``label`` says how (``uses``,
    ``dependsOn``...)."""

    source: str
    target: str
    label: str = ""


@dataclass(frozen=True)
class StatusGraph:
    """What ``appstack status --graph`` draws: ``title`` (e.g. ``AppStack shop/dataservice``),
    the nodes, the edges, and ``waves`` — the nodes in the order they start, each wave's
    nodes together (every node in exactly one wave)."""

    title: str
    nodes: Sequence[GraphNode]
    edges: Sequence[GraphEdge] = ()
    waves: Sequence[Sequence[str]] = field(default_factory=tuple)

    def node(self, name: str) -> GraphNode:
        """The node named ``name`` (KeyError if none)."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def needs(self, name: str) -> list[GraphEdge]:
        """The edges from ``name``: what it needs, in the graph's order."""
        return [edge for edge in self.edges if edge.source == name]

    def blocked_by(self, name: str) -> list[str]:
        """What ``name`` needs that is not ready yet (empty: nothing holds it back)."""
        known = {node.name: node for node in self.nodes}
        return sorted(
            {
                edge.target
                for edge in self.needs(name)
                if edge.target in known and not known[edge.target].ready
            }
        )


def draw_graph(graph: StatusGraph, fmt: str = "text") -> str:
    """``graph`` as ``text`` (a table: wave, node, kind, state, what it needs and what
    blocks it), ``dot`` (Graphviz) or ``mermaid`` (a flowchart, as GitHub and mkdocs
    render it). ValueError for another format."""
    if fmt == "text":
        return _text(graph)
    if fmt == "dot":
        return _dot(graph)
    if fmt == "mermaid":
        return _mermaid(graph)
    raise ValueError(f"no graph format {fmt!r}: use one of {', '.join(GRAPH_FORMATS)}")


def _ordered(graph: StatusGraph) -> list[tuple[int, GraphNode]]:
    """Each node with its wave (1-based), wave by wave; nodes in no wave last (wave 0)."""
    placed: list[tuple[int, GraphNode]] = []
    seen: set[str] = set()
    for number, wave in enumerate(graph.waves, start=1):
        for name in wave:
            placed.append((number, graph.node(name)))
            seen.add(name)
    placed.extend((0, node) for node in graph.nodes if node.name not in seen)
    return placed


def _needs_text(graph: StatusGraph, name: str) -> str:
    grouped: dict[str, list[str]] = {}
    for edge in graph.needs(name):
        grouped.setdefault(edge.label, []).append(edge.target)
    return "; ".join(
        f"{label} {', '.join(targets)}" if label else ", ".join(targets)
        for label, targets in sorted(grouped.items())
    )


def _text(graph: StatusGraph) -> str:
    rows = [("WAVE", "NAME", "KIND", "STATE", "NEEDS", "BLOCKED BY")]  # STATE: and why
    for wave, node in _ordered(graph):
        rows.append(
            (
                str(wave) if wave else "-",
                node.name,
                node.kind,
                (node.state or "-") + (f": {node.message}" if node.message else ""),
                _needs_text(graph, node.name),
                ", ".join(graph.blocked_by(node.name)),
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    lines = [graph.title]
    for row in rows:
        cells = [f"{cell:<{widths[i]}}" for i, cell in enumerate(row[:-1])]
        lines.append("   ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    """A DOT string: JSON's escaping is DOT's for quotes and backslashes."""
    return json.dumps(text, ensure_ascii=False)


_DOT_COLOUR = {True: "palegreen", False: "lightgoldenrod1"}
_FAILED_COLOUR = "lightpink"


def _colour(node: GraphNode) -> str:
    if node.state == "Failed":
        return _FAILED_COLOUR
    return _DOT_COLOUR[node.ready]


def _label(node: GraphNode) -> list[str]:
    return [part for part in (node.name, node.kind, node.state) if part]


def _dot(graph: StatusGraph) -> str:
    lines = [
        f"digraph {_quoted(graph.title)} {{",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled"];',
    ]
    for _, node in _ordered(graph):
        label = "\\n".join(_quoted(part)[1:-1] for part in _label(node))
        lines.append(f'  {_quoted(node.name)} [label="{label}", fillcolor={_colour(node)}];')
    for edge in graph.edges:
        attributes = f" [label={_quoted(edge.label)}]" if edge.label else ""
        lines.append(f"  {_quoted(edge.source)} -> {_quoted(edge.target)}{attributes};")
    for wave in graph.waves:
        if len(wave) > 1:
            lines.append(f"  {{ rank=same; {' '.join(_quoted(name) + ';' for name in wave)} }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_text(text: str) -> str:
    """Text inside a Mermaid label: its quote and markup characters as entities."""
    return (
        text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
    )


def _mermaid(graph: StatusGraph) -> str:
    # Node ids are n0, n1, ...: names may hold characters Mermaid reads as syntax.
    ids = {node.name: f"n{i}" for i, (_, node) in enumerate(_ordered(graph))}
    lines = ["flowchart LR", f"  %% {_mermaid_text(graph.title)}"]
    for _, node in _ordered(graph):
        label = "<br/>".join(_mermaid_text(part) for part in _label(node))
        lines.append(f'  {ids[node.name]}["{label}"]')
    for edge in graph.edges:
        if edge.source not in ids or edge.target not in ids:
            continue
        label = f'|"{_mermaid_text(edge.label)}"|' if edge.label else ""
        lines.append(f"  {ids[edge.source]} -->{label} {ids[edge.target]}")
    classes: dict[str, list[str]] = {"ready": [], "waiting": [], "failed": []}
    for _, node in _ordered(graph):
        group = "failed" if node.state == "Failed" else "ready" if node.ready else "waiting"
        classes[group].append(ids[node.name])
    styles = {"ready": "#c8f7c5", "waiting": "#fbeeb8", "failed": "#f8c6cf"}
    for group, members in classes.items():
        if members:
            lines.append(f"  classDef {group} fill:{styles[group]},stroke:#555")
            lines.append(f"  class {','.join(members)} {group}")
    return "\n".join(lines) + "\n"
