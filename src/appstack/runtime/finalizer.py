"""Finalizers: clean up before an object goes away (as kube-rs's ``finalizer``).

:func:`finalize` is the whole protocol for one reconcile of an object that needs cleanup:

* not being deleted → make sure the finalizer is on the object, then ``apply`` it;
* being deleted, finalizer present → ``cleanup``; when cleanup returns None (nothing left
  to wait for), remove the finalizer so the API server can delete the object;
* being deleted, finalizer already gone → nothing to do.

:func:`add` and :func:`remove` patch ``metadata.finalizers`` with the object's
``resourceVersion``: a concurrent change fails with a conflict instead of dropping someone
else's finalizer; the cache then brings the newer object and another reconcile. For a
controller whose cleanup takes several reconciles (a teardown in dependency order).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from appstack.core.resource import Resource
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.controller import Result
from appstack.runtime.resources import Obj

Step = Callable[[Obj], Awaitable[Result | None]]


def has(obj: Obj, finalizer: str) -> bool:
    """Whether ``obj`` carries ``finalizer``."""
    return finalizer in (obj["metadata"].get("finalizers") or [])


async def _set(client: Client, resource: Resource, obj: Obj, finalizers: list[str]) -> None:
    meta = obj["metadata"]
    patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
    with contextlib.suppress(errors.Conflict, errors.NotFound):
        await client.patch(resource, meta["name"], patch, namespace=meta.get("namespace"))


async def add(client: Client, resource: Resource, obj: Obj, finalizer: str) -> None:
    """Add ``finalizer`` to ``obj`` unless it is there already."""
    if not has(obj, finalizer):
        await _set(client, resource, obj, [*(obj["metadata"].get("finalizers") or []), finalizer])


async def remove(client: Client, resource: Resource, obj: Obj, finalizer: str) -> None:
    """Remove ``finalizer`` from ``obj`` if it is there."""
    if has(obj, finalizer):
        kept = [f for f in obj["metadata"]["finalizers"] if f != finalizer]
        await _set(client, resource, obj, kept)


async def finalize(
    client: Client,
    resource: Resource,
    obj: Obj,
    finalizer: str,
    *,
    apply: Step,
    cleanup: Step,
) -> Result | None:
    """One reconcile of ``obj`` guarded by ``finalizer``: not being deleted, add the
    finalizer, then ``apply(obj)``; being deleted, ``cleanup(obj)``, and once it returns
    None remove the finalizer (kube-rs's ``finalizer``; :mod:`appstack.runtime.finalizer`)."""
    if obj["metadata"].get("deletionTimestamp"):
        if not has(obj, finalizer):
            return None
        result = await cleanup(obj)
        if result is None:
            await remove(client, resource, obj, finalizer)
        return result
    await add(client, resource, obj, finalizer)
    return await apply(obj)
