"""The namespace gate (sdk/kit/namespaces.py): which namespaces the operator may
act in, their labels, whether one exists — read by GET (a namespaced install) with a
bounded, time-limited memory, or from the cache of the enabled namespaces."""

from __future__ import annotations

from typing import Any

from appstack.api.namespaces import ENABLED
from appstack.controllers.util.podsecurity import level_of
from appstack.runtime import errors
from appstack.runtime.cache import NAMESPACES, Cache
from appstack.runtime.resources import Resource
from appstack.sdk.kit.namespaces import TTL, NamespaceGate, namespace_cache

ON = {ENABLED: "true"}
RESTRICTED = {**ON, "pod-security.kubernetes.io/enforce": "restricted"}


class FakeClient:
    field_manager = "test"

    def __init__(self, namespaces: dict[str, dict[str, str]], error: Exception | None = None):
        self.namespaces = namespaces
        self.error = error
        self.gets: list[str] = []

    async def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.gets.append(name)
        if self.error is not None:
            raise self.error
        if name not in self.namespaces:
            raise errors.NotFound(404, "NotFound", f"namespaces {name} not found", {})
        return {"metadata": {"name": name, "labels": self.namespaces[name]}}


def _gate(client: FakeClient, now: list[float], **kwargs: Any) -> NamespaceGate:
    cache = Cache(client, namespaces=["team"])  # type: ignore[arg-type]
    kwargs.setdefault("label", ENABLED)
    return NamespaceGate(client, cache, now=lambda: now[0], **kwargs)  # type: ignore[arg-type]


async def test_only_a_labelled_namespace_is_enabled_read_once_per_ttl() -> None:
    client = FakeClient({"team": RESTRICTED, "other": {}})
    now = [0.0]
    gate = _gate(client, now)
    assert not gate.watching  # a namespaced install cannot list namespaces
    assert await gate.enabled("team")
    assert level_of(await gate.labels("team")) == "restricted"
    assert not await gate.enabled("other")
    assert not await gate.enabled("gone")
    assert client.gets == ["team", "other", "gone"]
    assert gate.requeue_after == TTL  # looked at again: no informer tells
    client.namespaces["other"] = ON
    assert not await gate.enabled("other")  # remembered...
    now[0] = TTL + 1
    assert await gate.enabled("other")  # ...for TTL seconds


async def test_every_namespace_when_the_installer_says_so() -> None:
    client = FakeClient({"plain": {"pod-security.kubernetes.io/enforce": "restricted"}})
    gate = _gate(client, [0.0], enable_all=True)
    assert await gate.enabled("plain")
    assert level_of(await gate.labels("plain")) == "restricted"


async def test_existence_without_the_right_to_read_is_unknown() -> None:
    forbidden = errors.Forbidden(403, "Forbidden", "namespaces is forbidden", {})
    gate = _gate(FakeClient({}, forbidden), [0.0])
    assert await gate.exists("team") is None
    assert not await gate.enabled("team")
    assert level_of(await gate.labels("team")) == "baseline"
    assert await _gate(FakeClient({}), [0.0]).exists("nope") is False


async def test_the_memory_is_bounded_least_recently_used_first() -> None:
    client = FakeClient({"team": ON})
    gate = _gate(client, [0.0], max_remembered=3)
    for n in range(10):  # a tenant naming made-up namespaces (x.<ns> in an AppStack)
        assert await gate.exists(f"made-up-{n}") is False
    assert await gate.exists("team") is True
    assert len(gate._exists) == 3
    assert len(gate._labels) == 3
    before = len(client.gets)
    assert await gate.exists("team") is True
    assert len(client.gets) == before  # the newest is still remembered


async def test_cluster_wide_the_enabled_namespaces_come_from_the_cache() -> None:
    client = FakeClient({})
    cache = Cache(client)  # type: ignore[arg-type]
    gate = NamespaceGate(client, cache, label=ENABLED)  # type: ignore[arg-type]
    assert gate.watching
    assert gate.requeue_after is None
    # the operator's cache table keeps the enabled namespaces' names and labels only
    kept = namespace_cache(ENABLED)
    assert kept.label_selector == f"{ENABLED}=true"
    assert kept.transform is not None
    assert kept.transform(
        {"metadata": {"name": "team", "labels": RESTRICTED, "annotations": {"a": "b"}}}
    ) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team", "labels": RESTRICTED},
    }
    informer = cache.informers(NAMESPACES)[None]
    informer.store.upsert({"metadata": {"name": "team", "labels": RESTRICTED}})
    assert await gate.enabled("team")
    assert level_of(await gate.labels("team")) == "restricted"
    assert not await gate.enabled("other")  # not in the cache of enabled namespaces
    assert client.gets == []
    apps = Resource("x.dev", "v1", "App", "apps")
    for key in ("team/a", "team/b", "other/c"):
        namespace, name = key.split("/")
        cache.informers(apps)[None].store.upsert(
            {"metadata": {"name": name, "namespace": namespace}}
        )
    woken = gate.mapper(apps)({"metadata": {"name": "team"}})
    assert sorted(r.name for r in woken) == ["a", "b"]


def test_every_namespace_is_cached_when_all_are_enabled() -> None:
    client = FakeClient({})
    cache = Cache(client)  # type: ignore[arg-type]
    assert NamespaceGate(client, cache, enable_all=True).watching  # type: ignore[arg-type]
    assert namespace_cache(ENABLED, enable_all=True).label_selector is None
