"""The runtime's metrics (runtime/metrics.py): one registry per :class:`Metrics`, with the
process_* and python_* collectors, controller-runtime's names for what controller-runtime
has, and the program's prefix (none by default) on the runtime's own."""

from __future__ import annotations

from appstack.runtime import Metrics


def test_the_operators_registry_exports_process_and_python_metrics() -> None:
    text = Metrics().exposition().decode()
    for name in ("process_resident_memory_bytes", "process_cpu_seconds_total", "python_info"):
        assert f"\n{name}" in text


def test_the_runtimes_own_metrics_take_the_programs_prefix_and_none_by_default() -> None:
    def names(metrics: Metrics) -> set[str]:
        return {m.name for m in metrics.registry.collect()}

    plain, prefixed = names(Metrics()), names(Metrics(prefix="widgets"))
    for own in ("events_dropped", "metrics_auth_reviews", "metrics_auth_throttled"):
        assert own in plain
        assert f"widgets_{own}" in prefixed
    # controller-runtime's names whatever the prefix
    shared = {"controller_runtime_reconcile", "workqueue_depth", "rest_client_requests"}
    assert shared <= plain & prefixed
