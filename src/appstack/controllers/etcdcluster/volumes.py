"""An EtcdCluster's member volumes as ``spec.retainOnDelete`` wants them (issue #28 P2),
for the reconciler and :mod:`.recover`: owned by the cluster (deleted with it by the
garbage collector) or ownerless with the cluster's UID annotated (kept when it is
deleted); and their deletion, which makes a retained volume the cluster's again first (the
operator's writes policy only lets it delete what one of its kinds controls).
"""

from __future__ import annotations

import contextlib
from typing import Any

from appstack.api.etcdcluster import EtcdClusterSpec
from appstack.controllers.etcdcluster import desired
from appstack.runtime import PVC, Client, NotFound
from appstack.sdk import ChildWriter, KubeObject


async def _own(client: Client, obj: KubeObject, volume: dict[str, Any], retain: bool) -> None:
    patch = {"metadata": desired.volume_owner(obj, retain=retain)}
    meta = volume["metadata"]
    await client.patch(PVC, meta["name"], patch, namespace=meta["namespace"])


async def sync_owners(
    client: Client, obj: KubeObject, spec: EtcdClusterSpec, volumes: list[dict[str, Any]]
) -> None:
    """Member ``volumes`` owned by the cluster, or ownerless when ``retainOnDelete`` (a
    changed field re-owns or releases the volumes there are)."""
    for volume in volumes:
        going = volume["metadata"].get("deletionTimestamp")
        if not going and desired.retained(volume) != spec.retain_on_delete:
            await _own(client, obj, volume, spec.retain_on_delete)


async def delete(
    client: Client, writer: ChildWriter, obj: KubeObject, volume: dict[str, Any], why: str
) -> None:
    """Delete member ``volume`` (made the cluster's again first if it is retained)."""
    with contextlib.suppress(NotFound):
        if desired.retained(volume):
            await _own(client, obj, volume, retain=False)
        await writer.prune(obj, PVC, volume, why)
