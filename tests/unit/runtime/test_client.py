"""The API client (runtime/client.py) over a scripted transport: a fenced write carries the
leadership it has left as the server's timeout, and the Lease's own calls bypass the fence.
The client against a real API server: tests/e2e/test_client.py."""

from __future__ import annotations

import pytest

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
