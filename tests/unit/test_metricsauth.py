"""/metrics auth: a scrape without a bearer token is refused before the API is asked."""

from __future__ import annotations

from typing import cast

from appstack.runtime.client import Client
from appstack.runtime.metricsauth import MetricsAuth


async def test_metrics_auth_refuses_a_scrape_without_a_bearer_token_before_asking() -> None:
    auth = MetricsAuth(cast(Client, None))  # never reaches the API: no token to review
    assert await auth.check(None) == 401
    assert await auth.check("Basic dXNlcjpwYXNz") == 401
    assert await auth.check("Bearer   ") == 401
