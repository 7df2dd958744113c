"""Structured logging: JSON lines when not on a terminal (collectors parse them), a readable
console format on a terminal. Context bound with :func:`bind` (the controller binds the
object reference and a reconcile id) appears on every line logged inside a reconcile.

Built on structlog. Call :func:`configure` once at start-up (the CLI does);
libraries in the runtime just use ``structlog.get_logger(...)``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Literal

import structlog

Format = Literal["auto", "json", "console"]


LEVELS = ("debug", "info", "warning", "error", "critical")


def configure(fmt: Format = "auto", level: str = "INFO", *, cache_loggers: bool = False) -> None:
    """Configure structlog, and route the standard library's ``logging`` (aiohttp, asyncio,
    warnings) through the same processors and renderer: in JSON mode every line is JSON.

    ``cache_loggers`` (the operator sets it; it configures once): each module's logger is
    built on its first call and kept, instead of being built again for every line — and a
    line below the level then costs a call to a method that does nothing. A process that
    configures logging more than once (tests) leaves it off, so loggers see the change."""
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if use_json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    numeric = logging.getLevelName(level.upper())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=cache_loggers,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(numeric)
    logging.captureWarnings(True)


def bind(**values: Any) -> Any:
    """Bind context for the current task (asyncio-aware); returns tokens for :func:`reset`."""
    return structlog.contextvars.bind_contextvars(**values)


def reset(tokens: Any) -> None:
    structlog.contextvars.reset_contextvars(**tokens)
