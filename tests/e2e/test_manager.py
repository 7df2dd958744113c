"""A controller run by the manager: level-based reconcile through the shared cache, owned
children, retries with backoff, graceful drain, health/metrics endpoints and Events."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from appstack.runtime.builder import Builder
from appstack.runtime.client import Client
from appstack.runtime.controller import Request, Result
from appstack.runtime.events import EventRecorder
from appstack.runtime.manager import Manager
from appstack.runtime.program import program_name
from appstack.runtime.resources import CONFIG_MAP, EVENT
from appstack_testbed.waiting import eventually


class MirrorReconciler:
    """Copies the data of ConfigMaps labelled mirror=yes into an owned ``<name>-mirror``."""

    def __init__(self, manager: Manager, fail: set[str] | None = None, delay: float = 0.0):
        self.client = manager.client
        self.cache = manager.cache
        self.fail = fail or set()
        self.delay = delay
        self.calls: collections.Counter[str] = collections.Counter()
        self.finished: list[str] = []

    async def reconcile(self, request: Request) -> Result | None:
        self.calls[request.name] += 1
        if request.name in self.fail:
            raise RuntimeError(f"cannot mirror {request.name}")
        source = self.cache.get(CONFIG_MAP, request.key)
        if source is None or source["metadata"].get("labels", {}).get("mirror") != "yes":
            return None
        await asyncio.sleep(self.delay)
        mirror_key = f"{request.namespace}/{request.name}-mirror"
        current = self.cache.get(CONFIG_MAP, mirror_key)
        if current is None or current.get("data") != source.get("data"):
            await self.client.apply(
                CONFIG_MAP,
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": f"{request.name}-mirror",
                        "namespace": request.namespace,
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "ConfigMap",
                                "name": request.name,
                                "uid": source["metadata"]["uid"],
                                "controller": True,
                            }
                        ],
                    },
                    "data": source.get("data") or {},
                },
            )
        self.finished.append(request.name)
        return None


def _source(name: str, namespace: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"mirror": "yes"}},
        "data": {"v": value},
    }


@contextlib.asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(manager.run())
    try:
        yield task
    finally:
        manager.stop()
        await asyncio.wait_for(task, 30)


def _manager(client: Client, namespace: str) -> Manager:
    return Manager(
        client, namespaces=[namespace], metrics_address="127.0.0.1:0", health_address="127.0.0.1:0"
    )


def _mirror_data(manager: Manager, namespace: str, name: str) -> Any:
    mirror = manager.cache.get(CONFIG_MAP, f"{namespace}/{name}-mirror")
    return mirror and mirror.get("data")


async def test_a_controller_creates_restores_and_updates_owned_children(
    client: Client, namespace: str
) -> None:
    manager = _manager(client, namespace)
    reconciler = MirrorReconciler(manager)
    Builder(manager, "mirror").for_(CONFIG_MAP).owns(CONFIG_MAP).with_concurrency(2).complete(
        reconciler
    )

    async with running(manager):
        await client.create(CONFIG_MAP, _source("app", namespace, "1"))
        await eventually(
            lambda: _mirror_data(manager, namespace, "app") == {"v": "1"},
            timeout=10,
            what="the mirror to be created",
        )

        def mirror_uid() -> str | None:
            mirror = manager.cache.get(CONFIG_MAP, f"{namespace}/app-mirror")
            return mirror["metadata"]["uid"] if mirror else None

        old_uid = mirror_uid()
        # drift: child deleted. The controller may restore it before the cache is ever seen
        # without it, so wait for a new object rather than for the gap.
        await client.delete(CONFIG_MAP, "app-mirror", namespace)
        await eventually(
            lambda: (
                mirror_uid() not in (None, old_uid)
                and _mirror_data(manager, namespace, "app") == {"v": "1"}
            ),
            timeout=5,
            what="the deleted child to be restored",
        )

        await client.patch(
            CONFIG_MAP, "app-mirror", {"data": {"v": "edited"}}, namespace=namespace
        )  # drift: owned field edited by hand
        await eventually(
            lambda: _mirror_data(manager, namespace, "app") == {"v": "1"},
            timeout=5,
            what="the edited child to be restored",
        )

        await client.apply(CONFIG_MAP, _source("app", namespace, "2"))
        await eventually(
            lambda: _mirror_data(manager, namespace, "app") == {"v": "2"},
            timeout=5,
            what="the child to follow its owner",
        )


async def test_a_failing_key_is_retried_with_backoff_without_stopping_others(
    client: Client, namespace: str
) -> None:
    manager = _manager(client, namespace)
    reconciler = MirrorReconciler(manager, fail={"bad"})
    Builder(manager, "mirror").for_(CONFIG_MAP).complete(reconciler)

    async with running(manager):
        await client.create(CONFIG_MAP, _source("bad", namespace, "1"))
        await client.create(CONFIG_MAP, _source("good", namespace, "1"))
        await eventually(
            lambda: _mirror_data(manager, namespace, "good") == {"v": "1"},
            timeout=10,
            what="the good key to be reconciled",
        )
        await eventually(
            lambda: reconciler.calls["bad"] >= 4, timeout=10, what="the failing key to be retried"
        )
        errors_total = manager.metrics.reconcile_errors.labels("mirror")._value.get()
        retries = manager.metrics.queue_retries.labels("mirror")._value.get()
    assert errors_total >= 4
    assert retries >= 4
    assert reconciler.calls["good"] >= 1


async def test_stopping_the_manager_lets_in_flight_reconciles_finish(
    client: Client, namespace: str
) -> None:
    manager = _manager(client, namespace)
    reconciler = MirrorReconciler(manager, delay=1.0)
    Builder(manager, "mirror").for_(CONFIG_MAP).complete(reconciler)
    task = asyncio.create_task(manager.run())
    await client.create(CONFIG_MAP, _source("slow", namespace, "1"))
    await eventually(lambda: reconciler.calls["slow"] >= 1, timeout=10, what="a reconcile started")

    manager.stop()
    await asyncio.wait_for(task, 10)

    assert "slow" in reconciler.finished


async def test_health_readiness_and_metrics_are_served_with_controller_runtime_names(
    client: Client, namespace: str
) -> None:
    manager = _manager(client, namespace)
    reconciler = MirrorReconciler(manager)
    Builder(manager, "mirror").for_(CONFIG_MAP).with_concurrency(3).complete(reconciler)

    async with running(manager), aiohttp.ClientSession() as http:
        await eventually(lambda: manager.ready, timeout=10, what="caches to sync")
        health = f"http://127.0.0.1:{manager.bound['health']}"
        async with http.get(f"{health}/healthz") as r:
            assert r.status == 200
        async with http.get(f"{health}/readyz") as r:
            assert r.status == 200
        await client.create(CONFIG_MAP, _source("m", namespace, "1"))
        await eventually(lambda: "m" in reconciler.finished, timeout=10, what="m reconciled")
        async with http.get(f"http://127.0.0.1:{manager.bound['metrics']}/metrics") as r:
            assert r.status == 200
            text = await r.text()

    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert (
        samples[
            (
                "controller_runtime_reconcile_total",
                (("controller", "mirror"), ("result", "success")),
            )
        ]
        >= 1
    )
    assert (
        samples[("controller_runtime_max_concurrent_reconciles", (("controller", "mirror"),))] == 3
    )
    assert samples[("workqueue_adds_total", (("name", "mirror"),))] >= 1
    assert ("controller_runtime_active_workers", (("controller", "mirror"),)) in samples
    assert any(name == "workqueue_queue_duration_seconds_count" for name, _ in samples)
    assert any(name == "controller_runtime_reconcile_time_seconds_count" for name, _ in samples)
    assert any(
        name == "rest_client_requests_total" and ("method", "PATCH") in labels
        for name, labels in samples
    )


async def test_a_repeated_event_becomes_one_event_with_a_series_count(
    client: Client, namespace: str
) -> None:
    regarding = await client.create(CONFIG_MAP, _source("noisy", namespace, "1"))
    recorder = EventRecorder(client, instance="test")
    for _ in range(3):
        await recorder.event(regarding, "Warning", "SyncFailed", "port 30002 is already taken")
    await recorder.event(regarding, "Normal", "Synced", "all good")

    events, _ = await client.list(EVENT, namespace)
    warning = [e for e in events if e["reason"] == "SyncFailed"]
    assert len(warning) == 1
    assert warning[0]["series"]["count"] == 3
    assert warning[0]["regarding"]["uid"] == regarding["metadata"]["uid"]
    # No controller named: the program's name (e.g. "pytest"), which the API server accepts.
    assert warning[0]["reportingController"] == program_name() == recorder.controller
    assert warning[0]["reportingInstance"] == "test"
    assert len([e for e in events if e["reason"] == "Synced"]) == 1
