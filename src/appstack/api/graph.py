"""Dependency graphs of stack members: cycle detection and start/teardown order (pure).
The order is the standard library's (:mod:`graphlib`); the cycle is found here, visiting
members in name order, so a refusal names the same cycle every time.

Used to validate ``AppStack`` specs (a cycle is reported member by member) and, by its
controller, to start members only once what they depend on is ready and to tear down in
reverse order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from graphlib import CycleError, TopologicalSorter


def find_cycle(edges: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A cycle as ``[a, b, ..., a]``, or None. ``edges[x]`` are what ``x`` depends on."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if state.get(dep) is None:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if state.get(node) is None:
            found = visit(node)
            if found:
                return found
    return None


def start_order(edges: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Waves of members that can start together, dependencies first (the standard library's
    :class:`graphlib.TopologicalSorter`, each wave sorted; ValueError on a cycle).

    Members only mentioned as dependencies (e.g. middleware) are in the first wave.
    """
    sorter = TopologicalSorter(edges)
    try:
        sorter.prepare()
    except CycleError as error:
        raise ValueError("dependency cycle") from error
    waves: list[list[str]] = []
    while sorter.is_active():
        wave = sorted(sorter.get_ready())
        waves.append(wave)
        sorter.done(*wave)
    return waves


def teardown_order(edges: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """The reverse of :func:`start_order`: consumers before what they use."""
    return list(reversed(start_order(edges)))


def blocked_by(member: str, edges: Mapping[str, Sequence[str]], ready: set[str]) -> list[str]:
    """The dependencies of ``member`` that are not ready yet (empty: it may start)."""
    return sorted(d for d in edges.get(member, ()) if d not in ready)
