"""The shell commands a Markdown page shows its reader, as a test runs them (pure).

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
from dataclasses import dataclass
from pathlib import Path

SHELLS = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^```(\w*)\s*$")
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


def blocks(path: Path) -> list[Block]:
    """Every shell block of ``path``, in order."""
    lines = path.read_text().splitlines()
    out: list[Block] = []
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        language, start = fence.group(1), index
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("```")), len(lines)
        )
        body = lines[start + 1 : end]
        index = end + 1
        if language not in SHELLS:
            continue
        previous = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), "")
        skip = SKIP.match(previous.strip())
        commands = console_commands(body) if language == "console" else body
        out.append(
            Block(
                path=path,
                line=start + 1,
                commands=tuple(c for c in commands if c.strip()),
                skip=skip.group(1) if skip else None,
            )
        )
    return out
