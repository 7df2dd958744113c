"""The pure parts of bench/scaffolded.py: ``-X importtime`` parsing (only top-level imports
summed) and the side-by-side table (medians, spreads, ratios)."""

from __future__ import annotations

import sys

from tests.support.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import scaffolded

IMPORTTIME = """\
import time: self [us] | cumulative | imported package
import time:       120 |        120 |   _io
import time:       300 |      90000 | encodings
import time:        50 |         50 |     encodings.aliases
import time:      1000 |     400000 | kopf
{"level": "info", "event": "not an import line"}
import time:      2000 |       2000 |   kopf._core
"""


def test_importtime_sums_the_top_level_cumulative_times_and_counts_every_module() -> None:
    assert scaffolded._importtime(IMPORTTIME) == {"modules": 5, "import_s": 0.49}


def _record(operator: str, apps: int, value: float) -> dict[str, object]:
    return {"operator": operator, "apps": apps, **dict.fromkeys(scaffolded.KEYS, value)}


def test_the_table_gives_medians_spreads_and_the_ratio_per_size() -> None:
    records = [
        _record("appstack", 1, 1.0),
        _record("appstack", 1, 3.0),
        _record("appstack", 1, 2.0),
        _record("kopf", 1, 4.0),
        _record("kopf", 1, 4.0),
        _record("kopf", 1, 4.0),
    ]
    lines = scaffolded.table(records, [1]).splitlines()
    assert len(lines) == 2 + len(scaffolded.KEYS)
    assert lines[2] == "| 1 | start → all Ready (s) | 2 (1-3) | 4 (4-4) | 0.50x |"


def test_a_measure_only_some_runs_have_is_left_out_of_the_table() -> None:
    kopf = _record("kopf", 1, 2.0)
    del kopf["writes"]  # counted only on the local cluster
    records = [_record("appstack", 1, 1.0), kopf]
    lines = scaffolded.table(records, [1]).splitlines()
    assert not [line for line in lines if "writes" in line]
    assert len(lines) == 2 + len(scaffolded.KEYS) - 1
