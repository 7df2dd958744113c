"""``OperatorRunner`` (appstack.sdk, issue #48: kopf's ``KopfRunner``): an operator's
controllers run in the test's process against the real API server, assembled as its run
command assembles them — a reconcile seen, the operator stopped cleanly on leaving; one
whose kind's CRD is not installed raises at entry what the run command would exit with;
nothing process-wide changed. And per-object timers on two such replicas sharing a Lease:
only the leader's ticks (writing the object's status), the standby's once the leader
goes, none once the object is deleted."""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path
from typing import Any

import pytest

from appstack.runtime import CONFIG_MAP, NAMESPACE, Client, NotFound, Resource, Result
from appstack.sdk import (
    CustomObject,
    KindReconciler,
    KubeModel,
    KubeObject,
    MissingCRDs,
    ObjectReconciler,
    OperatorIdentity,
    OperatorRunner,
    Problem,
    Registration,
    Timer,
    crd,
    custom_kind,
)
from appstack_testbed.waiting import eventually

IDENTITY = OperatorIdentity(project="echo", domain="echo.example.com")
ECHO = "echo.example.com/echo"


class Echo(ObjectReconciler):
    """A labelled ConfigMap -> an annotation saying which data keys it has."""

    primary = CONFIG_MAP
    writes = (CONFIG_MAP,)
    selector = f"{ECHO}=yes"

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        meta = obj["metadata"]
        keys = ",".join(sorted(obj.get("data") or {}))
        if (meta.get("annotations") or {}).get(ECHO) != keys:
            patch = {"metadata": {"annotations": {ECHO: keys}}}
            await self.client.patch(CONFIG_MAP, meta["name"], patch, namespace=meta["namespace"])
        return None


CONTROLLER = Registration(name="echo", reconciler=Echo)


async def test_the_runner_runs_the_operator_against_the_cluster_and_stops_it(
    kubeconfig: Path, namespace: str
) -> None:
    handlers = signal.getsignal(signal.SIGTERM), logging.getLogger().handlers[:]
    async with await Client.connect(str(kubeconfig), field_manager="runner-test") as client:
        enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
        await client.patch(NAMESPACE, namespace, enable)
        async with OperatorRunner(
            [CONTROLLER], IDENTITY, kubeconfig=str(kubeconfig), namespaces=[namespace]
        ) as running:
            assert running.manager.ready
            await client.create(CONFIG_MAP, {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": namespace, "labels": {ECHO: "yes"}},
                "data": {"b": "2", "a": "1"},
            })  # fmt: skip
            got = await running.until(
                lambda: _annotated(running, namespace, "a,b"), timeout=30, interval=0.1
            )
            assert got["metadata"]["annotations"][ECHO] == "a,b"
            task = running._running
        assert task is not None
        assert task.done()
        assert task.exception() is None  # stopped as SIGTERM stops it: drained, no error
    assert (signal.getsignal(signal.SIGTERM), logging.getLogger().handlers) == handlers


async def _annotated(running: OperatorRunner, namespace: str, keys: str) -> dict[str, Any] | None:
    got = await running.get(CONFIG_MAP, "c", namespace)
    if got and (got["metadata"].get("annotations") or {}).get(ECHO) == keys:
        return got
    return None


async def test_a_kind_whose_crd_is_not_installed_is_raised_at_entry(
    kubeconfig: Path, namespace: str
) -> None:
    runner = OperatorRunner(
        [NEVERS], IDENTITY, kubeconfig=str(kubeconfig), namespaces=[namespace], timeout=30
    )
    with pytest.raises(MissingCRDs) as raised:
        async with runner:
            pytest.fail("entered without the CRD")
    assert raised.value.names == ["nevers.echo.example.com"]
    assert runner._running is not None
    assert runner._running.done()


class NeverSpec(KubeModel):
    size: int = 1


class NeverStatus(KubeModel):
    seen: bool | None = None


@custom_kind(group="echo.example.com", plural="nevers")
class Never(CustomObject):
    """A kind of the project whose CRD the test never installs."""

    spec: NeverSpec
    status: NeverStatus | None = None


class NeverReconciler(KindReconciler[NeverSpec]):
    kind = Never.KIND

    def invalid_status(self, obj: KubeObject, problem: Problem) -> KubeModel:
        raise NotImplementedError

    async def apply(self, obj: KubeObject, spec: NeverSpec) -> Result | None:
        raise NotImplementedError


