"""The pure parts of bench/peers.py (``bench/peerbench``): /proc parsing, the
``rest_client_requests_total`` parsing, the summary over repeats (ratios to the floor of
the same repeat), the Markdown table and the marked section of docs/performance.md."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.support.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
from peerbench import procstat, promtext, report

EXPOSITION = """\
# HELP rest_client_requests_total Number of HTTP requests, by code, method and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 12.0
rest_client_requests_total{code="404",host="127.0.0.1:6443",method="GET"} 3.0
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 20.0
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="patch"} 7.0
# HELP rest_client_requests_created Seconds since the epoch.
# TYPE rest_client_requests_created gauge
rest_client_requests_created{code="200",host="127.0.0.1:6443",method="GET"} 1.7e9
# HELP workqueue_adds_total Total adds.
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="appservice"} 99.0
"""


def test_requests_are_summed_per_method_across_codes() -> None:
    assert promtext.requests_by_method(EXPOSITION) == {"GET": 15.0, "POST": 20.0, "PATCH": 7.0}


def test_reconciles_are_summed_over_controllers_and_results() -> None:
    exposition = EXPOSITION + (
        "# HELP controller_runtime_reconcile_total Reconciles.\n"
        "# TYPE controller_runtime_reconcile_total counter\n"
        'controller_runtime_reconcile_total{controller="appservice",result="success"} 4.0\n'
        'controller_runtime_reconcile_total{controller="appstack",result="error"} 1.0\n'
    )
    assert promtext.reconciles(exposition) == 5.0
    assert promtext.reconciles(EXPOSITION) == 0


def test_a_wave_costs_the_difference_of_two_scrapes() -> None:
    before = {"GET": 15.0, "POST": 20.0}
    after = {"GET": 15.0, "POST": 60.0, "PATCH": 41.0}
    assert promtext.diff(after, before) == {"PATCH": 41, "POST": 40}


def test_proc_stat_and_status_are_parsed() -> None:
    # comm may hold spaces and parentheses; fields 14 and 15 are utime and stime.
    stat = "4242 (python (x) y) S 1 2 3 4 5 6 7 8 9 10 250 150 0 0 20 0 1 0 100 0 0"
    assert procstat.parse_stat(stat, ticks=100) == pytest.approx(4.0)
    status = "Name:\tpython\nVmPeak:\t  300 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 1000 kB\n"
    assert procstat.parse_status_hwm(status) == 123456
    assert procstat.parse_status_hwm("Name:\tzombie\n") == 0


def _run(peer: str, repeat: int, create: float, update: float, **extra: Any) -> dict[str, Any]:
    return {
        "peer": peer,
        "label": peer.upper(),
        "n": 100,
        "repeat": repeat,
        "create": {"seconds": create, **extra},
        "update": {"seconds": update, **extra},
    }


RUNS = [
    _run("floor", 0, 10.0, 2.0),
    _run("op", 0, 12.5, 3.0, cpu_ms_per_app=5.0, requests={"POST": 200}, requests_per_app=2.0),
    _run("floor", 1, 20.0, 4.0),
    _run("op", 1, 20.0, 8.0, cpu_ms_per_app=7.0, requests={"POST": 200}, requests_per_app=2.0),
]


def test_ratios_are_taken_against_the_floor_of_the_same_repeat() -> None:
    floor, op = report.summarise([{**r, "peak_rss_mib": 50.0} for r in RUNS])
    assert (floor["peer"], op["peer"], op["repeats"]) == ("floor", "op", 2)
    assert op["create"]["x_floor"] == {"median": 1.12, "min": 1.0, "max": 1.25}
    assert op["update"]["x_floor"] == {"median": 1.75, "min": 1.5, "max": 2.0}
    assert op["create"]["seconds"] == {"median": 16.25, "min": 12.5, "max": 20.0}
    assert op["create"]["cpu_ms_per_app"] == {"median": 6.0, "min": 5.0, "max": 7.0}
    assert "cpu_ms_per_app" not in floor["create"]


def test_the_table_shows_medians_spreads_and_blanks_for_what_was_not_measured() -> None:
    text = report.table(report.summarise(RUNS))
    lines = text.splitlines()
    assert lines[0].startswith("| N | peer |")
    assert len(lines) == 4
    floor, op = lines[2], lines[3]
    assert floor.startswith("| 100 | FLOOR | 15.0 s (10.0-20.0) | 6.7 | 1.00x |")
    assert "| 1.12x (1.00-1.25) |" in op
    assert "| 6.0 (5.0-7.0) / 6.0 (5.0-7.0) |" in op
    assert "| 2.0 (POST 2.00) |" in op
    assert floor.count("| — ") >= 4


def test_the_marked_section_is_replaced_and_the_rest_kept() -> None:
    doc = f"# Perf\n\nintro\n\n{report.BEGIN}\nold table\n{report.END}\n\n## Next\ntext\n"
    new = report.replace_section(doc, "new table\n")
    assert new == f"# Perf\n\nintro\n\n{report.BEGIN}\nnew table\n{report.END}\n\n## Next\ntext\n"
    appended = report.replace_section("# Perf\n", "t")
    assert appended == f"# Perf\n\n{report.BEGIN}\nt\n{report.END}\n"


def test_with_the_full_floor_measured_each_row_gets_its_ratio_to_it_too() -> None:
    runs = [*RUNS, _run("floor-full", 0, 12.5, 2.5), _run("floor-full", 1, 10.0, 4.0)]
    rows = {row["peer"]: row for row in report.summarise(runs)}
    assert rows["op"]["create"]["x_full"] == {"median": 1.5, "min": 1.0, "max": 2.0}
    assert rows["op"]["update"]["x_full"] == {"median": 1.6, "min": 1.2, "max": 2.0}
    assert rows["floor-full"]["create"]["x_floor"] == {"median": 0.88, "min": 0.5, "max": 1.25}
    text = report.table(list(rows.values()))
    assert "x full floor (create / update)" in text.splitlines()[0]
    assert text.splitlines()[0].count("|") == text.splitlines()[1].count("|")
    op_line = next(line for line in text.splitlines() if "| OP |" in line)
    assert op_line.endswith(" 1.50x (1.00-2.00) / 1.60x (1.20-2.00) |")
    assert "x full floor" not in report.table(report.summarise(RUNS))
