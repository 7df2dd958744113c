"""How long an item waits before it is retried: per-item exponential backoff combined
with an overall token bucket (client-go's default controller rate limiter).

* :class:`ItemExponentialBackoff` — 5 ms, 10 ms, 20 ms … capped at 1000 s, per item;
  :meth:`forget` (after a successful reconcile) resets it.
* :class:`TokenBucket` — at most ``qps`` retries per second overall with bursts of
  ``burst``, so a failing dependency cannot make every key retry at once.
* :class:`MaxOf` — the longer of several limiters' delays.
* :class:`Jittered` — another limiter's delay times a random factor (the informer's
  list/watch backoff, so that many informers do not retry in step).

Pure: time comes from a :class:`~appstack.runtime.clock.Clock`, randomness from an
injectable source. Used by the workqueue and :mod:`appstack.runtime.watcher`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from typing import Protocol

from appstack.runtime.clock import Clock


class RateLimiter(Protocol):
    """Decides how long a failing item waits before it is retried."""

    def when(self, item: Hashable) -> float:
        """Delay in seconds before ``item`` may be processed again (records a failure)."""

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item`` (it succeeded)."""

    def retries(self, item: Hashable) -> int:
        """How many times ``item`` has been rate limited since it was last forgotten."""


class ItemExponentialBackoff:
    """``base * 2**failures`` per item, capped."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        if failures > 64:  # 2**64 * base overflows any cap long before this
            return self.cap
        return float(min(self.base * (2**failures), self.cap))

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def retries(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class TokenBucket:
    """Reserves one token per call; the delay is how long until that token exists."""

    def __init__(self, clock: Clock, qps: float = 10.0, burst: int = 100) -> None:
        self.clock = clock
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last = clock.now()

    def when(self, item: Hashable) -> float:
        now = self.clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        return None

    def retries(self, item: Hashable) -> int:
        return 0


class MaxOf:
    """The longest delay of several limiters."""

    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def retries(self, item: Hashable) -> int:
        return max(limiter.retries(item) for limiter in self.limiters)


class Jittered:
    """Another limiter's delay times a factor drawn uniformly from ``1 ± spread``.

    ``uniform`` (``random.random`` by default) returns a float in [0, 1); tests inject one.
    """

    def __init__(
        self,
        limiter: RateLimiter,
        *,
        spread: float = 0.2,
        uniform: Callable[[], float] = random.random,
    ) -> None:
        self.limiter = limiter
        self.spread = spread
        self.uniform = uniform

    def when(self, item: Hashable) -> float:
        return self.limiter.when(item) * (1.0 + self.spread * (2.0 * self.uniform() - 1.0))

    def forget(self, item: Hashable) -> None:
        self.limiter.forget(item)

    def retries(self, item: Hashable) -> int:
        return self.limiter.retries(item)


def default_controller_rate_limiter(clock: Clock) -> RateLimiter:
    """5 ms → 1000 s per item, and 10 retries/s (burst 100) overall."""
    return MaxOf(ItemExponentialBackoff(0.005, 1000.0), TokenBucket(clock, qps=10.0, burst=100))
