"""Which of a cluster's appstack objects belong to one install, for ``appstack uninstall
--namespace NS`` (:mod:`appstack.cli.uninstall`).

Installs in different namespaces share only the CRDs: their cluster-scoped objects are
named after their namespace (:func:`appstack.manifests.rbac.cluster_name`). One install is
its operator's namespace, the Roles in the namespaces it watches (read from its
Deployment's ``--namespace`` arguments) and its own cluster-scoped RBAC and admission
policies — exactly what :func:`appstack.manifests.install.install` generates for it. Other
installs are found by their ServiceAccount (with the install's labels): any but
``appstack-operator`` in ``NS`` — a Helm release's is ``<fullname>-operator``, in any
namespace, ``NS`` included; while one remains, the CRDs and the custom resources outside
the removed install's watched namespaces stay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from appstack.manifests import rbac
from appstack.manifests.crds import LABELS, crd_names
from appstack.manifests.install import InstallOptions, install
from appstack.runtime import DEPLOYMENT, SERVICE_ACCOUNT, Client, NotFound

# part-of only: a Helm release labels its objects managed-by=Helm (the chart's labels), and an
# uninstall must still see (and spare) a Helm install in another namespace.
PART_OF = "app.kubernetes.io/part-of"
SELECTOR = f"{PART_OF}={LABELS[PART_OF]}"
WATCH_FLAG = "--namespace="
OWN_CRDS = frozenset(crd_names())

Key = tuple[str, str, str | None]  # kind, name, namespace


@dataclass(frozen=True)
class Scope:
    """What an uninstall may remove. ``namespace`` None: every install (all of appstack)."""

    namespace: str | None = None
    watched: tuple[str, ...] = ()  # the install's watched namespaces (empty: all)
    others: tuple[str, ...] = ()  # namespaces of the installs that stay
    own: frozenset[Key] = frozenset()  # the install's RBAC, admission and workload objects

    @property
    def alone(self) -> bool:
        """No other install stays: everything of appstack goes, the CRDs included."""
        return not self.others

    def removes_custom_resources_in(self, namespace: str | None) -> bool:
        """Custom resources everywhere when alone; else only in the watched namespaces (a
        cluster-wide install next to others leaves them to the others)."""
        return self.alone or namespace in self.watched

    @property
    def shares_its_namespace(self) -> bool:
        """Another install (a Helm release beside this one) lives in the same namespace:
        then only this install's own objects go, and the Namespace stays."""
        return self.namespace is not None and self.namespace in self.others

    def owns(self, kind: str, name: str, namespace: str | None) -> bool:
        """Whether the install's object ``kind`` ``namespace/name`` goes. A CRD goes only if
        it is one of appstack's own kinds (by name: a CRD another operator generated with
        the SDK, or labelled like ours by hand, is never ours to delete)."""
        if kind == "CustomResourceDefinition":
            return name in OWN_CRDS and self.alone
        if self.namespace is None:
            return True
        if kind == "Namespace":
            return name == self.namespace and not self.shares_its_namespace
        if self.shares_its_namespace:
            return (kind, name, namespace) in self.own
        return namespace == self.namespace or (kind, name, namespace) in self.own


def watched_namespaces(deployment: dict[str, Any]) -> tuple[str, ...]:
    """The ``--namespace=`` arguments of the operator's container (none: all)."""
    containers = deployment["spec"]["template"]["spec"]["containers"]
    args = [a for c in containers for a in c.get("args", [])]
    return tuple(a.removeprefix(WATCH_FLAG) for a in args if a.startswith(WATCH_FLAG))


async def discover(client: Client, namespace: str | None) -> Scope:
    """The scope of removing the install in ``namespace`` (None: every install)."""
    if namespace is None:
        return Scope()
    accounts, _ = await client.list(SERVICE_ACCOUNT, label_selector=SELECTOR)
    # any other ServiceAccount of ours is another install: a Helm release named otherwise
    # (<fullname>-operator), in another namespace or beside this one in the same
    others = sorted(
        {
            str(a["metadata"]["namespace"])
            for a in accounts
            if (a["metadata"]["namespace"], a["metadata"]["name"]) != (namespace, rbac.NAME)
        }
    )
    try:
        watched = watched_namespaces(await client.get(DEPLOYMENT, rbac.NAME, namespace))
    except NotFound:
        watched = ()
    parts = install(InstallOptions(namespace=namespace, watch_namespaces=watched))
    workload = (parts.service_account, parts.deployment, parts.budget, parts.metrics_service)
    own = frozenset(
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
        for o in (*parts.rbac, *parts.admission, *workload)
    )
    return Scope(namespace, watched, tuple(others), own)
