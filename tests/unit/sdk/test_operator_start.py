"""How an operator starts against an API server that is not there yet or lacks its CRDs
(issue #38): :func:`appstack.sdk.operator.require_crds` asks again with backoff while the
server cannot be reached, saying so once per attempt, and is the manager's preflight (the
readiness probe is not ready meanwhile)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest
import structlog
from aiohttp import ClientSession

from appstack.controllers.registry import ALL
from appstack.runtime import Manager, TransportError
from appstack.runtime.client import Client
from appstack.sdk import operator
from tests.support.paths import REPO_ROOT
from tests.support.scripted_transport import ScriptedTransport


def _discovery(*plurals: str) -> dict[str, Any]:
    return {"kind": "APIResourceList", "resources": [{"name": p} for p in plurals]}


async def test_an_unreachable_api_server_is_asked_again_with_backoff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(operator.asyncio, "sleep", sleep)
    transport = ScriptedTransport()
    for _ in range(4):
        transport.fail(TransportError("GET /apis/appstack.dev/v1: refused", "https://k:6443"))
    transport.answer(404, b"404 page not found")
    with structlog.testing.capture_logs() as logs, pytest.raises(operator.MissingCRDs) as missing:
        await operator.require_crds(Client(transport), ALL, "apply them", retry=(1.0, 3.0))
    assert waits == [1.0, 2.0, 3.0, 3.0]
    retries = [log for log in logs if log["event"] == "API server not reachable, retrying"]
    assert [r["retry_in"] for r in retries] == waits
    assert retries[0]["server"] == "https://k:6443"
    assert any(log["event"] == "API server reachable" for log in logs)
    assert "appstacks.appstack.dev" in missing.value.names
    assert str(missing.value).endswith("install the CRDs first (apply them)")


async def test_other_failures_to_ask_go_on() -> None:
    transport = ScriptedTransport().answer(403, {"kind": "Status", "reason": "Forbidden"})
    await operator.require_crds(Client(transport), ALL[:1])


async def test_served_kinds_pass() -> None:
    [controller] = ALL[:1]
    transport = ScriptedTransport().answer(200, _discovery(controller.kind.plural))
    await operator.require_crds(Client(transport), [controller])


async def test_the_probe_is_not_ready_while_the_preflight_waits() -> None:
    waiting, release = asyncio.Event(), asyncio.Event()

    async def preflight() -> None:
        waiting.set()
        await release.wait()

    manager = Manager(
        Client(ScriptedTransport()), health_address="127.0.0.1:0", preflight=preflight
    )
    running = asyncio.create_task(manager.run())
    await asyncio.wait_for(waiting.wait(), 10)
    url = f"http://127.0.0.1:{manager.bound['health']}"
    async with ClientSession() as session:
        async with session.get(f"{url}/readyz") as ready:
            assert (ready.status, await ready.text()) == (
                503,
                "starting: waiting for the API server",
            )
        async with session.get(f"{url}/healthz") as alive:
            assert alive.status == 200
    manager.stop()  # stops the wait too
    await asyncio.wait_for(running, 10)
    assert not release.is_set()


RELEASED = """
import asyncio, os, signal
from appstack.runtime import Manager
from appstack.runtime.client import Client
from tests.support.scripted_transport import ScriptedTransport

async def main():
    manager = Manager(Client(ScriptedTransport()), namespaces=["ns"])
    manager.install_signal_handlers()
    manager.release_signal_handlers()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGTERM):  # as make forwards one
        os.kill(os.getpid(), sig)
    await asyncio.sleep(0.1)
    print("still here")

asyncio.run(main())
os.kill(os.getpid(), signal.SIGTERM)  # after the loop closed too
"""


def test_after_the_run_a_late_signal_is_ignored_not_a_traceback() -> None:
    """An operator's last moments (:func:`appstack.sdk.serve` releases the manager's signal
    handlers when its run ends): a second SIGTERM — ``make run`` forwards the one it got —
    or a Ctrl-C arriving as the loop closes is ignored, the process exits 0 and prints no
    traceback (CI saw "Exception ignored ... Bad file descriptor" from asyncio's handler
    writing to the closed wakeup pipe)."""
    done = subprocess.run(
        [sys.executable, "-c", RELEASED],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        check=False,
    )
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "still here", "")
