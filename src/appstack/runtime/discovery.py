"""Which kinds the API server serves (its discovery documents), asked once before the
informers start: a kind that is not served — its CRD not installed, or an older CRD
without that version — would otherwise make its informer retry list/watch forever
("list/watch failed, retrying") while the process looks alive. An operator asks it at
start-up and stops with one clear error naming the missing CRDs (:func:`crd_names`).
"""

from __future__ import annotations

from collections.abc import Iterable

from appstack.core.resource import Resource
from appstack.runtime import errors
from appstack.runtime.client import Client


async def unserved(client: Client, resources: Iterable[Resource]) -> list[Resource]:
    """Those of ``resources`` the API server does not serve (by group/version discovery;
    a group/version it does not know at all serves none of them)."""
    by_version: dict[str, list[Resource]] = {}
    for resource in resources:
        by_version.setdefault(resource.api_version, []).append(resource)
    missing: list[Resource] = []
    for api_version, wanted in by_version.items():
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            document = await client.request("GET", path)
        except errors.NotFound:
            missing += wanted
            continue
        served = {r.get("name") for r in document.get("resources") or []}
        missing += [r for r in wanted if r.plural not in served]
    return missing


def crd_names(resources: Iterable[Resource]) -> list[str]:
    """The CRD names (``<plural>.<group>``) of ``resources``, sorted, without repeats."""
    return sorted({f"{r.plural}.{r.group}" for r in resources})
