"""One chaos run on a local cluster: AppServices and AppStacks are created in batches while
faults are injected in turn — the Lease holder SIGKILLed (and replaced, as a Deployment
would), the API server or etcd restarted — under two operator replicas with leader
election; then it waits until everything converges and checks the outcome
(:mod:`appstack_testbed.chaos`: converged, no child missing or duplicated, no write by a
replica that did not hold the Lease). Used by bench/chaos.py and tests/e2e/test_chaos.py.

The run is bounded: every wait has a deadline and the whole run a global timeout.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.appstack import APP_STACK
from appstack.controllers.rbac import LEASE_NAME
from appstack.runtime import DEPLOYMENT, LEASE, Client, Resource, errors
from appstack_testbed import chaos
from appstack_testbed.audit import AuditEvent, read_audit_events
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.replica import Replica, Supervisor

FAULTS = ("leader", "kube-apiserver", "etcd")
RETRYABLE = (errors.ServerError, errors.TooManyRequests, errors.TransportError, TimeoutError)


@dataclass
class Plan:
    """What to create and which faults to inject, in order (each one of :data:`FAULTS`)."""

    namespace: str
    apps: int
    stacks: int
    stack: dict[str, Any]  # an AppStack; its name is replaced
    faults: Sequence[str]
    prelude: list[tuple[Resource, dict[str, Any]]] = field(default_factory=list)
    operator_args: tuple[str, ...] = ()
    concurrency: int = 16  # creates in flight
    timeout: float = 900.0  # the whole run


@dataclass
class Outcome:
    """What the run measured and found (see :meth:`figures` for the summary)."""

    children: chaos.ChildReport
    pending: list[str]  # parents not converged at the end
    lost: list[str]  # parents created but gone
    unfenced: list[AuditEvent]
    writes: dict[str, int]  # per replica identity
    tenures: list[chaos.Tenure]
    faults: list[dict[str, Any]]
    audit_complete: bool
    figures: dict[str, Any]


def app_service(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": "nginx:1.27", "ports": [{"port": 80, "targetPort": 8080}]},
    }


SMALL_STACK = """
apiVersion: appstack.dev/v1
kind: AppStack
metadata: {name: small}
spec:
  middleware: [{name: db, type: mysql, managed: {storage: {size: 1Gi}}}]
  components:
    - {name: api, image: example/api:1, ports: [{port: 8080}], uses: [db]}
    - {name: worker, image: example/worker:1, uses: [db], dependsOn: [api]}
    - name: web
      image: nginx:1.27
      ports: [{port: 80}]
      dependsOn: [api]
      config: {mountPath: /etc/web, files: {web.conf: "listen 80;"}}
"""


def small_stack() -> dict[str, Any]:
    """A managed MySQL and three components in two waves (one with a config file)."""
    return dict(yaml.safe_load(SMALL_STACK))


class LeaseWatch:
    """Polls the operator's Lease and records every change of holder (monotonic time)."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client, self.namespace = client, namespace
        self.changes: list[tuple[float, str]] = []

    @property
    def holder(self) -> str:
        return self.changes[-1][1] if self.changes else ""

    async def run(self) -> None:
        while True:
            try:
                lease = await self.client.get(LEASE, LEASE_NAME, self.namespace)
                holder = str(lease["spec"].get("holderIdentity") or "")
                if holder != self.holder:
                    self.changes.append((time.monotonic(), holder))
            except (errors.ApiError, *RETRYABLE):
                pass
            await asyncio.sleep(0.25)


