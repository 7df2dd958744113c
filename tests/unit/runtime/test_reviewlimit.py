"""Bounds on what ``/metrics`` scrapes may cost the API server (runtime/reviewlimit.py): a
cache of review decisions that expires and evicts the least recently used, and a budget of
reviews that allows a burst, then its rate."""

from __future__ import annotations

import pytest

from appstack.runtime.reviewlimit import DecisionCache, ReviewBudget


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_decision_cache_expires_and_evicts_the_least_recently_used() -> None:
    clock = Clock()
    cache = DecisionCache(size=2, ttl=30, clock=clock)
    cache.put("a", 200)
    cache.put("b", 401, ttl=5)
    assert cache.get("a") == 200  # a is now the most recently used
    cache.put("c", 401)
    assert cache.get("b") is None  # evicted, not a
    assert (cache.get("a"), cache.get("c"), len(cache)) == (200, 401, 2)
    clock.now += 30
    assert cache.get("a") is None
    assert len(cache) == 1
    with pytest.raises(ValueError, match="at least one"):
        DecisionCache(size=0)


def test_review_budget_allows_a_burst_then_the_rate() -> None:
    clock = Clock()
    budget = ReviewBudget(rate=2, burst=3, clock=clock)
    assert [budget.take() for _ in range(4)] == [True, True, True, False]
    clock.now += 0.5  # one more review earned
    assert [budget.take(), budget.take()] == [True, False]
    clock.now += 100  # never more than the burst saved up
    assert sum(budget.take() for _ in range(10)) == 3
    assert budget.allowed_in(10) == 23
    with pytest.raises(ValueError, match="positive rate"):
        ReviewBudget(rate=0)
