"""A replica that may have lost the Lease never writes again — proved with the API server's
audit log: two ``appstack run --leader-elect`` replicas (user agents carry their identity);
the leader is frozen (SIGSTOP) past the lease, or its Lease calls are delayed 20 s by a TCP
proxy; the other takes over and writes; the old leader must not write after the new
leader's first write, and must exit non-zero. Also: a Lease stolen under the leader ends
its leadership at once and closes the write fence."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.controllers.appservice import APP_SERVICE
from appstack.runtime.builder import Builder
from appstack.runtime.client import Client
from appstack.runtime.controller import Request
from appstack.runtime.leaderelection import LeaderElectionConfig, LeadershipLost, NotLeader
from appstack.runtime.manager import Manager
from appstack.runtime.resources import CONFIG_MAP, DEPLOYMENT, LEASE
from appstack_testbed.audit import AuditEvent, read_audit_events
from appstack_testbed.latency_proxy import LatencyProxy
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.replica import Replica
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import until
from tests.e2e.replicas import app_service, wait_holder, wait_ready_app

# Serial (on a quiet machine): its subject is time — a takeover and a stale leader's fence within
# bounds.
pytestmark = pytest.mark.serial

LEASE_DURATION = 15.0
LEASE_NAME = "frozen"


class Replicas:
    def __init__(self, kubeconfig: Path, namespace: str, logs: Path) -> None:
        self.kubeconfig, self.namespace, self.logs = kubeconfig, namespace, logs
        self.started: list[Replica] = []

    def start(self, name: str, *args: str) -> Replica:
        replica = Replica(name, self.kubeconfig, self.namespace, self.logs, *args)
        self.started.append(replica)
        return replica


@pytest.fixture
def replicas(operator_kubeconfig: Path, leases_here: str, tmp_path: Path) -> Iterator[Replicas]:
    group = Replicas(operator_kubeconfig, leases_here, tmp_path)
    yield group
    for replica in group.started:
        replica.kill()


def _writes_after_takeover(
    cluster: ClusterHandle, namespace: str, old: str, new: str
) -> tuple[list[AuditEvent], list[AuditEvent], list[AuditEvent]]:
    """(old leader's writes, new leader's writes, old leader's writes after the new one's first)."""
    events = read_audit_events(cluster.require_local().directory, namespace=namespace)
    old_writes = [e for e in events if f"({old})" in e.user_agent]
    new_writes = [e for e in events if f"({new})" in e.user_agent]
    assert new_writes, "the new leader wrote nothing"
    first = new_writes[0].received
    return old_writes, new_writes, [e for e in old_writes if e.received >= first]


def _assert_fenced(late: list[AuditEvent], code: int, old: Replica) -> None:
    """No write of the old leader after the new one's first; it exited 1 (leadership lost)."""
    assert late == [], "\n".join(map(str, late))
    assert code == 1, old.log()


async def _two_replicas(client: Client, replicas: Replicas, *old_args: str) -> str:
    """Start "old" (it becomes the leader), then "new"; the old leader's identity."""
    old = replicas.start("old", *old_args)
    await old.wait_ready()
    old_id = await wait_holder(client, replicas.namespace, "old", timeout=30)
    await replicas.start("new").wait_ready()
    return old_id


async def test_a_frozen_leader_writes_nothing_after_the_takeover_and_exits_non_zero(
    client: Client, namespace: str, replicas: Replicas, kube_cluster: ClusterHandle
) -> None:
    kube_cluster.require_local()
    old_id = await _two_replicas(client, replicas)
    old = replicas.started[0]
    await client.create(APP_SERVICE, app_service("before", namespace))
    await wait_ready_app(client, "before", namespace)
    # Freeze it mid-flight: in the middle of a burst, with reconciles between two writes.
    burst = [f"burst-{i}" for i in range(40)]
    await asyncio.gather(*(client.create(APP_SERVICE, app_service(n, namespace)) for n in burst))
    await _wait_deployments(client, namespace, 2)
    old.signal(signal.SIGSTOP)
    stopped = time.monotonic()
    new_id = await wait_holder(client, namespace, "new", timeout=LEASE_DURATION + 15)
    takeover = time.monotonic() - stopped
    # Work the frozen replica will see (buffered watch events) when it resumes.
    await client.create(APP_SERVICE, app_service("during", namespace))
    await client.patch(
        APP_SERVICE, "before", {"spec": {"image": "nginx:1.28"}}, namespace=namespace
    )
    await wait_ready_app(client, "during", namespace)

    old.signal(signal.SIGCONT)
    resumed = time.monotonic()
    code = await old.wait_exit(timeout=30)
    exit_after = time.monotonic() - resumed
    await client.create(APP_SERVICE, app_service("after", namespace))
    await wait_ready_app(client, "after", namespace)

    old_writes, new_writes, late = _writes_after_takeover(kube_cluster, namespace, old_id, new_id)
    print(
        f"SIGSTOP: takeover {takeover:.1f}s; old leader exited {exit_after:.2f}s after SIGCONT "
        f"(code {code}); writes: old {len(old_writes)}, new {len(new_writes)}, "
        f"old after takeover {len(late)}"
    )
    assert old_writes, "the old leader never wrote: the test proves nothing"
    _assert_fenced(late, code, old)
    assert takeover <= LEASE_DURATION + 5, f"takeover took {takeover:.1f}s"


