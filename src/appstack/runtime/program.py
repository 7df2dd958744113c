"""The running program's name: the runtime's default identity on the API server.

Whoever builds on the runtime names itself — :class:`~appstack.runtime.client.Client`'s
``field_manager`` and ``user_agent``, :class:`~appstack.runtime.events.EventRecorder`'s
``controller`` and ``instance``, :class:`~appstack.runtime.metrics.Metrics`' ``prefix`` —
and the runtime names no product of its own. Without a name given, the client, the user
agent and the Events use :func:`program_name`, as client-go's default user agent does (the
base name of ``os.Args[0]``). Pure but for reading ``sys.argv``.
"""

from __future__ import annotations

import os
import re
import sys

#: What client-go calls a program whose name it cannot tell.
UNKNOWN = "unknown"
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_QUALIFIED_NAME_MAX = 63


def program_name(argv0: str | None = None) -> str:
    """The base name of ``argv0`` (default ``sys.argv[0]``) without ``.py``; a package run
    with ``python -m`` (``pkg/__main__.py``) is named by its directory; ``unknown`` when
    there is none (``python -c``, an interactive interpreter). Reduced to letters, digits,
    ``-``, ``_`` and ``.``, at most 63 of them, beginning and ending with a letter or digit,
    so that it is a valid field manager, user-agent token and Event ``reportingController``
    (a Kubernetes qualified name)."""
    path = (sys.argv[0] if sys.argv else "") if argv0 is None else argv0
    if path in {"", "-c", "-m"}:
        return UNKNOWN
    name = os.path.basename(path)
    if name.endswith(".py"):
        name = name[: -len(".py")]
    if name == "__main__":
        name = os.path.basename(os.path.dirname(path))
    name = _NOT_A_NAME.sub("-", name)[:_QUALIFIED_NAME_MAX].strip("._-")
    return name or UNKNOWN
