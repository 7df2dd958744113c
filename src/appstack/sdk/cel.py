"""A CRD's CEL rules evaluated client-side, as the API server evaluates them at admission
(kube-rs's ``validate``, in Python): one declaration of each rule, in CEL, for both sides.

A kind's rules are written once, as ``x-kubernetes-validations`` on its models
(``json_schema_extra``) and its name rules; the CRD carries them to the API server, and
:func:`rules_of` compiles the same rules from the same structural schema for this process.
:meth:`KindRules.violations` then does what admission does: the schema's defaults applied
first, every rule evaluated with ``self`` bound at each node its schema position matches
(``spec.components[*]`` is every component), a transition rule only on an update with the
old value at the same place (``oldSelf``), and a violation named like the API server names
it: the node's path plus the rule's ``fieldPath`` (``spec.components[0].ports``), with its
``message`` or ``messageExpression``. The functions the rules may call are CEL's standard
ones, the strings extension (``split``, ``upperAscii``, ...) and, of Kubernetes' own
libraries, the regex ``find``/``findAll`` and the lists' ``isSorted``; a rule this engine
cannot compile (another Kubernetes library: ``quantity()``, ``url()``, ``ip()``...) is left
to the API server, with a warning naming it (:attr:`KindRules.skipped`).

The engine is Google's cel-cpp through ``cel-expr-python`` (the ``cel`` extra, which is
that package alone: ``pip install 'cel-expr-python>=0.1.3,<0.2'`` beside appstack; wheels
for Linux x86-64, macOS arm64 and Windows, Python 3.11+). Where it is not installed
:func:`available` is False and nothing is evaluated here: the API server still enforces
every rule. An operator never needs it — what it reconciles was admitted — so appstack's
image does not carry it. Used by
:class:`appstack.sdk.kind.CustomObject` (a model validated client-side: ``appstack
render``, an operator author's tests) and by the parity tests.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from appstack.sdk.schema import root_schema

__all__ = [
    "KindRules",
    "Rule",
    "RuleError",
    "Violation",
    "apply_defaults",
    "available",
    "environment",
    "location",
    "refusal",
    "rules_of",
]


@dataclass(frozen=True)
class Violation:
    """A rule that does not hold: ``field`` as the API server names it (``spec.ports``;
    ``""`` for a rule at the root) and its ``message``; ``value`` is what the rule saw as
    ``self``; ``error``: the rule could not be evaluated (a value of another type)."""

    field: str
    message: str
    value: Any = dataclasses.field(default=None, compare=False, repr=False)
    error: bool = False

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` entry and where it sits in the schema: ``path`` is
    a tuple of steps — a property name, ``"[*]"`` (each item of a list) or ``"{*}"`` (each
    value of a map); ``()`` is the root."""

    path: tuple[str, ...]
    rule: str
    message: str
    field_path: str = ""
    message_expression: str = ""
    reason: str = ""

    @property
    def transition(self) -> bool:
        """Whether the rule compares with the old object (evaluated on updates only)."""
        return re.search(r"\boldSelf\b", self.rule) is not None

    @property
    def where(self) -> str:
        """The schema position, dotted (``.spec.components[*]``; ``""`` at the root)."""
        return "".join(s if s in ("[*]", "{*}") else f".{s}" for s in self.path)


def available() -> bool:
    """Whether the CEL engine is installed (the ``cel`` extra)."""
    return _engine() is not None


@functools.cache
def _engine() -> Any:
    try:
        from cel_expr_python import cel  # noqa: PLC0415 - optional, heavy
        from cel_expr_python.ext.ext_strings import ExtStrings  # noqa: PLC0415
    except ImportError:
        return None
    return cel, ExtStrings


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(_re2(pattern), text)]
    return found if limit < 0 else found[:limit]


def _find(text: str, pattern: str) -> str:
    match = re.search(_re2(pattern), text)
    return match.group(0) if match else ""


