"""Tests of an operator, as context managers that run it in the test's own process.

:class:`InMemoryOperator` — unit tests with no cluster: the operator's controllers — the
real client, cache, workqueues, reconcilers and child writer — against the runtime's
in-memory API server (:class:`~appstack.runtime.fake.FakeApiServer`), in milliseconds, as
controller-runtime's fake client serves a reconciler::

    async with InMemoryOperator([CONTROLLER], IDENTITY) as running:
        await running.client.create(GUESTBOOK, {...})
        cm = await running.until(lambda: running.get(CONFIG_MAP, "book-config", "default"))

:class:`OperatorRunner` — the same operator against a real cluster (any kubeconfig: the
test bed's, kind's, k3d's, a real one), assembled exactly as its run command assembles it
(:func:`~appstack.sdk.operator.assemble`: the CRD check, the cache, the controllers, the
Events), as kopf's ``KopfRunner`` runs an operator in a test::

    async with OperatorRunner([CONTROLLER], IDENTITY, namespaces=["test"]) as running:
        await running.client.create(GUESTBOOK, {...})
        cm = await running.until(lambda: running.get(CONFIG_MAP, "book-config", "test"))

An operator that serves webhooks (admission, conversion) serves them in developer mode on a
free port of 127.0.0.1, where an API server on this machine (the test bed's) reaches them;
the runner is entered once they are configured, and tells the test where they are
(``webhook_url``, ``webhook_port``) and the CA that verifies them (``webhook_ca``).

The kinds the controllers reconcile, own and watch are served; ``namespaces`` exist and are
enabled for the operator (its namespace label). Nothing process-wide is changed (no
logging set-up, no TLS buffers, no signal handlers). What the fake API server does not do
— admission (CRD schemas, CEL rules, webhooks), JSON and strategic merge patches, the
kubelet — stays for the tests on a real control plane (the test bed, or any cluster).
Used by a project's unit tests (``make test-unit`` of a scaffolded one) and its tests on a
cluster.

:func:`webhook_review` — an admission webhook's handler called with no server at all: the
:class:`~appstack.sdk.kit.webhooks.WebhookReview` the operator would hand it for an object
(parsed with the kind's model, as the operator parses it), for a scaffolded project's
tests of its validating and defaulting handlers (``appstack create webhook``)::

    verdict = validate(webhook_review(Guestbook.KIND, {..., "spec": {"foo": "forbidden"}}))
    assert verdict.field == "spec.foo"
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, overload

from appstack.runtime.client import Client
from appstack.runtime.errors import NotFound
from appstack.runtime.events import EventRecorder
from appstack.runtime.fake import FakeApiServer
from appstack.runtime.manager import Manager
from appstack.runtime.resources import NAMESPACE, Obj, Resource
from appstack.runtime.webhook import AdmissionRequest
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kind import CustomKind
from appstack.sdk.kit.registration import Registration
from appstack.sdk.kit.webhooks import WebhookReader, WebhookReview, WebhookServing
from appstack.sdk.operator import Assembly, assemble, wire
from appstack.sdk.options import OperatorOptions

T = TypeVar("T")


def webhook_review(
    kind: CustomKind | Resource,
    obj: Mapping[str, Any] | None,
    *,
    old: Mapping[str, Any] | None = None,
    operation: str | None = None,
    user: str = "tester",
    groups: Sequence[str] = ("system:authenticated",),
    dry_run: bool = False,
    client: Client | None = None,
) -> WebhookReview:
    """What a declared webhook's handler is asked about ``obj`` (and ``old``, the object
    before an update), as the operator asks it: ``operation`` ``CREATE`` (``UPDATE`` when
    ``old`` is given; ``DELETE``, ``CONNECT``), by ``user`` of ``groups``; for a
    :class:`~appstack.sdk.kind.CustomKind` both parsed with its model (``review.object``,
    ``review.old_object``: pydantic's ValidationError when the model refuses one — the
    operator denies such a request, naming the field, before any handler is asked); for
    another kind's ``Resource`` the dicts only. ``review.raw`` is a copy of ``obj``: a
    defaulting handler changes and returns it, ``obj`` stays as it is. ``client`` (a
    runtime client, or an in-memory operator's) is what ``review.client`` reads other
    objects with, as the operator's client (:class:`~appstack.sdk.kit.webhooks.WebhookReader`)."""
    resource = kind.resource if isinstance(kind, CustomKind) else kind
    operation = operation or ("UPDATE" if old is not None else "CREATE")
    new = copy.deepcopy(dict(obj)) if obj is not None else None
    before = copy.deepcopy(dict(old)) if old is not None else None
    metadata = (new or before or {}).get("metadata") or {}
    request = AdmissionRequest(
        uid=str(uuid.uuid4()),
        operation=operation,
        kind={"group": resource.group, "version": resource.version, "kind": resource.kind},
        resource={
            "group": resource.group,
            "version": resource.version,
            "resource": resource.plural,
        },
        name=str(metadata.get("name", "")),
        namespace=str(metadata.get("namespace", "")) if resource.namespaced else "",
        object=new,
        old_object=before,
        user_info={"username": user, "groups": list(groups)},
        dry_run=dry_run,
    )
    reader = WebhookReader(client) if client is not None else None
    if not isinstance(kind, CustomKind):
        return WebhookReview(request, client=reader)
    model = kind.model
    return WebhookReview(
        request,
        model.model_validate(new) if new is not None else None,
        model.model_validate(before) if before is not None else None,
        reader,
    )


class _Probes:
    """What a test asks of a running operator: an object as the API server has it now, and
    a wait for a condition."""

    client: Client

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj | None:
        """The object as the API server has it now, or None."""
        try:
            return await self.client.get(resource, name, namespace)
        except NotFound:
            return None

    @overload
    async def until(
        self, probe: Callable[[], Awaitable[T]], *, timeout: float = ..., interval: float = ...
    ) -> T: ...

    @overload
    async def until(
        self, probe: Callable[[], T], *, timeout: float = ..., interval: float = ...
    ) -> T: ...

    async def until(
        self,
        probe: Callable[[], Any],
        *,
        timeout: float = 10.0,
        interval: float = 0.01,
    ) -> Any:
        """``probe()``'s first truthy answer (awaited if a coroutine), checked every
        ``interval`` seconds; AssertionError after ``timeout`` seconds, with the last answer."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            answer = probe()
            value = await answer if isinstance(answer, Awaitable) else answer
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"not true within {timeout}s: last answer {value!r}")
            await asyncio.sleep(interval)


class InMemoryOperator(_Probes):
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


class OperatorRunner(_Probes):
    """``controllers`` of the operator ``identity`` running in this process against the
    cluster of ``kubeconfig`` (None: ``$KUBECONFIG`` or ``~/.kube/config``, as kubectl;
    ``context`` one of its contexts), acting in ``namespaces`` (empty: every namespace) that
    are enabled for it (its namespace label) — or in every one with
    ``enable_all_namespaces=True``. ``settings`` are more
    :class:`~appstack.sdk.options.OperatorOptions` fields; by default there is no leader
    election and no HTTP endpoint (``/metrics``, ``/healthz``); its webhooks, if it serves
    any, are served in developer mode on a free port of 127.0.0.1 (``webhook_host``
    ``127.0.0.1``, ``webhook_address`` ``127.0.0.1:0``: an API server on this machine
    reaches them; for one elsewhere, pass an address of this machine it reaches as
    ``webhook_host`` and where to listen as ``webhook_address``). ``assembly`` are keyword
    arguments of :func:`~appstack.sdk.operator.assemble` (``controller_options``,
    ``collectors``, ``tasks``, ``cache``...).

    Entering starts it and returns once its caches have synced (its ``manager.ready``) and
    its webhooks, if any, listen and are configured (the API server pointed at them: its
    webhook configurations applied, its CRDs' conversion), or
    raises what stopped it first (a CRD of its kinds not installed:
    :class:`~appstack.sdk.operator.MissingCRDs`) or, after ``timeout`` seconds,
    AssertionError. Leaving stops it as SIGTERM does — in-flight reconciles drained, Events
    sent, the clients closed — and raises what it failed with while it ran, if anything.
    Nothing process-wide is changed (logging, signal handlers, TLS buffers)."""

    def __init__(
        self,
        controllers: Sequence[Registration],
        identity: OperatorIdentity,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        namespaces: Sequence[str] = (),
        timeout: float = 60.0,
        assembly: Mapping[str, Any] | None = None,
        **settings: Any,
    ) -> None:
        chosen: dict[str, Any] = {
            "metrics_address": None,
            "health_address": None,
            "metrics_auth": False,
            "webhook_host": "127.0.0.1",
            "webhook_address": "127.0.0.1:0",
            **settings,
        }
        self.options = OperatorOptions(
            kubeconfig=kubeconfig, context=context, namespaces=list(namespaces), **chosen
        )
        self.controllers = list(controllers)
        self.identity = identity
        self.timeout = timeout
        self._assembly = dict(assembly or {})
        self._running: asyncio.Task[None] | None = None
        self._assembled: Assembly | None = None

    @property
    def client(self) -> Client:  # type: ignore[override]  # set once running
        """The operator's own client (its field manager, its credentials)."""
        return self._started().client

    @property
    def manager(self) -> Manager:
        """The running operator's manager (its cache: ``manager.cache``)."""
        return self._started().manager

    @property
    def webhooks(self) -> WebhookServing | None:
        """The running operator's webhook serving (its server, certificate, configurations),
        or None if it serves no webhook."""
        return self._started().webhooks

    @property
    def webhook_port(self) -> int | None:
        """The port its webhook server listens on, or None if it serves no webhook."""
        serving = self.webhooks
        return None if serving is None else serving.server.port

    @property
    def webhook_url(self) -> str | None:
        """Where the API server reaches its webhooks (``https://<webhook_host>:<port>``, the
        paths below it), or None if it serves none or is in-cluster mode (a Service)."""
        serving = self.webhooks
        return None if serving is None else serving.client_config().url

    @property
    def webhook_ca(self) -> bytes | None:
        """The CA (PEM) that verifies its webhook server's certificate — the CA bundle it
        gave the API server — or None (no webhook, or a mounted certificate's: the CA is its
        issuer's)."""
        serving = self.webhooks
        return None if serving is None else serving.ca

    def _started(self) -> Assembly:
        if self._assembled is None:
            raise RuntimeError("the operator is not running: use `async with OperatorRunner(...)`")
        return self._assembled

    async def __aenter__(self) -> OperatorRunner:
        assembled = await assemble(self.controllers, self.identity, self.options, **self._assembly)
        self._assembled = assembled
        running = asyncio.create_task(assembled.run())
        self._running = running
        webhooks = assembled.webhooks

        def started() -> bool:
            serving = webhooks is None or webhooks.ready()
            return (assembled.manager.ready and serving) or running.done()

        try:
            await self.until(started, timeout=self.timeout, interval=0.05)
        except AssertionError:
            assembled.manager.stop()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(running, self.options.shutdown_timeout + 10)
            waiting = (
                "caches not synced: is the API server reachable, are its kinds served?"
                if not assembled.manager.ready
                else "webhooks not configured: see its log"
            )
            raise AssertionError(
                f"the operator did not become ready within {self.timeout}s ({waiting})"
            ) from None
        if running.done():
            running.result()  # what stopped it, raised here
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._assembled is None or self._running is None:
            return
        self._assembled.manager.stop()
        try:
            await asyncio.wait_for(self._running, self.options.shutdown_timeout + 10)
        except Exception:
            if error is None:  # the test passed: what the operator failed with is the news
                raise