async def _wait_deployments(client: Client, namespace: str, count: int) -> None:
    await eventually(
        lambda: client.list(DEPLOYMENT, namespace),
        lambda listed: len(listed[0]) >= count,
        timeout=30,
        what=f"{count} Deployments (the leader started on the burst)",
        interval=0.02,
    )


@contextlib.asynccontextmanager
async def _load(client: Client, namespace: str) -> AsyncIterator[list[str]]:
    """Create an AppService every 0.3 s while the block runs; yields the names created."""
    names: list[str] = []

    async def create() -> None:
        while True:
            name = f"load-{len(names)}"
            await client.create(APP_SERVICE, app_service(name, namespace))
            names.append(name)
            await asyncio.sleep(0.3)

    task = asyncio.create_task(create())
    try:
        yield names
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_leader_whose_lease_calls_are_delayed_stops_writing_before_the_takeover(
    client: Client,
    namespace: str,
    replicas: Replicas,
    kube_cluster: ClusterHandle,
    tmp_path: Path,
) -> None:
    """Only the old leader's Lease connection goes through the proxy (its own kubeconfig:
    HTTPS hides paths from a TCP proxy); its reconciles keep a direct connection."""
    layout = kube_cluster.require_local().layout()
    async with LatencyProxy("127.0.0.1", layout.ports["kube-apiserver"]) as proxy:
        config = yaml.safe_load(replicas.kubeconfig.read_text())
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
        lease_kubeconfig = tmp_path / "lease-kubeconfig"
        lease_kubeconfig.write_text(yaml.safe_dump(config))

        old_id = await _two_replicas(
            client, replicas, f"--leader-election-kubeconfig={lease_kubeconfig}"
        )
        old = replicas.started[0]
        await client.create(APP_SERVICE, app_service("before", namespace))
        await wait_ready_app(client, "before", namespace)

        async with _load(client, namespace) as names:
            proxy.delay = 20.0
            delayed = time.monotonic()
            delayed_at = datetime.datetime.now(datetime.timezone.utc)
            code = await old.wait_exit(timeout=60)
            exited = time.monotonic() - delayed
            new_id = await wait_holder(client, namespace, "new", timeout=LEASE_DURATION + 15)
            takeover = time.monotonic() - delayed
            await eventually(lambda: len(names) >= 3, timeout=30, what="more AppServices")
        await wait_ready_app(client, names[-1], namespace)

    old_writes, new_writes, late = _writes_after_takeover(kube_cluster, namespace, old_id, new_id)
    while_slow = [e for e in old_writes if e.received >= delayed_at]
    print(
        f"Lease calls +20s: old leader exited {exited:.1f}s after the delay began (code {code}), "
        f"takeover {takeover:.1f}s; writes: old {len(old_writes)} ({len(while_slow)} while "
        f"slow), new {len(new_writes)}, old after takeover {len(late)}"
    )
    assert while_slow, "the old leader did not work while its Lease calls were slow"
    _assert_fenced(late, code, old)
    assert exited <= 10 + 3, f"the old leader kept running {exited:.1f}s"


async def test_a_replica_frozen_between_two_writes_refuses_the_second_after_a_takeover(
    client: Client, namespace: str, kube_cluster: ClusterHandle, kubeconfig: Path, tmp_path: Path
) -> None:
    """Deterministic: the program stops itself (SIGSTOP) between two writes of one
    reconcile; once continued, the second write is the very next thing it does."""
    programs = {"a": _program("a", kubeconfig, namespace, tmp_path)}
    try:
        await eventually(lambda: "became leader" in _log(tmp_path, "a"), timeout=30, what="a")
        programs["b"] = _program("b", kubeconfig, namespace, tmp_path)
        await eventually(lambda: "caches synced" in _log(tmp_path, "b"), timeout=30, what="b")
        frozen = _config_map("frozen", namespace, freeze="a")
        await client.create(CONFIG_MAP, frozen)
        await eventually(lambda: _state(programs["a"]) == "T", timeout=30, what="a stopped")
        await _wait_lease(client, namespace, "b", LEASE_DURATION + 15)
        await client.create(CONFIG_MAP, _config_map("later", namespace, stamp="yes"))
        await until(client, CONFIG_MAP, "later", namespace, _annotated("reconciled-by"), 30)

        programs["a"].send_signal(signal.SIGCONT)
        code = await asyncio.to_thread(programs["a"].wait, 30)
    finally:
        for proc in programs.values():
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait()

    annotations = (await client.get(CONFIG_MAP, "frozen", namespace))["metadata"]["annotations"]
    old_writes, _, late = _writes_after_takeover(kube_cluster, namespace, "a", "b")
    print(f"frozen mid-reconcile: exit code {code}; old writes {len(old_writes)}, late {late}")
    assert annotations.get("frozen-by") == "a"
    assert "thawed-by" not in annotations, _log(tmp_path, "a")
    assert late == [], "\n".join(map(str, late))
    assert code == 1, _log(tmp_path, "a")


