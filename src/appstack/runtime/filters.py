"""Event filters: which events of a watched kind wake a reconciler — controller-runtime's
predicates (``GenerationChangedPredicate``, ``LabelSelectorPredicate``, ``And``/``Or``/
``Not``), kopf's ``labels=``/``annotations=``/``when=``.

A :class:`Filter` answers, per event, whether it enqueues: ``created(obj)``,
``updated(old, new)``, ``deleted(obj)``. Filters compose with ``&``, ``|`` and ``~``::

    from appstack.runtime import Builder, SECRET, generation_changed, labelled, when

    (Builder(manager, "copier")
        .for_(SECRET, filter=labelled("example.com/replicate=true") & ~when(is_copy))
        .complete(reconciler))

They run in the operator on events the cache already holds: a filter saves reconciles,
not memory. What a label selector can say is better said to the API server — the cache's
``ByObject(label_selector=...)`` — so the objects filtered out are never sent, listed or
kept; :func:`labelled` is for the rest (a filter on one of several watches of a kind, or on
objects the cache must keep anyway).
:func:`parse_selector` reads Kubernetes' label selector syntax (``a=b``, ``a!=b``,
``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``) for both. Used by
:class:`~appstack.runtime.builder.Builder` and the SDK's reconcilers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from appstack.runtime.resources import Obj

Check = Callable[[Obj], bool]
UpdateCheck = Callable[[Obj, Obj], bool]


def _always(*_objs: Obj) -> bool:
    return True


@dataclass(frozen=True)
class Filter:
    """Whether an event enqueues: ``on_create(obj)``, ``on_update(old, new)``,
    ``on_delete(obj)`` (each default: yes). ``description`` says what it lets through, for
    logs and errors."""

    on_create: Check = _always
    on_update: UpdateCheck = _always
    on_delete: Check = _always
    description: str = "everything"

    def created(self, obj: Obj) -> bool:
        """Whether the creation of ``obj`` (or its first sight in a list) enqueues."""
        return self.on_create(obj)

    def updated(self, old: Obj, new: Obj) -> bool:
        """Whether a change from ``old`` to ``new`` enqueues."""
        return self.on_update(old, new)

    def deleted(self, obj: Obj) -> bool:
        """Whether the deletion of ``obj`` enqueues."""
        return self.on_delete(obj)

    def __and__(self, other: Filter) -> Filter:
        return Filter(
            lambda o: self.created(o) and other.created(o),
            lambda a, b: self.updated(a, b) and other.updated(a, b),
            lambda o: self.deleted(o) and other.deleted(o),
            f"({self.description} and {other.description})",
        )

    def __or__(self, other: Filter) -> Filter:
        return Filter(
            lambda o: self.created(o) or other.created(o),
            lambda a, b: self.updated(a, b) or other.updated(a, b),
            lambda o: self.deleted(o) or other.deleted(o),
            f"({self.description} or {other.description})",
        )

    def __invert__(self) -> Filter:
        return Filter(
            lambda o: not self.created(o),
            lambda a, b: not self.updated(a, b),
            lambda o: not self.deleted(o),
            f"not {self.description}",
        )


def _meta(obj: Obj, field: str) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get(field) or {}


def generation_changed() -> Filter:
    """Updates only when ``metadata.generation`` changed (the spec, for kinds that count
    generations: not a status, label or annotation change); creations and deletions pass.
    Kinds without a generation (ConfigMaps, Secrets) never change it: use another filter."""
    return Filter(
        on_update=lambda old, new: _meta_value(old, "generation") != _meta_value(new, "generation"),
        description="generation changed",
    )


def _meta_value(obj: Obj, key: str) -> Any:
    return (obj.get("metadata") or {}).get(key)


def labels_changed() -> Filter:
    """Updates only when the labels changed; creations and deletions pass."""
    return Filter(
        on_update=lambda old, new: _meta(old, "labels") != _meta(new, "labels"),
        description="labels changed",
    )


def annotations_changed() -> Filter:
    """Updates only when the annotations changed; creations and deletions pass."""
    return Filter(
        on_update=lambda old, new: _meta(old, "annotations") != _meta(new, "annotations"),
        description="annotations changed",
    )


def when(check: Check, description: str = "") -> Filter:
    """Events of objects for which ``check(obj)`` holds; an update passes when it holds for
    the old or the new object (so an object that stops matching is seen once more, as
    controller-runtime's predicates see both)."""
    name = description or getattr(check, "__name__", "a check")
    return Filter(check, lambda old, new: check(old) or check(new), check, name)


def labelled(selector: str) -> Filter:
    """Objects whose labels match the label ``selector`` (:func:`parse_selector`); an update
    passes when the old or the new object matches."""
    matches = parse_selector(selector)
    return when(lambda obj: matches(_meta(obj, "labels")), f"labels {selector}")


def annotated(key: str, value: str | None = None) -> Filter:
    """Objects carrying annotation ``key`` (with ``value``, if given); an update passes
    when the old or the new object does."""

    def check(obj: Obj) -> bool:
        annotations = _meta(obj, "annotations")
        return key in annotations and (value is None or annotations[key] == value)

    return when(check, f"annotation {key}" + (f"={value}" if value is not None else ""))


# ------------------------------------------------------------------ label selectors
_KEY = r"(?:[A-Za-z0-9.\-]+/)?[A-Za-z0-9]([A-Za-z0-9._\-]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([A-Za-z0-9._\-]*[A-Za-z0-9])?)?"
_REQUIREMENT = re.compile(
    rf"""\s*(?:
        (?P<not>!)\s*(?P<absent>{_KEY})
      | (?P<setkey>{_KEY})\s+(?P<setop>in|notin)\s*\((?P<values>[^)]*)\)
      | (?P<eqkey>{_KEY})\s*(?P<eqop>==|=|!=)\s*(?P<value>{_VALUE})
      | (?P<present>{_KEY})
    )\s*(?:,|$)""",
    re.VERBOSE,
)

Labels = Mapping[str, str]


def parse_selector(selector: str) -> Callable[[Labels], bool]:
    """Kubernetes' label selector syntax as a function of an object's labels; every
    requirement must hold (an empty selector matches everything). A selector the API
    server would refuse raises :class:`ValueError` naming the part it cannot read."""
    checks: list[Callable[[Labels], bool]] = []
    position, text = 0, selector.strip()
    while position < len(text):
        match = _REQUIREMENT.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"label selector {selector!r}: cannot read {text[position:]!r}")
        checks.append(_requirement(match, selector))
        position = match.end()
    return lambda labels: all(check(labels) for check in checks)


def _requirement(match: re.Match[str], selector: str) -> Callable[[Labels], bool]:
    if match["absent"]:
        key = match["absent"]
        return lambda labels: key not in labels
    if match["present"]:
        key = match["present"]
        return lambda labels: key in labels
    if match["setkey"]:
        key, values = match["setkey"], [v.strip() for v in match["values"].split(",")]
        if not all(re.fullmatch(_VALUE, v) for v in values) or values == [""]:
            raise ValueError(f"label selector {selector!r}: bad values in {match.group(0)!r}")
        chosen = frozenset(values)
        if match["setop"] == "in":
            return lambda labels: labels.get(key) in chosen
        return lambda labels: labels.get(key) not in chosen
    key, value = match["eqkey"], match["value"] or ""
    if match["eqop"] == "!=":
        return lambda labels: labels.get(key) != value
    return lambda labels: labels.get(key) == value
