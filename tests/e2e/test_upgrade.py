"""An upgrade as a Deployment's rolling update performs it: two replicas of the older
operator (``old-1``, ``old-2``: their identity, so their user agent and the audit log,
carries the build they stand for), replaced one by one by two of the newer one (``new-3``,
``new-4``), each new replica ready before an old one gets SIGTERM. A change is made during
the hand-over, as soon as the old *leader* has begun shutting down after its SIGTERM; the
test measures, from the API server's audit log, when the new leader takes the Lease and
when it first writes for that change, and records the figures (docs/reliability.md,
"Upgrades"). Only generous sanity bounds are asserted: the hand-over must not wait for the
Lease to expire.
"""

from __future__ import annotations

import datetime
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.rbac import LEASE_NAME
from appstack.runtime.client import Client
from appstack.runtime.resources import DEPLOYMENT
from appstack_testbed.audit import AuditEvent, read_audit_events
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.replica import Replica, Supervisor
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import until
from tests.e2e.replicas import app_service, holder, wait_ready_app

# Serial (on a quiet machine): its subject is time — the new version takes the Lease within bounds
# — and it reads the audit log.
pytestmark = pytest.mark.serial

LEASE_DURATION = 15.0  # appstack run's default: a hand-over must be much faster


@pytest.fixture
def supervisor(operator_kubeconfig: Path, leases_here: str, tmp_path: Path) -> Iterator[Supervisor]:
    group = Supervisor(2, operator_kubeconfig, leases_here, tmp_path)
    yield group
    group.stop()


async def _leader(client: Client, supervisor: Supervisor, namespace: str, prefix: str) -> Replica:
    """The replica holding the Lease, once it is one whose name starts with ``prefix``."""

    async def leader() -> Replica | None:
        replica = supervisor.by_identity(await holder(client, namespace))
        return replica if replica is not None and replica.name.startswith(prefix) else None

    found = await eventually(leader, timeout=30, what=f"a {prefix}* leader", interval=0.05)
    assert found is not None
    return found


async def _shutting_down(replica: Replica, timeout: float = 10) -> None:
    await eventually(
        lambda: '"shutting down"' in replica.log(),
        timeout=timeout,
        what=f"{replica.name} to shut down",
        interval=0.02,
        diagnose=replica.log,
    )


def _first(events: list[AuditEvent], replica: Replica, resource: str, name: str) -> AuditEvent:
    mine = [
        e
        for e in events
        if f"({replica.name}_" in e.user_agent
        and e.resource == resource
        and e.name == name
        and e.succeeded
    ]
    assert mine, f"{replica.name} never wrote {resource}/{name}: {replica.log()}"
    return mine[0]


async def test_a_rolling_upgrade_hands_over_without_waiting_for_the_lease(
    client: Client,
    kube_cluster: ClusterHandle,
    supervisor: Supervisor,
    namespace: str,
    record_property: pytest.RecordProperty,
) -> None:
    directory = kube_cluster.require_local().directory
    old = [supervisor.start("old"), supervisor.start("old")]
    for replica in old:
        await replica.wait_ready()
    leader = await _leader(client, supervisor, namespace, "old-")
    standby = next(r for r in old if r is not leader)
    await client.create(APP_SERVICE, app_service("before", namespace))
    await wait_ready_app(client, "before", namespace)

    # rolling update, maxSurge 1: a new replica ready, then an old one stopped; twice
    await supervisor.start("new").wait_ready()
    standby.signal(signal.SIGTERM)
    assert await standby.wait_exit(30) == 0
    new = supervisor.start("new")
    await new.wait_ready()
    stopped = datetime.datetime.now(datetime.UTC)
    leader.signal(signal.SIGTERM)
    # Once it logs that it is shutting down its queues are closed: it takes no new work,
    # so the change below is the new leader's to make (a change the old leader still
    # reconciled would leave the new one nothing to write: a restart writes nothing for
    # children that are as wanted).
    await _shutting_down(leader)
    await client.create(APP_SERVICE, app_service("during", namespace))
    await client.patch(
        APP_SERVICE, "before", {"spec": {"image": "nginx:1.28"}}, namespace=namespace
    )
    assert await leader.wait_exit(30) == 0, leader.log()
    exited = datetime.datetime.now(datetime.UTC)
    new_leader = await _leader(client, supervisor, namespace, "new-")
    await wait_ready_app(client, "during", namespace, timeout=60)
    await until(
        client,
        DEPLOYMENT,
        "before",
        namespace,
        lambda d: d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28",
        60,
        "the change made during the hand-over applied",
    )

    events = read_audit_events(directory, namespace=namespace)
    lease = _first([e for e in events if e.received >= stopped], new_leader, "leases", LEASE_NAME)
    created = _first(events, new_leader, "deployments", "during")
    changed = _first(events, new_leader, "deployments", "before")
    figures = {
        "old_leader_exit_s": (exited - stopped).total_seconds(),
        "lease_taken_s": (lease.received - stopped).total_seconds(),
        "first_reconcile_s": (min(created.received, changed.received) - stopped).total_seconds(),
    }
    for key, value in figures.items():
        record_property(key, round(value, 3))
    print(f"[appstack] rolling upgrade: {figures}", file=sys.__stderr__, flush=True)
    # sanity only: the old leader released the Lease, nobody waited for it to expire
    assert 0 < figures["lease_taken_s"] < LEASE_DURATION
    assert 0 < figures["first_reconcile_s"] < LEASE_DURATION + 10
    assert supervisor.by_identity(await holder(client, namespace)) is new_leader