def _program(
    identity: str, kubeconfig: Path, namespace: str, logs: Path
) -> subprocess.Popen[bytes]:
    with open(logs / f"{identity}.log", "wb") as out:
        return subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("leader_program.py")),
                f"--kubeconfig={kubeconfig}",
                f"--namespace={namespace}",
                f"--identity={identity}",
                f"--lease={LEASE_NAME}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def _log(logs: Path, identity: str) -> str:
    return (logs / f"{identity}.log").read_text()


def _state(proc: subprocess.Popen[bytes]) -> str:
    with open(f"/proc/{proc.pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def _config_map(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
    }


def _annotated(key: str) -> Callable[[dict[str, Any]], bool]:
    return lambda obj: key in (obj["metadata"].get("annotations") or {})


async def _wait_lease(client: Client, namespace: str, identity: str, timeout: float) -> None:
    await eventually(
        lambda: client.get(LEASE, LEASE_NAME, namespace),
        lambda lease: lease["spec"]["holderIdentity"] == identity,
        timeout=timeout,
        what=f"{identity} to take the Lease",
        interval=0.05,
    )


async def test_a_write_after_a_freeze_longer_than_the_renew_deadline_is_refused(
    kubeconfig: Path, namespace: str
) -> None:
    """In-process and deterministic: the event loop is blocked (a frozen process, a long GC
    pause) past the renew deadline, then a write is the first thing that runs."""
    config = LeaderElectionConfig("pause", namespace, "paused", 3.0, 2.0, 0.5)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": namespace}}
    async with await Client.connect(str(kubeconfig)) as own:
        manager = Manager(own, namespaces=[namespace], leader_election=config)
        task = asyncio.create_task(manager.run())
        elector = manager.elector
        assert elector is not None
        await eventually(lambda: elector.is_leader, timeout=30, what="leadership")
        await own.create(CONFIG_MAP, {**cm, "metadata": {**cm["metadata"], "name": "before"}})
        time.sleep(config.renew_deadline + 0.2)  # the freeze under test
        with pytest.raises(NotLeader):
            await own.create(CONFIG_MAP, {**cm, "metadata": {**cm["metadata"], "name": "after"}})
        with pytest.raises(LeadershipLost):
            await asyncio.wait_for(task, 15)


async def test_the_fence_is_asked_again_once_the_connection_is_in_hand(
    kubeconfig: Path, client: Client, namespace: str
) -> None:
    """Leadership that ends between the first check and the request being written (while
    waiting for a connection, or a freeze there) still stops the write: the transport asks
    the fence again when it holds the connection, and then nothing is written."""
    calls: list[int] = []

    def guard() -> float:
        calls.append(1)
        if len(calls) > 1:
            raise NotLeader("leadership ended while the write waited for its connection")
        return 5.0

    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": namespace}}
    async with await Client.connect(str(kubeconfig)) as own:
        own.write_guard = guard
        with pytest.raises(NotLeader):
            await own.create(CONFIG_MAP, {**cm, "metadata": {**cm["metadata"], "name": "late"}})
        assert len(calls) == 2
        await own.get(CONFIG_MAP, "kube-root-ca.crt", namespace)  # reads are never fenced
    assert len(calls) == 2
    names = [c["metadata"]["name"] for c in (await client.list(CONFIG_MAP, namespace))[0]]
    assert "late" not in names


async def test_a_lease_stolen_under_the_leader_ends_leadership_and_closes_the_fence(
    kubeconfig: Path, client: Client, namespace: str
) -> None:
    async with await Client.connect(str(kubeconfig)) as own:
        manager = Manager(
            own,
            namespaces=[namespace],
            leader_election=LeaderElectionConfig("stolen", namespace, "victim"),
        )

        class Noop:
            async def reconcile(self, request: Request) -> None:
                return None

        Builder(manager, "noop").for_(CONFIG_MAP).complete(Noop())
        task = asyncio.create_task(manager.run())
        elector = manager.elector
        assert elector is not None
        await eventually(lambda: elector.is_leader, timeout=30, what="leadership")
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": namespace}}
        await own.create(CONFIG_MAP, {**cm, "metadata": {**cm["metadata"], "name": "ok"}})

        lease = await client.get(LEASE, "stolen", namespace)
        lease["spec"]["holderIdentity"] = "thief"
        await client.update(LEASE, lease)
        stolen = time.monotonic()
        with pytest.raises(LeadershipLost, match="thief"):
            await asyncio.wait_for(task, 15)
        noticed = time.monotonic() - stolen
        with pytest.raises(NotLeader):
            await own.create(CONFIG_MAP, {**cm, "metadata": {**cm["metadata"], "name": "no"}})

    print(f"stolen Lease noticed after {noticed:.1f}s")
    assert noticed <= 2 + 1.5  # one retry period, plus a round trip
    assert (await client.get(LEASE, "stolen", namespace))["spec"]["holderIdentity"] == "thief"
    refused = manager.metrics.writes_refused.labels("stolen")._value.get()
    assert refused >= 1
