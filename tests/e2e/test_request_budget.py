"""How many API requests the operator spends per AppService, counted by its own
client against the real API server: a created app costs two
applies, one Event and its status writes (no GET of the app or its children: children are
created first, a 409 would read the owner; one GET of its namespace, the Pod Security level
it enforces, read once per 30 s per namespace, not per app); an image update costs one
apply and its status writes, no Event; a restarted operator writes nothing for apps that
are as wanted. Figures at scale:
docs/performance.md."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from appstack.controllers.appservice import APP_SERVICE
from appstack.runtime.apirequest import ApiRequest, Timeouts
from appstack.runtime.client import Client
from appstack.runtime.controller import Request
from appstack.runtime.resources import DEPLOYMENT
from appstack.sdk.kit.children import PROGRESS_INTERVAL
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator, is_ready, start_operator, until

# Serial (on a quiet machine): its subject is how many requests the operator spends.
pytestmark = pytest.mark.serial


class Sent:
    """Every request the operator's client sends from now on, by method (watches, opened
    before and held for minutes, are not reconciles' requests and are left out)."""

    def __init__(self, operator: RunningOperator) -> None:
        self.counts: Counter[str] = Counter()
        transport = operator.client.transport
        send = transport.send

        async def counted(request: ApiRequest, timeouts: Timeouts, guard: Any = None) -> Any:
            if not request.stream:
                self.counts[request.method] += 1
            return await send(request, timeouts, guard)

        transport.send = counted  # type: ignore[method-assign]

    def take(self) -> Counter[str]:
        """The counts since the last call."""
        counts, self.counts = self.counts, Counter()
        return counts


async def _settled(operator: RunningOperator, namespace: str, name: str) -> None:
    """One more reconcile of ``name`` has run (any write it still wanted is counted)."""
    reconciles = operator.manager.metrics.reconcile_total.labels("appservice", "success")
    before = reconciles._value.get()
    operator.manager.controllers[0].enqueue(Request(namespace, name))
    await eventually(
        lambda: reconciles._value.get() > before, timeout=10, what=f"one more reconcile of {name}"
    )
    await operator.recorder.flush()  # its Events are sent in the background


def _current(image: str) -> Any:
    def check(app: dict[str, Any]) -> bool:
        status = app.get("status") or {}
        return (
            is_ready(app)
            and status.get("observedGeneration") == app["metadata"]["generation"]
            and app["spec"]["image"] == image
        )

    return check


async def test_a_created_and_an_updated_appservice_cost_few_requests(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    app = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": "budget", "namespace": namespace},
        "spec": {"image": "nginx:1.27", "ports": [{"port": 80}]},
    }
    sent = Sent(operator)
    started = time.monotonic()
    await client.create(APP_SERVICE, app)
    await until(client, APP_SERVICE, "budget", namespace, _current("nginx:1.27"), 120)
    await _settled(operator, namespace, "budget")
    created = sent.take()
    # Status: written when the children exist and when Ready, and at most every
    # PROGRESS_INTERVAL while only counts move (a slow, loaded machine rolls out slowly).
    status_writes = 2 + int((time.monotonic() - started) / PROGRESS_INTERVAL)
    # no read before creating the children, but the namespace's Pod Security level (once)
    assert created["GET"] <= 1, created
    assert created["POST"] == 1, created  # one Event: "Created Deployment budget, Service budget"
    assert 3 <= created["PATCH"] <= 2 + status_writes, created  # two applies, status

    await client.patch(
        APP_SERVICE, "budget", {"spec": {"image": "nginx:1.28"}}, namespace=namespace
    )
    await until(client, APP_SERVICE, "budget", namespace, _current("nginx:1.28"), 60)
    deployment = await client.get(DEPLOYMENT, "budget", namespace)
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    await _settled(operator, namespace, "budget")
    updated = sent.take()
    assert updated["GET"] <= 1, updated  # the namespace's level again, if 30 s went by
    assert updated["POST"] == 0, updated  # the user's own change: status tells it, no Event
    status_writes = 2 + int((time.monotonic() - started) / PROGRESS_INTERVAL)
    assert 2 <= updated["PATCH"] <= 1 + status_writes, updated  # one apply, status


def _writes(operator: RunningOperator) -> Counter[str]:
    """The writes the operator's client has sent since it started, by method."""
    counts: Counter[str] = Counter()
    for metric in operator.client.metrics.rest_requests.collect():
        for sample in metric.samples:
            method = sample.labels.get("method", "")
            if sample.name.endswith("_total") and method in ("POST", "PUT", "PATCH", "DELETE"):
                counts[method] += int(sample.value)
    return counts


async def test_a_restarted_operator_writes_nothing_for_apps_that_are_as_wanted(
    client: Client, namespace: str, operator_kubeconfig: Path
) -> None:
    names = [f"settled-{i}" for i in range(3)]
    first = await start_operator(operator_kubeconfig, namespace)
    try:
        for name in names:
            app = {
                "apiVersion": "appstack.dev/v1",
                "kind": "AppService",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"image": "nginx:1.27", "ports": [{"port": 80}]},
            }
            await client.create(APP_SERVICE, app)
        for name in names:
            await until(client, APP_SERVICE, name, namespace, _current("nginx:1.27"), 120)
            await _settled(first, namespace, name)
    finally:
        await first.stop()
    before = {
        name: (await client.get(DEPLOYMENT, name, namespace))["metadata"]["resourceVersion"]
        for name in names
    }

    # The restarted operator lists everything (list items carry no apiVersion/kind: they
    # must still compare equal to what it wants) and reconciles each app once.
    second = await start_operator(operator_kubeconfig, namespace)
    try:
        reconciles = second.manager.metrics.reconcile_total.labels("appservice", "success")
        await eventually(
            lambda: reconciles._value.get() >= len(names),
            timeout=30,
            what="a reconcile of each app after the restart",
        )
        for name in names:
            await _settled(second, namespace, name)
        assert _writes(second) == Counter(), "a restart re-applied what was already so"
    finally:
        await second.stop()
    for name in names:
        deployment = await client.get(DEPLOYMENT, name, namespace)
        assert deployment["metadata"]["resourceVersion"] == before[name]
