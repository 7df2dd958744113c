"""Cached objects held as compressed JSON: a few hundred bytes each instead of a tree of dicts.

A :class:`~appstack.runtime.store.Store` keeps every object as :class:`Packer` bytes: the
object's JSON (orjson), deflated against a preset dictionary made of objects of that
store. Objects of one kind in one cache are alike (an operator's children differ in names,
uids and versions), so an object packs to 100-160 bytes where its decoded tree took
1.5-3.9 KiB even with its strings interned and its repeated parts shared
(docs/performance.md, "Seventh round" and "Eighth round").

The dictionary starts as the JSON of the first object packed. That one is often young (an
AppService before its status, a pod before it runs), so the dictionary grows: at the
store's 16th, 128th and 1,024th pack, the object that packed worst since the last time
(of at most :data:`PIECE_LIMIT` bytes) is appended, the dictionary cut to its newest
:data:`DICTIONARY_LIMIT` bytes, and every object held repacked against it (:meth:`Packer.grow`:
≈ 10 ms for 1,024 objects, once). Reading unpacks: ≈ 3 µs to inflate and 10-20 µs to
decode, and each read gets an object of its own, so a reader that changes it changes
nothing in the cache.

Used by :mod:`appstack.runtime.store` only; pure, no I/O.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

import orjson

#: Raw deflate (no zlib header and checksum: 6 bytes an object) with an 8 KiB window:
#: the dictionary and an object of up to 2 KiB fit in it, and deflate's state for it
#: (≈ 64 KiB with :data:`MEM_LEVEL`, made for every pack) costs 10-20 µs a pack where
#: zlib's default 32 KiB window and memory level 8 (≈ 260 KiB of state) cost 40-65 µs,
#: for the same bytes (measured on the objects of a 1,000-app wave).
WBITS = -13

#: Deflate's memory level for :data:`WBITS` (the hash table's size).
MEM_LEVEL = 6

#: Compression level: 6 (zlib's default) packs a Deployment to 137 bytes, 1 to 199, for
#: ≈ 3 µs less.
LEVEL = 6

#: The dictionary's largest size: its newest bytes are kept.
DICTIONARY_LIMIT = 6 * 1024

#: An object larger than this is never appended to the dictionary (one large object would
#: push every earlier piece out of it).
PIECE_LIMIT = 3 * 1024

#: The packs after which the dictionary grows (see the module's docstring).
GROW_AT = (16, 128, 1024)

K = TypeVar("K")


def _deflate(data: bytes, dictionary: bytes) -> bytes:
    packer = zlib.compressobj(LEVEL, zlib.DEFLATED, WBITS, MEM_LEVEL, zdict=dictionary)
    return packer.compress(data) + packer.flush()


def _inflate(packed: bytes, dictionary: bytes) -> bytes:
    unpacker = zlib.decompressobj(WBITS, zdict=dictionary)
    return unpacker.decompress(packed) + unpacker.flush()


def _unpack(packed: bytes, dictionary: bytes) -> Any:
    return orjson.loads(_inflate(packed, dictionary))


class Packer:
    """Packs and unpacks the JSON objects of one store against one preset dictionary."""

    __slots__ = ("_dictionary", "_grow_at", "_packs", "_worst", "_worst_size")

    def __init__(self, grow_at: Collection[int] = GROW_AT) -> None:
        self._grow_at = frozenset(grow_at)  # the packs after which it grows (empty: never)
        self._dictionary: bytes | None = None
        self._packs = 0
        self._worst: bytes | None = None  # the JSON that packed worst since the last growth
        self._worst_size = 0

    @property
    def dictionary(self) -> bytes | None:
        """The preset dictionary (None until the first object is packed)."""
        return self._dictionary

    def pack(self, obj: Any) -> bytes:
        """``obj`` (a JSON-compatible tree) as compressed JSON bytes."""
        data = orjson.dumps(obj)
        if self._dictionary is None:
            self._dictionary = data[-DICTIONARY_LIMIT:]
        packed = _deflate(data, self._dictionary)
        self._packs += 1
        if len(packed) > self._worst_size and len(data) <= PIECE_LIMIT:
            self._worst, self._worst_size = data, len(packed)
        return packed

    @property
    def grow_due(self) -> bool:
        """Whether the owner should call :meth:`grow` now (right after a :meth:`pack`)."""
        return self._packs in self._grow_at and self._worst is not None

    def grow(self, items: Mapping[K, bytes]) -> dict[K, bytes]:
        """Append the object that packed worst since the last growth to the dictionary, and
        return ``items`` (everything packed with the old dictionary) repacked with the new.
        Bytes packed before and not passed here can no longer be unpacked by this packer
        (a reader holding some uses the :meth:`unpacker` it took before)."""
        old = self._dictionary
        if old is None or self._worst is None:
            return dict(items)
        new = (old + self._worst)[-DICTIONARY_LIMIT:]
        self._worst, self._worst_size = None, 0
        repacked = {key: _deflate(_inflate(packed, old), new) for key, packed in items.items()}
        self._dictionary = new
        return repacked

    def unpack(self, packed: bytes) -> Any:
        """The object ``packed`` holds: a new tree on every call."""
        if self._dictionary is None:
            raise ValueError("nothing was packed with this packer")
        return _unpack(packed, self._dictionary)

    def unpacker(self) -> Callable[[bytes], Any]:
        """:meth:`unpack` with today's dictionary: for a reader that holds packed bytes
        while the store may grow its dictionary (and repack what it holds)."""
        if self._dictionary is None:
            return self.unpack  # nothing packed yet: nothing to unpack either
        return functools.partial(_unpack, dictionary=self._dictionary)
