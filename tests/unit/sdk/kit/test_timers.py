"""Per-object timers (sdk/kit/timers.py, issue #48): when each is due (initial delay, idle,
every), the reconcile asking to be called again by the next one, a timer naming no method
refused at start-up — and a timer of a reconciler running in memory that writes its
object's status every few tenths of a second and stops when the object is deleted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import Field

from appstack.runtime import Result
from appstack.sdk import (
    CustomObject,
    InMemoryOperator,
    KindReconciler,
    KubeModel,
    KubeObject,
    OperatorIdentity,
    Problem,
    Registration,
    Timer,
    custom_kind,
)
from appstack.sdk.kit.timers import Timers, sooner, timer_state


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _obj(version: str = "1", uid: str = "u") -> dict[str, Any]:
    return {"metadata": {"name": "a", "namespace": "ns", "uid": uid, "resourceVersion": version}}


async def test_timers_are_due_after_their_delay_every_period_and_once_idle() -> None:
    clock = _Clock()
    timers = Timers(
        (Timer("tick", every=10, initial_delay=5), Timer("calm", every=30, idle=20)), clock
    )
    calls: list[str] = []

    async def call(method: str) -> None:
        calls.append(method)

    assert await timers.run_due("ns/a", _obj(), call) == 5  # tick after its delay
    clock.now = 105
    assert await timers.run_due("ns/a", _obj(), call) == 10
    assert calls == ["tick"]
    clock.now = 115
    await timers.run_due("ns/a", _obj(version="2"), call)  # changed: calm waits 20 s more
    assert calls == ["tick", "tick"]
    clock.now = 135
    await timers.run_due("ns/a", _obj(version="2"), call)
    assert calls == ["tick", "tick", "tick", "calm"]
    timers.forget("ns/a")
    assert await timers.run_due("ns/a", _obj(uid="new"), call) == 5  # a new object: anew


def test_a_timer_asks_for_the_next_reconcile_unless_sooner_is_asked() -> None:
    assert sooner(None, 3.0) == Result(requeue_after=3.0)
    assert sooner(Result(requeue_after=1.0), 3.0) == Result(requeue_after=1.0)
    assert sooner(Result(requeue=True), 3.0) == Result(requeue=True)
    assert sooner(None, None) is None
    with pytest.raises(ValueError, match="every must be more than 0"):
        Timer("t", every=0)


IDENTITY = OperatorIdentity(project="clock", domain="clock.example.com")


class ClockSpec(KubeModel):
    step: int = Field(1, ge=1)


class ClockStatus(KubeModel):
    ticks: int | None = None


@custom_kind(group="clock.example.com", plural="clocks")
class Clock(CustomObject):
    spec: ClockSpec
    status: ClockStatus | None = None


TICKS: list[str] = []


class ClockReconciler(KindReconciler[ClockSpec]):
    kind = Clock.KIND
    timers = (Timer("tick", every=0.1),)

    def invalid_status(self, obj: KubeObject, problem: Problem) -> ClockStatus:
        return ClockStatus()

    async def apply(self, obj: KubeObject, spec: ClockSpec) -> Result | None:
        return None

    async def tick(self, obj: KubeObject) -> None:
        TICKS.append(obj["metadata"]["name"])
        ticks = ((obj.get("status") or {}).get("ticks") or 0) + 1
        await self.client.patch_status(
            Clock.KIND.resource, obj["metadata"]["name"], {"ticks": ticks},
            namespace=obj["metadata"]["namespace"],
        )  # fmt: skip


def test_a_timer_naming_no_method_is_refused_at_start() -> None:
    with pytest.raises(TypeError, match="timer 'nothing' is not one of its methods"):
        timer_state(object(), (Timer("nothing", every=1),))


async def test_a_timer_writes_status_on_schedule_and_stops_with_its_object() -> None:
    resource = Clock.KIND.resource
    controller = Registration(name="clock", reconciler=ClockReconciler)
    async with InMemoryOperator([controller], IDENTITY) as running:
        await running.client.create(resource, {
            "apiVersion": resource.api_version, "kind": "Clock",
            "metadata": {"name": "c", "namespace": "default"}, "spec": {},
        })  # fmt: skip

        async def ticked() -> bool:
            got = await running.get(resource, "c", "default")
            return bool(got and ((got.get("status") or {}).get("ticks") or 0) >= 3)

        await running.until(ticked)
        await running.client.delete(resource, "c", "default")

        async def gone() -> bool:
            return await running.get(resource, "c", "default") is None

        await running.until(gone)
        stopped = len(TICKS)
        await asyncio.sleep(0.4)  # four periods (a negative: nothing to wait for)
        assert len(TICKS) == stopped  # no tick of a deleted object
