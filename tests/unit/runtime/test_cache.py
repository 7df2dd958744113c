"""What each kind's cache costs is set per kind (issue #34): the LIST page size — 25 full
objects or 500 of metadata only by default, or a kind's own — and whose children it keeps in
full, told to the informers whether they exist yet or not; and its informers ask for one
page of full objects at a time, all together."""

from __future__ import annotations

import asyncio

import pytest

from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.resources import CONFIG_MAP, POD, SECRET, Obj, Resource
from appstack.runtime.watcher import FULL_PAGE_SIZE, METADATA_PAGE_SIZE, Empty, step
from tests.support.scripted_transport import RecordingClock, ScriptedTransport, scripted_client

OWNER = Resource("example.com", "v1", "Widget", "widgets")
OTHER = Resource("example.com", "v1", "Gadget", "gadgets")


def test_full_objects_are_listed_in_smaller_pages_than_metadata() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["ns"])
    assert (FULL_PAGE_SIZE, METADATA_PAGE_SIZE) == (25, 500)
    assert cache.informers(CONFIG_MAP)["ns"].query.page_size == FULL_PAGE_SIZE
    assert cache.informers(CONFIG_MAP.metadata_only())["ns"].query.page_size == 500


async def test_a_kinds_page_size_is_its_own_and_is_what_the_list_asks_for() -> None:
    client, transport = scripted_client()
    cache = Cache(client, ["ns"])
    cache.set_page_size(SECRET, 20)
    with pytest.raises(ValueError, match="a page of 0 objects"):
        cache.set_page_size(SECRET, 0)
    informer = cache.informers(SECRET)["ns"]
    cache.set_page_size(SECRET, 20)  # the same again: fine
    with pytest.raises(RuntimeError):  # too late: its informers exist
        cache.set_page_size(SECRET, 30)
    transport.page(["a"], "7")

    await step(Empty(), client, informer.query, RecordingClock())

    (request, _), *_ = transport.sent
    assert request.params["limit"] == "20"


def test_owners_reach_the_informers_made_before_and_after() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["a", "b"])
    cache.keep_children_of(CONFIG_MAP, OWNER)  # before its informers exist
    made = cache.informers(CONFIG_MAP)
    cache.keep_children_of(CONFIG_MAP, OTHER)  # after
    later = Cache(client, ["a"])
    later.informers(CONFIG_MAP)
    later.keep_children_of(CONFIG_MAP, OWNER)

    kinds = {("example.com/v1", "Widget"), ("example.com/v1", "Gadget")}
    assert [i.owners for i in made.values()] == [kinds, kinds]
    assert later.informers(CONFIG_MAP)["a"].owners == {("example.com/v1", "Widget")}
    assert cache.informers(SECRET)["a"].owners is None  # nobody said: every object in full


def test_keep_everything_wins_in_either_order() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["ns"])
    cache.keep_everything(POD)
    cache.keep_children_of(POD, OWNER)
    cache.informers(CONFIG_MAP)
    cache.keep_children_of(CONFIG_MAP, OWNER)
    cache.keep_everything(CONFIG_MAP)

    assert cache.informers(POD)["ns"].owners is None
    assert cache.informers(CONFIG_MAP)["ns"].owners is None


class SlowPages(Client):
    """Answers every LIST with two pages of one object each, a few loop turns after it is
    asked; counts the pages asked for and not yet answered, by resource."""

    def __init__(self) -> None:
        super().__init__(ScriptedTransport())
        self.in_flight: dict[bool, int] = {True: 0, False: 0}  # by only_metadata
        self.most: dict[bool, int] = {True: 0, False: 0}

    async def list_page(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        limit: int = 500,
        token: str | None = None,
    ) -> tuple[list[Obj], str, str | None]:
        kind = resource.only_metadata
        self.in_flight[kind] += 1
        self.most[kind] = max(self.most[kind], self.in_flight[kind])
        for _ in range(3):
            await asyncio.sleep(0)
        self.in_flight[kind] -= 1
        name = f"{resource.plural}-{token or 0}"
        page = [{"metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"}}]
        return page, "1", None if token else "1"


async def test_the_informers_of_a_cache_ask_for_one_page_of_full_objects_at_a_time() -> None:
    client = SlowPages()
    cache = Cache(client, ["a", "b", "c"])
    for resource in (CONFIG_MAP, SECRET, POD, CONFIG_MAP.metadata_only()):
        cache.informers(resource)
    cache.informers(SECRET.metadata_only())

    await cache.start()
    try:
        await asyncio.wait_for(cache.wait_synced(), timeout=5)
    finally:
        await cache.stop()

    assert len(cache.keys(POD)) == 6  # two pages in each of three namespaces
    assert client.most == {False: 1, True: 6}  # 9 informers of full objects, 6 ungated
    wider = SlowPages()
    cache = Cache(wider, ["a", "b", "c"], pages_at_once=3)
    cache.informers(CONFIG_MAP)
    await cache.start()
    try:
        await asyncio.wait_for(cache.wait_synced(), timeout=5)
    finally:
        await cache.stop()
    assert wider.most[False] == 3
