"""Durations as the operator's flags take them (Go's ``time.ParseDuration`` style, as
controller-runtime's flags do): ``90s``, ``10m``, ``1h30m``, ``2.5m``, or plain seconds.
Also the default sync period, shared by ``appstack run`` and the generated install. Pure;
used by :mod:`appstack.cli.run`, :mod:`appstack.operator` and the manifests.
"""

from __future__ import annotations

import re

# How often every controller looks at every object again without an event (see the
# README, "Periodic resync"): each look is served from the informer cache and writes
# nothing when nothing changed, so it costs one in-process reconcile per object.
DEFAULT_SYNC_PERIOD = "10m"

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in ``text``; ValueError for anything else (or a duration that is not > 0)."""
    value = text.strip()
    if re.fullmatch(r"[0-9]+(\.[0-9]*)?", value):
        seconds = float(value)
    elif value and _PART.sub("", value) == "":
        seconds = sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(value))
    else:
        raise ValueError(f"{text!r} is not a duration such as 90s, 10m or 1h30m")
    if seconds <= 0:
        raise ValueError(f"{text!r}: a duration must be more than zero")
    return seconds
