"""/metrics auth: a scrape without a bearer token is refused before the API is asked; the
decision cache and the review budget bound what scrapes can cost the API server."""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path
from typing import Any, cast

import pytest
from cryptography import x509

from appstack.runtime.client import Client
from appstack.runtime.metricsauth import MetricsAuth
from appstack.runtime.reviewlimit import DecisionCache, ReviewBudget
from appstack.runtime.servingcert import CertFiles, self_signed, self_signed_context


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Reviews:
    """A client that answers TokenReviews (``good`` authenticates) and allows every
    SubjectAccessReview, counting the TokenReviews; ``gate`` holds them until set."""

    def __init__(self) -> None:
        self.token_reviews = 0
        self.gate = asyncio.Event()
        self.gate.set()

    async def create(self, res: Any, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "TokenReview":
            self.token_reviews += 1
            await self.gate.wait()
            ok = body["spec"]["token"] == "good"
            return {"status": {"authenticated": ok, "user": {"username": "u"}}}
        return {"status": {"allowed": True}}


async def test_metrics_auth_refuses_a_scrape_without_a_bearer_token_before_asking() -> None:
    auth = MetricsAuth(cast(Client, None))  # never reaches the API: no token to review
    assert await auth.check(None) == 401
    assert await auth.check("Basic dXNlcjpwYXNz") == 401
    assert await auth.check("Bearer   ") == 401


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


async def test_a_flood_of_bad_tokens_costs_no_more_reviews_than_the_budget() -> None:
    clock = Clock()
    api = Reviews()
    auth = MetricsAuth(cast(Client, api), rate=5, burst=10, clock=clock)
    answers = [await auth.check(f"Bearer bad-{i}") for i in range(200)]
    assert api.token_reviews == 10
    assert answers.count(401) == 10
    assert answers.count(429) == 190
    assert await auth.check("Bearer bad-0") == 401  # remembered: no review
    assert api.token_reviews == 10
    clock.now += 1  # five more reviews earned: the scraper's token gets one
    assert await auth.check("Bearer good") == 200
    assert api.token_reviews == 11
    clock.now += 11  # refusals are forgotten sooner (10 s) than allowances (30 s)
    assert await auth.check("Bearer good") == 200
    assert await auth.check("Bearer bad-0") == 401
    assert api.token_reviews == 12


async def test_one_review_for_the_same_token_arriving_together() -> None:
    api = Reviews()
    api.gate.clear()
    auth = MetricsAuth(cast(Client, api))
    scrapes = [asyncio.create_task(auth.check("Bearer good")) for _ in range(20)]
    while api.token_reviews == 0:
        await asyncio.sleep(0)
    api.gate.set()
    assert await asyncio.gather(*scrapes) == [200] * 20
    assert api.token_reviews == 1


def test_the_self_signed_certificate_names_its_hosts_and_loads_from_memory() -> None:
    cert, key = self_signed(["operator-0", "localhost", "127.0.0.1"])
    parsed = x509.load_pem_x509_certificate(cert)
    names = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["operator-0", "localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert b"PRIVATE KEY" in key
    assert isinstance(self_signed_context(), ssl.SSLContext)


def test_mounted_certificate_files_are_loaded_again_when_they_change(tmp_path: Path) -> None:
    def write(name: str) -> None:
        cert, key = self_signed([name])
        (tmp_path / "tls.crt").write_bytes(cert)
        (tmp_path / "tls.key").write_bytes(key)

    write("first")
    files = CertFiles(tmp_path)
    assert not files.reload_if_changed()  # nothing changed
    (tmp_path / "tls.key").write_bytes(b"half-written")
    os.utime(tmp_path / "tls.key", (1, 1))
    assert not files.reload_if_changed()  # a pair that does not load is tried again later
    write("second")
    os.utime(tmp_path / "tls.crt", (2, 2))
    assert files.reload_if_changed()
    with pytest.raises(FileNotFoundError):
        CertFiles(tmp_path / "missing")  # a missing certificate fails start-up
