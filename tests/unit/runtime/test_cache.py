"""What each kind's cache costs is declared once per kind, in the cache's table
(:class:`ByObject`, issues #34 and #40): the LIST page size — 25 full objects or 500 of
metadata only by default, or a kind's own —, its label selector and whose children it
keeps in full, before its informers exist; the transform applied to every object the
informers store; only the client's own apply entry of an object's managed fields kept; and its
informers ask for one page of full objects at a time, all together."""

from __future__ import annotations

import asyncio

import pytest

from appstack.runtime.cache import NAMESPACES, ByObject, Cache
from appstack.runtime.client import Client
from appstack.runtime.informer import FuncHandler
from appstack.runtime.resources import CONFIG_MAP, DEPLOYMENT, POD, SECRET, Obj, Resource
from appstack.runtime.watcher import PAGE_SIZE, Applied, Deleted, Empty, Restarted, step
from appstack.sdk.kit.pods import cached_pod
from tests.support.managed_fields import deployment, entry
from tests.support.pods import web_pod
from tests.support.scripted_transport import RecordingClock, ScriptedTransport, scripted_client

OWNER = Resource("example.com", "v1", "Widget", "widgets")
OTHER = Resource("example.com", "v1", "Gadget", "gadgets")


def test_every_kind_is_listed_in_pages_of_25_metadata_only_too() -> None:
    """Issue #46: of metadata only, pages of 500 — anyone may put 1.3 MB of labels on their
    own object, so a page of them is as large as one of full objects."""
    client, _ = scripted_client()
    cache = Cache(client, ["ns"])
    assert PAGE_SIZE == 25
    assert cache.informers(CONFIG_MAP)["ns"].query.page_size == PAGE_SIZE
    assert cache.informers(CONFIG_MAP.metadata_only())["ns"].query.page_size == PAGE_SIZE


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
        self.most_at_once = 0  # of either

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
        self.most_at_once = max(self.most_at_once, sum(self.in_flight.values()))
        for _ in range(3):
            await asyncio.sleep(0)
        self.in_flight[kind] -= 1
        name = f"{resource.plural}-{token or 0}"
        page = [{"metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"}}]
        return page, "1", None if token else "1"


async def test_the_informers_of_a_cache_ask_for_one_page_at_a_time_metadata_too() -> None:
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
    # 9 informers of full objects and 6 of metadata only: one page at a time, all together
    assert client.most == {False: 1, True: 1}
    assert client.most_at_once == 1
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


# ------------------------------------------------------ kinds kept in selected namespaces
ENABLED = "example.com/enabled=true"


def _namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "uid": name}}


def _cm(name: str, namespace: str, rv: str = "1", **extra: object) -> Obj:
    meta = {
        "name": name,
        "namespace": namespace,
        "uid": f"{namespace}-{name}",
        "resourceVersion": rv,
    }
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, **extra}


def _select(cache: Cache, *names: str) -> None:
    """The cache's Namespaces informer lists ``names`` (as the server would, selected)."""
    (namespaces,) = cache.informers(NAMESPACES).values()
    namespaces._deliver(Restarted([_namespace(n) for n in names], "1"))


def test_a_kind_kept_in_selected_namespaces_gets_an_informer_in_each_as_they_come_and_go() -> None:
    """Issue #46: a user's ConfigMaps (what a spec may name) are cached only in the
    namespaces enabled for the operator, followed through its informer of Namespaces: an
    informer per namespace, with the kind's handlers and indexes, gone with the namespace."""
    client, _ = scripted_client()
    cache = Cache(client, by_object={CONFIG_MAP: ByObject(namespaces=ENABLED)})
    seen: list[str] = []
    cache.add_handler(CONFIG_MAP, FuncHandler(add=lambda o: seen.append(o["metadata"]["name"])))
    cache.add_indexer(CONFIG_MAP, "by-name", lambda o: [o["metadata"]["name"]])
    assert cache.informers(CONFIG_MAP) == {}  # nothing selected yet
    assert cache.by_object(NAMESPACES).label_selector == ENABLED  # declared to follow them

    _select(cache, "team-a", "team-b")
    informers = cache.informers(CONFIG_MAP)
    assert sorted(informers) == ["team-a", "team-b"]
    assert informers["team-a"].query.namespace == "team-a"
    informers["team-a"]._deliver(Applied(informers["team-a"]._prepare(_cm("app", "team-a"))))
    assert seen == ["app"]
    assert [o["metadata"]["name"] for o in cache.by_index(CONFIG_MAP, "by-name", "app")] == ["app"]
    assert cache.get(CONFIG_MAP, "team-a/app") is not None
    assert cache.get(CONFIG_MAP, "closed/app") is None  # never listed there

    (namespaces,) = cache.informers(NAMESPACES).values()
    namespaces._deliver(Deleted(_namespace("team-a")))  # the label removed (or the namespace)
    assert sorted(cache.informers(CONFIG_MAP)) == ["team-b"]
    assert cache.get(CONFIG_MAP, "team-a/app") is None  # forgotten
    assert not cache.is_cut(CONFIG_MAP, "team-b/app")


