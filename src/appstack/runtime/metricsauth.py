"""Who may scrape ``/metrics``: authentication and authorisation by the API server, as
kubebuilder's scaffolds do (``WithAuthenticationAndAuthorization``).

A scrape must carry ``Authorization: Bearer <token>``; the token is checked with a
TokenReview, and the user it names must be allowed ``get`` on the non-resource URL
``/metrics`` by a SubjectAccessReview (a ClusterRole granting exactly that, bound to the
scraper, as kubebuilder's ``metrics-reader``). The operator needs ``create`` on
``tokenreviews`` and ``subjectaccessreviews``. :class:`~appstack.runtime.manager.Manager`
calls it for every ``/metrics`` request when given ``metrics_auth``.

What it may cost the API server is bounded (:mod:`.reviewlimit`): decisions are remembered
per token (keyed by its SHA-256, never the token itself) for ``ttl`` seconds if allowed,
``failure_ttl`` if refused, in a cache of at most ``cache_size`` tokens; the same token
arriving again while its review is under way waits for that review; and at most ``rate``
reviews a second are asked (bursts of ``burst``): a scrape with an unknown token beyond
that is answered 429 without asking. So a scrape every few seconds costs two API calls
every ``ttl`` seconds, and a flood of made-up tokens no more than the budget. Counted in
``<prefix>_metrics_auth_reviews_total{result}`` and ``<prefix>_metrics_auth_throttled_total``
(:class:`~appstack.runtime.metrics.Metrics`).
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import structlog

from appstack.core.resource import Resource
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.reviewlimit import Clock, DecisionCache, ReviewBudget

log = structlog.get_logger(__name__)

TOKEN_REVIEW = Resource(
    "authentication.k8s.io", "v1", "TokenReview", "tokenreviews", namespaced=False
)
SUBJECT_ACCESS_REVIEW = Resource(
    "authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False
)
MAX_REMEMBERED = 1024
THROTTLED = 429
_RESULTS = {200: "allowed", 401: "unauthenticated", 403: "forbidden"}


class MetricsAuth:
    """``await auth.check(authorization_header)`` → an HTTP status: 200, 401, 403 or 429."""

    def __init__(
        self,
        client: Client,
        *,
        path: str = "/metrics",
        ttl: float = 30.0,
        failure_ttl: float = 10.0,
        cache_size: int = MAX_REMEMBERED,
        rate: float = 5.0,
        burst: int = 10,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.path = path
        self.ttl = ttl
        self.failure_ttl = failure_ttl
        clocked = {"clock": clock} if clock is not None else {}
        self.decisions = DecisionCache(cache_size, ttl, **clocked)
        self.budget = ReviewBudget(rate, burst, **clocked)
        self._pending: dict[str, asyncio.Future[int]] = {}

    async def check(self, authorization: str | None) -> int:
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return 401
        key = hashlib.sha256(token.encode()).hexdigest()
        remembered = self.decisions.get(key)
        if remembered is not None:
            return remembered
        pending = self._pending.get(key)
        if pending is not None:  # the same token is being reviewed: its answer is ours
            return await asyncio.shield(pending)
        if not self.budget.take():
            self._count_throttled()
            return THROTTLED
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            decision = await self._review(token)
            future.set_result(decision)
        except BaseException:
            future.set_result(403)
            raise
        finally:
            del self._pending[key]
        return decision

    async def _review(self, token: str) -> int:
        try:
            decision = await self._decide(token)
        except errors.ApiError as error:  # cannot tell: refuse, and do not remember
            log.warning("cannot check a metrics scrape", error=str(error))
            self._count("error")
            return 403
        self._count(_RESULTS[decision])
        key = hashlib.sha256(token.encode()).hexdigest()
        self.decisions.put(key, decision, self.ttl if decision == 200 else self.failure_ttl)
        return decision

    def _count(self, result: str) -> None:
        metrics = getattr(self.client, "metrics", None)
        if metrics is not None:
            metrics.metrics_auth_reviews.labels(result).inc()

    def _count_throttled(self) -> None:
        metrics = getattr(self.client, "metrics", None)
        if metrics is not None:
            metrics.metrics_auth_throttled.inc()

    async def _decide(self, token: str) -> int:
        review = await self.client.create(
            TOKEN_REVIEW,
            {
                "apiVersion": TOKEN_REVIEW.api_version,
                "kind": "TokenReview",
                "metadata": {},
                "spec": {"token": token},
            },
        )
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return 401
        user: dict[str, Any] = status.get("user") or {}
        spec = {
            "user": user.get("username", ""),
            "uid": user.get("uid", ""),
            "groups": user.get("groups") or [],
            "extra": user.get("extra") or {},
            "nonResourceAttributes": {"path": self.path, "verb": "get"},
        }
        access = await self.client.create(
            SUBJECT_ACCESS_REVIEW,
            {
                "apiVersion": SUBJECT_ACCESS_REVIEW.api_version,
                "kind": "SubjectAccessReview",
                "metadata": {},
                "spec": spec,
            },
        )
        return 200 if (access.get("status") or {}).get("allowed") else 403
