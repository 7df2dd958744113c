"""What a kind tells the tools that look at its objects from outside its reconciler, declared
on its :class:`~appstack.sdk.kit.registration.Registration` beside the controller (each
optional; none changes how an object is reconciled):

* its ready condition — the condition type whose ``True`` means an object is up
  (:attr:`Registration.ready_condition <appstack.sdk.kit.registration.Registration>`,
  default ``Ready``): what a per-object readiness gauge, a GitOps tool's health check or a
  status view reads;
* :class:`Gauges` — the kind's own metric families and the pure function from one cached
  object to its samples, for a Prometheus collector reading the cache at scrape time;
* :class:`StatusView` — how a command line shows one object and what was made for it, and
  optionally its dependency graph (:class:`~appstack.sdk.kit.graphs.StatusGraph`);
* dashboard panels (:data:`Panel`) over its own metrics.

The operator that registers the kind decides what it does with them (appstack: its
per-kind collector, ``appstack status``, its Grafana dashboards and Argo CD health
checks); a registration that declares none of them is a controller as before. Pure
declarations: nothing here reads a cluster.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from appstack.runtime.client import Client
from appstack.sdk.kit.graphs import StatusGraph

#: One gauge sample: the family's name, its labels, its value.
Sample = tuple[str, dict[str, str], float]

#: One dashboard panel: title, unit (e.g. ``short``, ``bytes``, ``s``), PromQL expressions.
Panel = tuple[str, str, list[str]]

#: The kind's panels, given the label matchers that select the objects a dashboard shows
#: (e.g. ``namespace=~"$namespace", name=~"$name"``).
Panels = Callable[[str], Sequence[Panel]]

#: What a status view gathers of one object: a JSON-able tree.
StatusTree = dict[str, Any]


@dataclass(frozen=True)
class Gauges:
    """A kind's own gauges: ``families`` (name → help text) and ``samples``, the pure
    function from one object as cached (a dict) and the labels naming it (``namespace``,
    ``name``) to its samples of those families. A collector calls ``samples`` for every
    cached object of the kind at each scrape, so it reads one object and keeps nothing."""

    families: Mapping[str, str]
    samples: Callable[[dict[str, Any], dict[str, str]], Iterable[Sample]]


@dataclass(frozen=True)
class StatusView:
    """How a command line shows one object of the kind: ``collect`` reads what was made for
    the object (already fetched, a dict) into a :data:`StatusTree` — printed as JSON or YAML
    as it is — and ``render`` draws that tree as text (pure). ``graph`` (optional, pure)
    makes of the tree a :class:`~appstack.sdk.kit.graphs.StatusGraph` — what depends on
    what, in which waves, who blocks whom — for ``appstack status --graph`` and ``-o
    dot|mermaid``."""

    collect: Callable[[Client, dict[str, Any]], Awaitable[StatusTree]]
    render: Callable[[StatusTree], str]
    graph: Callable[[StatusTree], StatusGraph] | None = None
