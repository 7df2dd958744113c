"""The store keeps objects packed (appstack.runtime.packing): small, equal on the way out,
and every read an object of its own."""

from __future__ import annotations

import copy
import os
from typing import Any

import orjson
import pytest

from appstack.runtime.packing import DICTIONARY_LIMIT, GROW_AT, PIECE_LIMIT, Packer
from appstack.runtime.store import Store


def _deployment(name: str, uid: str) -> dict[str, Any]:
    labels = {"app.kubernetes.io/instance": name, "app.kubernetes.io/managed-by": "appstack"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": uid,
            "resourceVersion": str(1000 + len(name)),
            "generation": 1,
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "appstack.dev/v1",
                    "kind": "AppService",
                    "name": name,
                    "uid": uid[::-1],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx:1.7.9",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        }
                    ]
                },
            },
        },
        "status": {
            "observedGeneration": 1,
            "replicas": 1,
            "readyReplicas": 1,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
            ],
        },
    }


def test_objects_come_back_equal_and_alike_objects_pack_small() -> None:
    packer = Packer()
    objects = [_deployment(f"app-{i}", os.urandom(16).hex()) for i in range(50)]
    packed = [packer.pack(obj) for obj in objects]
    assert [packer.unpack(p) for p in packed] == objects
    # the first object is the dictionary: the others differ in name, uid and version only
    average = sum(map(len, packed[1:])) / len(packed[1:])
    assert average < len(orjson.dumps(objects[1])) / 5, average


def test_values_of_every_json_type_survive() -> None:
    packer = Packer()
    obj = {"s": "ü ✓ \u0000", "i": -(2**62), "f": 0.25, "t": True, "n": None, "l": [[], {}]}
    assert packer.unpack(packer.pack(obj)) == obj


def test_an_object_larger_than_the_window_packs_and_unpacks() -> None:
    packer = Packer()
    big = {"metadata": {"name": "big"}, "data": {"blob": os.urandom(16 * 1024).hex()}}
    assert packer.unpack(packer.pack(big)) == big
    assert packer.dictionary is not None
    assert len(packer.dictionary) == DICTIONARY_LIMIT
    small = _deployment("app", "u1")
    assert packer.unpack(packer.pack(small)) == small


def _young(name: str, uid: str) -> dict[str, Any]:
    """A Deployment as first seen: no status, no generation yet."""
    obj = _deployment(name, uid)
    del obj["status"], obj["metadata"]["generation"]
    return obj


def test_the_dictionary_grows_by_what_packed_worst_and_the_store_repacks() -> None:
    """The first object is young; the store soon holds grown-up ones, which pack against a
    dictionary that has one of them (after the first growth) far smaller than against the
    young one alone — and everything held before a growth still reads back equal."""
    store = Store()
    young = [_young(f"young-{i}", os.urandom(16).hex()) for i in range(10)]
    for obj in young:
        store.upsert(obj)
    first_dictionary = store._packer.dictionary
    assert first_dictionary is not None
    grown = [_deployment(f"app-{i}", os.urandom(16).hex()) for i in range(max(GROW_AT) + 10)]
    for obj in grown:
        store.upsert(obj)
    assert store._packer.dictionary != first_dictionary
    assert len(store._packer.dictionary or b"") <= DICTIONARY_LIMIT
    assert store.objects() == young + grown
    against_young = Packer()
    against_young.pack(young[0])
    before = sum(len(against_young.pack(obj)) for obj in grown) / len(grown)
    after = sum(len(store._items[f"team-a/{o['metadata']['name']}"]) for o in grown) / len(grown)
    assert after < before * 0.75, (after, before)


def test_a_store_told_when_to_grow_grows_then_only() -> None:
    objects = [_young(f"young-{i}", os.urandom(16).hex()) for i in range(3)] + [
        _deployment(f"app-{i}", os.urandom(16).hex()) for i in range(40)
    ]
    never, once = Store(grow_at=()), Store(grow_at={16})
    dictionaries: dict[str, set[bytes]] = {"never": set(), "once": set()}
    for obj in objects:
        never.upsert(obj)
        once.upsert(obj)
        dictionaries["never"].add(never._packer.dictionary or b"")
        dictionaries["once"].add(once._packer.dictionary or b"")
    assert len(dictionaries["never"]) == 1  # the first object's JSON, for ever
    assert len(dictionaries["once"]) == 2  # then the worst of the first 16 appended
    assert never.objects() == once.objects() == objects


def test_an_object_larger_than_a_piece_never_joins_the_dictionary() -> None:
    packer = Packer()
    packer.pack(_deployment("app-0", "u0"))
    big = _deployment("big", "u1")
    big["metadata"]["annotations"] = {"blob": os.urandom(PIECE_LIMIT).hex()}
    for i in range(1, min(GROW_AT)):
        packer.pack(big if i == 1 else _deployment(f"app-{i}", f"u{i}"))
    assert packer.grow_due
    dictionary = packer.dictionary
    repacked = packer.grow({})
    assert repacked == {}
    assert packer.dictionary is not None
    assert dictionary is not None
    assert b"blob" not in packer.dictionary
    assert len(packer.dictionary) > len(dictionary)


def test_a_reader_of_every_object_is_not_upset_by_a_growth_meanwhile() -> None:
    store = Store()
    for i in range(min(GROW_AT) - 2):
        store.upsert(_young(f"app-{i}", f"u{i}"))
    reading = store.iter_objects()
    first = next(reading)
    for i in range(100, 110):  # a growth happens in here
        store.upsert(_deployment(f"app-{i}", f"u{i}"))
    assert [first, *reading] == [_young(f"app-{i}", f"u{i}") for i in range(min(GROW_AT) - 2)]


def test_unpacking_before_anything_was_packed_is_refused() -> None:
    with pytest.raises(ValueError, match="nothing was packed"):
        Packer().unpack(b"\x03\x00")


def test_each_read_of_the_store_is_an_object_of_its_own() -> None:
    store = Store()
    obj = _deployment("web", "u1")
    given = copy.deepcopy(obj)
    store.upsert(given)
    given["spec"]["replicas"] = 9  # the caller's object is not the store's
    read = store.get("team-a/web")
    assert read == obj
    assert read is not None
    read["metadata"]["labels"]["x"] = "y"  # neither is a reader's
    assert store.get("team-a/web") == obj
    assert store.by_index("namespace", "team-a") == [obj]
    assert store.objects() == [obj]
    assert store.upsert(_deployment("web", "u2")) == obj  # the previous object, unpacked
    assert store.delete("team-a/web") == _deployment("web", "u2")
    assert store.get("team-a/web") is None


def test_the_store_tells_the_bytes_its_packed_objects_take() -> None:
    store = Store()
    assert store.packed_bytes() == 0
    for i in range(10):
        store.upsert(_deployment(f"app-{i}", os.urandom(16).hex()))
    one_json = len(orjson.dumps(_deployment("app-1", "u1")))
    assert 0 < store.packed_bytes() < 10 * one_json / 3
    store.delete("team-a/app-0")
    assert len(store) == 9
