"""A small TLS read buffer (:mod:`appstack.runtime.tlsbuffer`, what the operator uses)
delivers large answers and watch events intact, against the real API server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from appstack.runtime.client import Client
from appstack.runtime.informer import Informer
from appstack.runtime.resources import CONFIG_MAP
from appstack.runtime.tlsbuffer import TLS_READ_BUFFER, limit_tls_read_buffer, tls_read_buffer
from appstack_testbed.waiting import eventually


@pytest.fixture
def small_tls_buffer() -> Iterator[int]:
    before = tls_read_buffer()
    limit_tls_read_buffer()
    assert tls_read_buffer() == TLS_READ_BUFFER
    yield TLS_READ_BUFFER
    limit_tls_read_buffer(before)


def _big(name: str, namespace: str, size: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"blob": "".join(chr(ord("a") + i % 26) for i in range(size))},
    }


async def test_answers_many_times_the_buffer_arrive_whole(
    small_tls_buffer: int, kubeconfig: Path, namespace: str
) -> None:
    size = 40 * small_tls_buffer  # 640 KiB per object, 2.5 MiB per list
    client = await Client.connect(str(kubeconfig))
    try:
        wanted = {f"big-{i}": _big(f"big-{i}", namespace, size) for i in range(4)}
        await asyncio.gather(*(client.create(CONFIG_MAP, obj) for obj in wanted.values()))
        got = await client.get(CONFIG_MAP, "big-2", namespace)
        items, _ = await client.list(CONFIG_MAP, namespace)
        listed = {i["metadata"]["name"]: i for i in items if i["metadata"]["name"] in wanted}

        assert got["data"] == wanted["big-2"]["data"]
        assert {name: obj["data"] for name, obj in listed.items()} == {
            name: obj["data"] for name, obj in wanted.items()
        }

        informer = Informer(client, CONFIG_MAP, namespace=namespace)
        running = asyncio.create_task(informer.run())
        try:
            await informer.wait_synced()
            changed = _big("big-1", namespace, size + 1)
            await client.apply(CONFIG_MAP, changed, field_manager="tls-buffer-test")
            await eventually(
                lambda: (
                    (informer.store.get(f"{namespace}/big-1") or {}).get("data") == changed["data"]
                ),
                timeout=60,
                what="the informer to see the changed big ConfigMap",
            )
        finally:
            running.cancel()
    finally:
        await client.close()
