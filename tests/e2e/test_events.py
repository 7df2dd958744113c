"""Events are sent in the background: recording returns at once, repeats fold into one
Event's series, a full queue drops (and counts) instead of growing, and a stopped recorder
sends what it was given; while reconciles wait, they give way (one at a time, paced)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from appstack.runtime.client import Client
from appstack.runtime.events import EventRecorder
from appstack.runtime.resources import CONFIG_MAP, EVENT


async def _regarding(client: Client, namespace: str, name: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace}
    return await client.create(
        CONFIG_MAP, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    )


def _posts(client: Client) -> float:
    return sum(
        sample.value
        for metric in client.metrics.rest_requests.collect()
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels["method"] == "POST"
    )


async def test_recording_sends_nothing_in_the_caller_and_repeats_fold_into_a_series(
    client: Client, namespace: str
) -> None:
    regarding = await _regarding(client, namespace, "noisy")
    recorder = EventRecorder(client, instance="test")
    before = _posts(client)
    for _ in range(3):  # no await between them: all three are queued before any is sent
        recorder.record(regarding, "Warning", "SyncFailed", "port 30002 is already taken")
    assert _posts(client) == before  # the caller sent nothing
    await recorder.flush()
    events, _ = await client.list(EVENT, namespace)
    assert len(events) == 1  # created once, with the count its repeats made
    assert events[0]["series"]["count"] == 3
    assert events[0]["regarding"]["uid"] == regarding["metadata"]["uid"]

    recorder.record(regarding, "Warning", "SyncFailed", "port 30002 is already taken")
    await recorder.flush()
    events, _ = await client.list(EVENT, namespace)
    assert [e["series"]["count"] for e in events] == [4]  # a later repeat: a series update


async def test_a_full_queue_drops_new_events_and_counts_them(
    client: Client, namespace: str
) -> None:
    regarding = await _regarding(client, namespace, "burst")
    recorder = EventRecorder(client, instance="test", senders=1, max_pending=2)
    dropped = client.metrics.events_dropped.collect()[0].samples[0].value
    for i in range(5):
        recorder.record(regarding, "Normal", "Step", f"step {i}")
    await recorder.close()
    events, _ = await client.list(EVENT, namespace)
    assert sorted(e["note"] for e in events) == ["step 0", "step 1"]
    assert client.metrics.events_dropped.collect()[0].samples[0].value == dropped + 3

    recorder.record(regarding, "Normal", "Step", "after the burst")  # room again
    await recorder.close()
    events, _ = await client.list(EVENT, namespace)
    assert "after the burst" in {e["note"] for e in events}


@pytest.mark.serial  # its subject is time: run alone, on a quiet machine (make test)
async def test_events_give_way_while_reconciles_wait_and_catch_up_after(
    client: Client, namespace: str
) -> None:
    regarding = await _regarding(client, namespace, "wave")
    waiting = True  # what Manager.backlog would say during a wave
    recorder = EventRecorder(client, instance="test", busy=lambda: waiting, busy_interval=0.4)
    before = _posts(client)
    for i in range(6):
        recorder.record(regarding, "Normal", "Created", f"Created Deployment app-{i}")
    # one sender, one Event per 0.4 s: within 1 s at most two are sent, not six at once
    await asyncio.sleep(1.0)
    assert _posts(client) - before <= 2
    waiting = False  # the queues are empty: the rest go at full speed
    await asyncio.wait_for(recorder.flush(), 2.0)
    events, _ = await client.list(EVENT, namespace)
    assert sorted(e["note"] for e in events) == [f"Created Deployment app-{i}" for i in range(6)]