@functools.cache
def _re2(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _is_sorted(items: list[Any]) -> bool:
    return all(a <= b for a, b in itertools.pairwise(items))


def _environment() -> Any:
    """The engine's environment of a CRD's rules: ``self`` and ``oldSelf``."""
    return environment(("self", "oldSelf"))


@functools.cache
def environment(variables: tuple[str, ...]) -> Any:
    """The engine's environment: ``variables`` of any type (a CRD's rules: ``self``,
    ``oldSelf``; an admission policy's: ``object``, ``request``...,
    :mod:`appstack.sdk.kit.policies`), the strings extension, and the Kubernetes library
    functions our engine lacks."""
    cel, strings = _engine()
    t = cel.Type
    string_list = t.List(t.STRING)
    dyn_list = t.List(t.DYN)

    def member(name: str, params: list[Any], result: Any, impl: Callable[..., Any]) -> Any:
        return cel.Overload(f"{name}_{len(params)}", result, params, is_member=True, impl=impl)

    functions = [
        cel.FunctionDecl(
            "findAll",
            [
                member("string_find_all", [t.STRING, t.STRING], string_list, _find_all),
                member("string_find_all_n", [t.STRING, t.STRING, t.INT], string_list, _find_all),
            ],
        ),
        cel.FunctionDecl("find", [member("string_find", [t.STRING, t.STRING], t.STRING, _find)]),
        cel.FunctionDecl("isSorted", [member("list_is_sorted", [dyn_list], t.BOOL, _is_sorted)]),
    ]
    return cel.NewEnv(
        variables=dict.fromkeys(variables, t.DYN),
        extensions=[strings()],
        functions=functions,
    )


def _walk(node: Mapping[str, Any], path: tuple[str, ...]) -> Iterator[Rule]:
    for entry in node.get("x-kubernetes-validations") or ():
        yield Rule(
            path,
            entry["rule"],
            entry.get("message", ""),
            entry.get("fieldPath", ""),
            entry.get("messageExpression", ""),
            entry.get("reason", ""),
        )
    for name, sub in (node.get("properties") or {}).items():
        yield from _walk(sub, (*path, name))
    if isinstance(node.get("items"), Mapping):
        yield from _walk(node["items"], (*path, "[*]"))
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from _walk(node["additionalProperties"], (*path, "{*}"))


def apply_defaults(schema: Mapping[str, Any], value: Any) -> Any:
    """``value`` as the API server has it before it validates: a null of a field that is
    not ``nullable`` pruned, then the schema's ``default`` set wherever a field is missing —
    in place and recursively."""
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key in [k for k, v in value.items() if v is None]:
            sub = properties.get(key, extra if isinstance(extra, Mapping) else {})
            if not sub.get("nullable"):
                del value[key]
        for name, sub in properties.items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                apply_defaults(sub, value[name])
        if isinstance(extra, Mapping):
            for key in value:
                if key not in properties:
                    apply_defaults(extra, value[key])
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            apply_defaults(schema["items"], item)
    return value


_NO_OLD = object()  # no old value correlates with the node (a create, a new list item)


def _nodes(
    schema: Mapping[str, Any], value: Any, old: Any, path: tuple[str, ...], at: str
) -> Iterator[tuple[str, Any, Any]]:
    """Every ``(field, node, old node)`` of ``value`` at the schema position ``path``; the
    old node is the old object's value that correlates with it as the API server
    correlates them (the same property, the same map key, the list item of a
    ``x-kubernetes-list-type: map`` with the same keys), else :data:`_NO_OLD`."""
    if not path:
        yield at, value, old
        return
    step, rest = path[0], path[1:]
    if step == "[*]":
        items = schema.get("items") or {}
        keys = schema.get("x-kubernetes-list-map-keys") or ()
        by_key = schema.get("x-kubernetes-list-type") == "map" and keys
        old_items = old if isinstance(old, list) else []
        for i, item in enumerate(value if isinstance(value, list) else ()):
            before = _NO_OLD
            if by_key and isinstance(item, dict):
                want = [item.get(k) for k in keys]
                same = (
                    o for o in old_items if isinstance(o, dict) and [o.get(k) for k in keys] == want
                )
                before = next(same, _NO_OLD)
            yield from _nodes(items, item, before, rest, f"{at}[{i}]")
    elif step == "{*}":
        extra = schema.get("additionalProperties") or {}
        old_values = old if isinstance(old, dict) else {}
        for key, item in value.items() if isinstance(value, dict) else ():
            yield from _nodes(extra, item, old_values.get(key, _NO_OLD), rest, f"{at}[{key}]")
    elif isinstance(value, dict) and step in value:
        sub = (schema.get("properties") or {}).get(step) or {}
        before = old.get(step, _NO_OLD) if isinstance(old, dict) else _NO_OLD
        yield from _nodes(sub, value[step], before, rest, f"{at}.{step}" if at else step)


class RuleError(ValueError):
    """A rule the engine cannot compile, named with its place in the schema."""


def _compile(rule: Rule, expression: str) -> Any:
    try:
        return _environment().compile(expression)
    except RuntimeError as error:
        raise RuleError(f"{rule.where or '<root>'}: {expression}: {error}") from None


class KindRules:
    """The CEL rules of one structural schema (a CRD version's ``openAPIV3Schema``),
    compiled once."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self.rules = tuple(_walk(schema, ()))
        #: The rules this engine cannot compile, and why: left to the API server.
        self.skipped: list[RuleError] = []
        self._programs = []
        for rule in self.rules:
            try:
                program = _compile(rule, rule.rule)
                message = (
                    _compile(rule, rule.message_expression) if rule.message_expression else None
                )
            except RuleError as error:
                self.skipped.append(error)
                warnings.warn(
                    f"CEL rule not evaluated client-side (the API server still checks it): {error}",
                    stacklevel=2,
                )
                continue
            self._programs.append((rule, program, message))

    def violations(
        self, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
    ) -> list[Violation]:
        """What admission would refuse of ``obj`` (a create; an update of ``old``), in the
        order of the schema's rules. ``obj`` is not changed."""
        value = apply_defaults(self.schema, copy.deepcopy(dict(obj)))
        previous = _NO_OLD if old is None else apply_defaults(self.schema, copy.deepcopy(dict(old)))
        out: list[Violation] = []
        for rule, program, message in self._programs:
            for at, node, before in _nodes(self.schema, value, previous, rule.path, ""):
                data = {"self": node}
                if rule.transition:
                    if before is _NO_OLD:
                        continue  # a create, or nothing of the old object correlates
                    data["oldSelf"] = before
                verdict = _evaluate(program, data)
                if verdict is True:
                    continue
                named = at + rule.field_path if rule.field_path else at
                said = _message(rule, message, data, verdict)
                out.append(Violation(named.lstrip("."), said, node, error=verdict is not False))
        return out


def location(field: str) -> tuple[str | int, ...]:
    """A violation's field as a Pydantic error location: ``spec.ports[0]`` → ``("spec",
    "ports", 0)``."""
    steps: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[([^\]]*)\]", field):
        steps.append(name if name else int(index) if index.isdigit() else index)
    return tuple(steps)


