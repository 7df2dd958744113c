"""The operator's start-up heap settings: what start-up leaves is frozen out of the
collector's sight, the youngest generation is collected less often, and objects frozen
that way are still freed when nothing refers to them."""

from __future__ import annotations

import gc
import linecache
import weakref
from collections.abc import Iterator

import pytest

from appstack.sdk.process import settle_heap


class _Thing:
    pass


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield None
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_gc")
def test_start_up_objects_are_frozen_and_young_collections_are_rarer() -> None:
    thing = _Thing()
    alive = weakref.ref(thing)
    settle_heap()
    assert gc.get_freeze_count() > 10_000
    assert gc.get_threshold()[0] == 10_000
    del thing  # frozen, yet freed by reference counting
    assert alive() is None


@pytest.mark.usefixtures("restored_gc")
def test_the_source_lines_read_at_start_up_are_dropped() -> None:
    assert linecache.getlines(__file__)  # as pydantic reads a model's module for docstrings
    settle_heap()
    assert __file__ not in linecache.cache
