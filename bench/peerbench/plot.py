"""The plot of ``bench/peers.py``. With several sizes: per peer, the median time of the
create and update waves, the CPU ms per created app and the peak RSS against N. With one
size: the same three as bars per peer (error bars: min-max over the repeats). matplotlib
is optional (the ``bench`` extra); imported only here. Used by ``bench/peers.py``."""

from __future__ import annotations

from typing import Any

TITLES = ("wave time (s)", "operator CPU ms per created app", "operator peak RSS (MiB)")


def _err(stat: dict[str, float]) -> list[float]:
    return [stat["median"] - stat["min"], stat["max"] - stat["median"]]


def _bars(axes: Any, rows: list[dict[str, Any]]) -> None:
    labels = [r["label"].replace(" (", "\n(").replace(", ", ",\n", 1) for r in rows]
    xs = list(range(len(rows)))
    for offset, wave in ((-0.2, "create"), (0.2, "update")):
        stats = [r[wave]["seconds"] for r in rows]
        axes[0].bar(
            [x + offset for x in xs],
            [s["median"] for s in stats],
            0.4,
            yerr=list(zip(*(_err(s) for s in stats), strict=True)),
            label=wave,
        )
    for ax, pick in (
        (axes[1], lambda r: r["create"].get("cpu_ms_per_app")),
        (axes[2], lambda r: r.get("peak_rss_mib")),
    ):
        stats = [pick(r) or {"median": 0, "min": 0, "max": 0} for r in rows]
        errors = list(zip(*map(_err, stats), strict=True))
        ax.bar(xs, [s["median"] for s in stats], 0.6, yerr=errors)
    for ax in axes:
        ax.set_xticks(xs, labels, fontsize=6, rotation=60, ha="right")
    axes[0].legend(fontsize=8)


def _lines(axes: Any, rows: list[dict[str, Any]]) -> None:
    for peer in dict.fromkeys(r["peer"] for r in rows):
        mine = sorted((r for r in rows if r["peer"] == peer), key=lambda r: r["n"])
        sizes, label = [r["n"] for r in mine], mine[0]["label"]
        for wave, style in (("create", "o-"), ("update", "s--")):
            medians = [r[wave]["seconds"]["median"] for r in mine]
            axes[0].plot(sizes, medians, style, label=f"{label}: {wave}")
        if "cpu_ms_per_app" in mine[0]["create"]:
            cpu = [r["create"]["cpu_ms_per_app"]["median"] for r in mine]
            axes[1].plot(sizes, cpu, "o-", label=label)
        if "peak_rss_mib" in mine[0]:
            axes[2].plot(sizes, [r["peak_rss_mib"]["median"] for r in mine], "o-", label=label)
    for ax in axes:
        ax.set_xlabel("AppServices (N)")
        ax.set_xscale("log")
    axes[0].legend(fontsize=6)
    axes[1].legend(fontsize=7)


def plot(rows: list[dict[str, Any]], path: str) -> None:
    import matplotlib  # noqa: PLC0415 - optional, only for the plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(1, 3, figsize=(14, 5))
    sizes = sorted({r["n"] for r in rows})
    (_bars if len(sizes) == 1 else _lines)(axes, rows)
    for ax, title in zip(axes, TITLES, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    what = f"N = {sizes[0]:,}" if len(sizes) == 1 else "by N"
    fig.suptitle(f"bench/peers.py, {what}, on 2 shared cores (medians; min-max)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