def refusal(title: str, found: list[Violation]) -> ValidationError:
    """``found`` as a Pydantic :class:`ValidationError` (type ``cel_rule``), each error at
    its field's location: what a model validator raises."""
    return ValidationError.from_exception_data(
        title,
        [
            InitErrorDetails(
                type=PydanticCustomError("cel_rule", "{message}", {"message": v.message}),
                loc=location(v.field),
                input=v.value,
            )
            for v in found
        ],
    )


def _evaluate(program: Any, data: dict[str, Any]) -> Any:
    result = program.eval(data=data)
    value = result.plain_value()
    if isinstance(value, bool):
        return value
    return f"{value}"  # an error value: the rule could not be evaluated


def _message(rule: Rule, program: Any, data: dict[str, Any], verdict: Any) -> str:
    if verdict is not False:
        return f"{rule.message or rule.rule}: evaluation error: {verdict}"
    if program is not None:
        said = program.eval(data=data).plain_value()
        if isinstance(said, str) and said:
            return said
    return rule.message or f"failed rule: {rule.rule}"


class Kind(Protocol):
    """What :func:`rules_of` reads of a declared kind (:class:`appstack.sdk.kind.CustomKind`,
    which imports this module): its top-level model, and that model's spec and status."""

    @property
    def model(self) -> Any: ...


def rules_of(kind: Kind) -> KindRules:
    """The compiled rules of ``kind``'s CRD (its served version's schema), compiled on
    first use and kept with the kind's model."""
    return _compiled(kind.model)


@functools.cache
def _compiled(model: Any) -> KindRules:
    return KindRules(root_schema(model, model.KIND.spec, model.KIND.status))
