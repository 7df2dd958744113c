"""Bounds on what ``/metrics`` scrapes may cost the API server (pure, clock injected):
a bounded cache of review decisions and a per-second budget of reviews.

Without them every scrape with an unknown token costs a TokenReview (and, for a valid
one, a SubjectAccessReview): anyone who can reach the port could turn a flood of made-up
tokens into a flood of API calls. :class:`DecisionCache` remembers each decision for a
short time (allowed and refused alike), evicting the least recently used beyond its
size, so a flood of new tokens cannot push out the scraper's own; :class:`ReviewBudget`
is a token bucket: a review is asked only while the bucket has one, the rest are
answered without asking (429). Used by :class:`appstack.runtime.metricsauth.MetricsAuth`.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

Clock = Callable[[], float]


class DecisionCache:
    """Decision (an HTTP status) per key, each for ``ttl`` seconds; at most ``size`` keys,
    the least recently used evicted first."""

    def __init__(self, size: int = 1024, ttl: float = 30.0, clock: Clock = time.monotonic) -> None:
        if size < 1:
            raise ValueError("the cache must hold at least one decision")
        self.size = size
        self.ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> int | None:
        """The remembered decision, or None (never seen, or expired)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: str, decision: int, ttl: float | None = None) -> None:
        """Remember ``decision`` for ``ttl`` seconds (default: the cache's)."""
        self._entries[key] = (self._clock() + (self.ttl if ttl is None else ttl), decision)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)


class ReviewBudget:
    """A token bucket: ``rate`` reviews a second on average, bursts of up to ``burst``."""

    def __init__(self, rate: float = 5.0, burst: int = 10, clock: Clock = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("the review budget needs a positive rate and a burst of at least 1")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def take(self) -> bool:
        """Spend one review if the budget has one left; False: over budget, do not ask."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def allowed_in(self, seconds: float) -> int:
        """The most reviews this budget allows in any ``seconds`` (for tests and docs)."""
        return int(self.burst + self.rate * seconds)
