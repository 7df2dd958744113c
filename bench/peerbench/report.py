"""Summarise repeated measurements and render them: the Markdown table of
``docs/performance.md`` (between :data:`BEGIN` and :data:`END`), the console table and the
numbers the plot uses.

Each repeat of a size measures the floor and every peer one after another, so ratios to
the floor are taken within a repeat and then summarised (median and min-max over the
repeats). Pure; unit tested (``tests/unit/bench/test_peers.py``). Used by ``bench/peers.py``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

BEGIN = "<!-- peers:begin (written by bench/peers.py --docs) -->"
END = "<!-- peers:end -->"


def spread(values: Iterable[float]) -> dict[str, float]:
    vals = sorted(values)
    return {"median": round(statistics.median(vals), 2), "min": vals[0], "max": vals[-1]}


def _get(record: dict[str, Any], path: str) -> Any:
    value: Any = record
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def summarise(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (n, peer), in first-seen order, with medians, spreads and ratios."""
    floors = {(r["n"], r["repeat"]): r for r in records if r["peer"] == "floor"}
    fulls = {(r["n"], r["repeat"]): r for r in records if r["peer"] == "floor-full"}
    keys: list[tuple[int, str]] = []
    for r in records:
        if (r["n"], r["peer"]) not in keys:
            keys.append((r["n"], r["peer"]))
    rows = []
    for n, peer in keys:
        runs = [r for r in records if r["n"] == n and r["peer"] == peer]
        row: dict[str, Any] = {"n": n, "peer": peer, "label": runs[0].get("label", peer)}
        row["repeats"] = len(runs)
        for wave in ("create", "update"):
            row[wave] = {"seconds": spread(r[wave]["seconds"] for r in runs)}
            for key, against in (("x_floor", floors), ("x_full", fulls)):
                ratios = [
                    r[wave]["seconds"] / against[(n, r["repeat"])][wave]["seconds"]
                    for r in runs
                    if (n, r["repeat"]) in against
                ]
                if ratios:
                    row[wave][key] = spread(round(x, 2) for x in ratios)
            for metric in ("cpu_ms_per_app", "requests_per_app", "writes_per_app"):
                vals = [v for r in runs if (v := _get(r, f"{wave}.{metric}")) is not None]
                if vals:
                    row[wave][metric] = spread(vals)
            if runs[0][wave].get("requests"):
                row[wave]["requests"] = runs[0][wave]["requests"]
        rss = [r["peak_rss_mib"] for r in runs if "peak_rss_mib" in r]
        if rss:
            row["peak_rss_mib"] = spread(rss)
        rows.append(row)
    return rows


def _range(s: dict[str, float] | None, unit: str = "", digits: int = 1) -> str:
    if not s:
        return "—"
    med = f"{s['median']:.{digits}f}{unit}"
    if s["min"] == s["max"]:
        return med
    return f"{med} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"


def _x(s: dict[str, float] | None) -> str:
    return "—" if not s else _range(s, "x", 2)


def _verbs(requests: dict[str, int] | None, n: int) -> str:
    if not requests:
        return ""
    return " (" + ", ".join(f"{m} {v / n:.2f}" for m, v in requests.items()) + ")"


HEADER = (
    "| N | peer | create | apps/s | x floor | update | x floor | CPU ms/app (create / update) "
    "| peak RSS MiB | requests/app create (by method) | requests/app update | writes/app "
    "(create / update, audit) |\n"
    "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"
)


FULL_HEADER = (" x full floor (create / update) |", "---:|")


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table: medians, (min-max) over the repeats; with a column of the
    ratios to the full floor when it was measured."""
    full = any("x_full" in row["create"] for row in rows)
    title, rule = HEADER.split("\n")
    lines = [title + FULL_HEADER[0] + "\n" + rule + FULL_HEADER[1]] if full else [HEADER]
    for row in rows:
        create, update, n = row["create"], row["update"], row["n"]
        apps_per_s = n / create["seconds"]["median"]
        cpu = (
            f"{_range(create.get('cpu_ms_per_app'))} / {_range(update.get('cpu_ms_per_app'))}"
            if "cpu_ms_per_app" in create
            else "—"
        )
        writes = (
            f"{_range(create.get('writes_per_app'))} / {_range(update.get('writes_per_app'))}"
            if "writes_per_app" in create
            else "—"
        )
        requests = _range(create.get("requests_per_app")) + _verbs(create.get("requests"), n)
        lines.append(
            f"| {n:,} | {row['label']} | {_range(create['seconds'], ' s')} | {apps_per_s:.1f} "
            f"| {_x(create.get('x_floor'))} | {_range(update['seconds'], ' s')} "
            f"| {_x(update.get('x_floor'))} | {cpu} | {_range(row.get('peak_rss_mib'))} "
            f"| {requests if 'requests_per_app' in create else '—'} "
            f"| {_range(update.get('requests_per_app'))} | {writes} |"
        )
        if full:
            lines[-1] += f" {_x(create.get('x_full'))} / {_x(update.get('x_full'))} |"
    return "\n".join(lines)


def replace_section(document: str, body: str) -> str:
    """``document`` with the text between :data:`BEGIN` and :data:`END` replaced by
    ``body`` (the markers are appended when absent)."""
    block = f"{BEGIN}\n{body.strip()}\n{END}"
    if BEGIN in document and END in document:
        head, rest = document.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1]
    return document.rstrip("\n") + "\n\n" + block + "\n"
