"""Leader election (runtime/leaderelection.py) without a server: the timings' rules and
client-go's defaults, and the write fence — counted from before a renewal was sent, closed
at the renew deadline, refusing writes (never reads) before they reach the transport. The
real proofs, against the API server's audit log, are in tests/e2e/test_fencing.py and
tests/e2e/test_leader_election.py."""

from __future__ import annotations

import asyncio

import pytest

from appstack.runtime.clock import FakeClock
from appstack.runtime.leaderelection import LeaderElectionConfig, LeaderElector, NotLeader
from appstack.runtime.metrics import Metrics
from appstack.runtime.resources import CONFIG_MAP
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


async def test_a_candidate_tries_again_just_after_the_holders_lease_would_expire() -> None:
    """Another holder's 3 s Lease, seen at t=0 and never renewed: the candidate (retry period
    2 s) does not wait for its next retry at 4 s — it takes the Lease just after 3 s."""
    clock = FakeClock(start=0.0)
    client, transport = scripted_client()
    config = LeaderElectionConfig("l", "ns", "me", 15, 10, 2)
    elector = LeaderElector(client, config, metrics=Metrics(), clock=clock)
    held = {
        "metadata": {"name": "l", "namespace": "ns", "resourceVersion": "1"},
        "spec": {"holderIdentity": "other", "leaseDurationSeconds": 3, "renewTime": "t0"},
    }
    for _ in range(3):  # at 0, at 2 (the retry period) and just after 3 (the expiry)
        transport.answer(200, held)
    transport.answer(200, {**held, "spec": {**held["spec"], "holderIdentity": "me"}})
    acquiring = asyncio.create_task(elector.acquire())
    await clock.advance(0)
    await clock.advance(2)
    assert [r.method for r, _ in transport.sent] == ["GET", "GET"]
    await clock.advance(0.9)
    assert not acquiring.done()  # 2.9 s: not expired yet, and no attempt since 2 s
    assert len(transport.sent) == 2
    await clock.advance(0.2)  # 3.1 s: tried just after the expiry, not at 4 s
    await asyncio.wait_for(acquiring, 1)
    assert [r.method for r, _ in transport.sent] == ["GET", "GET", "GET", "PUT"]
    assert elector.is_leader
