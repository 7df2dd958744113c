"""Read the local API server's audit log: who wrote what, with which user agent, when.

The test bed's audit policy (:func:`appstack_testbed.control_plane.audit_policy`) records
every write (create/update/patch/delete) at Metadata level, except Events and the control
plane's own clients. Tests use :func:`read_audit_events` to prove e.g. that a replica
which lost the Lease wrote nothing after its successor's first write. Reads the rotated
backup too, so a test does not miss events when the log rotates under it, and leaves out a
last line the API server is still writing (no newline yet: the reader raced the write).
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appstack_testbed.control_plane import AUDIT_LOG


@dataclass(frozen=True)
class AuditEvent:
    """One recorded request (stage ResponseComplete)."""

    verb: str
    user: str
    user_agent: str
    resource: str
    namespace: str
    name: str
    subresource: str
    code: int
    received: datetime.datetime

    @property
    def succeeded(self) -> bool:
        return 200 <= self.code < 300

    def __str__(self) -> str:
        target = "/".join(p for p in (self.namespace, self.resource, self.name) if p)
        sub = f"/{self.subresource}" if self.subresource else ""
        when = self.received.time()
        return f"{when} {self.verb} {target}{sub} -> {self.code} ({self.user_agent})"


def audit_log_files(cluster_directory: Path) -> list[Path]:
    """The audit log and its rotated backups, oldest first."""
    current = cluster_directory.joinpath(*AUDIT_LOG)
    backups = sorted(current.parent.glob(f"{current.stem}-*{current.suffix}"))
    return [*backups, *([current] if current.exists() else [])]


def read_audit_events(cluster_directory: Path, *, namespace: str | None = None) -> list[AuditEvent]:
    """Every recorded event (optionally only in ``namespace``), ordered by receipt time."""
    events = []
    for path in audit_log_files(cluster_directory):
        with open(path, "rb") as log:
            for line in log:
                if line.endswith(b"\n") and line.strip():
                    event = _parse(json.loads(line))
                    if event and (namespace is None or event.namespace == namespace):
                        events.append(event)
    return sorted(events, key=lambda e: e.received)


def _parse(raw: dict[str, Any]) -> AuditEvent | None:
    if raw.get("stage") != "ResponseComplete":
        return None
    ref = raw.get("objectRef") or {}
    return AuditEvent(
        verb=str(raw.get("verb", "")),
        user=str((raw.get("user") or {}).get("username", "")),
        user_agent=str(raw.get("userAgent", "")),
        resource=str(ref.get("resource", "")),
        namespace=str(ref.get("namespace", "")),
        name=str(ref.get("name", "")),
        subresource=str(ref.get("subresource", "")),
        code=int((raw.get("responseStatus") or {}).get("code", 0)),
        received=datetime.datetime.fromisoformat(
            str(raw["requestReceivedTimestamp"]).replace("Z", "+00:00")
        ),
    )
