"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics, and
the write fence that keeps a replica which may have lost the Lease from writing.

* A candidate acquires the Lease when it does not exist, has no holder, or its holder has
  not renewed it for ``lease_duration`` — measured on *our* clock from when we last saw the
  record change, so clock skew between machines does not matter. It tries every
  ``retry_period``, and just after the holder's Lease would expire when that comes first:
  a crashed leader's successor takes over at the expiry, not up to a retry period later.
* The leader renews every ``retry_period``. Every attempt (GET + PUT, short per-request
  timeouts) is cut off at the renew deadline: ``renew_deadline`` after the start of the
  last successful renewal. Past it, or as soon as the Lease shows another holder (stolen,
  or a 409 on renew followed by a GET that shows someone else), leadership is lost
  (:class:`LeadershipLost`) and no renewal is sent any more.
* :meth:`LeaderElector.fence` is the client's write guard: right before a write is sent it
  checks, on the monotonic clock, that the last successful renewal *started* less than
  ``renew_deadline`` ago, and refuses the write (:class:`NotLeader`, counted in
  ``leader_election_writes_refused_total``) otherwise. Since ``renew_deadline <
  lease_duration`` and a successor waits ``lease_duration`` after it *saw* our last renewal
  (which is after we sent it), no write passes the fence once another replica can have
  acquired the Lease (docs/design.md, "Fencing"). A process frozen by SIGSTOP resumes with
  its clock advanced and refuses.
* On graceful shutdown the leader releases the Lease (empty holder), so a successor takes
  over at its next attempt instead of waiting for the lease to expire.
* Writes use the Lease's resourceVersion (optimistic concurrency): two candidates can never
  both believe they won.

Defaults as client-go: 15 s lease, 10 s renew deadline, 2 s retry period.
Used by :class:`appstack.runtime.manager.Manager`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import structlog

from appstack.runtime import errors
from appstack.runtime.client import Client, TransportError
from appstack.runtime.clock import Clock, RealClock, micro_time, within
from appstack.runtime.metrics import Metrics
from appstack.runtime.resources import LEASE

log = structlog.get_logger(__name__)

#: How long after another holder's Lease would expire (on our clock) a candidate tries to
#: take it: past the expiry, so the attempt is not refused as a moment too early.
EXPIRY_MARGIN = 0.01


class LeadershipLost(Exception):
    """The lease could not be renewed within the renew deadline, or another replica holds it."""


