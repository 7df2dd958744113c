"""The API references of :mod:`appstack.runtime` (``docs/runtime-api.md``) and
:mod:`appstack.sdk` (``docs/sdk-api.md``), generated from the docstrings and signatures of
the names in their ``__all__`` — the one door through which appstack's own operator and
every user's operator reach them.

``python -m appstack.apidoc docs/runtime-api.md`` and ``python -m appstack.apidoc
docs/sdk-api.md sdk`` (``make docs``) write them; a unit test fails when a committed file is
stale, so the reference always says what the code does. Used by developers and that test
only; the operator never imports it.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any

from appstack import runtime, sdk

HEADERS = {
    "runtime": """# `appstack.runtime` API reference

Generated from the docstrings by `make docs` (`python -m appstack.apidoc`); do not edit.
The tutorial is [runtime.md](runtime.md).
""",
    "sdk": """# `appstack.sdk` API reference

Generated from the docstrings by `make docs` (`python -m appstack.apidoc docs/sdk-api.md
sdk`); do not edit. Everything here imports from the package root (`from appstack.sdk import
KindReconciler`), as appstack's own operator imports it (an import-linter contract keeps it
so). The tutorial is [build-your-own-operator.md](build-your-own-operator.md); the runtime
underneath is [runtime-api.md](runtime-api.md).
""",
}
PACKAGES = {"runtime": runtime, "sdk": sdk}


#: A Sphinx cross-reference in a docstring: ``:meth:`~appstack.runtime.Cache.get```,
#: ``:class:`Client```, ``:py:func:`title <target>```.
ROLE = re.compile(r":(?:py:)?(?:meth|class|func|data|attr|mod|exc|obj|const):`([^`]+)`")
_TITLED = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.DOTALL)


def _reference(match: re.Match[str]) -> str:
    """A role as Sphinx shows it, as inline code: its explicit title (``title <target>``),
    the last component of a ``~target``, else the target as written (``!`` and a leading
    ``.`` dropped)."""
    text = " ".join(match.group(1).split())
    titled = _TITLED.match(text)
    if titled and titled.group(1):
        return f"`{titled.group(1)}`"
    target = "".join(text.split()).lstrip("!")  # a name wrapped over two lines is one name
    if target.startswith("~"):
        target = target.lstrip("~").rsplit(".", 1)[-1]
    return f"`{target.lstrip('.')}`"


def markdown(text: str) -> str:
    """A docstring's Sphinx roles (``:meth:``, ``:class:``, ``:func:``, ``:data:``,
    ``:attr:``, ``:mod:``, ``:exc:``...) as Markdown inline code of the name they show."""
    return ROLE.sub(_reference, text)


def _doc(obj: Any) -> str:
    return markdown(inspect.cleandoc(inspect.getdoc(obj) or "(undocumented)"))


class _Text:
    """An annotation as written: postponed (a string), shown without quotes."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _bare(annotation: Any) -> Any:
    return _Text(annotation) if isinstance(annotation, str) else annotation


def _default(value: Any) -> Any:
    """A default as Python would read it: a function by its name (``time.monotonic``), a
    dataclass field's factory (``<factory>``) as ``...``."""
    if value is inspect.Parameter.empty:
        return value
    if callable(value) and hasattr(value, "__qualname__"):
        return _Text(f"{getattr(value, '__module__', None) or 'builtins'}.{value.__qualname__}")
    if repr(value).startswith("<"):
        return _Text("...")
    return value


