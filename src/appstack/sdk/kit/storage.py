"""Storage migration of a multi-version kind: every stored object rewritten in the CRD's
storage version, then the CRD's ``status.storedVersions`` trimmed to it — what must happen
before an older version can be removed from the CRD (the API server refuses to drop a
version still listed there), done by the operator that owns the kind rather than by a
separate kube-storage-version-migrator.

:func:`migrate_storage` is level-based and idempotent: nothing to do (one GET) when the CRD
has stored only its storage version; otherwise the kind's objects are listed page by page
(nothing kept between pages) and each is written back with an empty change under its
resourceVersion — the API server re-encodes an object stored in another version and skips
the write of one already in the storage version; a 409 means someone wrote it since (so it
is re-encoded already), a 404 that it is gone. Only when every page is done, and the
storage version is still the one it started with, are the stored versions trimmed, with
the CRD's resourceVersion as precondition. :func:`storage_migration` is the operator's
leader-only task of it, one per multi-version kind (:func:`appstack.sdk.assemble` adds
it); its RBAC — ``patch`` of the CRD's ``status``, by name — is
:func:`appstack.sdk.rbac.crd_conversion_rules`. Used by operators built on the SDK.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog

from appstack.core.resource import Resource
from appstack.runtime.client import Client
from appstack.runtime.errors import Conflict, Gone, NotFound
from appstack.runtime.tasks import Task
from appstack.sdk.kind import CustomKind
from appstack.sdk.kit.conversion import CRDS

log = structlog.get_logger(__name__)

PAGE = 200


def multi_version_kinds(kinds: Sequence[CustomKind]) -> list[CustomKind]:
    """Those of ``kinds`` declared with several versions, each once."""
    return list({k.crd_name: k for k in kinds if len(k.versions) > 1}.values())


def _storage_version(crd: Mapping[str, Any]) -> str:
    return next(str(v["name"]) for v in crd["spec"]["versions"] if v.get("storage"))


async def migrate_storage(client: Client, kind: CustomKind, *, page_size: int = PAGE) -> int:
    """Rewrite ``kind``'s stored objects in its CRD's storage version and trim the CRD's
    ``storedVersions`` to it (see the module docstring); returns how many objects were
    written back (the API server stores anew only those stored in another version; 0 when
    the stored versions were trimmed already). Raises what the API server says otherwise
    (a conversion webhook not answering yet: the task tries again)."""
    crd = await client.get(CRDS, kind.crd_name)
    storage = _storage_version(crd)
    stored = list((crd.get("status") or {}).get("storedVersions") or [])
    if set(stored) <= {storage}:
        return 0
    resource = Resource(kind.group, storage, kind.kind, kind.plural, kind.namespaced)
    log.info("storage migration started", crd=kind.crd_name, stored=stored, to=storage)
    written = 0
    token: str | None = None
    while True:
        try:
            page, _, token = await client.list_page(resource, limit=page_size, token=token)
        except Gone:  # the continue token expired: from the start (written ones cost nothing)
            token = None
            continue
        for obj in page:
            meta = obj["metadata"]
            name, namespace = meta["name"], meta.get("namespace")
            unchanged = {"metadata": {"resourceVersion": meta["resourceVersion"]}}
            try:
                await client.patch(resource, name, unchanged, namespace=namespace)
            except (Conflict, NotFound):
                continue  # written since (so in the storage version), or gone
            written += 1
        if token is None:
            break
    crd = await client.get(CRDS, kind.crd_name)
    if _storage_version(crd) != storage:
        log.info("storage migration superseded", crd=kind.crd_name, was=storage)
        return written
    trim = {
        "metadata": {"resourceVersion": crd["metadata"]["resourceVersion"]},
        "status": {"storedVersions": [storage]},
    }
    await client.patch(CRDS, kind.crd_name, trim, subresource="status")
    log.info("storage migrated", crd=kind.crd_name, objects=written, stored=[storage])
    return written


def storage_migration(
    client: Client,
    kinds: Sequence[CustomKind],
    *,
    converting: Callable[[], bool] | None = None,
    poll: float = 0.5,
) -> Task | None:
    """The leader's one-off task migrating the storage of ``kinds``' multi-version ones
    (None when there is none), retried with backoff while it fails; ``converting`` says
    when this replica's conversion webhook is served (reading objects stored in another
    version goes through it): the task waits for it first."""
    migrating = multi_version_kinds(kinds)
    if not migrating:
        return None

    async def run() -> None:
        while converting is not None and not converting():
            await asyncio.sleep(poll)
        for kind in migrating:
            await migrate_storage(client, kind)

    return Task("storage-migration", run)
