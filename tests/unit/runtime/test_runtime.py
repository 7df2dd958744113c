"""``appstack.runtime`` as a whole (runtime/__init__.py and every module of the package).

It is a library: its public names import from the package, documented, and ``__all__`` says
exactly what they are (as httpx's tests keep its ``__all__``). And it names no product
(issue #35): who writes, who reports Events and how its own metrics are prefixed are the
program's to pass (appstack's operator passes its own: ``appstack.operator``). In
src/appstack/runtime/ the word ``appstack`` (any case) appears only as the distribution's
name in a module path or in the extra a user is told to install."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import types
from collections.abc import Iterator
from pathlib import Path

from appstack import runtime
from tests.support.paths import REPO_ROOT

#: The code built on the runtime: the operator, its controllers, SDK and CLI (all of
#: src/appstack but the runtime itself), the test bed and the benchmarks.
PRODUCT = [REPO_ROOT / "src" / "appstack", REPO_ROOT / "testbed" / "src", REPO_ROOT / "bench"]
RUNTIME = REPO_ROOT / "src" / "appstack" / "runtime"
#: Imports of names the runtime does not export, allowed for now; each fails the test once
#: it is gone (then delete it here). (file, module, name)
PENDING: set[tuple[str, str, str]] = set()


def test_every_public_name_is_exported_and_every_public_class_has_its_own_docstring() -> None:
    undocumented = []
    for name in runtime.__all__:
        value = getattr(runtime, name)  # AttributeError if __all__ names something missing
        if inspect.isclass(value) and not value.__dict__.get("__doc__"):
            undocumented.append(name)
    assert undocumented == []


def test_every_exported_function_has_a_docstring() -> None:
    bare = [
        name
        for name in runtime.__all__
        if inspect.isfunction(getattr(runtime, name)) and not getattr(runtime, name).__doc__
    ]
    assert bare == []


def test_all_is_exactly_the_public_names_of_the_package() -> None:
    # What `from appstack.runtime import *` gives is what the package holds: nothing public
    # left out of __all__, nothing in it twice or missing. Submodules are not names of the
    # package's API (they are attributes once imported), so they are left aside.
    for name in runtime.__all__:  # the door is lazy: every name loaded first
        getattr(runtime, name)
    public = {
        name
        for name, value in vars(runtime).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert len(runtime.__all__) == len(set(runtime.__all__)), "a name twice in __all__"
    assert sorted(public - set(runtime.__all__)) == [], "public but not in __all__"
    assert sorted(set(runtime.__all__) - public) == [], "in __all__ but not defined"


def test_what_a_controller_needs_is_public() -> None:
    needed = {
        "Client", "Cache", "Manager", "Builder", "Request", "Result", "Reconciler", "Resource",
        "EventRecorder", "Clock", "RealClock", "TerminalError", "ApiError", "NotFound",
        "Conflict", "AlreadyExists", "Invalid", "Forbidden", "Gone", "TooManyRequests",
        "Metrics",
    }  # fmt: skip
    assert needed <= set(runtime.__all__)


def _exported(name: str, value: object) -> bool:
    """Whether ``value`` is in ``__all__``: the same object, under its own name or another
    (``LogFormat`` is the logging module's ``Format``). A string or a number must match by
    name too (two equal ones may or may not be the same object)."""
    if name in runtime.__all__ and getattr(runtime, name) is value:
        return True
    if value is None or isinstance(value, (str, int)):
        return False
    return any(getattr(runtime, exported) is value for exported in runtime.__all__)


def _product_files() -> Iterator[Path]:
    for root in PRODUCT:
        for path in sorted(root.rglob("*.py")):
            if not path.is_relative_to(RUNTIME):
                yield path


def _imports_from_the_runtime(path: Path) -> Iterator[tuple[str, str, object]]:
    """(module, name, the object) for each name ``path`` takes from the runtime: those it
    imports from a runtime module, and those it reads off a runtime module it imports."""
    tree = ast.parse(path.read_text(), str(path))
    modules: dict[str, str] = {}  # local name -> runtime module imported as a module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("appstack.runtime"):
                    yield alias.name, "(import as a module: import names from the package)", None
        if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
            continue
        if node.module != "appstack.runtime" and not node.module.startswith("appstack.runtime."):
            continue
        module = importlib.import_module(node.module)
        for alias in node.names:
            value = getattr(module, alias.name, None)
            if value is None:  # a submodule not imported yet
                value = importlib.import_module(f"{node.module}.{alias.name}")
            if isinstance(value, types.ModuleType):
                modules[alias.asname or alias.name] = value.__name__
            else:
                yield node.module, alias.name, value
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            module = importlib.import_module(modules[node.value.id])
            yield module.__name__, node.attr, getattr(module, node.attr)


def test_the_product_imports_from_the_runtime_only_what_it_exports() -> None:
    # An AST walk of the product: `from appstack.runtime.X import name`, and `X.name` after
    # `from appstack.runtime import X`, must name something in appstack.runtime.__all__, so
    # that the package's API is what its users actually need.
    unexported, pending = [], set()
    for path in _product_files():
        where = str(path.relative_to(REPO_ROOT))
        for module, name, value in _imports_from_the_runtime(path):
            if (where, module, name) in PENDING:
                pending.add((where, module, name))
                continue
            if not _exported(name, value):
                unexported.append(f"{where}: {module}.{name}")
    assert sorted(set(unexported)) == [], "export it from appstack.runtime (or make it private)"
    assert pending == PENDING, f"no longer imported, remove from PENDING: {PENDING - pending}"


#: Where the word may appear: the distribution's name, never the product's identity.
ALLOWED = (
    re.compile(r"appstack\.runtime\b"),  # its own modules: imports, docstring references
    re.compile(r"appstack\.core\.(resource|lazy)\b"),  # its dependencies in the distribution
    re.compile(re.escape("appstack[legacy-auth]")),  # the extra its error message names
)
#: Whole lines allowed for now, by file; each fails the test once it is gone (then delete
#: it here): the runtime's last identity literal, waiting for the code that reads it.
TRANSITIONAL: set[tuple[str, str]] = set()
WORD = re.compile("appstack", re.IGNORECASE)


def _found() -> tuple[list[str], set[tuple[str, str]]]:
    """Lines naming the product, as ``file:line: text``, and the transitional lines seen."""
    found, transitional = [], set()
    files = [p for p in RUNTIME.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert any(p.name == "client.py" for p in files)  # the walk found the runtime
    for path in sorted(files):
        name = str(path.relative_to(RUNTIME))
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if (name, line.strip()) in TRANSITIONAL:
                transitional.add((name, line.strip()))
                continue
            rest = line
            for pattern in ALLOWED:
                rest = pattern.sub("", rest)
            if WORD.search(rest):
                found.append(f"src/appstack/runtime/{name}:{number}: {line.strip()}")
    return found, transitional


def test_the_runtime_names_no_product() -> None:
    found, _ = _found()
    assert not found, "pass it in from the operator instead:\n" + "\n".join(found)


def test_every_transitional_exception_is_still_needed() -> None:
    _, seen = _found()
    assert seen == TRANSITIONAL, f"gone, remove from TRANSITIONAL: {TRANSITIONAL - seen}"
