"""The write fence, its timings and the credentials' bookkeeping, without a server (the
real proofs, against the API server's audit log, are in tests/e2e/test_fencing.py)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from appstack.runtime.clock import FakeClock
from appstack.runtime.credentials import Credentials, token_file
from appstack.runtime.leaderelection import LeaderElectionConfig, LeaderElector, NotLeader
from appstack.runtime.metrics import Metrics
from appstack.runtime.resources import CONFIG_MAP
from appstack_testbed.audit import read_audit_events
from appstack_testbed.control_plane import AUDIT_LOG
from appstack_testbed.latency_proxy import LatencyProxy
from tests.support.scripted_transport import scripted_client

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns"}}


@pytest.mark.parametrize(
    ("lease", "renew", "retry"), [(10, 10, 2), (10, 12, 2), (15, 10, 10), (15, 10, 0)]
)
def test_the_renew_deadline_must_be_below_the_lease_and_above_the_retry_period(
    lease: float, renew: float, retry: float
) -> None:
    with pytest.raises(ValueError, match="renew deadline < lease duration"):
        LeaderElectionConfig("l", "ns", "me", lease, renew, retry)


def test_defaults_are_client_go_s_and_lease_calls_time_out_within_the_deadline() -> None:
    config = LeaderElectionConfig("l", "ns", "me")
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15, 10, 2)
    assert config.request_timeout == 5


async def test_the_fence_counts_from_before_the_renewal_was_sent_and_closes_at_the_deadline() -> (
    None
):
    clock = FakeClock()
    client, transport = scripted_client()
    metrics = Metrics()
    config = LeaderElectionConfig("l", "ns", "me")
    elector = LeaderElector(client, config, metrics=metrics, clock=clock)
    client.write_guard = elector.fence
    with pytest.raises(NotLeader):  # not yet the leader: no write
        await client.create(CONFIG_MAP, CM)
    transport.answer(404, {"kind": "Status", "reason": "NotFound"}).answer(201, {"spec": {}})
    await elector.acquire()
    assert [r.method for r, _ in transport.sent] == ["GET", "POST"]

    assert elector.fence() == pytest.approx(10)
    await clock.advance(9.9)
    transport.answer(201, CM)
    await client.create(CONFIG_MAP, CM)  # 0.1 s of leadership left: sent
    assert transport.sent[-1][0].method == "POST"
    await clock.advance(0.1)
    with pytest.raises(NotLeader):
        await client.create(CONFIG_MAP, CM)
    assert len(transport.sent) == 3  # the refused write was never handed to the transport
    transport.answer(200, CM)
    await client.get(CONFIG_MAP, "x", "ns")  # reads are not fenced
    assert "timeout" not in transport.sent[-1][0].params
    assert metrics.writes_refused.labels("l")._value.get() == 2


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


async def test_a_401_re_reads_a_rotated_token_file_and_retries_once(tmp_path: Path) -> None:
    client, transport = scripted_client()
    path = tmp_path / "token"
    path.write_text("old\n")

    class Configuration:
        def __init__(self) -> None:
            self.api_key = {"BearerToken": "Bearer old"}

    configuration = Configuration()
    client.credentials = Credentials.install(configuration, token_file(str(path)))
    path.write_text("new\n")
    transport.answer(401, {"kind": "Status", "code": 401}).answer(200, {"ok": True})
    assert await client.request("GET", "/api") == {"ok": True}
    assert configuration.api_key["BearerToken"] == "Bearer new"
    assert client.credentials.rejected_for() == 0  # accepted again
    transport.answer(401, {"kind": "Status", "code": 401})
    with pytest.raises(Exception, match="401"):  # same token: no second retry
        await client.request("GET", "/api")


def test_rejections_are_timed_until_a_request_is_accepted() -> None:
    now = [100.0]
    credentials = Credentials(clock=lambda: now[0])
    credentials.observe("PATCH", 403)  # a write forbidden by RBAC is not a credentials problem
    assert credentials.rejected_for() == 0
    credentials.observe("GET", 403)
    now[0] += 5
    credentials.observe("PATCH", 401)
    assert credentials.rejected_for() == 5
    credentials.observe("GET", 404)
    assert credentials.rejected_for() == 0


def test_audit_events_are_read_from_the_log_and_its_backup_in_receipt_order(
    tmp_path: Path,
) -> None:
    log = tmp_path.joinpath(*AUDIT_LOG)
    log.parent.mkdir(parents=True)

    def event(ts: str, name: str, namespace: str = "ns", stage: str = "ResponseComplete") -> str:
        raw: dict[str, Any] = {
            "stage": stage,
            "verb": "patch",
            "user": {"username": "u"},
            "userAgent": f"appstack/0.1 ({name})",
            "objectRef": {"resource": "deployments", "namespace": namespace, "name": name},
            "responseStatus": {"code": 200},
            "requestReceivedTimestamp": f"2026-11-23T10:00:{ts}Z",
        }
        return json.dumps(raw) + "\n"

    log.with_name("audit-2026-11-23T10-00-00.000.log").write_text(event("01.5", "b"))
    log.write_text(
        event("02.0", "c")
        + event("01.0", "a")
        + event("03.0", "d", "other")
        + event("04.0", "e", stage="ResponseStarted")
    )
    events = read_audit_events(tmp_path, namespace="ns")
    assert [e.name for e in events] == ["a", "b", "c"]
    assert events[0].succeeded
    assert "(a)" in events[0].user_agent


async def test_the_latency_proxy_delays_each_direction_and_keeps_the_bytes_in_order() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, LatencyProxy("127.0.0.1", port, delay=0.2) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        started = time.monotonic()
        writer.write(b"one ")
        writer.write(b"two")
        received = b""
        while len(received) < 7:
            received += await reader.read(1024)
        elapsed = time.monotonic() - started
        proxy.delay = 0.0
        writer.write(b"!")
        assert await reader.read(1) == b"!"
        writer.close()
    assert received == b"one two"
    assert elapsed >= 0.4  # 0.2 s each way
