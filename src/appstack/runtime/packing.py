"""Cached objects held as compressed JSON: a few hundred bytes each instead of a tree of dicts.

A :class:`~appstack.runtime.store.Store` keeps every object as :class:`Packer` bytes: the
object's JSON (orjson), deflated against a preset dictionary — the JSON of the first
object the store was given. Objects of one kind in one cache are alike (an operator's
children differ in names, uids and versions), so an object packs to 90-150 bytes where
its decoded tree took 1.5-3.9 KiB even with its strings interned and its repeated parts
shared (docs/performance.md, "Seventh round"). Reading unpacks: ≈ 3 µs to inflate and
10-20 µs to decode, and each read gets an object of its own, so a reader that changes
it changes nothing in the cache.

Used by :mod:`appstack.runtime.store` only; pure, no I/O.
"""

from __future__ import annotations

import zlib
from typing import Any

import orjson

#: Deflate's largest window: the dictionary and the object must fit in it to be matched.
WINDOW = 32 * 1024

#: Raw deflate (no zlib header and checksum: 6 bytes an object), the largest window.
WBITS = -15

#: Compression level: 6 (zlib's default) packs a Deployment to 137 bytes, 1 to 199, for
#: ≈ 3 µs less.
LEVEL = 6


class Packer:
    """Packs and unpacks the JSON objects of one store against one preset dictionary."""

    __slots__ = ("_dictionary",)

    def __init__(self) -> None:
        self._dictionary: bytes | None = None

    @property
    def dictionary(self) -> bytes | None:
        """The preset dictionary (None until the first object is packed)."""
        return self._dictionary

    def pack(self, obj: Any) -> bytes:
        """``obj`` (a JSON-compatible tree) as compressed JSON bytes."""
        data = orjson.dumps(obj)
        if self._dictionary is None:
            self._dictionary = data[-WINDOW:]
        packer = zlib.compressobj(LEVEL, zlib.DEFLATED, WBITS, zdict=self._dictionary)
        return packer.compress(data) + packer.flush()

    def unpack(self, packed: bytes) -> Any:
        """The object ``packed`` holds: a new tree on every call."""
        if self._dictionary is None:
            raise ValueError("nothing was packed with this packer")
        unpacker = zlib.decompressobj(WBITS, zdict=self._dictionary)
        return orjson.loads(unpacker.decompress(packed) + unpacker.flush())
