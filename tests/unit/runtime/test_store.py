"""The store (runtime/store.py): objects indexed by namespace and controller owner, the
indexes kept right on update and delete, and a reader's copy its own."""

from __future__ import annotations

from typing import Any

from appstack.runtime.store import Store


def _obj(name: str, namespace: str = "ns", owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "X", "name": "x"}]
    return {"metadata": meta}


def test_objects_are_found_by_namespace_and_controller_owner() -> None:
    store = Store()
    store.upsert(_obj("a", "one", owner="u1"))
    store.upsert(_obj("b", "one", owner="u2"))
    store.upsert(_obj("c", "two", owner="u1"))

    assert {o["metadata"]["name"] for o in store.by_index("namespace", "one")} == {"a", "b"}
    # an owner is looked up within its namespace: "c" in namespace two naming u1 (an owner
    # of namespace one) is not u1's child
    assert {o["metadata"]["name"] for o in store.by_index("controller-uid", "one/u1")} == {"a"}
    assert {o["metadata"]["name"] for o in store.by_index("controller-uid", "two/u1")} == {"c"}


def test_iter_objects_unpacks_one_at_a_time_and_sees_the_store_as_it_was() -> None:
    store = Store()
    for name in ("a", "b", "c"):
        store.upsert(_obj(name))
    reading = store.iter_objects()
    first = next(reading)
    store.delete("ns/c")  # changed while read: no error, and what was there is still read
    store.upsert(_obj("d"))
    rest = list(reading)
    assert [o["metadata"]["name"] for o in [first, *rest]] == ["a", "b", "c"]
    assert sorted(o["metadata"]["name"] for o in store.iter_objects()) == ["a", "b", "d"]
    first["metadata"]["name"] = "changed"  # a reader's copy is its own
    assert store.get("ns/a") == _obj("a")


def test_updates_and_deletes_move_objects_between_index_values() -> None:
    store = Store()
    store.upsert(_obj("a", owner="u1"))
    previous = store.upsert(_obj("a", owner="u2"))

    assert previous is not None
    assert store.by_index("controller-uid", "ns/u1") == []
    assert len(store.by_index("controller-uid", "ns/u2")) == 1

    store.delete("ns/a")
    assert store.by_index("controller-uid", "ns/u2") == []
    assert len(store) == 0


def test_an_index_value_goes_from_one_object_to_several_and_back_and_is_forgotten() -> None:
    store = Store()

    def names(value: str) -> set[str]:
        return {o["metadata"]["name"] for o in store.by_index("namespace", value)}

    store.upsert(_obj("a"))
    store.upsert(_obj("a"))  # the same object again: still one
    assert names("ns") == {"a"}
    store.upsert(_obj("b"))
    store.upsert(_obj("c"))
    assert names("ns") == {"a", "b", "c"}
    store.delete("ns/b")
    store.delete("ns/a")
    assert names("ns") == {"c"}
    store.upsert(_obj("d"))
    assert names("ns") == {"c", "d"}
    store.delete("ns/c")
    store.delete("ns/d")
    assert names("ns") == set()
    store.delete("ns/d")  # gone already: nothing to do
    # a value no object has any more is not kept (deleted objects' owners and labels)
    assert "ns" not in store._indices["namespace"]


def test_a_custom_index_added_later_covers_existing_objects() -> None:
    store = Store()
    store.upsert(_obj("a"))
    store.add_indexer("name-length", lambda o: [str(len(o["metadata"]["name"]))])
    assert store.by_index("name-length", "1")[0]["metadata"]["name"] == "a"
