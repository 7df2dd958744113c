"""The informer keeps a faithful cache through watches, API-server restarts and 410 Gone."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from appstack.runtime.client import Client
from appstack.runtime.informer import FuncHandler, Informer
from appstack.runtime.resources import CONFIG_MAP
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.waiting import eventually

# Serial (alone on the cluster): it stops the API server and compacts etcd, which every other
# test's watches would see.
pytestmark = pytest.mark.serial


class Recorder:
    """Records (event, name, data) for every handler call."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, str]]] = []

    def handler(self) -> FuncHandler:
        return FuncHandler(
            add=lambda o: self._record("add", o),
            update=lambda _old, new: self._record("update", new),
            delete=lambda o: self._record("delete", o),
        )

    def _record(self, event: str, obj: dict[str, Any]) -> None:
        self.events.append((event, obj["metadata"]["name"], obj.get("data") or {}))

    def saw(self, event: str, name: str) -> bool:
        return any(e == event and n == name for e, n, _ in self.events)


def _cm(name: str, namespace: str, value: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"v": value},
    }


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.ensure_future(informer.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _watched(client: Client, namespace: str, **options: Any) -> tuple[Informer, Recorder]:
    """ConfigMaps keep/change/remove, and a (not yet running) informer recording events."""
    for name in ("keep", "change", "remove"):
        await client.create(CONFIG_MAP, _cm(name, namespace))
    informer = Informer(client, CONFIG_MAP, namespace=namespace, **options)
    recorder = Recorder()
    informer.add_handler(recorder.handler())
    return informer, recorder


async def _change_everything(client: Client, namespace: str) -> None:
    """One add (new), one update (change -> 2) and one delete (remove)."""
    await client.create(CONFIG_MAP, _cm("new", namespace))
    await client.apply(CONFIG_MAP, _cm("change", namespace, "2"))
    await client.delete(CONFIG_MAP, "remove", namespace)


def _failed_requests(client: Client) -> float:
    """Requests that got no answer at all (no server, a broken connection)."""
    return sum(
        sample.value
        for metric in client.metrics.rest_requests.collect()
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels["code"] == "<error>"
    )


def _saw_every_change(recorder: Recorder) -> bool:
    return (
        recorder.saw("add", "new")
        and recorder.saw("update", "change")
        and recorder.saw("delete", "remove")
    )


async def test_initial_list_then_watch_delivers_adds_updates_and_deletes(
    client: Client, namespace: str
) -> None:
    informer, recorder = await _watched(client, namespace, page_size=2)

    async with running(informer):
        await asyncio.wait_for(informer.wait_synced(), 10)
        assert {n for e, n, _ in recorder.events if e == "add"} >= {"keep", "change", "remove"}
        await _change_everything(client, namespace)
        await eventually(lambda: _saw_every_change(recorder), timeout=10, what="watch events")

    cached = informer.store.get(f"{namespace}/change")
    assert cached is not None
    assert cached["data"] == {"v": "2"}
    assert "managedFields" not in cached["metadata"]
    assert f"{namespace}/remove" not in informer.store
    assert informer.store.by_index("namespace", namespace)


async def test_changes_made_while_the_api_server_was_down_are_all_seen_after_it_returns(
    kube_cluster: ClusterHandle, client: Client, namespace: str
) -> None:
    local = kube_cluster.require_local()
    informer, recorder = await _watched(client, namespace)

    async with running(informer):
        await asyncio.wait_for(informer.wait_synced(), 10)
        failed = _failed_requests(client)
        await asyncio.to_thread(local.stop, "kube-apiserver")
        # the informer has noticed: a watch it tried to open again found no server (it backs
        # off from there)
        await eventually(
            lambda: _failed_requests(client) > failed,
            timeout=30,
            what="the informer to find the API server gone",
        )
        await asyncio.to_thread(local.start, "kube-apiserver")
        # Changes land before the informer has re-established its watch.
        await _change_everything(client, namespace)
        await eventually(
            lambda: _saw_every_change(recorder),
            timeout=60,
            what="the informer to catch up after the API server restart",
        )

    names = sorted(k.split("/")[1] for k in informer.store if "kube-root-ca" not in k)
    assert names == ["change", "keep", "new"]


async def test_a_410_gone_leads_to_a_relist_that_delivers_every_difference(
    kube_cluster: ClusterHandle, client: Client, namespace: str
) -> None:
    local = kube_cluster.require_local()
    informer, recorder = await _watched(client, namespace)
    async with running(informer):
        await asyncio.wait_for(informer.wait_synced(), 10)
    old_resource_version = informer.resource_version
    recorder.events.clear()

    # While the informer is away: change things, compact etcd past its resourceVersion and
    # restart the API server so its watch cache cannot serve the old version either.
    await _change_everything(client, namespace)
    status = json.loads(local.etcdctl("endpoint", "status", "--write-out=json"))
    local.etcdctl("compact", str(status[0]["Status"]["header"]["revision"]))
    await asyncio.to_thread(local.restart, "kube-apiserver")

    async with running(informer):
        await eventually(lambda: informer.relists >= 1, timeout=60, what="a re-list after 410")
        await eventually(lambda: len(recorder.events) >= 3, timeout=10, what="the differences")

    assert informer.resource_version != old_resource_version
    assert sorted(recorder.events) == [
        ("add", "new", {"v": "1"}),
        ("delete", "remove", {"v": "1"}),
        ("update", "change", {"v": "2"}),
    ]


@pytest.mark.parametrize("selector", ["tier=front"])
async def test_a_label_selector_limits_what_is_cached(
    client: Client, namespace: str, selector: str
) -> None:
    front = _cm("front", namespace)
    front["metadata"]["labels"] = {"tier": "front"}
    await client.create(CONFIG_MAP, front)
    await client.create(CONFIG_MAP, _cm("back", namespace))
    informer = Informer(client, CONFIG_MAP, namespace=namespace, label_selector=selector)
    async with running(informer):
        await asyncio.wait_for(informer.wait_synced(), 10)
    assert informer.store.keys() == [f"{namespace}/front"]
