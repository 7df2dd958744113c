"""The waves every peer is measured on, and the raw floor they are compared with.

* :func:`create_apps` / :func:`update_apps`: N AppServices of size 1 created at once (or
  their image changed), :data:`IN_FLIGHT` requests in flight;
* :class:`Watch`: informers on the namespace's AppServices, Deployments and Services;
  the AppServices are appstack's ``appstack.dev`` kind unless a peer serves its own
  (the seed's ``kosmos.io``: the same spec, so the same objects in another group);
  :meth:`Watch.converged` counts the apps whose Deployment and Service exist, are owned by
  that app (its uid) and run the wanted image — and, for a peer that writes status, whose
  ``status.observedGeneration == metadata.generation``;
* :func:`floor_create` / :func:`floor_update`: the same 2N child creates (appstack's own
  desired Deployment and Service, owner references dropped: there is no owner) and the N
  Deployment image patches, done directly: the writes no operator can avoid.

Used by :mod:`peerbench.run`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from appstack.api.appservice import AppServiceSpec
from appstack.api.namespaces import ENABLED
from appstack.controllers.appservice import APP_SERVICE, desired
from appstack.runtime import (
    DEPLOYMENT,
    NAMESPACE,
    SERVICE,
    AlreadyExists,
    Client,
    Informer,
    NotFound,
    Resource,
    ServerError,
    TooManyRequests,
    TransportError,
)

IN_FLIGHT = 64
RETRIES = 5
FIRST_IMAGE = "nginx:1.27"
SECOND_IMAGE = "nginx:1.28"
#: The Deployment's side of the update wave (a strategic merge patch of its one container).
IMAGE_PATCH = {
    "spec": {"template": {"spec": {"containers": [{"name": "app", "image": SECOND_IMAGE}]}}}
}


def app_name(i: int) -> str:
    return f"app-{i:05d}"


def app_object(
    name: str, namespace: str, image: str, resource: Resource = APP_SERVICE
) -> dict[str, Any]:
    """One app of size 1 (``resource``: the AppService kind of the peer under test)."""
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": 1, "image": image, "ports": [{"port": 80, "targetPort": 8080}]},
    }


async def retrying(send: Callable[[], Awaitable[Any]]) -> Any:
    """``send()``, sent again when the overloaded API server timed it out or throttled it
    (a create that had landed anyway then answers AlreadyExists, which counts as done:
    None)."""
    for attempt in range(RETRIES):
        try:
            return await send()
        except AlreadyExists:
            if attempt == 0:
                raise
            return None
        except (ServerError, TooManyRequests, TransportError):
            if attempt == RETRIES - 1:
                raise
            await asyncio.sleep(1.0)
    return None


async def bounded(count: int, make: Callable[[int], Awaitable[Any]], *, retry: bool = True) -> None:
    """``make(0..count-1)``, at most :data:`IN_FLIGHT` at a time, each :func:`retrying`
    (unless ``retry`` is false: ``make`` retries its own requests)."""
    sem = asyncio.Semaphore(IN_FLIGHT)

    async def one(i: int) -> None:
        async with sem:
            await (retrying(lambda: make(i)) if retry else make(i))

    await asyncio.gather(*(one(i) for i in range(count)))


async def create_namespace(client: Client, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    await client.create(
        NAMESPACE,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {ENABLED: "true"}},
        },
    )
    return name


async def delete_namespace(client: Client, name: str, timeout: float = 1800) -> float:
    """Delete a namespace and wait until it is gone (its seconds)."""
    started = time.perf_counter()
    try:
        await client.delete(NAMESPACE, name)
    except NotFound:
        return 0.0
    while time.perf_counter() - started < timeout:
        try:
            await client.get(NAMESPACE, name)
        except NotFound:
            return time.perf_counter() - started
        await asyncio.sleep(0.5)
    raise TimeoutError(f"namespace {name} still there after {timeout}s")


async def create_apps(
    client: Client, namespace: str, n: int, resource: Resource = APP_SERVICE
) -> None:
    await bounded(
        n,
        lambda i: client.create(
            resource, app_object(app_name(i), namespace, FIRST_IMAGE, resource)
        ),
    )


async def update_apps(
    client: Client, namespace: str, n: int, resource: Resource = APP_SERVICE
) -> None:
    await bounded(
        n,
        lambda i: client.patch(
            resource, app_name(i), {"spec": {"image": SECOND_IMAGE}}, namespace=namespace
        ),
    )


def _owned_by(obj: dict[str, Any] | None, uid: str) -> bool:
    refs = (obj or {}).get("metadata", {}).get("ownerReferences") or []
    return any(ref.get("uid") == uid for ref in refs)


class Watch:
    """Informers on the AppServices, Deployments and Services of one namespace."""

    def __init__(self, client: Client, namespace: str, resource: Resource = APP_SERVICE) -> None:
        self.apps = Informer(client, resource, namespace=namespace)
        self.deployments = Informer(client, DEPLOYMENT, namespace=namespace)
        self.services = Informer(client, SERVICE, namespace=namespace)
        self._informers = (self.apps, self.deployments, self.services)
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> Watch:
        self._tasks = [asyncio.create_task(i.run()) for i in self._informers]
        for informer in self._informers:
            await informer.wait_synced()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def converged(self, image: str, *, status: bool) -> int:
        return sum(
            self.app_converged(app, image, status=status) for app in self.apps.store.objects()
        )

    def app_converged(self, app: dict[str, Any] | None, image: str, *, status: bool) -> bool:
        """Whether ``app`` has its Deployment and Service, owned by it, the Deployment
        running ``image`` (and, with ``status``, its observedGeneration is its generation)."""
        if app is None:
            return False
        meta = app["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        dep = self.deployments.store.get(key)
        return bool(
            _owned_by(dep, meta["uid"])
            and _owned_by(self.services.store.get(key), meta["uid"])
            and dep is not None
            and dep["spec"]["template"]["spec"]["containers"][0]["image"] == image
            and (
                not status
                or (app.get("status") or {}).get("observedGeneration") == meta["generation"]
            )
        )

    def child_problems(self, image: str, limit: int = 5) -> list[str]:
        """What is wrong with the children of converged apps (empty: all as the spec says:
        replicas = size, the image, container port = targetPort, Service port = port)."""
        problems = []
        for app in self.apps.store.objects():
            meta, spec = app["metadata"], app["spec"]
            key = f"{meta['namespace']}/{meta['name']}"
            dep, svc = self.deployments.store.get(key), self.services.store.get(key)
            if dep is None or svc is None:
                problems.append(f"{key}: missing children")
                continue
            container = dep["spec"]["template"]["spec"]["containers"][0]
            want_ports = [(p["port"], p["targetPort"]) for p in spec["ports"]]
            got = {
                "replicas": dep["spec"].get("replicas") == spec["size"],
                "image": container["image"] == image,
                "containerPort": [p["containerPort"] for p in container.get("ports", [])]
                == [t for _, t in want_ports],
                "service ports": [(p["port"], p["targetPort"]) for p in svc["spec"]["ports"]]
                == want_ports,
            }
            problems += [f"{key}: {what} differs" for what, ok in got.items() if not ok]
        return problems[:limit]

    async def until_converged(
        self, n: int, image: str, *, status: bool, started: float, timeout: float
    ) -> float:
        """Seconds from ``started`` until :meth:`converged` reaches ``n``."""
        interval = 0.1 if n <= 2000 else 0.5
        while (done := self.converged(image, status=status)) < n:
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"only {done}/{n} converged after {timeout:.0f}s")
            await asyncio.sleep(interval)
        return time.perf_counter() - started


def _children(namespace: str, i: int) -> list[tuple[Any, dict[str, Any]]]:
    app = app_object(app_name(i), namespace, FIRST_IMAGE)
    app["metadata"]["uid"] = str(uuid.uuid4())
    spec = AppServiceSpec.model_validate(app["spec"])
    out = []
    for resource, obj in (
        (DEPLOYMENT, desired.deployment(app, spec)),
        (SERVICE, desired.service(app, spec)),
    ):
        if obj is None:
            raise AssertionError(f"appstack desires no {resource.kind} for {app}")
        obj["metadata"].pop("ownerReferences", None)
        out.append((resource, obj))
    return out


async def floor_create(client: Client, namespace: str, n: int) -> float:
    """2N creates (a Deployment and a Service per app), :data:`IN_FLIGHT` in flight."""
    objects = [child for i in range(n) for child in _children(namespace, i)]
    started = time.perf_counter()
    await bounded(len(objects), lambda k: client.create(*objects[k]))
    return time.perf_counter() - started


async def floor_update(client: Client, namespace: str, n: int) -> float:
    """N Deployment image patches (the one write an image change needs)."""
    started = time.perf_counter()
    await bounded(
        n,
        lambda i: client.patch(
            DEPLOYMENT,
            app_name(i),
            IMAGE_PATCH,
            namespace=namespace,
            patch_type="strategic",
        ),
    )
    return time.perf_counter() - started
