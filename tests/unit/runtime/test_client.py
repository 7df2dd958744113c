"""The API client (runtime/client.py) over a scripted transport: a fenced write carries the
leadership it has left as the server's timeout, and the Lease's own calls bypass the fence.
The client against a real API server: tests/e2e/test_client.py."""

from __future__ import annotations

import pytest
import structlog

from appstack.runtime.leaderelection import NotLeader
from appstack.runtime.resources import CONFIG_MAP
from tests.support.scripted_transport import scripted_client

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns"}}


async def test_a_fenced_write_carries_the_leadership_left_as_the_servers_timeout() -> None:
    """A write that waits in the API server's queue past the leadership it left with is
    dropped by the server (504), not carried out late: its ``timeout`` is the fence's
    answer in whole seconds (at least 1)."""
    client, transport = scripted_client()
    left = [9.7]
    client.write_guard = lambda: left[0]
    for remaining, said in ((9.7, "9s"), (0.4, "1s")):
        left[0] = remaining
        transport.answer(201, CM)
        await client.create(CONFIG_MAP, CM)
        assert transport.sent[-1][0].params["timeout"] == said
    transport.answer(200, {})
    await client.request("PUT", "/apis/coordination.k8s.io/v1/x", body={}, fenced=False)
    assert "timeout" not in transport.sent[-1][0].params  # a Lease renewal: its own timeout


async def test_lease_calls_bypass_the_fence() -> None:
    client, transport = scripted_client()

    def refuse() -> float:
        raise NotLeader("no")

    client.write_guard = refuse
    transport.answer(200, {})
    await client.request("PUT", "/apis/coordination.k8s.io/v1/x", body={}, fenced=False)
    with pytest.raises(NotLeader):
        await client.request("PUT", "/apis/coordination.k8s.io/v1/x", body={})


async def test_the_servers_warnings_are_counted_handed_on_once_each_and_gathered() -> None:
    """Every 299 warning is counted and gathered for the calls made in ``warnings()``; the
    handler (default: a log line) hears each distinct text once; other codes are ignored."""
    client, transport = scripted_client()
    heard: list[str] = []
    client.on_warning = heard.append
    deprecated = '299 - "example.com/v1alpha1 Widget is deprecated; use example.com/v1"'
    for _ in range(2):
        transport.answer(200, CM, warnings=(deprecated, '299 - "replicas above 10"'))
    transport.answer(200, CM, warnings=('199 - "not from the API server"', '299 - ""'))
    transport.answer(403, {"message": "denied"}, warnings=('299 - "said with a refusal"',))
    with client.warnings() as said:
        await client.get(CONFIG_MAP, "x", "ns")
        await client.get(CONFIG_MAP, "x", "ns")
    await client.get(CONFIG_MAP, "x", "ns")
    with pytest.raises(Exception, match="denied"):
        await client.get(CONFIG_MAP, "x", "ns")
    texts = ["example.com/v1alpha1 Widget is deprecated; use example.com/v1", "replicas above 10"]
    assert said == texts * 2
    assert heard == [*texts, "said with a refusal"]
    exposition = client.metrics.exposition().decode()
    assert 'rest_client_warnings_total{host="scripted:6443"} 5.0' in exposition


async def test_the_default_handler_logs_a_warning_once_per_text() -> None:
    client, transport = scripted_client()
    with structlog.testing.capture_logs() as logs:
        for _ in range(3):
            transport.answer(200, CM, warnings=('299 - "v1alpha1 is deprecated"',))
            await client.get(CONFIG_MAP, "x", "ns")
    said = [(e["log_level"], e.get("warning")) for e in logs if e["event"] == "API server warning"]
    assert said == [("warning", "v1alpha1 is deprecated")]
