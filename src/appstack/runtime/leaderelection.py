"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

* A candidate acquires the Lease when it does not exist, has no holder, or its holder has
  not renewed it for ``lease_duration`` — measured on *our* clock from when we last saw the
  record change, so clock skew between machines does not matter.
* The leader renews every ``retry_period``; if it cannot renew for ``renew_deadline`` it
  has lost leadership and must stop reconciling (:class:`LeadershipLost`).
* On graceful shutdown the leader releases the Lease (empty holder), so a successor takes
  over at its next attempt instead of waiting for the lease to expire.
* Writes use the Lease's resourceVersion (optimistic concurrency): two candidates can never
  both believe they won.

Defaults as controller-runtime: 15 s lease, 10 s renew deadline, 2 s retry period.
Used by :class:`appstack.runtime.manager.Manager`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from appstack.runtime import errors
from appstack.runtime.client import Client, TransportError
from appstack.runtime.clock import Clock, RealClock, micro_time
from appstack.runtime.metrics import Metrics
from appstack.runtime.resources import LEASE

log = structlog.get_logger("appstack.leaderelection")


class LeadershipLost(Exception):
    """The lease could not be renewed within the renew deadline."""


@dataclass(frozen=True)
class LeaderElectionConfig:
    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class LeaderElector:
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
        self._gauge = (metrics or Metrics()).leader.labels(config.name)
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None

    async def acquire(self) -> None:
        """Return once we hold the lease (retrying every ``retry_period``)."""
        while not await self._try_acquire_or_renew():
            await self.clock.sleep(self.config.retry_period)
        self._set_leader(True)
        log.info(
            "became leader",
            lease=f"{self.config.namespace}/{self.config.name}",
            identity=self.config.identity,
        )

    async def keep_renewing(self) -> None:
        """Renew until cancelled; raises :class:`LeadershipLost` past the renew deadline."""
        last_renewal = self.clock.now()
        while True:
            await self.clock.sleep(self.config.retry_period)
            if await self._try_acquire_or_renew():
                last_renewal = self.clock.now()
            elif self.clock.now() - last_renewal >= self.config.renew_deadline:
                self._set_leader(False)
                log.error("lost leadership", identity=self.config.identity)
                raise LeadershipLost(self.config.identity)

    async def release(self) -> None:
        """Give the lease up (graceful shutdown) so a successor does not wait for expiry."""
        if not self.is_leader or self._lease is None:
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
            await self.client.update(LEASE, lease)
            log.info("released leadership", identity=self.config.identity)
        except (errors.ApiError, TransportError) as error:
            log.warning("could not release the lease", error=str(error))

    # ------------------------------------------------------------------------ internals
    def _set_leader(self, value: bool) -> None:
        self.is_leader = value
        self._gauge.set(1 if value else 0)

    async def _try_acquire_or_renew(self) -> bool:
        cfg = self.config
        now = micro_time()
        try:
            lease = await self.client.get(LEASE, cfg.name, cfg.namespace)
        except errors.NotFound:
            return await self._create(now)
        except (errors.ApiError, TransportError) as error:
            log.warning("cannot read the lease", error=str(error))
            return False
        spec = lease.get("spec") or {}
        record = (
            spec.get("holderIdentity"),
            spec.get("renewTime"),
            spec.get("leaseDurationSeconds"),
        )
        if record != self._observed:
            self._observed, self._observed_at = record, self.clock.now()
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration)
        if holder and holder != cfg.identity and self._observed_at + duration > self.clock.now():
            return False  # someone else holds a lease that has not expired
        new_spec = dict(spec)
        if holder != cfg.identity:
            new_spec["acquireTime"] = now
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (
                1 if holder else 0
            )
        new_spec.update(
            holderIdentity=cfg.identity, renewTime=now, leaseDurationSeconds=int(cfg.lease_duration)
        )
        lease["spec"] = new_spec
        try:
            self._lease = await self.client.update(LEASE, lease)
        except (errors.ApiError, TransportError) as error:
            log.info("lease update failed", error=str(error))
            return False
        self._observed = (cfg.identity, now, int(cfg.lease_duration))
        self._observed_at = self.clock.now()
        return True

    async def _create(self, now: str) -> bool:
        cfg = self.config
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": cfg.name, "namespace": cfg.namespace},
            "spec": {
                "holderIdentity": cfg.identity,
                "leaseDurationSeconds": int(cfg.lease_duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            self._lease = await self.client.create(LEASE, lease)
        except (errors.ApiError, TransportError):
            return False
        self._observed = (cfg.identity, now, int(cfg.lease_duration))
        self._observed_at = self.clock.now()
        return True
