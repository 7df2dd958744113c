"""SIGTERM with a reconcile that never returns: the drain is bounded by the graceful
shutdown timeout, then the reconcile is cancelled, the Lease released, and the process
exits 0 — well inside the pod's 30 s termination grace period."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from appstack.runtime.client import Client
from appstack.runtime.resources import CONFIG_MAP, LEASE
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import program, until

# Serial (on a quiet machine): its subject is time — the drain on SIGTERM bounded.
pytestmark = pytest.mark.serial

PROGRAM = Path(__file__).with_name("leader_program.py")
BOUND = 3.0


async def test_sigterm_cancels_a_hung_reconcile_after_the_drain_bound_and_releases_the_lease(
    client: Client, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    argv = [
        sys.executable,
        str(PROGRAM),
        f"--kubeconfig={kubeconfig}",
        f"--namespace={namespace}",
        "--identity=stuck",
        "--lease=drain",
        f"--shutdown-timeout={BOUND}",
    ]
    with program(argv, tmp_path / "program.log") as running:
        cm: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "hang", "namespace": namespace, "labels": {"hang": "yes"}},
        }
        await client.create(CONFIG_MAP, cm)
        await until(
            client,
            CONFIG_MAP,
            "hang",
            namespace,
            lambda c: (c["metadata"].get("annotations") or {}).get("hanging") == "stuck",
            60,
            "the reconcile to start hanging",
        )
        running.proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        await eventually(
            lambda: running.proc.poll() is not None,
            timeout=BOUND + 20,
            what="the operator to exit on SIGTERM",
            interval=0.05,
            diagnose=running.tail,
        )
        took = time.monotonic() - started

    print(f"SIGTERM with a hung reconcile: exited after {took:.1f}s (bound {BOUND}s)")
    assert running.proc.returncode == 0, running.tail()
    assert BOUND <= took <= BOUND + 3, f"shutdown took {took:.1f}s"
    lease = await client.get(LEASE, "drain", namespace)
    assert lease["spec"]["holderIdentity"] == ""
