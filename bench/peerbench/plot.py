"""The plot of ``bench/peers.py``: per peer, the median time of the create and update waves
against N, and the operator's CPU ms per created app and peak RSS. matplotlib is optional
(the ``bench`` extra); imported only here. Used by ``bench/peers.py``."""

from __future__ import annotations

from typing import Any


def plot(rows: list[dict[str, Any]], path: str) -> None:
    import matplotlib  # noqa: PLC0415 - optional, only for the plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    peers = list(dict.fromkeys(r["peer"] for r in rows))
    for peer in peers:
        mine = sorted((r for r in rows if r["peer"] == peer), key=lambda r: r["n"])
        sizes = [r["n"] for r in mine]
        label = mine[0]["label"]
        for wave, style in (("create", "o-"), ("update", "s--")):
            axes[0].plot(
                sizes,
                [r[wave]["seconds"]["median"] for r in mine],
                style,
                label=f"{label}: {wave}",
            )
        if "cpu_ms_per_app" in mine[0]["create"]:
            axes[1].plot(
                sizes, [r["create"]["cpu_ms_per_app"]["median"] for r in mine], "o-", label=label
            )
        if "peak_rss_mib" in mine[0]:
            axes[2].plot(sizes, [r["peak_rss_mib"]["median"] for r in mine], "o-", label=label)
    titles = ("wave time (s), median", "operator CPU ms per created app", "operator peak RSS (MiB)")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xlabel("AppServices (N)")
        ax.set_title(title, fontsize=10)
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=6)
    axes[1].legend(fontsize=7)
    fig.suptitle("bench/peers.py on 2 cores (control plane on the same machine)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