def test_one_selection_of_namespaces_per_cache() -> None:
    client, _ = scripted_client()
    cache = Cache(
        client,
        by_object={
            NAMESPACES: ByObject(label_selector="other=true"),
            CONFIG_MAP: ByObject(namespaces=ENABLED),
        },
    )
    with pytest.raises(ValueError, match="one selection per cache"):
        cache.informers(CONFIG_MAP)
    with pytest.raises(ValueError, match="name them"):
        ByObject(elsewhere=lambda obj: obj)
    namespaced = Cache(client, ["ns"], by_object={CONFIG_MAP: ByObject(namespaces=ENABLED)})
    assert list(namespaced.informers(CONFIG_MAP)) == ["ns"]  # its own namespaces: as they are


class ListsAgain(Client):
    """Answers a LIST of one namespace with ``objects`` (the full objects)."""

    def __init__(self, objects: list[Obj]) -> None:
        super().__init__(ScriptedTransport())
        self.objects = objects
        self.asked: list[str | None] = []

    async def list_page(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        limit: int = 500,
        token: str | None = None,
    ) -> tuple[list[Obj], str, str | None]:
        self.asked.append(namespace)
        return [o for o in self.objects if o["metadata"]["namespace"] == namespace], "9", None


def _outside(obj: Obj) -> Obj:
    meta = obj["metadata"]
    return {"metadata": {k: meta[k] for k in ("name", "namespace", "resourceVersion")}}


async def test_a_kind_kept_elsewhere_is_cut_down_there_and_read_again_when_selected() -> None:
    """Issue #46: our own kinds in a namespace not enabled only as their name and status
    (say); read again in full when the namespace is enabled, cut down when it is not."""
    full = _cm("web", "closed", data={"blob": "x" * 1000})
    client = ListsAgain([full, _cm("other", "open")])
    cache = Cache(client, by_object={CONFIG_MAP: ByObject(namespaces=ENABLED, elsewhere=_outside)})
    updates: list[tuple[Obj, Obj]] = []
    cache.add_handler(CONFIG_MAP, FuncHandler(update=lambda old, new: updates.append((old, new))))
    (informer,) = cache.informers(CONFIG_MAP).values()  # one, for every namespace
    _select(cache, "open")
    informer._deliver(Restarted([informer._prepare(_cm("web", "closed", data={"blob": "x"}))], "1"))
    assert cache.get(CONFIG_MAP, "closed/web") == _outside(full)
    assert cache.is_cut(CONFIG_MAP, "closed/web")

    _select(cache, "open", "closed")  # not started: the refresh is the caller's here
    await informer.refresh("closed")
    assert client.asked == ["closed"]
    assert cache.get(CONFIG_MAP, "closed/web") == full
    assert not cache.is_cut(CONFIG_MAP, "closed/web")
    assert [new for _, new in updates] == [full]

    (namespaces,) = cache.informers(NAMESPACES).values()
    namespaces._deliver(Deleted(_namespace("closed")))
    assert cache.is_cut(CONFIG_MAP, "closed/web")
    assert cache.get(CONFIG_MAP, "closed/web") == _outside(full)
    informer._deliver(Deleted(_cm("web", "closed")))
    assert not cache.is_cut(CONFIG_MAP, "closed/web")


def test_the_kinds_an_informer_found_unserved_are_the_cache_s_unserved_ones() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["a", "b"])
    for resource in (CONFIG_MAP, OWNER, OTHER):
        cache.informers(resource)
    assert cache.unserved() == []  # not listed yet: not known to be unserved
    cache.informers(OWNER)["b"].served = False  # a LIST of one namespace answered 404
    cache.informers(OTHER)["a"].served = True
    assert cache.unserved() == [OWNER]


def test_a_restricted_kind_keeps_the_labels_it_is_told_whatever_its_transform_drops() -> None:
    def labels_dropped(obj: Obj) -> Obj:
        obj["metadata"].pop("labels", None)
        return obj

    client, _ = scripted_client()
    cache = Cache(client, ["ns"], by_object={SECRET: ByObject(transform=labels_dropped)})
    cache.restrict(SECRET, "shard=s1", keep=("shard", "drain"))
    policy = cache.by_object(SECRET)
    assert policy.label_selector == "shard=s1"
    assert policy.transform is not None
    labels = {"shard": "s1", "drain": "s1", "tenant": "x" * 63}
    kept = policy.transform({"metadata": {"name": "a", "labels": labels}})
    assert kept["metadata"]["labels"] == {"shard": "s1", "drain": "s1"}
    assert policy.transform({"metadata": {"name": "b"}}) == {"metadata": {"name": "b"}}
