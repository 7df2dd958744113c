"""The test bed's tools of the fencing e2e tests (tests/e2e/test_fencing.py): reading the
API server's audit log and the latency proxy.

Not runtime tests: they belong in tests/unit/testbed (test_audit.py, test_latency_proxy.py)
and wait here until that folder is free to edit (tests/unit/test_layout.py lists this file
as a pending move)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from appstack_testbed.audit import read_audit_events
from appstack_testbed.control_plane import AUDIT_LOG
from appstack_testbed.latency_proxy import LatencyProxy


def test_audit_events_are_read_from_the_log_and_its_backup_in_receipt_order(
    tmp_path: Path,
) -> None:
    log = tmp_path.joinpath(*AUDIT_LOG)
    log.parent.mkdir(parents=True)

    def event(ts: str, name: str, namespace: str = "ns", stage: str = "ResponseComplete") -> str:
        raw: dict[str, Any] = {
            "stage": stage,
            "verb": "patch",
            "user": {"username": "u"},
            "userAgent": f"appstack/0.1 ({name})",
            "objectRef": {"resource": "deployments", "namespace": namespace, "name": name},
            "responseStatus": {"code": 200},
            "requestReceivedTimestamp": f"2026-11-23T10:00:{ts}Z",
        }
        return json.dumps(raw) + "\n"

    log.with_name("audit-2026-11-23T10-00-00.000.log").write_text(event("01.5", "b"))
    log.write_text(
        event("02.0", "c")
        + event("01.0", "a")
        + event("03.0", "d", "other")
        + event("04.0", "e", stage="ResponseStarted")
    )
    events = read_audit_events(tmp_path, namespace="ns")
    assert [e.name for e in events] == ["a", "b", "c"]
    assert events[0].succeeded
    assert "(a)" in events[0].user_agent


async def test_the_latency_proxy_delays_each_direction_and_keeps_the_bytes_in_order() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, LatencyProxy("127.0.0.1", port, delay=0.2) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        started = time.monotonic()
        writer.write(b"one ")
        writer.write(b"two")
        received = b""
        while len(received) < 7:
            received += await reader.read(1024)
        elapsed = time.monotonic() - started
        proxy.delay = 0.0
        writer.write(b"!")
        assert await reader.read(1) == b"!"
        writer.close()
    assert received == b"one two"
    assert elapsed >= 0.4  # 0.2 s each way
