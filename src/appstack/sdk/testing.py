"""Unit tests of an operator with no cluster: :class:`InMemoryOperator` runs an operator's
controllers — the real client, cache, workqueues, reconcilers and child writer — against
the runtime's in-memory API server (:class:`~appstack.runtime.fake.FakeApiServer`), in
this process and in milliseconds, as kopf's ``KopfRunner`` runs an operator and
controller-runtime's fake client serves a reconciler::

    async with InMemoryOperator([CONTROLLER], IDENTITY) as running:
        await running.client.create(GUESTBOOK, {...})
        cm = await running.until(lambda: running.get(CONFIG_MAP, "book-config", "default"))

The kinds the controllers reconcile, own and watch are served; ``namespaces`` exist and are
enabled for the operator (its namespace label). Nothing process-wide is changed (no
logging set-up, no TLS buffers, no signal handlers). What the fake API server does not do
— admission (CRD schemas, CEL rules, webhooks), JSON and strategic merge patches, the
kubelet — stays for the tests on a real control plane (the test bed, or any cluster).
Used by a project's unit tests (``make test-unit`` of a scaffolded one).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar

from appstack.runtime.client import Client
from appstack.runtime.errors import NotFound
from appstack.runtime.events import EventRecorder
from appstack.runtime.fake import FakeApiServer
from appstack.runtime.manager import Manager
from appstack.runtime.resources import NAMESPACE, Obj, Resource
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kit.registration import Registration
from appstack.sdk.operator import wire

T = TypeVar("T")


class InMemoryOperator:
    """``controllers`` of the operator ``identity`` running in memory (see the module
    docstring); ``kinds`` are more kinds to serve (with a status subresource), ``options``
    the controllers' own (``controller_options`` of :func:`appstack.sdk.wire`)."""

    def __init__(
        self,
        controllers: Sequence[Registration],
        identity: OperatorIdentity,
        *,
        namespaces: Sequence[str] = ("default",),
        kinds: Sequence[Resource] = (),
        concurrency: int = 4,
        options: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.controllers = list(controllers)
        self.identity = identity
        self.namespaces = list(namespaces)
        self.api = FakeApiServer(kinds)
        for controller in self.controllers:
            reconciler = controller.reconciler
            if controller.custom:  # the project's kind: a status subresource if it says so
                subresources = controller.kind.subresources or {}
                self.api.serve(controller.primary, status="status" in subresources)
            watched = [resource for resource, _ in reconciler.watches]
            primary = () if controller.custom else (controller.primary,)
            for resource in (*primary, *controller.owns, *reconciler.references, *watched):
                if not self.api.serves(resource):
                    self.api.serve(resource)
        #: The operator's client (its field manager); a test writes with it or its own.
        self.client = Client(self.api, field_manager=identity.field_manager)
        self.manager = Manager(self.client)
        self._concurrency = concurrency
        self._options = options or {}
        self._running: asyncio.Task[None] | None = None
        self._recorder: EventRecorder | None = None

    async def __aenter__(self) -> InMemoryOperator:
        enabled = {self.identity.enabled_label: "true"}
        for namespace in self.namespaces:
            await self.client.create(
                NAMESPACE,
                {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": namespace, "labels": enabled}},
            )  # fmt: skip
        self._recorder = EventRecorder(
            self.client, controller=self.identity.event_source, instance="in-memory"
        )
        wire(
            self.manager,
            self._recorder,
            self.controllers,
            self.identity,
            concurrency=self._concurrency,
            controller_options=self._options,
        )
        self._running = asyncio.create_task(self.manager.run())
        await self.until(lambda: self.manager.ready or self._running_done())
        if self._running.done():
            self._running.result()
        return self

    def _running_done(self) -> bool:
        return self._running is not None and self._running.done()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.manager.stop()
        if self._running is not None:
            await asyncio.wait_for(self._running, 10)
        if self._recorder is not None:
            with contextlib.suppress(Exception):
                await self._recorder.close()

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj | None:
        """The object as the API server has it now, or None."""
        try:
            return await self.client.get(resource, name, namespace)
        except NotFound:
            return None

    async def until(
        self,
        probe: Callable[[], T | Awaitable[T]],
        *,
        timeout: float = 10.0,
        interval: float = 0.01,
    ) -> T:
        """``probe()``'s first truthy answer (awaited if a coroutine), checked every
        ``interval`` seconds; AssertionError after ``timeout`` seconds, with the last answer."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            answer = probe()
            value: T = await answer if isinstance(answer, Awaitable) else answer
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"not true within {timeout}s: last answer {value!r}")
            await asyncio.sleep(interval)
