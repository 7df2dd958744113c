"""Only the leader reconciles; a killed leader is replaced within the lease duration; a
gracefully stopped leader hands over at once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from appstack.runtime import errors
from appstack.runtime.apirequest import ApiRequest, Timeouts
from appstack.runtime.builder import Builder
from appstack.runtime.client import Client
from appstack.runtime.controller import Request
from appstack.runtime.leaderelection import LeaderElectionConfig
from appstack.runtime.manager import Manager
from appstack.runtime.resources import CONFIG_MAP, LEASE, Resource
from appstack_testbed.waiting import eventually

# Serial (on a quiet machine): its subject is time — a leader hand-over within bounds.
pytestmark = pytest.mark.serial

PROGRAM = Path(__file__).with_name("leader_program.py")
LEASE_NAME = "stamp-leader"
LEASE_DURATION = 15.0  # the default the program runs with


class Candidates:
    def __init__(self, kubeconfig: Path, namespace: str, logs: Path) -> None:
        self.kubeconfig, self.namespace, self.logs = kubeconfig, namespace, logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, identity: str) -> None:
        log = open(self.logs / f"{identity}.log", "wb")  # noqa: SIM115 - closed with the process
        self.procs[identity] = subprocess.Popen(
            [
                sys.executable,
                str(PROGRAM),
                "--kubeconfig",
                str(self.kubeconfig),
                "--namespace",
                self.namespace,
                "--identity",
                identity,
                "--lease",
                LEASE_NAME,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def signal(self, identity: str, sig: signal.Signals) -> None:
        self.procs[identity].send_signal(sig)
        self.procs[identity].wait(timeout=30)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def log(self, identity: str) -> str:
        return (self.logs / f"{identity}.log").read_text()[-3000:]

    def logged(self, identity: str, event: str) -> bool:
        """Whether ``identity`` has logged ``event`` (its log is JSON, a line each)."""
        for line in (self.logs / f"{identity}.log").read_text().splitlines():
            with contextlib.suppress(ValueError):
                if json.loads(line).get("event") == event:
                    return True
        return False

    async def campaigning(self, identity: str) -> None:
        """Wait until ``identity`` asks for the Lease: the manager campaigns right after it
        logs that its caches synced, and asks again every retry period."""
        await eventually(
            lambda: self.logged(identity, "caches synced"),
            timeout=30,
            what=f"{identity} campaigning for the lease",
            diagnose=lambda: self.log(identity),
        )


@pytest.fixture
def candidates(kubeconfig: Path, namespace: str, tmp_path: Path) -> Iterator[Candidates]:
    group = Candidates(kubeconfig, namespace, tmp_path)
    yield group
    group.stop_all()


async def _holder(client: Client, namespace: str) -> str | None:
    try:
        lease = await client.get(LEASE, LEASE_NAME, namespace)
    except errors.NotFound:
        return None
    return str(lease["spec"].get("holderIdentity") or "")


async def _wait_holder(client: Client, namespace: str, identity: str, timeout: float) -> float:
    """Wait until ``identity`` holds the Lease; how long that took."""
    started = time.monotonic()
    await eventually(
        lambda: _holder(client, namespace),
        lambda holder: holder == identity,
        timeout=timeout,
        what=f"the lease held by {identity!r}",
    )
    return time.monotonic() - started


async def _stamped_by(client: Client, namespace: str, name: str, timeout: float = 15) -> str:
    cm: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"stamp": "yes"}},
    }
    await client.create(CONFIG_MAP, cm)
    obj = await eventually(
        lambda: client.get(CONFIG_MAP, name, namespace),
        lambda obj: (obj["metadata"].get("annotations") or {}).get("reconciled-by"),
        timeout=timeout,
        what=f"{name} reconciled",
    )
    return str(obj["metadata"]["annotations"]["reconciled-by"])


async def test_only_the_leader_reconciles_and_a_killed_leader_is_replaced_within_the_lease(
    client: Client, namespace: str, candidates: Candidates
) -> None:
    candidates.start("alpha")
    await _wait_holder(client, namespace, "alpha", timeout=30)
    candidates.start("beta")
    await candidates.campaigning("beta")  # so it could reconcile, and sees alpha's renewals

    assert await _stamped_by(client, namespace, "first") == "alpha", candidates.log("beta")

    candidates.signal("alpha", signal.SIGKILL)
    takeover = await _wait_holder(client, namespace, "beta", timeout=LEASE_DURATION + 10)
    print(f"leader killed: takeover after {takeover:.1f}s")
    assert takeover <= LEASE_DURATION + 3, f"takeover took {takeover:.1f}s"
    assert await _stamped_by(client, namespace, "second") == "beta", candidates.log("beta")
    first = await client.get(CONFIG_MAP, "first", namespace)
    assert first["metadata"]["annotations"]["reconciled-by"] == "alpha"


async def test_a_gracefully_stopped_leader_releases_the_lease_for_an_immediate_handover(
    client: Client, namespace: str, candidates: Candidates
) -> None:
    candidates.start("gamma")
    await _wait_holder(client, namespace, "gamma", timeout=30)
    candidates.start("delta")
    await candidates.campaigning("delta")  # the handover is timed from the leader's stop

    started = time.monotonic()
    candidates.signal("gamma", signal.SIGTERM)
    assert candidates.procs["gamma"].returncode == 0, candidates.log("gamma")
    await _wait_holder(client, namespace, "delta", timeout=10)
    handover = time.monotonic() - started

    print(f"leader stopped: handover after {handover:.1f}s")
    assert handover < 5, f"handover took {handover:.1f}s"
    assert await _stamped_by(client, namespace, "after") == "delta"


async def test_the_leader_gauge_follows_the_lease(client: Client, namespace: str) -> None:
    manager = Manager(
        client,
        namespaces=[namespace],
        leader_election=LeaderElectionConfig("gauge", namespace, "solo"),
    )

    class Noop:
        async def reconcile(self, request: Request) -> None:
            return None

    Builder(manager, "noop").for_(CONFIG_MAP).complete(Noop())
    gauge = manager.metrics.leader.labels("gauge")
    task = asyncio.create_task(manager.run())
    await eventually(lambda: gauge._value.get() == 1, timeout=15, what="leadership")
    manager.stop()
    await asyncio.wait_for(task, 15)

    assert gauge._value.get() == 0
    lease = await client.get(LEASE, "gauge", namespace)
    assert lease["spec"]["holderIdentity"] == ""


async def test_the_operators_lease_requests_get_the_leader_election_priority(
    client: Client, operator_kubeconfig: Path
) -> None:
    """Issue #28 P2: the shipped FlowSchema classifies the operator's Lease requests into the
    cluster's ``leader-election`` priority level (the API server names the FlowSchema it
    chose in each response's ``X-Kubernetes-PF-FlowSchema-UID``); its other requests are
    not."""
    from appstack.manifests import rbac  # noqa: PLC0415

    schemas = Resource("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", False)
    ours = await client.get(schemas, rbac.cluster_name(rbac.LEASE_FLOW, rbac.NAMESPACE))
    assert ours["spec"]["priorityLevelConfiguration"]["name"] == "leader-election"
    lease = f"/apis/coordination.k8s.io/v1/namespaces/{rbac.NAMESPACE}/leases/{rbac.NAME}"
    async with await Client.connect(str(operator_kubeconfig)) as as_operator:
        for path, chosen in ((lease, True), (f"/api/v1/namespaces/{rbac.NAMESPACE}", False)):
            response = await as_operator.transport.send(ApiRequest("GET", path), Timeouts())
            assert response.status in {200, 403, 404}, response.status
            headers = {k.lower(): v for k, v in response.headers.items()}
            uid = headers.get("x-kubernetes-pf-flowschema-uid")
            assert (uid == ours["metadata"]["uid"]) is chosen, (path, uid)