NEVERS = Registration(name="nevers", reconciler=NeverReconciler)


# ------------------------------------------------------------- a timer, only on the leader
class ClockSpec(KubeModel):
    step: int = 1


class ClockStatus(KubeModel):
    ticks: int | None = None


@custom_kind(group="clock.runner.example.com", plural="clocks")
class Clock(CustomObject):
    """Its status counts the timer's ticks."""

    spec: ClockSpec
    status: ClockStatus | None = None


#: (the client of the replica whose timer ticked, the object's name), in order
TICKS: list[tuple[Client, str]] = []


class ClockReconciler(KindReconciler[ClockSpec]):
    kind = Clock.KIND
    timers = (Timer("tick", every=0.3),)

    def invalid_status(self, obj: KubeObject, problem: Problem) -> ClockStatus:
        return ClockStatus()

    async def apply(self, obj: KubeObject, spec: ClockSpec) -> Result | None:
        return None

    async def tick(self, obj: KubeObject) -> None:
        meta = obj["metadata"]
        TICKS.append((self.client, meta["name"]))
        ticks = ((obj.get("status") or {}).get("ticks") or 0) + 1
        await self.client.patch_status(
            Clock.KIND.resource, meta["name"], {"ticks": ticks}, namespace=meta["namespace"]
        )


CLOCKS = Registration(name="clocks", reconciler=ClockReconciler)


async def test_a_timer_ticks_on_the_leader_alone_moves_with_the_lease_and_stops_on_deletion(
    kubeconfig: Path, namespace: str
) -> None:
    """Issue #48, done-when 3, with two replicas sharing a Lease on the real API server."""
    resource = Clock.KIND.resource
    crds = Resource(
        "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
        False,
    )  # fmt: skip
    async with await Client.connect(str(kubeconfig), field_manager="clock-test") as client:
        await client.apply(crds, crd(Clock.KIND))
        try:
            await eventually(
                lambda: client.list(resource, namespace), timeout=30,
                what="the Clock CRD served", retry_on=(NotFound,),
            )  # fmt: skip
            enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
            await client.patch(NAMESPACE, namespace, enable)
            replicas = [
                OperatorRunner(
                    [CLOCKS], IDENTITY, kubeconfig=str(kubeconfig), namespaces=[namespace],
                    leader_elect=True, leader_election_namespace=namespace,
                    leader_election_id="clock-runner", lease_duration=4.0,
                    renew_deadline=3.0, retry_period=0.5,
                )
                for _ in range(2)
            ]  # fmt: skip
            async with replicas[0] as first, replicas[1] as second:
                leader = await first.until(
                    lambda: next((r for r in (first, second) if _leads(r)), None),
                    timeout=30, interval=0.1,
                )  # fmt: skip
                assert leader is not None
                standby = second if leader is first else first
                await client.create(resource, {
                    "apiVersion": resource.api_version, "kind": "Clock",
                    "metadata": {"name": "c", "namespace": namespace}, "spec": {},
                })  # fmt: skip
                await leader.until(lambda: _ticks(client, namespace, 3), timeout=30)
                assert {who for who, _ in TICKS} == {leader.client}

                leader.manager.stop()  # the leader goes: the standby takes the Lease
                before = len(TICKS)
                await standby.until(
                    lambda: any(who is standby.client for who, _ in TICKS[before:]),
                    timeout=30, interval=0.1,
                )  # fmt: skip
                ticks = (await client.get(resource, "c", namespace))["status"]["ticks"]
                await standby.until(lambda: _ticks(client, namespace, ticks + 2), timeout=30)

                await client.delete(resource, "c", namespace)
                await standby.until(lambda: _gone(client, resource, namespace), timeout=30)
                stopped = len(TICKS)
                await asyncio.sleep(1.0)  # three periods: no tick of a deleted object
                assert len(TICKS) == stopped
        finally:
            await client.delete(crds, f"clocks.{Clock.KIND.group}")


def _leads(runner: OperatorRunner) -> bool:
    elector = runner.manager.elector
    return elector is not None and elector.is_leader


async def _ticks(client: Client, namespace: str, at_least: int) -> bool:
    got = await client.get(Clock.KIND.resource, "c", namespace)
    return ((got.get("status") or {}).get("ticks") or 0) >= at_least


async def _gone(client: Client, resource: Resource, namespace: str) -> bool:
    try:
        await client.get(resource, "c", namespace)
    except NotFound:
        return True
    return False
