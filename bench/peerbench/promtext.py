"""Read what a peer's /metrics says about its API requests.

appstack and controller-runtime both export ``rest_client_requests_total{code,method,host}``
(client-go's name); :func:`requests_by_method` sums it per HTTP method so a wave's cost is
the difference of two scrapes (:func:`diff`); :func:`reconciles` counts reconciles. The
parsing is pure and unit tested; :func:`fetch` and :func:`scrape` read a peer's endpoint.
Used by :mod:`peerbench.run` and :mod:`peerbench.restart`.
"""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

REQUESTS = "rest_client_requests"  # the family name the parser gives ..._total


def requests_by_method(exposition: str) -> dict[str, float]:
    """``{"GET": n, "POST": n, ...}`` from a Prometheus text exposition."""
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(exposition):
        if family.name != REQUESTS:
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                method = sample.labels.get("method", "?").upper()
                totals[method] = totals.get(method, 0.0) + sample.value
    return totals


def diff(after: dict[str, float], before: dict[str, float]) -> dict[str, int]:
    """Requests per method issued between two scrapes (methods with none left out)."""
    out = {m: round(after[m] - before.get(m, 0.0)) for m in after}
    return {m: n for m, n in sorted(out.items()) if n}


def reconciles(exposition: str) -> float:
    """All reconciles so far (``controller_runtime_reconcile_total``, every controller and
    result), from a Prometheus text exposition."""
    return sum(
        sample.value
        for family in text_string_to_metric_families(exposition)
        if family.name == "controller_runtime_reconcile"
        for sample in family.samples
        if sample.name.endswith("_total")
    )


def fetch(port: int, timeout: float = 10.0) -> str:
    """The peer's ``/metrics`` text."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as resp:
        return str(resp.read().decode())


def scrape(port: int, timeout: float = 10.0) -> dict[str, float]:
    return requests_by_method(fetch(port, timeout))
