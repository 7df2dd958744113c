"""Reading the audit log (appstack_testbed.audit) while the API server may be writing it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from appstack_testbed.audit import read_audit_events
from appstack_testbed.control_plane import AUDIT_LOG


def _event(name: str, namespace: str = "ns") -> bytes:
    raw = {
        "stage": "ResponseComplete",
        "verb": "create",
        "user": {"username": "system:serviceaccount:appstack-system:appstack-operator"},
        "userAgent": "appstack",
        "objectRef": {"resource": "deployments", "namespace": namespace, "name": name},
        "responseStatus": {"code": 201},
        "requestReceivedTimestamp": f"2026-11-26T08:00:0{name[-1]}.000000Z",
    }
    return json.dumps(raw).encode() + b"\n"


def test_a_line_still_being_written_is_left_out_and_complete_lines_are_read(tmp_path: Path) -> None:
    log = tmp_path.joinpath(*AUDIT_LOG)
    log.parent.mkdir(parents=True)
    partial = _event("app-3")[:60]
    log.write_bytes(_event("app-2") + _event("app-1") + partial)

    events = read_audit_events(tmp_path, namespace="ns")

    assert [e.name for e in events] == ["app-1", "app-2"]

    log.write_bytes(_event("app-2") + _event("app-1") + _event("app-3"))
    assert [e.name for e in read_audit_events(tmp_path)] == ["app-1", "app-2", "app-3"]


def test_a_rotated_backup_is_read_before_the_current_log(tmp_path: Path) -> None:
    log = tmp_path.joinpath(*AUDIT_LOG)
    log.parent.mkdir(parents=True)
    log.with_name(f"{log.stem}-2026-11-26T08-00-00.000{log.suffix}").write_bytes(_event("app-1"))
    log.write_bytes(_event("app-2", namespace="other"))

    assert [e.name for e in read_audit_events(tmp_path)] == ["app-1", "app-2"]
    assert [e.name for e in read_audit_events(tmp_path, namespace="other")] == ["app-2"]


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
