"""The full floor: every write of a wave that a status-writing operator cannot avoid,
done directly by the benchmark, with no operator in between.

The floor of :mod:`peerbench.waves` (the issue's) counts only the 2N child creates (N
Deployment patches on update). A peer's wave also holds the benchmark's own N AppService
creates (patches) and, for a peer that reports status, the N status writes that
``status.observedGeneration == generation`` needs; the API server serves those too, on
the same 2 cores. Here, per app and :data:`~peerbench.waves.IN_FLIGHT` apps at a time:

* create: the AppService, then its Deployment and Service (appstack's own desired
  children, owned by it) together, then its status (``observedGeneration`` and the
  conditions appstack would write for those children) — 4 writes, in that order;
* update: the AppService's image, then the Deployment's image, then the status — 3 writes.

Timed from the first write to the last; the ratio of a peer to this says what the
operator itself adds (watch latency, queueing, its Events), the ratio to the plain
floor what the wave costs. Used by ``bench/peers.py`` (peer key ``floor-full``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from appstack.api.appservice import AppServiceSpec
from appstack.controllers.appservice import APP_SERVICE, desired, status
from appstack.runtime import DEPLOYMENT, SERVICE, Client
from peerbench.waves import (
    FIRST_IMAGE,
    IMAGE_PATCH,
    SECOND_IMAGE,
    app_name,
    app_object,
    bounded,
    retrying,
)


async def _write_status(
    client: Client,
    app: dict[str, Any],
    deployment: dict[str, Any] | None,
    service: dict[str, Any] | None,
) -> None:
    """The status appstack would write for these children (``observedGeneration`` too)."""
    meta = app["metadata"]
    observed = status.from_children(
        app,
        size=1,
        deployment=deployment,
        service_expected=True,
        service=service,
        problem=None,
        selector=f"app.kubernetes.io/instance={meta['name']}",
    )
    await retrying(
        lambda: client.patch_status(
            APP_SERVICE, meta["name"], observed.to_dict(), namespace=meta["namespace"]
        )
    )


async def _timed(n: int, one: Callable[[int], Awaitable[None]]) -> float:
    """Seconds for ``one(0..n-1)``, :data:`~peerbench.waves.IN_FLIGHT` apps at a time."""
    started = time.perf_counter()
    await bounded(n, one, retry=False)
    return time.perf_counter() - started


async def full_create(client: Client, namespace: str, n: int) -> float:
    """N apps, each: AppService, then Deployment + Service, then status."""

    async def one(i: int) -> None:
        name = app_name(i)
        app = await retrying(
            lambda: client.create(APP_SERVICE, app_object(name, namespace, FIRST_IMAGE))
        )
        if app is None:  # a retried create had landed: read what it made
            app = await client.get(APP_SERVICE, name, namespace)
        spec = AppServiceSpec.model_validate(app["spec"])
        made = []
        for resource, child in (
            (DEPLOYMENT, desired.deployment(app, spec)),
            (SERVICE, desired.service(app, spec)),
        ):
            made.append(retrying(lambda r=resource, c=child: client.create(r, c)))
        deployment, service = await asyncio.gather(*made)
        await _write_status(client, app, deployment, service)

    return await _timed(n, one)


async def full_update(client: Client, namespace: str, n: int) -> float:
    """N apps, each: the AppService's image, then the Deployment's, then status."""

    async def one(i: int) -> None:
        name = app_name(i)
        app = await retrying(
            lambda: client.patch(
                APP_SERVICE, name, {"spec": {"image": SECOND_IMAGE}}, namespace=namespace
            )
        )
        deployment = await retrying(
            lambda: client.patch(
                DEPLOYMENT, name, IMAGE_PATCH, namespace=namespace, patch_type="strategic"
            )
        )
        service = {"metadata": {"name": name}}  # exists: only its presence is read
        await _write_status(client, app, deployment, service)

    return await _timed(n, one)