def _signature(obj: Any, name: str) -> str:
    """``name(parameters) -> return``, as Python: annotations unquoted, defaults as repr
    (``path: str = '/metrics'``), so a signature compiles as a ``def``."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return name
    parameters = [
        p.replace(annotation=_bare(p.annotation), default=_default(p.default))
        for p in signature.parameters.values()
    ]
    bare = signature.replace(
        parameters=parameters, return_annotation=_bare(signature.return_annotation)
    )
    return f"{name}{bare}"


def _members(cls: type) -> list[tuple[str, Any]]:
    """Public methods and properties defined by the class itself (not inherited)."""
    out = []
    for name, raw in vars(cls).items():
        if name.startswith("_"):
            continue
        member = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
        if inspect.isfunction(member) or isinstance(member, property):
            out.append((name, member))
    return out


def _model_fields(cls: type) -> list[str]:
    """A Pydantic model's fields as written in YAML (their aliases), whose signature
    Pydantic builds lazily (it differs before and after the model's schema is complete)."""
    fields = getattr(cls, "model_fields", None)
    if fields is None:
        return []
    names = ", ".join(f"`{f.alias or n}`" for n, f in fields.items())
    return [f"Fields: {names}." if names else "No fields of its own.", ""]


def _class(name: str, cls: type) -> list[str]:
    bases = [b.__name__ for b in cls.__bases__ if b is not object]
    head = f"### class `{name}`" + (f" ({', '.join(bases)})" if bases else "")
    fields = _model_fields(cls)
    signature = f"{name}(**fields: Any)" if fields else _signature(cls, name)
    if "(" not in signature:  # no signature to show (a builtin's constructor)
        signature = f"{name}(*args: Any, **kwargs: Any)"
    lines = [head, "", "```python", signature, "```", "", _doc(cls), "", *fields]
    for member_name, member in _members(cls):
        # Documented where it is declared (a protocol, a base class) counts: getdoc inherits.
        summary = _summary(getattr(cls, member_name))
        if isinstance(member, property):
            lines.append(f"- **`{member_name}`** (property) — {summary}")
        else:
            prefix = "async " if inspect.iscoroutinefunction(member) else ""
            signature = _signature(member, member_name).replace("(self, ", "(", 1)
            signature = signature.replace("(self)", "()", 1).replace("(cls, ", "(", 1)
            lines.append(f"- `{prefix}{signature}` — {summary}")
    return [*lines, ""]


def _summary(obj: Any) -> str:
    doc = inspect.getdoc(obj)
    return markdown(" ".join(doc.strip().split("\n\n")[0].split())) if doc else "(undocumented)"


def _typeddict(name: str, cls: type) -> list[str]:
    """A wire shape: its keys and their types, as written."""
    hints = getattr(cls, "__annotations__", {})
    keys = ", ".join(f"`{key}`" for key in hints)
    return [f"### TypedDict `{name}`", "", _doc(cls), "", f"Keys: {keys}.", ""]


def _constant(name: str, obj: Any) -> str:
    """What a constant is: its value, where the value is the same in every process (a
    set's members sorted: their order follows string hashing, which differs per process)."""
    text = repr(obj)
    if isinstance(obj, (set, frozenset)) and obj:
        members = ", ".join(sorted(repr(member) for member in obj))
        text = f"{type(obj).__name__}({{{members}}})"
    if " at 0x" in text:
        return f"- **`{name}`** ({type(obj).__name__})"
    return f"- **`{name}`** = `{text}`"


def render(package: str = "runtime") -> str:
    """The whole reference of ``appstack.<package>``, one section per exported name, in
    ``__all__`` order."""
    module = PACKAGES[package]
    classes, functions, errors, constants = [], [], [], []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            errors.append(f"- **`{name}`** ({obj.__bases__[0].__name__}) — {_summary(obj)}")
        elif inspect.isclass(obj) and hasattr(obj, "__total__"):  # a TypedDict
            classes += _typeddict(name, obj)
        elif inspect.isclass(obj):
            classes += _class(name, obj)
        elif inspect.isfunction(obj):
            functions += [f"### `{_signature(obj, name)}`", "", _doc(obj), ""]
        else:  # a constant (a well-known kind) or a type alias: what it is
            constants.append(_constant(name, obj))
    parts = [HEADERS[package], "## Classes", "", *classes, "## Functions", "", *functions]
    parts += ["## Errors", "", *errors, ""]
    parts += ["## Constants and types", "", *constants, ""]
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    target = Path(argv[1]) if len(argv) > 1 else Path("docs/runtime-api.md")
    target.write_text(render(argv[2] if len(argv) > 2 else "runtime"))
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
