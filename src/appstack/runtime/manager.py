"""The manager runs everything a controller process needs, in the right order:

1. the HTTP endpoints — ``/healthz`` (alive: 503 once the API server has rejected our
   credentials for ``auth_failure_threshold`` seconds, so the kubelet restarts us),
   ``/readyz`` (200 once caches have synced), ``/metrics`` (Prometheus; may be on its own
   address, as controller-runtime's :8080/:8081; only for authorised scrapers when given
   ``metrics_auth``, :mod:`.metricsauth`; over HTTPS when given ``metrics_tls``, a server
   :class:`ssl.SSLContext`, e.g. from :mod:`.servingcert` — shared with the probes if
   both are on one address);
   then ``preflight``, when given (e.g. waiting for the API server and checking what it
   serves), while ``/readyz`` is 503;
2. the shared informers (:class:`~appstack.runtime.cache.Cache`), waiting until all have
   synced — no reconcile ever sees a half-filled cache;
3. leader election, when enabled: only the holder of the Lease starts its controllers,
   and the client's writes are fenced by :meth:`LeaderElector.fence` (refused once the
   Lease may be lost). Lease calls may use their own client (``election_client``);
4. the controllers' workers, and the background tasks (:mod:`.tasks`: those that need no
   Lease once the caches have synced, the others once leading; their ``cleanup`` at
   shutdown, after the controllers have drained and before the Lease is released).

Sharded (``sharding``, with leader election: :mod:`.sharding`, docs/sharding.md): every
replica runs its controllers on the keys of its own shard Lease and watches the shard
Leases; the election Lease's holder also coordinates and runs the leader-only tasks; a
graceful stop marks the shard leaving, hands each key to its new owner while its workers go
on with the keys not yet handed, stops the workers and releases the shard's Lease before the
rest.

Extra probes: :meth:`Manager.add_health_check` and :meth:`Manager.add_readiness_check`
add named checks to ``/healthz`` and ``/readyz`` (a failing one answers 503 with its name).

It stops when :meth:`stop` is called (the CLI wires SIGTERM/SIGINT to it): controllers
drain their in-flight reconciles for at most ``shutdown_timeout`` seconds, then the rest
are cancelled, the Lease is released (a successor takes over at once), informers and the
HTTP servers stop. When leadership is lost, in-flight reconciles are cancelled at once (no
drain) and :meth:`run` raises :class:`~appstack.runtime.leaderelection.LeadershipLost` so
the process exits non-zero and is restarted, as client-go does.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import signal
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import structlog
from aiohttp import web

from appstack.runtime import errors
from appstack.runtime.cache import ByObject, Cache
from appstack.runtime.client import Client, TransportError
from appstack.runtime.controller import Controller
from appstack.runtime.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost
from appstack.runtime.metricsauth import MetricsAuth
from appstack.runtime.resources import Resource
from appstack.runtime.sharding import _FENCE, Coordinator, Shard, ShardingConfig
from appstack.runtime.tasks import Task, clean_up, supervise

log = structlog.get_logger(__name__)

#: A probe's extra check: true while all is well (a coroutine function may be given).
Check = Callable[[], bool | Awaitable[bool]]
_RETRY = {"Retry-After": "1"}


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "0.0.0.0", int(port)  # noqa: S104 - ":8080" means all interfaces, as Go


class Manager:
    """Runs a process's controllers: HTTP endpoints, shared cache, leader election, workers.

    ``cache`` says what its shared cache keeps of each kind
    (:class:`~appstack.runtime.cache.ByObject`). Build controllers on it with
    :class:`~appstack.runtime.builder.Builder`, then
    ``await manager.run()`` until :meth:`stop` (or a signal, see
    :meth:`install_signal_handlers`).
    """

    def __init__(
        self,
        client: Client,
        *,
        namespaces: Sequence[str] | None = None,
        cache: Mapping[Resource, ByObject] | None = None,
        leader_election: LeaderElectionConfig | None = None,
        metrics_address: str | None = None,
        health_address: str | None = None,
        election_client: Client | None = None,
        shutdown_timeout: float = 20.0,
        auth_failure_threshold: float = 60.0,
        metrics_auth: MetricsAuth | None = None,
        metrics_tls: ssl.SSLContext | None = None,
        preflight: Callable[[], Awaitable[None]] | None = None,
        sharding: ShardingConfig | None = None,
    ) -> None:
        self.client = client
        # Awaited once the probes are served and before the informers start (e.g. waiting
        # for the API server, checking what it serves); /readyz is 503 meanwhile.
        self.preflight = preflight
        self._preflight_passed = preflight is None
        self.metrics = client.metrics
        self.cache = Cache(client, namespaces, by_object=cache)
        self.controllers: list[Controller] = []
        self.tasks: list[Task] = []
        self._running: list[asyncio.Task[None]] = []
        self._started: list[Task] = []  # whose cleanup runs at shutdown
        self._checks: dict[str, dict[str, Check]] = {"healthz": {}, "readyz": {}}
        self.elector = (
            LeaderElector(election_client or client, leader_election, metrics=self.metrics)
            if leader_election
            else None
        )
        if self.elector is not None:
            client.write_guard = self.elector.fence
        self.shard: Shard | None = None
        self._coordinator: Coordinator | None = None  # sharded: every replica's looks
        if sharding is not None:
            if leader_election is None:
                raise ValueError("sharding needs leader election: its Lease elects the coordinator")
            self.shard = Shard(
                client,
                election_client or client,
                self.cache,
                config=sharding,
                election=leader_election,
                metrics=self.metrics,
            )
            client.write_guard = self.shard.guard
        self.shutdown_timeout = shutdown_timeout
        self.auth_failure_threshold = auth_failure_threshold
        self._clients = [client, *([election_client] if election_client else [])]
        self.metrics_address = metrics_address
        self.health_address = health_address
        self.metrics_auth = metrics_auth  # None: /metrics is served to anyone who reaches it
        self.metrics_tls = metrics_tls  # None: plain HTTP
        self.bound: dict[str, int] = {}  # "metrics"/"health" -> port actually bound
        self._stop = asyncio.Event()
        self._runners: list[web.AppRunner] = []
        self._shard_renewing: asyncio.Task[None] | None = None
        self._leading: asyncio.Task[None] | None = None
        self._coordinating = asyncio.Event()  # sharded: set once this replica coordinates

    def add(self, controller: Controller) -> None:
        """Run ``controller`` (:class:`~appstack.runtime.builder.Builder` calls this)."""
        self.controllers.append(controller)

    def add_task(self, task: Task) -> None:
        """Run ``task`` beside the controllers (:mod:`.tasks`), from :meth:`run` on."""
        if any(t.name == task.name for t in self.tasks):
            raise ValueError(f"a task named {task.name} is already added")
        self.tasks.append(task)

    def add_health_check(self, name: str, check: Check) -> None:
        """``/healthz`` fails (503, naming it) while ``check()`` is false or raises: the
        kubelet restarts the process."""
        self._checks["healthz"][name] = check

    def add_readiness_check(self, name: str, check: Check) -> None:
        """``/readyz`` fails (503, naming it) while ``check()`` is false or raises."""
        self._checks["readyz"][name] = check

    async def _failing(self, probe: str) -> str | None:
        """The name of the first of ``probe``'s checks that fails, if any."""
        for name, check in self._checks[probe].items():
            try:
                answer = check()
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception as error:
                log.warning("check failed", probe=probe, check=name, error=str(error))
                answer = False
            if not answer:
                return name
        return None

    def _start_tasks(self, *, leading: bool) -> None:
        for task in self.tasks:
            if task.leader_only == leading:
                self._running.append(asyncio.create_task(supervise(task), name=task.name))
                self._started.append(task)

    def backlog(self) -> bool:
        """Whether any controller has keys waiting for a worker (those being worked on not
        counted): the Event recorder yields to reconciles while it is so."""
        return any(
            len(controller.queue) and not controller.queue.shutting_down
            for controller in self.controllers
        )

    def stop(self) -> None:
        """Ask :meth:`run` to shut down gracefully (safe from a signal handler)."""
        self._stop.set()

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)

    def release_signal_handlers(self) -> None:
        """After :meth:`run`, in a process about to exit: the loop's SIGTERM and SIGINT
        handlers removed and both signals ignored from now on. asyncio closes the loop's
        wakeup pipe before it removes its handlers, so a second signal arriving as the loop
        closes (``make run`` forwards the SIGTERM it got to the operator, which got its
        own) would print "Exception ignored ... Bad file descriptor" with a traceback."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
            signal.signal(sig, signal.SIG_IGN)

    @property
    def ready(self) -> bool:
        return self._preflight_passed and self.cache.has_synced()

    async def run(self) -> None:
        await self._start_http()
        renewing: asyncio.Task[None] | None = None
        drain: float | None = self.shutdown_timeout
        try:
            if self.preflight is not None:
                if not await self._until_stopped(self.preflight()):
                    return
                self._preflight_passed = True
            await self.cache.start()
            if not await self._until_stopped(self.cache.wait_synced()):
                return
            log.info("caches synced", controllers=[c.name for c in self.controllers])
            self._start_tasks(leading=False)
            if self.shard is not None and self.elector is not None:
                await self._run_sharded(self.shard, self.elector)
                return
            if self.elector is not None:
                if not await self._until_stopped(self.elector.acquire()):
                    return
                renewing = asyncio.create_task(self.elector.keep_renewing())
            for controller in self.controllers:
                await controller.start()
            self._start_tasks(leading=True)
            stopping = asyncio.create_task(self._stop.wait())
            waits: set[asyncio.Task[None] | asyncio.Task[bool]] = {stopping}
            if renewing is not None:
                waits.add(renewing)
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if renewing is not None and renewing in done:
                renewing.result()  # raises LeadershipLost
        except LeadershipLost:
            drain = 0  # cancel in-flight reconciles: they may no longer write anyway
            raise
        finally:
            await self._shutdown(renewing, drain)

    # ------------------------------------------------------------------ sharded mode
    async def _run_sharded(self, shard: Shard, elector: LeaderElector) -> None:
        """Every replica a shard: its own Lease, then its controllers (of its keys only);
        the coordinator (and the leader-only tasks) on the one holding the election Lease.
        Raises :class:`LeadershipLost` when either Lease is lost."""
        if not await self._until_stopped(shard.elector.acquire()):
            return
        log.info("shard joined", shard=shard.name)
        self._shard_renewing = asyncio.create_task(shard.elector.keep_renewing())
        for controller in self.controllers:
            await controller.start()
        leading = self._coordinating
        self._coordinator = coordinator = Coordinator(
            self.client,
            shard.config,
            lease_namespace=elector.config.namespace,
            lease_value=shard.lease_value,
            namespaces=self.cache.namespaces,
            metrics=shard.metrics,
            clock=elector.clock,
            default_duration=elector.config.lease_duration,
        )
        token = _FENCE.set(elector.fence)  # its writes (once elected): the election Lease's
        try:  # on every replica: it looks until elected, then coordinates
            self._running.append(
                asyncio.create_task(coordinator.run(leading), name="shard-coordinator")
            )
        finally:
            _FENCE.reset(token)
        self._leading = asyncio.create_task(self._lead(elector, leading))
        stopping = asyncio.create_task(self._stop.wait())
        waits: set[asyncio.Task[Any]] = {stopping, self._shard_renewing, self._leading}
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        for task in done - {stopping}:
            task.result()  # raises LeadershipLost

    async def _lead(self, elector: LeaderElector, leading: asyncio.Event) -> None:
        """Acquire the election Lease, then coordinate (``leading``) and run the leader-only
        tasks, their writes fenced by it, until it is lost."""
        await elector.acquire()
        token = _FENCE.set(elector.fence)  # the tasks made now are fenced by it
        try:
            self._start_tasks(leading=True)
        finally:
            _FENCE.reset(token)
        leading.set()
        await elector.keep_renewing()

    async def _shutdown_sharded(
        self, shard: Shard, elector: LeaderElector, drain: float | None
    ) -> None:
        """Stop campaigning for the election Lease unless already coordinating, mark the
        shard leaving, hand each key to its owner among the staying shards (as this
        replica's roster sees them) while the workers go on with the keys not yet handed —
        within the shutdown timeout, whose rest is the workers' drain —, stop the workers,
        release the shard's Lease; then the coordinator and tasks, the election Lease, the
        informers."""
        log.info("shutting down", drain_seconds=drain, shard=shard.name)
        if self._leading is not None and not self._coordinating.is_set():
            # a replica on its way out campaigns no more: it would take the coordinator's
            # role (and the leader-only tasks) for the moment its shutdown lasts
            self._leading.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._leading
        graceful = drain != 0 and shard.elector.remaining() > 0
        if graceful:  # its workers go on with the keys not yet handed (Shard.hand_back)
            drain = await self._hand_back(shard, drain)
        await asyncio.gather(*(c.stop(drain) for c in self.controllers), return_exceptions=True)
        for renewing in (self._shard_renewing, self._leading):
            if renewing is not None:
                renewing.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await renewing
        await shard.elector.release()
        for running in self._running:
            running.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
        self._running.clear()
        cleaning = [t for t in self._started if drain != 0 or not t.leader_only]
        self._started.clear()
        await clean_up(cleaning)
        await elector.release()
        await self.cache.stop()
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()

    async def _hand_back(self, shard: Shard, drain: float | None) -> float | None:
        """Mark the shard leaving and hand its keys to the staying shards, within the
        shutdown timeout ``drain`` (None: no bound); returns what is left of it for the
        workers' drain (at least a second). A hand-back cut short leaves the keys not yet
        handed to the Lease's release: released before the pod's grace period ends, they are
        assigned at the coordinator's next look instead of after the Lease's expiry."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        await shard.mark_leaving()
        coordinator = self._coordinator

        def stayers() -> set[str]:  # as this replica's roster sees them now (every look)
            if coordinator is None:
                return set()
            return coordinator.roster.ready() - coordinator.roster.leaving()

        if coordinator is not None:  # a fresh look first: a shard stopped since is no target
            with contextlib.suppress(errors.ApiError, TransportError):
                await coordinator.look(delete=False)
        try:
            await asyncio.wait_for(shard.hand_back(stayers), drain)
        except TimeoutError:
            log.warning(
                "hand-back cut short at the shutdown timeout; the keys left go when the "
                "shard's Lease is released",
                shard=shard.name,
                timeout_seconds=drain,
                keys_begun=len(shard.handing),
            )
        if drain is None:
            return None
        return max(1.0, drain - (loop.time() - started))

    async def _until_stopped(self, awaitable: Awaitable[Any]) -> bool:
        """Await ``awaitable`` unless stop is requested first; True if it completed."""
        task = asyncio.ensure_future(awaitable)
        stopping = asyncio.create_task(self._stop.wait())
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if task.done():
            task.result()
            return True
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return False

    async def _shutdown(self, renewing: asyncio.Task[None] | None, drain: float | None) -> None:
        if self.shard is not None and self.elector is not None:
            await self._shutdown_sharded(self.shard, self.elector, drain)
            return
        log.info("shutting down", drain_seconds=drain)
        for running in self._running:
            running.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
        self._running.clear()
        await asyncio.gather(*(c.stop(drain) for c in self.controllers), return_exceptions=True)
        # graceful: every started task's cleanup; leadership lost: only those whose writes
        # the fence does not refuse (tasks of every replica may read, or write elsewhere)
        cleaning = [t for t in self._started if drain != 0 or not t.leader_only]
        self._started.clear()
        await clean_up(cleaning)
        if renewing is not None:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await renewing
        if self.elector is not None:
            await self.elector.release()
        await self.cache.stop()
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()

    # --------------------------------------------------------------------------- HTTP
    async def _start_http(self) -> None:
        routes = {
            "metrics": [web.get("/metrics", self._metrics)],
            "health": [web.get("/healthz", self._healthz), web.get("/readyz", self._readyz)],
        }
        addresses = {"metrics": self.metrics_address, "health": self.health_address}
        tls = {"metrics": self.metrics_tls, "health": None}
        same = addresses["metrics"] and addresses["metrics"] == addresses["health"]
        if same and not str(addresses["metrics"]).endswith(":0"):  # one server for both
            routes["health"] += routes.pop("metrics")
            addresses.pop("metrics")
            tls["health"] = self.metrics_tls
        for name, address in addresses.items():
            if not address:
                continue
            app = web.Application()
            app.add_routes(routes[name])
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            host, port = _split_address(address)
            site = web.TCPSite(runner, host, port, ssl_context=tls[name])
            await site.start()
            self.bound[name] = int(runner.addresses[-1][1])  # the real port when port was 0
            self._runners.append(runner)
        if "metrics" not in addresses and "health" in self.bound:
            self.bound["metrics"] = self.bound["health"]

    async def _metrics(self, request: web.Request) -> web.Response:
        if self.metrics_auth is not None:
            status = await self.metrics_auth.check(request.headers.get("Authorization"))
            if status == 429:  # over the review budget: no review was asked
                return web.Response(status=429, text="Too Many Requests", headers=_RETRY)
            if status != 200:
                text = "Unauthorized" if status == 401 else "Forbidden"
                return web.Response(status=status, text=text)
        return web.Response(
            body=self.metrics.exposition(), content_type="text/plain", charset="utf-8"
        )

    async def _healthz(self, _request: web.Request) -> web.Response:
        rejected = max(c.credentials.rejected_for() for c in self._clients)
        if rejected > self.auth_failure_threshold:
            return web.Response(
                status=503, text=f"the API server has rejected our credentials for {rejected:.0f}s"
            )
        failing = await self._failing("healthz")
        if failing is not None:
            return web.Response(status=503, text=f"check {failing} failed")
        return web.Response(text="ok")

    async def _readyz(self, _request: web.Request) -> web.Response:
        if self.ready:
            failing = await self._failing("readyz")
            if failing is not None:
                return web.Response(status=503, text=f"check {failing} failed")
            return web.Response(text="ok")
        if not self._preflight_passed:
            return web.Response(status=503, text="starting: waiting for the API server")
        return web.Response(status=503, text="caches not synced")
