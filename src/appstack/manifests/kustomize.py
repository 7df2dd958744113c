"""deploy/ as a kustomize base whose overlays name the cluster-scoped objects after their own
namespace (pure; used by :mod:`.bundle`).

Cluster-scoped objects are named after the install's namespace
(``appstack-operator-<namespace>``, :func:`.rbac.cluster_name`), so that two installs never
share one. An overlay's ``namespace: team-a`` moves the namespaced objects but renames
nothing, so every overlay kept ``-appstack-system``: two overlays (team-a, team-b)
overwrote each other's ClusterRoleBinding (the second install's subject replaced the
first's, and the first operator lost its rights), and the Lease FlowSchema kept naming
``appstack-system``'s ServiceAccount (the operator's Lease requests lost their priority).

``replacements`` in the base cannot fix that: kustomize builds a base completely, its
replacements included, before the overlay's ``namespace`` applies, so they only ever see
``appstack-system``. What kustomize resolves at the end of the outermost build, after every
overlay's transformers, are ``vars``. So in the base's resource files (:func:`template`) the
install's namespace inside a cluster-scoped object is the var :data:`TOKEN` — the suffix of
the object's name, every reference to that name (a binding's ``roleRef.name``, a policy
binding's ``spec.policyName``) and a ``namespace`` field (the FlowSchema's subject) — and
its value is the namespace of the operator's ServiceAccount (:data:`VAR`), which the
overlay's ``namespace`` sets. Where the var stands is found by walking the objects, and
declared by kind as ``varReference`` (:func:`var_references`, in ``kustomizeconfig``): a new
cluster-scoped object or kind is covered without a list to edit. ``kubectl kustomize
deploy`` resolves the var to the namespace deploy/ was generated for (exactly install.yaml);
an overlay to its own (a ``namePrefix`` too: references follow the renames first). The
base's own files under rbac/ and admission/ therefore hold the var and are kustomize's to
read; install.yaml, operator.yaml and the CRDs stay literal, so ``kubectl apply -f
deploy/`` is unchanged. An overlay that patches one of these objects targets its name in
the base, var and all (a target's name is a regular expression:
``appstack-operator-\\$\\(APPSTACK_NAMESPACE\\)``). kustomize warns that ``vars`` are
deprecated (``replacements`` have no way past a base); kubectl 1.30's kustomize (v5.0) and
1.36's (v5.8) both resolve them: tests/e2e/test_kustomize.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from appstack.manifests import rbac

VAR_NAME = "APPSTACK_NAMESPACE"
TOKEN = f"$({VAR_NAME})"
#: The namespace of the operator's ServiceAccount, at the end of the outermost build.
VAR: dict[str, Any] = {
    "name": VAR_NAME,
    "objref": {"apiVersion": "v1", "kind": "ServiceAccount", "name": rbac.NAME},
    "fieldref": {"fieldpath": "metadata.namespace"},
}
#: Cluster-scoped, but not the install's own: shared by every install (the CRDs), or
#: renamed by kustomize's ``namespace`` itself (the Namespace).
SHARED_KINDS = frozenset({"CustomResourceDefinition", "Namespace"})
#: RBAC subjects: kustomize's ``namespace`` moves those of the ServiceAccount already, and a
#: ``namePrefix`` renames them only while their namespace names the ServiceAccount's.
RBAC_SUBJECTS = ("subjects", "namespace")

Obj = dict[str, Any]
FieldSpec = dict[str, str]


def cluster_scoped(obj: Obj) -> bool:
    """Whether ``obj`` is one of the install's own cluster-scoped objects (it names none)."""
    return "namespace" not in obj["metadata"] and obj["kind"] not in SHARED_KINDS


def _group(obj: Obj) -> str:
    api_version: str = obj["apiVersion"]
    return api_version.rpartition("/")[0]


def template(objects: Iterable[Obj], namespace: str) -> tuple[list[Obj], list[FieldSpec]]:
    """``objects`` with ``namespace`` replaced by :data:`TOKEN` in the names of the
    cluster-scoped ones, the references to those names, and the ``namespace`` fields inside
    them; and where it was put (kustomize fieldSpecs: kind, group, path)."""
    objects = list(objects)
    suffix = f"-{namespace}"
    renamed = {
        obj["metadata"]["name"]: obj["metadata"]["name"].removesuffix(namespace) + TOKEN
        for obj in objects
        if cluster_scoped(obj) and obj["metadata"]["name"].endswith(suffix)
    }
    used: dict[tuple[str, str, str], FieldSpec] = {}

    def walk(value: Any, path: tuple[str, ...], obj: Obj) -> Any:
        if isinstance(value, dict):
            return {key: walk(item, (*path, key), obj) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item, path, obj) for item in value]
        new = value
        if value in renamed and (cluster_scoped(obj) or path != ("metadata", "name")):
            new = renamed[value]
        elif (
            value == namespace
            and cluster_scoped(obj)
            and path[-1] == "namespace"
            and path != RBAC_SUBJECTS
        ):
            new = TOKEN
        if new != value:
            spec = {"kind": obj["kind"], "group": _group(obj), "path": "/".join(path)}
            used[spec["kind"], spec["group"], spec["path"]] = spec
        return new

    templated = [walk(obj, (), obj) for obj in objects]
    return templated, [used[key] for key in sorted(used)]


def var_references(specs: Iterable[FieldSpec]) -> list[FieldSpec]:
    """kustomize ``varReference`` entries for :func:`template`'s fieldSpecs (the core
    group is spelt by leaving it out)."""
    return [
        {"path": s["path"], "kind": s["kind"], **({"group": s["group"]} if s["group"] else {})}
        for s in specs
    ]