class NotLeader(Exception):
    """A write was refused locally: this process may no longer hold the Lease."""


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Which Lease, who we are, and the timings (validated: retry < renew deadline < lease)."""

    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    #: Labels of the Lease when this elector creates it (a shard's Lease is found by them).
    labels: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "leader election needs 0 < retry period < renew deadline < lease duration, got "
                f"{self.retry_period}s / {self.renew_deadline}s / {self.lease_duration}s"
            )

    @property
    def request_timeout(self) -> float:
        """Per-request timeout of Lease calls: a hung call leaves time for another attempt."""
        return self.renew_deadline / 2


class LeaderElector:
    """Acquires, renews and releases one Lease; its :meth:`fence` guards the client's writes."""

    def __init__(
        self,
        client: Client,
        config: LeaderElectionConfig,
        *,
        metrics: Metrics | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.clock = clock or RealClock()
        self.is_leader = False
        metrics = metrics or Metrics()
        self._gauge = metrics.leader.labels(config.name)
        self._refused = metrics.writes_refused.labels(config.name)
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._expires_at: float | None = None  # another holder's Lease, on our clock
        self._lease: dict[str, Any] | None = None
        self._renewed_at = float("-inf")  # start of the last successful acquire/renew
        self._other_holder = ""

    def remaining(self) -> float:
        """Seconds until the renew deadline (<= 0: we may no longer hold the Lease)."""
        if not self.is_leader:
            return 0.0
        return self._renewed_at + self.config.renew_deadline - self.clock.now()

    def fence(self) -> float:
        """The write guard: seconds of leadership left, or raise :class:`NotLeader`."""
        remaining = self.remaining()
        if remaining <= 0:
            self._refused.inc()
            raise NotLeader(f"{self.config.identity} may no longer hold the Lease; write refused")
        return remaining

    async def acquire(self) -> None:
        """Return once we hold the lease (retrying every ``retry_period``, and just after the
        holder's Lease would expire on our clock when that comes sooner: a successor takes
        over at the expiry, not up to a retry period after it)."""
        while not await self._attempt(self.config.renew_deadline):
            await self.clock.sleep(self._until_next_attempt())
        self._set_leader(True)
        log.info(
            "became leader",
            lease=f"{self.config.namespace}/{self.config.name}",
            identity=self.config.identity,
        )

    def _until_next_attempt(self) -> float:
        """Seconds to the next acquire attempt: the retry period, or less when another
        holder's Lease, as last seen changing, expires sooner on our clock."""
        wait = self.config.retry_period
        if self._expires_at is not None:
            left = self._expires_at - self.clock.now()
            if left >= 0:
                wait = min(wait, left + EXPIRY_MARGIN)
        return wait

    async def keep_renewing(self) -> None:
        """Renew until cancelled; raises :class:`LeadershipLost` at the renew deadline or
        as soon as the Lease shows another holder."""
        renewed = True
        while True:
            wait = self.config.retry_period if renewed else min(1.0, self.config.retry_period)
            await self.clock.sleep(min(wait, max(0.0, self.remaining())))
            remaining = self.remaining()
            if remaining <= 0:
                self._lose("renew deadline passed")
            renewed = await self._attempt(remaining)
            if self._other_holder:
                self._lose(f"the Lease is held by {self._other_holder}")

    async def release(self) -> None:
        """Give the lease up (graceful shutdown) so a successor does not wait for expiry."""
        if self.remaining() <= 0 or self._lease is None:
            self._set_leader(False)
            return
        self._set_leader(False)
        lease = dict(self._lease)
        now = micro_time()
        lease["spec"] = {
            **lease.get("spec", {}),
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "renewTime": now,
            "acquireTime": now,
        }
        try:
            await self._call("PUT", lease, self.config.request_timeout)
            log.info("released leadership", identity=self.config.identity)
        except (errors.ApiError, TransportError) as error:
            log.warning("could not release the lease", error=str(error))

    async def label(self, labels: dict[str, str]) -> None:
        """Add ``labels`` to the Lease (a shard marking itself leaving), a merge patch
        outside the fence, kept as the Lease's latest version (so a release that follows
        does not conflict)."""
        cfg = self.config
        self._lease = await self.client.request(
            "PATCH",
            LEASE.path(cfg.namespace, cfg.name),
            body={"metadata": {"labels": labels}},
            content_type="application/merge-patch+json",
            timeout=cfg.request_timeout,
            fenced=False,
        )

    # ------------------------------------------------------------------------ internals
    def _set_leader(self, value: bool) -> None:
        self.is_leader = value
        self._gauge.set(1 if value else 0)

    def _lose(self, reason: str) -> None:
        self._set_leader(False)
        log.error("lost leadership", identity=self.config.identity, reason=reason)
        raise LeadershipLost(f"{self.config.identity}: {reason}")

    async def _attempt(self, budget: float) -> bool:
        """One acquire/renew attempt, abandoned after ``budget`` seconds."""
        try:
            return await within(self._try_acquire_or_renew(), budget)  # cancel-safe
        except asyncio.TimeoutError:
            log.warning("lease attempt timed out", budget=round(budget, 2))
            return False

    async def _call(self, method: str, body: Any = None, timeout: float = 5.0) -> dict[str, Any]:
        cfg = self.config
        timeout = max(0.1, min(timeout, cfg.request_timeout))
        name = None if method == "POST" else cfg.name
        return await self.client.request(
            method, LEASE.path(cfg.namespace, name), body=body, timeout=timeout, fenced=False
        )

    async def _try_acquire_or_renew(self, conflict_retry: bool = True) -> bool:
        try:
            lease = await self._call("GET")
        except errors.NotFound:
            return await self._write("POST", self._new_lease())
        except (errors.ApiError, TransportError) as error:
            log.warning("cannot read the lease", error=str(error))
            return False
        spec = self._claim(lease.get("spec") or {})
        if spec is None:
            return False
        lease["spec"] = spec
        try:
            return await self._write("PUT", lease)
        except errors.Conflict:
            log.info("lease update conflicted; reading it again")
            return conflict_retry and await self._try_acquire_or_renew(conflict_retry=False)

    def _claim(self, spec: dict[str, Any]) -> dict[str, Any] | None:
        """The spec that makes us the holder, or None if we may not take the Lease."""
        cfg = self.config
        record = (
            spec.get("holderIdentity"),
            spec.get("renewTime"),
            spec.get("leaseDurationSeconds"),
        )
        if record != self._observed:
            self._observed, self._observed_at = record, self.clock.now()
        self._expires_at = None
        holder = spec.get("holderIdentity") or ""
        if self.is_leader and holder != cfg.identity:
            self._other_holder = holder or "nobody"  # stolen or cleared under us
            return None
        duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration)
        if holder and holder != cfg.identity and self._observed_at + duration > self.clock.now():
            self._expires_at = self._observed_at + duration
            return None  # someone else holds a lease that has not expired
        now = micro_time()
        new_spec = dict(spec)
        if holder != cfg.identity:
            new_spec["acquireTime"] = now
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (
                1 if holder else 0
            )
        new_spec.update(
            holderIdentity=cfg.identity, renewTime=now, leaseDurationSeconds=int(cfg.lease_duration)
        )
        return new_spec

    def _new_lease(self) -> dict[str, Any]:
        cfg = self.config
        now = micro_time()
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": cfg.name,
                "namespace": cfg.namespace,
                **({"labels": dict(cfg.labels)} if cfg.labels else {}),
            },
            "spec": {
                "holderIdentity": cfg.identity,
                "leaseDurationSeconds": int(cfg.lease_duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }

    async def _write(self, method: str, lease: dict[str, Any]) -> bool:
        """Create or update the Lease; on success the fence counts from before the send."""
        if self.is_leader and self.remaining() <= 0:
            return False  # never renew past the deadline: a successor may be acquiring
        sent_at = self.clock.now()
        try:
            self._lease = await self._call(
                method, lease, self.remaining() or self.config.request_timeout
            )
        except errors.Conflict:
            if method == "PUT":
                raise
            return False
        except (errors.ApiError, TransportError) as error:
            log.info("lease write failed", error=str(error))
            return False
        self._renewed_at = sent_at
        self._observed = (self.config.identity, lease["spec"]["renewTime"], self._duration)
        self._observed_at = self.clock.now()
        return True

    @property
    def _duration(self) -> int:
        return int(self.config.lease_duration)
