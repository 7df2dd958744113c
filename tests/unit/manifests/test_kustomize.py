"""deploy/ as a kustomize base whose overlays rename the cluster-scoped objects
(manifests/kustomize.py; built by kubectl in tests/e2e/test_kustomize.py): checked on the
generated files, without kustomize."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import yaml

from appstack.manifests import bundle, kustomize, rbac
from appstack.manifests.install import InstallOptions, install

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the same objects, faster


def _strings(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every string in ``value``, with its kustomize path (list indices left out)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, path)
    elif isinstance(value, str):
        yield path, value


@functools.cache
def _files(options: InstallOptions) -> dict[str, str]:
    return bundle.render(options)


def _base(options: InstallOptions) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """The base's objects (the Kustomization's resources), its Kustomization and config."""
    files = _files(options)
    kustomization = yaml.safe_load(files[bundle.KUSTOMIZATION])
    config = yaml.safe_load(files[bundle.NAME_REFERENCES])
    objects = [
        obj
        for path in kustomization["resources"]
        if not path.startswith("crds/")  # every install's, literal (checked below)
        for obj in yaml.load_all(files[path], Loader=LOADER)
        if obj
    ]
    return objects, kustomization, config


def _resolved(value: Any, namespace: str) -> Any:
    """``value`` with the var substituted, as kustomize does in the fields it is told of."""
    if isinstance(value, dict):
        return {key: _resolved(item, namespace) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolved(item, namespace) for item in value]
    return value.replace(kustomize.TOKEN, namespace) if isinstance(value, str) else value


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


OPTIONS = [
    InstallOptions(),
    InstallOptions(namespace="team-ops"),
    InstallOptions(namespace="tenant-ops", watch_namespaces=("tenant-a", "tenant-b")),
]


def test_the_base_resolves_to_exactly_the_install() -> None:
    """What ``kubectl kustomize`` of the base makes (the var is the ServiceAccount's
    namespace): install.yaml, for deploy/ and for ``appstack manifests -o DIR`` of any
    namespace, cluster-wide or namespaced."""
    for options in OPTIONS:
        objects, kustomization, _ = _base(options)
        ((var),) = kustomization["vars"]
        assert var == kustomize.VAR
        (account,) = [o for o in objects if o["kind"] == var["objref"]["kind"]]
        assert account["metadata"]["name"] == var["objref"]["name"]
        resolved = _resolved(objects, account["metadata"]["namespace"])
        wanted = [o for o in install(options).objects() if o["kind"] != "CustomResourceDefinition"]
        assert sorted(resolved, key=_key) == sorted(wanted, key=_key)
        assert kustomize.TOKEN not in _files(options)["install.yaml"]


def test_every_cluster_scoped_object_is_named_after_the_overlays_namespace() -> None:
    """Found by scope, not by a list: whatever the install generates (new admission
    policies included) carries the var in its name, and the install's namespace is left
    nowhere in it — not in a CEL expression either, where no var reaches."""
    for options in OPTIONS:
        objects, _, _ = _base(options)
        scoped = [o for o in objects if kustomize.cluster_scoped(o)]
        assert {o["kind"] for o in scoped} >= {"ClusterRole", "ValidatingAdmissionPolicy"}
        for obj in scoped:
            assert obj["metadata"]["name"].endswith(f"-{kustomize.TOKEN}"), _key(obj)
            left = [
                path
                for path, text in _strings(obj)
                if options.namespace in text and path != kustomize.RBAC_SUBJECTS
            ]
            assert not left, (_key(obj), left)
        names = {o["metadata"]["name"] for o in scoped}
        for obj in objects:
            if obj["kind"] in {"ClusterRoleBinding", "RoleBinding"}:
                ref = obj["roleRef"]
                assert ref["kind"] == "Role" or ref["name"] in names, _key(obj)
            if obj["kind"] == "ValidatingAdmissionPolicyBinding":
                assert obj["spec"]["policyName"] in names, _key(obj)


def test_every_place_of_the_var_is_declared_to_kustomize() -> None:
    """kustomize substitutes a var only in the fields its ``varReference`` lists; one left
    out would stay ``$(APPSTACK_NAMESPACE)`` in the cluster."""
    for options in OPTIONS:
        objects, _, config = _base(options)
        declared = {(r["kind"], r["path"]) for r in config["varReference"]}
        used = {
            (obj["kind"], "/".join(path))
            for obj in objects
            for path, text in _strings(obj)
            if kustomize.TOKEN in text
        }
        assert used, options
        assert used == declared, options
    objects, _, _ = _base(InstallOptions())
    (flow,) = [o for o in objects if o["kind"] == "FlowSchema"]
    (subject,) = flow["spec"]["rules"][0]["subjects"]
    assert subject["serviceAccount"] == {"name": rbac.NAME, "namespace": kustomize.TOKEN}


def test_only_the_bases_files_carry_the_var() -> None:
    """``kubectl apply -f deploy/`` applies install.yaml and operator.yaml: literal."""
    files = _files(InstallOptions())
    carrying = {path for path, text in files.items() if kustomize.TOKEN in text}
    resources = set(yaml.safe_load(files[bundle.KUSTOMIZATION])["resources"])
    assert carrying
    assert carrying <= resources
    assert not [p for p in carrying if p.startswith("crds/") or "/" not in p]
