"""Which Pod Security level a namespace enforces, read from its label, cached."""

from __future__ import annotations

from typing import Any

from appstack.controllers.util.podsecurity import TTL, NamespaceLevels, level_of
from appstack.runtime import errors


def test_only_an_enforced_restricted_label_makes_pods_restricted() -> None:
    assert level_of({"pod-security.kubernetes.io/enforce": "restricted"}) == "restricted"
    assert level_of({"pod-security.kubernetes.io/enforce": "baseline"}) == "baseline"
    assert level_of({"pod-security.kubernetes.io/warn": "restricted"}) == "baseline"
    assert level_of(None) == "baseline"


class FakeClient:
    def __init__(self, labels: dict[str, str] | None, error: Exception | None = None) -> None:
        self.labels = labels
        self.error = error
        self.gets = 0

    async def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.gets += 1
        if self.error is not None:
            raise self.error
        return {"metadata": {"name": name, "labels": self.labels}}


async def test_the_namespace_is_read_once_per_ttl_and_an_asked_level_wins() -> None:
    client = FakeClient({"pod-security.kubernetes.io/enforce": "restricted"})
    now = [0.0]
    levels = NamespaceLevels(client, now=lambda: now[0])  # type: ignore[arg-type]
    assert await levels.level("team", None) == "restricted"
    assert await levels.level("team", None) == "restricted"
    assert client.gets == 1
    assert await levels.level("team", "baseline") == "baseline"  # the object's word
    client.labels = {}
    now[0] = TTL + 1
    assert await levels.level("team", None) == "baseline"  # a relabelled namespace, later
    assert client.gets == 2


async def test_an_unreadable_namespace_gets_the_level_that_runs_ordinary_images() -> None:
    forbidden = errors.Forbidden(403, "Forbidden", "namespaces is forbidden", {})
    levels = NamespaceLevels(FakeClient(None, forbidden))  # type: ignore[arg-type]
    assert await levels.level("team", None) == "baseline"
