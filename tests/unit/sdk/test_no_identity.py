"""No appstack identity below the operator's assembly (issue #35): the SDK and the runtime
name no product in their code — every name an operator is known by comes in through an
:class:`~appstack.sdk.identity.OperatorIdentity`. Docstrings may mention appstack as an
example; string constants in the code may not (but the package's own import paths, its
``legacy-auth`` extra, and the name of the tool that generates files: ``appstack generate``).
The scaffolder (``appstack/scaffold``) is the ``appstack`` command's own: it writes projects that
depend on appstack, and says so."""

from __future__ import annotations

import ast
import re

from tests.support.paths import REPO_ROOT

ROOTS = [REPO_ROOT / "src" / "appstack" / "sdk", REPO_ROOT / "src" / "appstack" / "runtime"]
ALLOWED = re.compile(r"^appstack(\.(sdk|runtime|core)[\w.]*|\[legacy-auth\])$")
TOOL = "`appstack generate manifests`"
SCAFFOLDER = REPO_ROOT / "src" / "appstack" / "scaffold"
IDENTITY = re.compile("appstack", re.IGNORECASE)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are docstrings (module, class, function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def test_no_string_in_the_sdk_or_the_runtime_names_appstack() -> None:
    named = []
    for root in ROOTS:
        for path in sorted(root.rglob("*.py")):
            if SCAFFOLDER in path.parents:
                continue
            tree = ast.parse(path.read_text())
            docstrings = _docstrings(tree)
            for node in ast.walk(tree):
                if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                    continue
                text = node.value.replace(TOOL, "")
                if id(node) in docstrings or not IDENTITY.search(text):
                    continue
                words = re.findall(r"[\w.\[\]-]*appstack[\w.\[\]-]*", text, re.IGNORECASE)
                if all(ALLOWED.match(w) for w in words):
                    continue
                named.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {node.value[:80]!r}")
    assert named == [], "identity literals below the operator:\n" + "\n".join(named)
