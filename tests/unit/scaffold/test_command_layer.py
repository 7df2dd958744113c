"""One command layer: the click commands of ``appstack.cli.scaffold`` parse options and call
``appstack.scaffold.commands``; nothing else of the scaffolder is theirs to call (the checks
and refusals are in ``commands``), and ``Refused`` is caught in one place."""

from __future__ import annotations

import ast
from pathlib import Path

import appstack.cli.scaffold as cli

SOURCE = Path(cli.__file__).read_text()


def test_the_cli_calls_only_the_commands_module_and_catches_refused_once() -> None:
    imported = {
        (node.module, alias.name)
        for node in ast.walk(ast.parse(SOURCE))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("appstack.")
        for alias in node.names
    }
    assert imported == {
        ("appstack.scaffold", "commands"),
        ("appstack.scaffold.project", "Refused"),
    }
    handlers = [node for node in ast.walk(ast.parse(SOURCE)) if isinstance(node, ast.ExceptHandler)]
    assert [ast.unparse(h.type) for h in handlers if h.type is not None] == ["Refused"]
