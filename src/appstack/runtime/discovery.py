"""Which kinds the API server serves, and waiting for one to be served again.

Asked once before the informers start (:func:`unserved`, by its discovery documents): a
kind that is not served — its CRD not installed, or an older CRD without that version —
would otherwise make its informer retry list/watch forever ("list/watch failed, retrying")
while the process looks alive. An operator asks it at start-up and stops with one clear
error naming the missing CRDs (:func:`crd_names`), or waits for those others install.

After start-up a CRD may still go (deleted) and come back: an informer whose LIST is
answered ``404`` empties its cache and awaits :func:`wait_served` — a watch of that one
CRD object (``fieldSelector=metadata.name=<plural>.<group>``) until it serves the kind's
version — before it lists again (:class:`~appstack.runtime.informer.Informer`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from appstack.core.resource import Resource
from appstack.runtime import errors
from appstack.runtime.client import Client

log = structlog.get_logger(__name__)

#: The CustomResourceDefinitions (cluster-scoped).
CRD = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
#: :func:`wait_served` returns after this many seconds at most (its watch's timeout), so that
#: the informer asks again by a LIST: a kind no CRD serves (a built-in API the server
#: stopped serving) is asked about this often, after the informer's backoff.
RECHECK = 290


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


def crd_serves(crd: Mapping[str, Any] | None, resource: Resource) -> bool:
    """Whether ``crd`` (a CustomResourceDefinition object, or None) serves ``resource``:
    not being deleted, ``Established``, and ``resource``'s version among its served ones."""
    if not isinstance(crd, Mapping):
        return False
    if (crd.get("metadata") or {}).get("deletionTimestamp"):
        return False
    spec, status = crd.get("spec") or {}, crd.get("status") or {}
    established = any(
        isinstance(c, Mapping) and c.get("type") == "Established" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    served = any(
        isinstance(v, Mapping) and v.get("name") == resource.version and v.get("served")
        for v in spec.get("versions") or []
    )
    return established and served


async def wait_served(client: Client, resource: Resource, *, recheck: int = RECHECK) -> bool:
    """Wait until the CRD of ``resource`` (``<plural>.<group>``) comes to serve it, watching
    that one object; True then — list at once. False when waiting tells nothing: the CRD
    serves the kind already (a LIST was just answered 404: the API server is not there yet,
    list after a backoff), it cannot be read (not allowed to, or the API server not
    reached: a LIST, after a backoff, is the probe), or ``recheck`` seconds passed (a
    built-in kind has no CRD: ask by a LIST now and then). Never raises but for
    cancellation."""
    name = f"{resource.plural}.{resource.group}"
    selector = f"metadata.name={name}"
    try:
        items, version, _ = await client.list_page(CRD, field_selector=selector, limit=1)
        if any(crd_serves(item, resource) for item in items):
            return False
        async for event in client.watch(
            CRD,
            resource_version=version,
            field_selector=selector,
            timeout_seconds=recheck,
            inactivity_timeout=recheck + 30.0,  # one CRD's watch may see no bookmark
        ):
            if event.get("type") in ("ADDED", "MODIFIED") and crd_serves(
                event.get("object"), resource
            ):
                return True
    except (errors.ApiError, errors.TransportError) as error:
        log.debug("cannot watch the CRD, listing instead", crd=name, error=str(error))
    return False
