"""Every fenced code block of the documentation pages (docs/*.md, CONTRIBUTING.md,
SECURITY.md) and how it is tested (pure). Used by tests/unit/test_doc_blocks.py (what can be
checked without a cluster) and tests/e2e/test_doc_blocks.py (the rest, per page).

A block's info string says what it is, and so how it is checked:

* ``bash``, ``sh``, ``shell``, ``console``: the commands (:mod:`tests.e2e.shell_blocks`) are
  run in order on a local cluster with the operator running, in a namespace of the test's
  own (the kubeconfig's namespace), from a directory holding the checkout's files;
* ``yaml``: it parses; an object of ours (``apiVersion: appstack.dev/...``) is created with
  a server-side dry run (schema, CEL rules and admission policies check it, nothing is
  stored); a part of one (no ``apiVersion``: a ``spec:`` excerpt, or fields that the
  object's ``spec`` has too) is merged into the page's first object of ours and that is
  dry-run; other YAML (a kustomization, say) only parses;
* ``python``: it compiles (top-level ``await`` allowed);
  the runtime tutorial's blocks (docs/runtime.md, headed ``# <file>.py``) are run by
  tests/e2e/test_tutorial.py; any other is run with this interpreter;
* ``text``: a diagram or a listing, nothing to run;
* ``mermaid``: a diagram, nothing to run: one drawn by ``appstack status -o mermaid`` (the
  one in docs/appstack.md is that command's golden output: tests/unit/cli/test_status_graph.py),
  or the architecture picture of docs/index.md (the README's: tests/unit/test_doc_doors.py).

The line just before a block may say otherwise: ``<!-- not run: reason -->`` (a command,
snippet or object that cannot run as it stands, and why), ``<!-- refused: words -->``
(a YAML object the API server must refuse, with those words in its message), or
``<!-- run by: tests/e2e/test_x.py, how -->`` (a shell block that test runs as written, on
a cluster of its own, or a Python block it runs — reading it with :func:`run_by` by its page
and heading: the unit test checks that the test names both). A block of any other
language, or untagged, fails the unit test: new docs stay tested.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.shell_blocks import SHELLS, console_commands, fences

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "CONTRIBUTING.md", ROOT / "SECURITY.md"]
LANGUAGES = {*SHELLS, "yaml", "python", "text", "mermaid"}
NOTE = re.compile(r"^<!--\s*(not run|refused|run by):\s*(.+?)\s*-->$")
RUNNER = re.compile(r"^(tests/[\w/]+\.py)\b")  # the test a "run by" note names
HEADING = re.compile(r"^#{1,6} (.+?)\s*#*$")
TUTORIAL = re.compile(r"^# [\w.]+\.py$")
GROUP = "appstack.dev/"


@dataclass(frozen=True)
class Fenced:
    """One fenced block: where it is, its language and lines, and the note above it."""

    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    lines: tuple[str, ...]
    note: str | None = None  # "not run" | "refused" | "run by"
    reason: str = ""
    heading: str = ""  # of the section it is in ("" before the first)

    @property
    def name(self) -> str:
        return f"{self.path.name}:{self.line} ({self.language or 'untagged'})"

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    @property
    def runner(self) -> str | None:
        """The test file a ``run by`` note names (relative to the checkout)."""
        found = RUNNER.match(self.reason) if self.note == "run by" else None
        return found.group(1) if found else None

    @property
    def commands(self) -> list[str]:
        """A shell block's commands (``console``: the lines after ``$ ``)."""
        if self.language == "console":
            return console_commands(list(self.lines))
        return [line for line in self.lines if line.strip()]


def fenced(path: Path) -> list[Fenced]:
    """Every fenced block of ``path``, in order."""
    out: list[Fenced] = []
    lines = path.read_text().splitlines()
    heading, scanned = "", 0  # lines[:scanned] read for headings, blocks skipped
    for fence in fences(path):
        for text in lines[scanned : fence.line - 1]:
            if found := HEADING.match(text):
                heading = found.group(1)
        scanned = fence.line + len(fence.body) + 1  # past its closing fence
        note = NOTE.match(fence.before)
        out.append(
            Fenced(
                path=path,
                line=fence.line,
                language=fence.language,
                lines=fence.body,
                note=note.group(1) if note else None,
                reason=note.group(2) if note else "",
                heading=heading,
            )
        )
    return out


def run_by(path: Path, test: str) -> dict[str, Fenced]:
    """The blocks of ``path`` whose ``run by`` note names ``test``, by their heading (one
    per section): what that test runs as written."""
    out: dict[str, Fenced] = {}
    for block in fenced(path):
        if block.runner == test:
            assert block.heading not in out, f"{block.name}: a second block run by {test}"
            out[block.heading] = block
    return out


def documents(block: Fenced) -> list[Any]:
    """A YAML block's documents (raises if it does not parse)."""
    return [d for d in yaml.safe_load_all(block.text) if d is not None]


def ours(doc: Any) -> bool:
    return isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith(GROUP)


def merged(base: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """``part`` over ``base``: mappings merged key by key, anything else replaced."""
    out = dict(base)
    for key, value in part.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def objects_to_create(block: Fenced, page: list[Fenced]) -> list[dict[str, Any]]:
    """The objects of ours a YAML block stands for (empty: it only parses): its own, or,
    for a part of one, the page's first object of ours with the part merged in."""
    docs = documents(block)
    if all(ours(d) for d in docs):
        return list(docs)
    first = next((d for b in page if b.language == "yaml" for d in documents(b) if ours(d)), None)
    if first is None or len(docs) != 1 or not isinstance(docs[0], dict) or "kind" in docs[0]:
        return []
    if "spec" in docs[0]:
        return [merged(first, docs[0])]
    if set(docs[0]) <= set(first.get("spec") or {}):  # fields of the spec
        return [merged(first, {"spec": docs[0]})]
    return []


def compiled(block: Fenced) -> None:
    """Compile a Python block (raises SyntaxError)."""
    compile(block.text, block.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def tutorial_block(block: Fenced) -> bool:
    """A block of a page run as a module and its test by tests/e2e/test_tutorial.py
    (runtime.md, any-kind.md)."""
    return (
        block.path.name in ("runtime.md", "any-kind.md")
        and bool(block.lines)
        and bool(TUTORIAL.match(block.lines[0]))
    )


def on_cluster(block: Fenced, page: list[Fenced]) -> bool:
    """Whether tests/e2e/test_doc_blocks.py does something with the block (not with one
    another test runs: ``run by``)."""
    if block.note in ("not run", "run by") or block.language == "text":
        return False
    if block.language in SHELLS:
        return True
    if block.language == "python":
        return not tutorial_block(block)
    return block.language == "yaml" and bool(objects_to_create(block, page))


#: Pages whose shell blocks another test runs, as one session in a directory of its own.
OWN_RUNNER = {"build-your-own-operator.md": "tests/e2e/test_scaffold.py"}


def pages_on_cluster() -> list[Path]:
    """The pages with at least one block the e2e test runs (not those of :data:`OWN_RUNNER`)."""
    return [
        p
        for p in PAGES
        if p.exists()
        and p.name not in OWN_RUNNER
        and any(on_cluster(b, fenced(p)) for b in fenced(p))
    ]
