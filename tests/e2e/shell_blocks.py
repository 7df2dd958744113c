"""The shell commands a Markdown page shows its reader, as a test runs them: parsed (pure),
and run as bash runs a pasted block (:func:`run_pasted`).

A fenced block whose info string is ``bash``, ``sh``, ``shell`` or ``console`` is meant to
be typed: in ``console`` blocks the commands are the lines after ``$ `` (with their
``\\`` continuations; the other lines are output), in the others every line is. A block
the reader cannot run as it stands on the local cluster says why, on the line just before
it, and is not run::

    <!-- not run: it starts the operator in the foreground (tests/e2e/test_operator_process.py) -->

Every skip must give a reason; :func:`blocks` returns them with it, so the test lists what it
did not run. Used by tests/e2e/test_readme.py (the README) and tests/doc_blocks.py (the
docs pages).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SHELLS = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^```(\S*)\s*$")
SKIP = re.compile(r"^<!--\s*not run:\s*(.+?)\s*-->$")


@dataclass(frozen=True)
class Block:
    """One fenced shell block: where it is, its commands, and why it is not run (if so)."""

    path: Path
    line: int  # of the opening fence, 1-based
    commands: tuple[str, ...]
    skip: str | None = None

    @property
    def script(self) -> str:
        return "\n".join(self.commands) + "\n"

    @property
    def name(self) -> str:
        first = self.commands[0].split("#", 1)[0].strip() if self.commands else ""
        return f"{self.path.name}:{self.line}: {first[:60]}"


def console_commands(lines: list[str]) -> list[str]:
    commands: list[str] = []
    continuing = False
    for line in lines:
        if continuing:
            commands[-1] += "\n" + line
        elif line.startswith("$ "):
            commands.append(line[2:])
        else:
            continue
        continuing = line.rstrip().endswith("\\")
    return commands


@dataclass(frozen=True)
class Fence:
    """One fenced block of a Markdown page as written: where it opens (1-based), its info
    string, its lines, and the non-blank line just before it (where a note would be)."""

    line: int
    language: str
    body: tuple[str, ...]
    before: str


def fences(path: Path) -> list[Fence]:
    """Every fenced block of ``path``, in order (the one scanner of pages: :func:`blocks`
    here and tests/doc_blocks.py read their blocks from it)."""
    lines = path.read_text().splitlines()
    out: list[Fence] = []
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        start = index
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("```")), None)
        assert end is not None, f"{path.name}:{start + 1}: a code block that never closes"
        index = end + 1
        before = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), "")
        out.append(Fence(start + 1, fence.group(1), tuple(lines[start + 1 : end]), before.strip()))
    return out


def blocks(path: Path) -> list[Block]:
    """Every shell block of ``path``, in order."""
    out: list[Block] = []
    for fence in fences(path):
        if fence.language not in SHELLS:
            continue
        skip = SKIP.match(fence.before)
        body = list(fence.body)
        commands = console_commands(body) if fence.language == "console" else body
        out.append(
            Block(
                path=path,
                line=fence.line,
                commands=tuple(c for c in commands if c.strip()),
                skip=skip.group(1) if skip else None,
            )
        )
    return out


def run_pasted(
    script: str, cwd: Path, env: Mapping[str, str], what: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``script`` run as bash runs a block pasted into it (``-euo pipefail``: the first
    failing command fails it), in ``cwd`` with exactly ``env``; asserts it succeeded,
    naming ``what`` with the script and the ends of its output otherwise."""
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, (
        f"{what} failed ({proc.returncode}):\n$ {script}\n"
        f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc
