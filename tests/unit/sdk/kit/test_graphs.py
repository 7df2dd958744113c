"""The dependency graph as ``appstack status --graph`` draws it (pure): names that are
syntax quoted in DOT and Mermaid, a node in no wave drawn last, what blocks a node, an
unknown format refused. The drawing of a real stack: tests/unit/cli/test_status_graph.py."""

from __future__ import annotations

import pytest

from appstack.sdk import GraphEdge, GraphNode, StatusGraph, draw_graph


def test_names_that_are_syntax_are_quoted_in_dot_and_mermaid() -> None:
    graph = StatusGraph(
        title='a "quoted" <title>',
        nodes=[GraphNode("a-b", "K", "Ready", ready=True), GraphNode('c"d', "K", "Failed")],
        edges=[GraphEdge("a-b", 'c"d', "uses")],
        waves=[['c"d'], ["a-b"]],
    )
    dot = draw_graph(graph, "dot")
    assert '"a-b" -> "c\\"d" [label="uses"];' in dot
    assert dot.startswith('digraph "a \\"quoted\\" <title>" {')
    mermaid = draw_graph(graph, "mermaid")
    assert 'n0["c#quot;d<br/>K<br/>Failed"]' in mermaid
    assert 'n1 -->|"uses"| n0' in mermaid
    assert "class n0 failed" in mermaid
    with pytest.raises(ValueError, match="no graph format 'svg'"):
        draw_graph(graph, "svg")


def test_a_node_in_no_wave_is_drawn_last_without_one() -> None:
    graph = StatusGraph(title="t", nodes=[GraphNode("x"), GraphNode("y")], waves=[["y"]])
    lines = draw_graph(graph).splitlines()
    assert [line.split()[:2] for line in lines[2:]] == [["1", "y"], ["-", "x"]]


def test_only_what_is_not_ready_blocks() -> None:
    graph = StatusGraph(
        title="t",
        nodes=[GraphNode("a"), GraphNode("b", ready=True), GraphNode("c")],
        edges=[GraphEdge("a", "b"), GraphEdge("a", "c"), GraphEdge("a", "gone")],
    )
    assert graph.blocked_by("a") == ["c"]
    assert graph.blocked_by("b") == []
    assert draw_graph(graph).splitlines()[2].split() == ["-", "a", "-", "b,", "c,", "gone", "c"]
