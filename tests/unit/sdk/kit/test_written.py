"""Read-your-writes (appstack.sdk.kit.written.RecentWrites): a write is seen until
the informer reports anything about that object, then the cache is read again — so a
later change by someone else (an edit, a deletion) is never hidden."""

from __future__ import annotations

from typing import Any

from appstack.runtime.cache import Cache
from appstack.runtime.resources import CONFIG_MAP
from appstack.runtime.watcher import Applied, Deleted
from appstack.sdk.kit.written import RecentWrites
from tests.support.scripted_transport import scripted_client


def _cm(name: str, rv: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": rv,
            "managedFields": [{"manager": "appstack"}],
        },
        "data": data,
    }


def test_a_write_is_read_until_the_informer_reports_that_object() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["ns"])
    informer = cache.informers(CONFIG_MAP)["ns"]
    writes = RecentWrites(cache)
    writes.follow(CONFIG_MAP)
    assert writes.get(CONFIG_MAP, "ns/a") is None

    writes.remember(CONFIG_MAP, _cm("a", "5", v="ours"))
    seen = writes.get(CONFIG_MAP, "ns/a")
    assert seen is not None
    assert seen["data"] == {"v": "ours"}
    assert "managedFields" not in seen["metadata"]  # kept as small as the cache keeps it

    informer._deliver(Applied(_cm("b", "6")))  # another object: a is still ours
    assert writes.get(CONFIG_MAP, "ns/a") is seen

    informer._deliver(Applied(_cm("a", "7", v="edited")))  # the cache caught up (and more)
    now = writes.get(CONFIG_MAP, "ns/a")
    assert now is not None
    assert now["data"] == {"v": "edited"}
    assert len(writes) == 0

    writes.remember(CONFIG_MAP, _cm("a", "8", v="ours again"))
    informer._deliver(Deleted(_cm("a", "9")))  # deleted meanwhile: not hidden by our write
    assert writes.get(CONFIG_MAP, "ns/a") is None


def test_writes_whose_event_never_comes_are_bounded() -> None:
    client, _ = scripted_client()
    writes = RecentWrites(Cache(client, ["ns"]), limit=3)
    for i in range(5):
        writes.remember(CONFIG_MAP, _cm(f"c{i}", str(i)))
    assert len(writes) == 3
    assert writes.get(CONFIG_MAP, "ns/c0") is None
    assert writes.get(CONFIG_MAP, "ns/c4") is not None


async def test_a_write_overtaken_by_its_watch_events_is_not_kept() -> None:
    """Under load the watch may deliver our write, and what followed it (a Deployment
    becoming available), before the write's response is read: the response is then older
    than the cache and must not hide it."""
    client, _ = scripted_client()
    cache = Cache(client, ["ns"])
    informer = cache.informers(CONFIG_MAP)["ns"]
    writes = RecentWrites(cache)

    async def overtaken_write() -> dict[str, Any]:
        informer._deliver(Applied(_cm("a", "5", v="ours")))
        informer._deliver(Applied(_cm("a", "6", v="ours, then changed")))
        return _cm("a", "5", v="ours")  # the response, read only now

    returned = await writes.track(CONFIG_MAP, "ns/a", overtaken_write())
    assert returned["metadata"]["resourceVersion"] == "5"
    seen = writes.get(CONFIG_MAP, "ns/a")
    assert seen is not None
    assert seen["data"] == {"v": "ours, then changed"}

    async def write() -> dict[str, Any]:
        return _cm("b", "7", v="ours")

    await writes.track(CONFIG_MAP, "ns/b", write())  # no event yet: the response is kept
    kept = writes.get(CONFIG_MAP, "ns/b")
    assert kept is not None
    assert kept["data"] == {"v": "ours"}