class _Run:
    def __init__(self, cluster: LocalCluster, client: Client, plan: Plan, sup: Supervisor) -> None:
        self.cluster, self.client, self.plan, self.sup = cluster, client, plan, sup
        self.lease = LeaseWatch(client, plan.namespace)
        self.created = 0
        self.faults: list[dict[str, Any]] = []
        self.t0 = time.monotonic()
        self.children_before = 0  # Deployments when the current batch began

    def clock(self) -> str:
        return f"{time.monotonic() - self.t0:6.1f}s"

    def objects(self) -> list[tuple[Resource, dict[str, Any]]]:
        """The AppServices with the stacks spread evenly among them."""
        plan = self.plan
        out = [(APP_SERVICE, app_service(f"app-{i:04d}", plan.namespace)) for i in range(plan.apps)]
        for i in reversed(range(plan.stacks)):
            stack = {
                **plan.stack,
                "metadata": {"name": f"stack-{i:03d}", "namespace": plan.namespace},
            }
            out.insert(round((i + 0.5) * plan.apps / plan.stacks), (APP_STACK, stack))
        return out

    async def create(self, batch: Sequence[tuple[Resource, dict[str, Any]]]) -> None:
        """Create each object, retrying through outages (a create that may have landed
        before its connection broke finds it already there)."""
        gate = asyncio.Semaphore(self.plan.concurrency)

        async def one(resource: Resource, obj: dict[str, Any]) -> None:
            async with gate:
                delay = 0.2
                while True:
                    try:
                        await self.client.create(resource, obj)
                        break
                    except errors.AlreadyExists:
                        break
                    except RETRYABLE:
                        await asyncio.sleep(delay)
                        delay = min(2 * delay, 2.0)
                self.created += 1

        await asyncio.gather(*(one(r, o) for r, o in batch))

    async def live_leader(self) -> Replica:
        """Wait until a running replica holds the Lease; that replica."""
        while True:
            replica = self.sup.by_identity(self.lease.holder)
            if replica is not None and replica.alive():
                return replica
            await asyncio.sleep(0.1)

    async def children(self) -> int:
        """How many Deployments the namespace holds (only the leader writes them)."""
        try:
            items, _ = await self.client.list(DEPLOYMENT, self.plan.namespace)
        except RETRYABLE:
            return -1
        return len(items)

    async def leader_working(self, before: int, timeout: float = 30.0) -> None:
        """Until the leader has written a child since ``before`` was counted (at most
        ``timeout`` s): killed earlier, it would leave no write of its own, and the run
        would prove nothing about a Lease moving away from a replica at work (seen: the
        first leader killed 0.1 s into a run on a loaded machine, before its first write)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and await self.children() <= before:
            await asyncio.sleep(0.1)

    async def inject(self, fault: str) -> dict[str, Any]:
        if fault == "leader":
            await self.leader_working(self.children_before)
        start = time.monotonic()
        record: dict[str, Any] = {"fault": fault, "at_s": round(start - self.t0, 1)}
        if fault == "leader":
            replica = await self.live_leader()
            victim = self.lease.holder
            replica.proc.kill()  # SIGKILL; the supervisor starts a replacement
            record.update(killed=victim)
            end = time.monotonic()
            while self.lease.holder in (victim, ""):
                await asyncio.sleep(0.05)
            record.update(new_leader=self.lease.holder, takeover_s=round(time.monotonic() - end, 1))
        else:
            await asyncio.to_thread(self.cluster.stop, fault)
            await asyncio.to_thread(self.cluster.start, fault)
            end = time.monotonic()
            record.update(outage_s=round(end - start, 1))
        record["end"] = end
        return record

    async def drive(self, say: Callable[[str], None]) -> tuple[float, float]:
        """Create and inject; wait for convergence. (last fault's end, converged) times."""
        for resource, obj in self.plan.prelude:
            await self.client.create(resource, obj)
        self.sup.top_up()
        await self.live_leader()
        objects = self.objects()
        parts = len(self.plan.faults) + 1
        batches = [
            objects[k * len(objects) // parts : (k + 1) * len(objects) // parts]
            for k in range(parts)
        ]
        self.t0 = time.monotonic()
        self.children_before = await self.children()
        await self.create(batches[0])
        for k, fault in enumerate(self.plan.faults):
            await self.live_leader()
            say(f"[chaos] {self.clock()} fault {k + 1}: {fault} ({self.created} created)")
            record, _ = await asyncio.gather(self.inject(fault), self.create(batches[k + 1]))
            self.faults.append(record)
            self.children_before = await self.children()
        last = self.faults[-1]["end"] if self.faults else self.t0
        while True:
            try:
                total, pending = await chaos.convergence(self.client, self.plan.namespace)
            except RETRYABLE:
                total, pending = 0, ["(list failed)"]
            if total == len(objects) and not pending:
                return last, time.monotonic()
            say(f"[chaos] {self.clock()} {total - len(pending)}/{len(objects)} converged")
            await asyncio.sleep(2.0)

    async def check(self) -> tuple[chaos.ChildReport, list[str], set[str]]:
        """(children compared, parents not converged, names of the parents present)."""
        namespace = self.plan.namespace
        children = await chaos.check_children(self.client, namespace)
        _, pending = await chaos.convergence(self.client, namespace)
        present = {p["metadata"]["name"] for p in await chaos.parents(self.client, namespace)}
        return children, pending, present


async def run(
    cluster: LocalCluster,
    operator_kubeconfig: Path,
    plan: Plan,
    logs: Path,
    say: Callable[[str], None] = print,
) -> Outcome:
    """Run ``plan`` (see the module docstring); raises TimeoutError past ``plan.timeout``."""
    started = datetime.datetime.now(datetime.timezone.utc)
    sup = Supervisor(2, operator_kubeconfig, plan.namespace, logs, *plan.operator_args)
    async with await Client.connect(str(cluster.kubeconfig), user_agent="appstack-chaos") as client:
        state = _Run(cluster, client, plan, sup)
        tasks = [asyncio.create_task(sup.run()), asyncio.create_task(state.lease.run())]
        try:
            last, done = await asyncio.wait_for(state.drive(say), plan.timeout)
            children, pending, present = await asyncio.wait_for(state.check(), 120)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.to_thread(sup.stop)
    events = read_audit_events(cluster.directory)
    unfenced, writes = chaos.unfenced_writes(events, plan.namespace, LEASE_NAME)
    history = chaos.tenures(events, plan.namespace, LEASE_NAME)
    lost = sorted({o["metadata"]["name"] for _, o in state.objects()} - present)
    faults = [{k: v for k, v in f.items() if k != "end"} for f in state.faults]
    figures = {
        "appservices": plan.apps,
        "appstacks": plan.stacks,
        "faults": faults,
        "converge_after_last_fault_s": round(done - last, 1),
        "run_s": round(done - state.t0, 1),
        "replicas_started": len(sup.started),
        "replica_exits": [{"replica": n, "code": c} for n, c in sup.exits],
        "lease_holders_seen": len([h for _, h in state.lease.changes if h]),
        "leader_tenures_in_audit": len(history),
        "children": {
            "expected": children.expected,
            "found": children.found,
            "per_kind": children.per_kind,
            "missing": len(children.missing),
            "duplicates": len(children.duplicates),
            "orphans": len(children.orphans),
        },
        "parents_lost": len(lost),
        "not_converged": len(pending),
        "replica_writes": sum(writes.values()),
        "writes_without_lease": len(unfenced),
    }
    return Outcome(
        children=children,
        pending=pending,
        lost=lost,
        unfenced=unfenced,
        writes=dict(writes),
        tenures=history,
        faults=faults,
        audit_complete=bool(events) and events[0].received <= started,
        figures=figures,
    )
