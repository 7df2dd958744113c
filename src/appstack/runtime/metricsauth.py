"""Who may scrape ``/metrics``: authentication and authorisation by the API server, as
kubebuilder's scaffolds do (``WithAuthenticationAndAuthorization``).

A scrape must carry ``Authorization: Bearer <token>``; the token is checked with a
TokenReview, and the user it names must be allowed ``get`` on the non-resource URL
``/metrics`` by a SubjectAccessReview (the generated ``appstack-metrics-reader-<namespace>``
ClusterRole grants exactly that). Decisions are remembered for :attr:`MetricsAuth.ttl`
seconds per token (keyed by its SHA-256, never the token itself), so a scrape every few
seconds costs two API calls a minute. The operator needs ``create`` on ``tokenreviews``
and ``subjectaccessreviews``. :class:`~appstack.runtime.manager.Manager` calls it for
every ``/metrics`` request when given ``metrics_auth``.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import structlog

from appstack.core.resource import Resource
from appstack.runtime import errors
from appstack.runtime.client import Client

log = structlog.get_logger("appstack.metrics")

TOKEN_REVIEW = Resource(
    "authentication.k8s.io", "v1", "TokenReview", "tokenreviews", namespaced=False
)
SUBJECT_ACCESS_REVIEW = Resource(
    "authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False
)
MAX_REMEMBERED = 1024


class MetricsAuth:
    """``await auth.check(authorization_header)`` → an HTTP status: 200, 401 or 403."""

    def __init__(self, client: Client, *, path: str = "/metrics", ttl: float = 30.0) -> None:
        self.client = client
        self.path = path
        self.ttl = ttl
        self._decisions: dict[str, tuple[float, int]] = {}

    async def check(self, authorization: str | None) -> int:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return 401
        key = hashlib.sha256(token.strip().encode()).hexdigest()
        remembered = self._decisions.get(key)
        if remembered is not None and remembered[0] > time.monotonic():
            return remembered[1]
        try:
            decision = await self._decide(token.strip())
        except errors.ApiError as error:  # cannot tell: refuse, and do not remember
            log.warning("cannot check a metrics scrape", error=str(error))
            return 403
        if len(self._decisions) >= MAX_REMEMBERED:
            self._decisions.clear()
        self._decisions[key] = (time.monotonic() + self.ttl, decision)
        return decision

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
