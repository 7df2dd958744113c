"""Storage migration (sdk/kit/storage.py) against a scripted client: nothing done once the
stored versions are trimmed; every page written back under its resourceVersion, objects
written since (409) or gone (404) skipped, an expired continue token started over; the
trim conditioned on the CRD's resourceVersion and skipped when the storage version moved
meanwhile; the task only for multi-version kinds, waiting for the conversion webhook. The
real API server and etcd: tests/e2e/test_storage_migration.py."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from appstack.runtime import Client, Conflict, Gone, NotFound
from appstack.sdk import CustomObject, KubeModel, Version, custom_kind, versioned_kind
from appstack.sdk.kit.storage import migrate_storage, multi_version_kinds, storage_migration


class _Spec(KubeModel):
    size: int = 1


class _Status(KubeModel):
    seen: int | None = None


@custom_kind(group="st.example.com", plural="things", version="v1alpha1", kind="Thing")
class ThingV1alpha1(CustomObject):
    spec: _Spec
    status: _Status | None = None


@custom_kind(group="st.example.com", plural="things")
class Thing(CustomObject):
    spec: _Spec
    status: _Status | None = None


THINGS = versioned_kind(Version(Thing, storage=True), Version(ThingV1alpha1))


def _crd(stored: list[str], storage: str = "v1", rv: str = "7") -> dict[str, Any]:
    versions = [{"name": v, "storage": v == storage} for v in ("v1alpha1", "v1")]
    return {
        "metadata": {"name": THINGS.crd_name, "resourceVersion": rv},
        "spec": {"versions": versions},
        "status": {"storedVersions": stored},
    }


def _obj(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": f"rv-{name}"}}


class _Client:
    """What migrate_storage calls, scripted: CRD reads in order, pages by token."""

    def __init__(self, crds: list[dict[str, Any]], pages: dict[str | None, list[Any]]) -> None:
        self.crds = crds
        self.pages = pages
        self.patches: list[tuple[str, str, Any, str | None, str | None]] = []
        self.refuse: dict[str, Exception] = {}

    async def get(self, resource: Any, name: str, namespace: str | None = None) -> Any:
        return self.crds.pop(0)

    async def list_page(self, resource: Any, **kw: Any) -> Any:
        assert resource.version == "v1"  # listed at the storage version
        answer = self.pages[kw.get("token")].pop(0)
        if isinstance(answer, Exception):
            raise answer
        items, token = answer
        return items, "1", token

    async def patch(
        self,
        resource: Any,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Any:
        self.patches.append((resource.plural, name, patch, namespace, subresource))
        if name in self.refuse:
            raise self.refuse[name]
        return {}


def _run(client: _Client) -> int:
    return asyncio.run(migrate_storage(cast(Client, client), THINGS, page_size=2))


def test_nothing_to_do_once_only_the_storage_version_is_stored() -> None:
    client = _Client([_crd(["v1"])], {})
    assert _run(client) == 0
    assert client.patches == []


def test_every_page_is_written_back_then_the_stored_versions_trimmed() -> None:
    first = ([_obj("a"), _obj("b")], "t1")
    pages: dict[str | None, list[Any]] = {
        None: [first, first],
        # the continue token expired once: the list starts over
        "t1": [Gone(410, "Expired", "too old"), ([_obj("c"), _obj("d")], None)],
    }
    client = _Client([_crd(["v1alpha1", "v1"]), _crd(["v1alpha1", "v1"], rv="9")], pages)
    client.refuse = {
        "b": Conflict(409, "Conflict", "written since"),
        "d": NotFound(404, "NotFound", "gone"),
    }
    assert _run(client) == 3  # a twice (the list started over), c; b and d skipped
    written = [(name, patch) for _, name, patch, _, sub in client.patches if sub is None]
    assert [name for name, _ in written] == ["a", "b", "a", "b", "c", "d"]
    assert all(p == {"metadata": {"resourceVersion": f"rv-{n}"}} for n, p in written)
    *_, trim = client.patches
    assert trim == (
        "customresourcedefinitions",
        THINGS.crd_name,
        {"metadata": {"resourceVersion": "9"}, "status": {"storedVersions": ["v1"]}},
        None,
        "status",
    )


def test_no_trim_when_the_storage_version_moved_meanwhile() -> None:
    client = _Client(
        [_crd(["v1alpha1", "v1"]), _crd(["v1alpha1", "v1"], storage="v1alpha1")],
        {None: [([_obj("a")], None)]},
    )
    assert _run(client) == 1
    assert [sub for *_, sub in client.patches] == [None]


def test_the_task_is_for_multi_version_kinds_and_waits_for_the_webhook() -> None:
    assert multi_version_kinds([Thing.KIND, ThingV1alpha1.KIND, THINGS]) == [Thing.KIND]
    assert storage_migration(cast(Client, None), [ThingV1alpha1.KIND]) is None
    served = [False, False, True]
    client = _Client([_crd(["v1"])], {})
    task = storage_migration(
        cast(Client, client), [THINGS], converting=lambda: served.pop(0), poll=0
    )
    assert task is not None
    assert task.leader_only
    assert task.every is None
    run = task.run

    async def once() -> None:
        await run()

    asyncio.run(once())
    assert served == []  # asked until served
    assert client.crds == []  # then read the CRD
