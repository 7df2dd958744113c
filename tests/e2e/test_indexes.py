"""Cache indexes are registered once, when the controllers are set up — not by the reads
that use them (``pods_of`` used to add its index on every call): the running operator has
every declared index before it reconciled anything, and a read of a cache without the
index fails instead of quietly registering it."""

from __future__ import annotations

import pytest

from appstack.controllers.appstack import APP_STACK
from appstack.controllers.registry import ALL
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.resources import POD
from appstack.sdk.kit.pods import POD_INDEXERS, pods_of
from tests.e2e.conftest import RunningOperator


async def test_every_declared_index_exists_once_the_controllers_are_set_up(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    cache = operator.manager.cache
    assert not cache.objects(APP_STACK)  # nothing reconciled yet
    declared = {
        (resource, index)
        for controller in ALL
        for resource, indexes in controller.reconciler.indexers.items()
        for index in indexes
    }
    assert (APP_STACK, "references") in declared
    for resource, index in declared:
        assert cache.by_index(resource, index, "nothing") == [], (resource, index)

    bare = Cache(client, [namespace])
    (index,) = POD_INDEXERS[POD]
    with pytest.raises(KeyError, match=index):
        pods_of(bare, namespace, {"app.kubernetes.io/instance": "web"})
    for informer in bare.informers(POD).values():
        assert index not in informer.store._indexers
