"""CPU seconds and peak RSS of a running process, read from /proc (Linux only).

Used by :mod:`peerbench.run` to charge each peer the CPU it spent on a wave and its peak
memory; the parsing is pure (:func:`parse_stat`, :func:`parse_status_hwm`) and unit tested.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    """utime+stime in seconds and VmHWM (peak resident set) in KiB."""

    cpu_s: float
    peak_rss_kib: int


def parse_stat(text: str, ticks: int = TICKS) -> float:
    """CPU seconds (utime + stime) from the text of /proc/PID/stat."""
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks


def parse_status_hwm(text: str) -> int:
    """VmHWM in KiB from the text of /proc/PID/status (0 when absent, e.g. a zombie)."""
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def usage(pid: int) -> Usage:
    with open(f"/proc/{pid}/stat") as stat, open(f"/proc/{pid}/status") as status:
        return Usage(parse_stat(stat.read()), parse_status_hwm(status.read()))
