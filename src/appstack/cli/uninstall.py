"""``appstack uninstall``: remove appstack from a cluster without leaving anything stuck.

First the server is asked whether it is a Kubernetes API server at all
(:func:`~appstack.cli.status_kinds.require_api_server`): a proxy's or web server's 200 would
otherwise read as "nothing installed" and end in a false success. Then, in this order, each
step waiting until the previous one is gone:

1. every custom resource of every registered kind, in all namespaces, deleted with
   foreground propagation — so each waits for its children (which block their owner's
   deletion) — and finalized by the operator, **which must still be running**;
2. the operator: its Deployment, then the rest of what the install created (Service,
   RBAC, ServiceAccount, ...), found by the install's labels in every namespace;
3. the CRDs, and last the operator's Namespace.

While a step waits it says, every few seconds, what it still waits for and how many
remain (:func:`waiting_line`). If custom resources are still there after ``timeout`` (the
operator is not running, so nobody removes their finalizers), it stops before step 2 and
says which ones and why: the operator and the CRDs stay, nothing is left Terminating
without an owner to finish it.

With ``namespace`` only the install in that namespace goes (:mod:`appstack.cli.uninstall_scope`):
the custom resources in the namespaces it watches, its operator and its own RBAC and
policies; the CRDs too only when no other install remains.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from appstack.cli.status_kinds import require_api_server
from appstack.cli.uninstall_scope import SELECTOR, discover
from appstack.controllers.registry import ALL
from appstack.core.resource import Resource
from appstack.manifests.install import InstallOptions, install
from appstack.runtime import DEPLOYMENT, NAMESPACE, PDB, SERVICE, SERVICE_ACCOUNT, Client, NotFound

_RBAC = "rbac.authorization.k8s.io"
CRD = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
# What an install may create, by kind (a unit test checks every kind install() emits is here).
_ADMISSION = "admissionregistration.k8s.io"
INSTALLED: dict[str, Resource] = {
    "Deployment": DEPLOYMENT,
    "PodDisruptionBudget": PDB,
    "HorizontalPodAutoscaler": Resource(
        "autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"
    ),
    "Service": SERVICE,
    "ServiceAccount": SERVICE_ACCOUNT,
    "Role": Resource(_RBAC, "v1", "Role", "roles"),
    "RoleBinding": Resource(_RBAC, "v1", "RoleBinding", "rolebindings"),
    "ClusterRole": Resource(_RBAC, "v1", "ClusterRole", "clusterroles", False),
    "ClusterRoleBinding": Resource(_RBAC, "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    "ValidatingAdmissionPolicy": Resource(
        _ADMISSION, "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", False
    ),
    "ValidatingAdmissionPolicyBinding": Resource(
        _ADMISSION,
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        False,
    ),
    "FlowSchema": Resource(
        "flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", False
    ),
    "CustomResourceDefinition": CRD,
    "Namespace": NAMESPACE,
}


class UninstallError(Exception):
    """Custom resources did not go away in time; nothing else was deleted."""


@dataclass(frozen=True)
class Found:
    resource: Resource
    name: str
    namespace: str | None
    finalizers: tuple[str, ...]

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.resource.kind} {where}{self.name} (finalizers: {list(self.finalizers)})"


def removal_order() -> list[Resource]:
    """The kinds an install creates (any variant: cluster-wide, namespaced, autoscaled), in
    reverse order of creation: the
    Deployment first, the CRDs and then the Namespace last."""
    kinds = [
        obj["kind"]
        for options in (
            InstallOptions(),
            InstallOptions(watch_namespaces=("watched",)),
            InstallOptions(shards=2, autoscale=(2, 4)),
        )
        for obj in reversed(install(options).objects())
    ]
    last = ("CustomResourceDefinition", "Namespace")
    ordered = sorted(
        dict.fromkeys(["Deployment", *kinds]), key=lambda k: last.index(k) + 1 if k in last else 0
    )
    return [INSTALLED[kind] for kind in ordered]


async def _find(client: Client, resource: Resource, selector: str | None = None) -> list[Found]:
    try:
        items, _ = await client.list(resource, label_selector=selector)
    except NotFound:  # the kind is not served (CRD already gone)
        return []
    return [
        Found(
            resource,
            item["metadata"]["name"],
            item["metadata"].get("namespace"),
            tuple(item["metadata"].get("finalizers") or ()),
        )
        for item in items
    ]


async def _delete_all(
    client: Client, found: list[Found], say: Callable[[str], None], propagation: str
) -> None:
    for item in found:
        if await client.delete(item.resource, item.name, item.namespace, propagation=propagation):
            say(f"deleted {item}")


def waiting_line(left: list[Found], elapsed: float, timeout: float, shown: int = 3) -> str:
    """What a wait is waiting for: how many of each kind remain, the first few by name."""
    counts = Counter(f.resource.kind for f in left)
    kinds = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    names = ", ".join(f"{f.namespace}/{f.name}" if f.namespace else f.name for f in left[:shown])
    more = f" and {len(left) - shown} more" if len(left) > shown else ""
    return f"waiting for {kinds} to go ({elapsed:.0f}s of {timeout:.0f}s): {names}{more}"


@dataclass(frozen=True)
class Wait:
    """How long a step may wait, and how often it says what it still waits for."""

    timeout: float
    say: Callable[[str], None]
    every: float = 5.0


async def _wait_gone(
    client: Client,
    resources: list[Resource],
    wait: Wait,
    selector: str | None = None,
    keep: Callable[[Found], bool] = lambda _: True,
) -> list[Found]:
    """What is left of ``resources`` (those ``keep`` selects) after waiting up to
    ``wait.timeout`` for it to go; every ``wait.every`` seconds, what remains is said."""
    start = time.monotonic()
    next_report = start + wait.every
    while True:
        left = [f for r in resources for f in await _find(client, r, selector) if keep(f)]
        now = time.monotonic()
        if not left or now - start > wait.timeout:
            return left
        if now >= next_report:
            wait.say(waiting_line(left, now - start, wait.timeout))
            next_report = now + wait.every
        await asyncio.sleep(0.5)


async def uninstall(
    client: Client,
    say: Callable[[str], None],
    timeout: float = 300,
    namespace: str | None = None,
    progress_every: float = 5.0,
) -> None:
    """Custom resources, then the operator, then the CRDs (see the module docstring); only
    the install in ``namespace`` when given. While a step waits, what it still waits for is
    said every ``progress_every`` seconds."""
    await require_api_server(client)
    wait = Wait(timeout, say, progress_every)
    scope = await discover(client, namespace)
    if not scope.alone:
        say(f"other installs stay (namespaces {', '.join(scope.others)}): the CRDs are kept")

    def custom_resource(found: Found) -> bool:
        return scope.removes_custom_resources_in(found.namespace)

    def installed(found: Found) -> bool:
        return scope.owns(found.resource.kind, found.name, found.namespace)

    custom = [controller.kind.resource for controller in ALL]
    objects = [f for r in custom for f in await _find(client, r) if custom_resource(f)]
    await _delete_all(client, objects, say, "Foreground")
    left = await _wait_gone(client, custom, wait, keep=custom_resource)
    if left:
        raise UninstallError(
            f"{len(left)} custom resource(s) still there after {timeout:.0f}s; the operator "
            "must run to finalize them (the operator and the CRDs were left in place):\n  "
            + "\n  ".join(str(f) for f in left)
        )
    for resource in removal_order():
        found = [f for f in await _find(client, resource, SELECTOR) if installed(f)]
        await _delete_all(client, found, say, "Foreground")
        left = await _wait_gone(client, [resource], wait, SELECTOR, keep=installed)
        if left:
            raise UninstallError("still there: " + ", ".join(str(f) for f in left))
