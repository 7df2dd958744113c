"""What each kind's cache costs is declared once per kind, in the cache's table
(:class:`ByObject`, issues #34 and #40): the LIST page size — 25 full objects or 500 of
metadata only by default, or a kind's own —, its label selector and whose children it
keeps in full, before its informers exist; the transform applied to every object the
informers store; only the client's own apply entry of an object's managed fields kept; and its
informers ask for one page of full objects at a time, all together."""

from __future__ import annotations

import asyncio

import pytest

from appstack.runtime.cache import ByObject, Cache
from appstack.runtime.client import Client
from appstack.runtime.resources import CONFIG_MAP, DEPLOYMENT, POD, SECRET, Obj, Resource
from appstack.runtime.watcher import FULL_PAGE_SIZE, METADATA_PAGE_SIZE, Applied, Empty, step
from appstack.sdk.kit.pods import cached_pod
from tests.support.managed_fields import deployment, entry
from tests.support.pods import web_pod
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
    cache = Cache(client, ["ns"], by_object={SECRET: ByObject(page_size=20)})
    with pytest.raises(ValueError, match="a page of 0 objects"):
        ByObject(page_size=0)
    informer = cache.informers(SECRET)["ns"]
    cache.configure({SECRET: ByObject(page_size=20)})  # the same again: fine
    with pytest.raises(RuntimeError, match="declared twice"):
        cache.configure({SECRET: ByObject(page_size=30)})
    transport.page(["a"], "7")

    await step(Empty(), client, informer.query, RecordingClock())

    (request, _), *_ = transport.sent
    assert request.params["limit"] == "20"


def test_owners_reach_every_informer_of_the_kind() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["a", "b"])
    cache.configure({CONFIG_MAP: ByObject(owners=(OWNER, OTHER))})
    made = cache.informers(CONFIG_MAP)

    kinds = {("example.com/v1", "Widget"), ("example.com/v1", "Gadget")}
    assert [i.owners for i in made.values()] == [kinds, kinds]
    assert cache.informers(SECRET)["a"].owners is None  # not declared: every object in full
    assert cache.by_object(SECRET) == ByObject()


def test_a_kind_is_declared_once_before_its_informers_exist() -> None:
    client, _ = scripted_client()
    selector = "app.kubernetes.io/managed-by=example"
    cache = Cache(client, ["ns"], by_object={POD: ByObject(label_selector=selector)})
    assert cache.informers(POD)["ns"].query.label_selector == selector
    with pytest.raises(RuntimeError, match="declared twice"):
        cache.configure({POD: ByObject(label_selector="other=yes")})
    cache.informers(CONFIG_MAP)  # used before it was declared: cached whole
    with pytest.raises(RuntimeError, match="already exist"):
        cache.configure({CONFIG_MAP: ByObject(owners=(OWNER,))})


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


def test_the_cache_stores_transformed_objects() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["ns"], by_object={POD: ByObject(transform=cached_pod)})
    cache.configure({POD: ByObject(transform=cached_pod)})  # the same again: fine
    with pytest.raises(RuntimeError, match="declared twice"):
        cache.configure({POD: ByObject(transform=lambda obj: obj)})
    informer = cache.informers(POD)["ns"]
    informer._deliver(Applied(informer._prepare(web_pod())))  # as the watcher hands it
    stored = cache.get(POD, "ns/web-1")
    assert stored is not None
    assert stored["spec"] == {
        "nodeName": "node-1",
        "containers": [{"name": "web", "image": "nginx"}],
    }
    assert "managedFields" not in stored["metadata"]
    cache.informers(CONFIG_MAP)
    with pytest.raises(RuntimeError):  # too late: its informers exist
        cache.configure({CONFIG_MAP: ByObject(transform=lambda obj: obj)})


def test_the_cache_keeps_only_its_clients_apply_entry() -> None:
    client, _ = scripted_client(field_manager="appstack")  # the entries above are "appstack"'s
    cache = Cache(client, ["ns"])
    informer = cache.informers(DEPLOYMENT)["ns"]
    informer._deliver(Applied(informer._prepare(deployment())))  # as the watcher hands it
    stored = cache.get(DEPLOYMENT, "ns/web")
    assert stored is not None
    assert stored["metadata"]["managedFields"] == [entry(client.field_manager, "Apply")]
