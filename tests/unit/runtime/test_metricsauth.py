"""/metrics auth (runtime/metricsauth.py): a scrape without a bearer token is refused before
the API is asked; the decision cache and the review budget (runtime/reviewlimit.py) bound
what scrapes can cost the API server."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from appstack.runtime.client import Client
from appstack.runtime.metricsauth import MetricsAuth


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
