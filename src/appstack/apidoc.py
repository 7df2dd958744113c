"""The API reference of :mod:`appstack.runtime` (``docs/runtime-api.md``), generated from
the docstrings and signatures of the names in its ``__all__``.

``python -m appstack.apidoc docs/runtime-api.md`` (``make docs``) writes it; a unit test
fails when the committed file is stale, so the reference always says what the code does.
Used by developers and that test only; the operator never imports it.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

from appstack import runtime

HEADER = """# `appstack.runtime` API reference

Generated from the docstrings by `make docs` (`python -m appstack.apidoc`); do not edit.
The tutorial is [runtime.md](runtime.md).
"""


def _doc(obj: Any) -> str:
    return inspect.cleandoc(inspect.getdoc(obj) or "(undocumented)")


class _Text:
    """An annotation as written: postponed (a string), shown without quotes."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _bare(annotation: Any) -> Any:
    return _Text(annotation) if isinstance(annotation, str) else annotation


def _signature(obj: Any, name: str) -> str:
    """``name(parameters) -> return``, as Python: annotations unquoted, defaults as repr
    (``path: str = '/metrics'``), so a signature compiles as a ``def``."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return name
    parameters = [p.replace(annotation=_bare(p.annotation)) for p in signature.parameters.values()]
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


def _class(name: str, cls: type) -> list[str]:
    bases = [b.__name__ for b in cls.__bases__ if b is not object]
    head = f"### class `{name}`" + (f" ({', '.join(bases)})" if bases else "")
    lines = [head, "", "```python", _signature(cls, name), "```", "", _doc(cls), ""]
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
    return " ".join(doc.strip().split("\n\n")[0].split()) if doc else "(undocumented)"


def render() -> str:
    """The whole reference, one section per exported name, in ``__all__`` order."""
    classes, functions, errors, constants = [], [], [], []
    for name in runtime.__all__:
        obj = getattr(runtime, name)
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            errors.append(f"- **`{name}`** ({obj.__bases__[0].__name__}) — {_summary(obj)}")
        elif inspect.isclass(obj):
            classes += _class(name, obj)
        elif inspect.isfunction(obj):
            functions += [f"### `{_signature(obj, name)}`", "", _doc(obj), ""]
        else:  # a constant (a well-known kind) or a type alias: what it is
            constants.append(f"- **`{name}`** = `{obj!r}`")
    parts = [HEADER, "## Classes", "", *classes, "## Functions", "", *functions]
    parts += ["## Errors", "", *errors, ""]
    parts += ["## Constants and types", "", *constants, ""]
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    target = Path(argv[1]) if len(argv) > 1 else Path("docs/runtime-api.md")
    target.write_text(render())
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
