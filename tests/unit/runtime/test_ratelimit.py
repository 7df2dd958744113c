"""How long a failing item waits (runtime/ratelimit.py): per-item exponential backoff from
5 ms capped at 1000 s and reset on forget, an overall token bucket after a burst, the longer
of several limiters, and a jittered delay."""

from __future__ import annotations

import pytest

from appstack.runtime.clock import FakeClock
from appstack.runtime.ratelimit import (
    ItemExponentialBackoff,
    Jittered,
    MaxOf,
    TokenBucket,
    default_controller_rate_limiter,
)


def test_backoff_doubles_from_5ms_caps_at_1000s_and_resets_on_forget() -> None:
    backoff = ItemExponentialBackoff()
    delays = [backoff.when("a") for _ in range(20)]
    assert delays[:4] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert delays[-1] == 1000.0
    assert max(delays) == 1000.0
    assert backoff.retries("a") == 20
    assert backoff.when("b") == pytest.approx(0.005)  # per item

    backoff.forget("a")
    assert backoff.retries("a") == 0
    assert backoff.when("a") == pytest.approx(0.005)


def test_the_token_bucket_limits_overall_retries_after_a_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(clock, qps=10, burst=3)
    assert [bucket.when(i) for i in range(3)] == [0, 0, 0]
    assert bucket.when(3) == pytest.approx(0.1)
    assert bucket.when(4) == pytest.approx(0.2)


def test_the_longest_delay_of_several_limiters_wins_and_forget_reaches_each() -> None:
    clock = FakeClock()
    limiter = MaxOf(ItemExponentialBackoff(0.005, 1000.0), TokenBucket(clock, qps=10, burst=2))
    assert limiter.when("a") == pytest.approx(0.005)  # a token to spare: the backoff's
    assert limiter.when("a") == pytest.approx(0.01)
    assert limiter.when("b") == pytest.approx(0.1)  # the bucket is empty: its wait is longer
    assert limiter.retries("a") == 2
    limiter.forget("a")
    assert limiter.retries("a") == 0


@pytest.mark.parametrize(("uniform", "factor"), [(0.0, 0.8), (0.5, 1.0), (0.999, 1.1996)])
def test_a_jittered_delay_is_the_limiters_times_one_plus_or_minus_the_spread(
    uniform: float, factor: float
) -> None:
    backoff = ItemExponentialBackoff(1.0, 100.0)
    jittered = Jittered(backoff, spread=0.2, uniform=lambda: uniform)
    assert jittered.when("a") == pytest.approx(1.0 * factor)
    assert jittered.when("a") == pytest.approx(2.0 * factor)
    assert jittered.retries("a") == backoff.retries("a") == 2
    jittered.forget("a")
    assert backoff.retries("a") == 0


def test_the_default_controller_limiter_is_client_gos() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)
    assert [limiter.when("a") for _ in range(3)] == pytest.approx([0.005, 0.01, 0.02])
    for i in range(97):  # the burst of 100 spent (three above)
        limiter.when(i)
    assert limiter.when("b") == pytest.approx(0.1)  # then 10 a second overall
