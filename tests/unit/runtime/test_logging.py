"""Logging of the operator process (runtime/logging.py): the standard library's loggers
(aiohttp, asyncio) go through the same formatter as the runtime's, so in JSON mode every line
on stderr is one JSON object."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from appstack.runtime import logging as rt_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield None
    root.handlers, root.level = handlers, level
    logging.captureWarnings(False)
    structlog.reset_defaults()


def test_json_mode_emits_only_json_lines_for_stdlib_and_structlog(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rt_logging.configure("json", "info")
    structlog.get_logger("appstack.test").info("from structlog", n=1)
    logging.getLogger("aiohttp.access").info("GET /metrics %s", 200)
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("asyncio").exception("Task exception was never retrieved")
    logging.getLogger("aiohttp.client").debug("below the level: dropped")

    lines = capsys.readouterr().err.splitlines()
    records = [json.loads(line) for line in lines]  # fails on any non-JSON line
    assert [r["event"].split("\n")[0] for r in records[:3]] == [
        "from structlog",
        "GET /metrics 200",
        "Task exception was never retrieved",
    ]
    assert records[1]["logger"] == "aiohttp.access"
    assert records[1]["level"] == "info"
    assert "ValueError: boom" in records[2]["exception"]
    assert records[2]["level"] == "error"
    assert len(records) == 3
