"""Kubernetes Events (``events.k8s.io/v1``) about the objects we reconcile, de-duplicated.

The first occurrence of an event (same object, type, reason, action and note) creates an
Event; repeats within ``series_window`` update that Event's ``series`` (count and last
observed time) instead of creating new objects — a reconcile that fails every few seconds
leaves one Event with a growing count, not thousands. Notes are truncated to the API's
1 kB limit. Callers must never put secret values in a note.

Recording never fails a reconcile: API errors are logged and swallowed.
Used by the controllers through :class:`EventRecorder`.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

import structlog

from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.clock import micro_time
from appstack.runtime.errors import TransportError
from appstack.runtime.resources import EVENT

log = structlog.get_logger("appstack.events")

EventType = Literal["Normal", "Warning"]
_NOTE_LIMIT = 1024


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    first: float


class EventRecorder:
    """Records Kubernetes Events about an object, folding repeats into one Event's series.

    ``await recorder.event(obj, "Warning", "InvalidSpec", "spec.image is empty")``; never
    raises (failures are logged).
    """

    def __init__(
        self,
        client: Client,
        *,
        controller: str = "appstack.dev/operator",
        instance: str = "appstack",
        series_window: float = 1800.0,
        max_tracked: int = 4096,
    ) -> None:
        self.client = client
        self.controller = controller
        self.instance = instance
        self.series_window = series_window
        self.max_tracked = max_tracked
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()

    async def event(
        self,
        regarding: dict[str, Any],
        type_: EventType,
        reason: str,
        note: str,
        *,
        action: str = "Reconcile",
    ) -> None:
        """Record a ``Normal``/``Warning`` Event about ``regarding``; a repeat of the same
        Event within the series window updates its count instead of creating another."""
        meta = regarding["metadata"]
        namespace = meta.get("namespace") or "default"
        note = note if len(note) <= _NOTE_LIMIT else note[: _NOTE_LIMIT - 3] + "..."
        key = (meta.get("uid", ""), type_, reason, action, note)
        seen = self._seen.get(key)
        now = time.monotonic()
        try:
            if seen is not None and now - seen.first < self.series_window:
                seen.count += 1
                self._seen.move_to_end(key)
                try:
                    await self.client.patch(
                        EVENT,
                        seen.name,
                        namespace=seen.namespace,
                        patch={"series": {"count": seen.count, "lastObservedTime": micro_time()}},
                    )
                    return
                except errors.NotFound:
                    pass  # the Event expired (TTL): record a new one below
            name = f"{meta['name']}.{uuid.uuid4().hex[:16]}"
            await self.client.create(
                EVENT,
                {
                    "apiVersion": "events.k8s.io/v1",
                    "kind": "Event",
                    "metadata": {"name": name, "namespace": namespace},
                    "eventTime": micro_time(),
                    "reportingController": self.controller,
                    "reportingInstance": self.instance,
                    "action": action,
                    "reason": reason,
                    "note": note,
                    "type": type_,
                    "regarding": {
                        "apiVersion": regarding.get("apiVersion"),
                        "kind": regarding.get("kind"),
                        "name": meta["name"],
                        "namespace": meta.get("namespace"),
                        "uid": meta.get("uid"),
                        "resourceVersion": meta.get("resourceVersion"),
                    },
                },
            )
            self._seen[key] = _Seen(name, namespace, 1, now)
            while len(self._seen) > self.max_tracked:
                self._seen.popitem(last=False)
        except (errors.ApiError, TransportError) as error:
            log.warning("could not record event", reason=reason, error=str(error))
