"""deploy/ is a kustomize base: ``kubectl kustomize deploy`` yields exactly the objects of
install.yaml, and an overlay can change the image and the namespace the usual way.

An overlay's ``namespace`` also names its cluster-scoped objects (issue #34, P2): two
overlays (team-a, team-b) share none, each binding points at its own overlay's role or
policy, and each FlowSchema names its own overlay's ServiceAccount — before, both kept
``-appstack-system`` and the second overwrote the first's ClusterRoleBinding (manifests/
kustomize.py). Built with the session's kubectl: 1.36's kustomize, and 1.30's in the
oldest-version session (``make e2e-oldest``).

A scaffolded project's config/ with its cert-manager Component turned on builds with every
name lined up (issue #49; the Component: appstack.sdk.config).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import yaml

from appstack.manifests import rbac
from appstack.manifests.install import install
from appstack.runtime import Verdict, allow
from appstack.sdk import (
    CustomObject,
    KubeModel,
    Validator,
    Version,
    WebhookReview,
    config,
    custom_kind,
    versioned_kind,
)
from appstack_testbed.pytest_plugin import ClusterHandle
from tests.support.guestbook import PROJECT as GUESTBOOK

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
#: The kinds of the base's own cluster-scoped objects (the CRDs are every install's).
CLUSTER_KINDS = {
    obj["kind"]
    for obj in install().objects()
    if "namespace" not in obj["metadata"] and obj["kind"] != "CustomResourceDefinition"
}


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def _kustomize(kube_cluster: ClusterHandle, directory: Path) -> list[dict[str, Any]]:
    out = kube_cluster.require_local().kubectl("kustomize", str(directory)).stdout
    return sorted(yaml.safe_load_all(out), key=_key)


def test_kubectl_kustomize_of_deploy_is_the_install(kube_cluster: ClusterHandle) -> None:
    built = _kustomize(kube_cluster, DEPLOY)
    assert built == sorted(install().objects(), key=_key)


def test_an_overlay_sets_the_image_and_namespace(
    kube_cluster: ClusterHandle, tmp_path: Path
) -> None:
    shutil.copytree(DEPLOY, tmp_path / "base")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": ["../base"],
                "namespace": "platform-ops",
                "images": [{"name": "appstack", "newName": "reg.example/appstack", "newTag": "9"}],
            }
        )
    )
    built = {_key(o)[:2]: o for o in _kustomize(kube_cluster, tmp_path / "overlay")}
    deployment = built["Deployment", "platform-ops"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "reg.example/appstack:9"
    binding = built["ClusterRoleBinding", ""]
    assert binding["subjects"][0]["namespace"] == "platform-ops"


def _overlays(tmp_path: Path, *namespaces: str) -> dict[str, Path]:
    """A copy of deploy/ and, per namespace, an overlay of it with only ``namespace:``."""
    shutil.copytree(DEPLOY, tmp_path / "base", dirs_exist_ok=True)
    overlays = {}
    for namespace in namespaces:
        overlays[namespace] = tmp_path / namespace
        overlays[namespace].mkdir()
        (overlays[namespace] / "kustomization.yaml").write_text(
            yaml.safe_dump({"resources": ["../base"], "namespace": namespace})
        )
    return overlays


def _cluster_scoped(built: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """kind -> the overlay's objects of the base's cluster-scoped kinds (kustomize gives
    some of them a ``metadata.namespace`` it does not know better of: by kind, not by it)."""
    kinds: dict[str, list[dict[str, Any]]] = {kind: [] for kind in CLUSTER_KINDS}
    for obj in built:
        if obj["kind"] in kinds:
            kinds[obj["kind"]].append(obj)
    return kinds


def _names(objects: list[dict[str, Any]]) -> set[str]:
    return {o["metadata"]["name"] for o in objects}


def test_two_overlays_name_their_cluster_scoped_objects_after_their_namespace(
    kube_cluster: ClusterHandle, tmp_path: Path
) -> None:
    overlays = _overlays(tmp_path, "team-a", "team-b")
    built = {ns: _kustomize(kube_cluster, directory) for ns, directory in overlays.items()}
    names = {}
    for namespace, objects in built.items():
        assert rbac.NAMESPACE not in yaml.safe_dump_all(objects), namespace  # no trace left
        scoped = _cluster_scoped(objects)
        names[namespace] = {(kind, name) for kind, objs in scoped.items() for name in _names(objs)}
        for kind, name in names[namespace]:
            assert name.endswith(f"-{namespace}") or kind == "Namespace", (kind, name)
        # every binding points at its own overlay's role or policy
        roles = _names(scoped["ClusterRole"])
        for binding in scoped["ClusterRoleBinding"]:
            assert binding["roleRef"]["name"] in roles, binding["metadata"]["name"]
            assert {s["namespace"] for s in binding["subjects"]} == {namespace}
        policies = _names(scoped["ValidatingAdmissionPolicy"])
        assert scoped["ValidatingAdmissionPolicyBinding"]
        for binding in scoped["ValidatingAdmissionPolicyBinding"]:
            assert binding["spec"]["policyName"] in policies, binding["metadata"]["name"]
        # the Lease FlowSchema names this overlay's ServiceAccount
        (flow,) = scoped["FlowSchema"]
        subjects = [s for rule in flow["spec"]["rules"] for s in rule["subjects"]]
        assert [s["serviceAccount"] for s in subjects] == [
            {"name": rbac.NAME, "namespace": namespace}
        ]
    assert names["team-a"], "no cluster-scoped objects found"
    assert not names["team-a"] & names["team-b"]


def test_both_overlays_rbac_is_accepted_by_the_api_server(
    kube_cluster: ClusterHandle, tmp_path: Path
) -> None:
    """Their ClusterRoles, ClusterRoleBindings and FlowSchemas, server-side dry run: the
    names the var makes are valid, and nothing is written."""
    cluster = kube_cluster.require_local()
    for namespace, directory in _overlays(tmp_path, "team-a", "team-b").items():
        objects = [
            o
            for o in _kustomize(kube_cluster, directory)
            if o["apiVersion"].split("/")[0]
            in {"rbac.authorization.k8s.io", "flowcontrol.apiserver.k8s.io"}
            and o["kind"] in CLUSTER_KINDS
        ]
        applied = cluster.kubectl(
            "apply",
            "--server-side",
            "--dry-run=server",
            "--field-manager=test-kustomize",
            "-f",
            "-",
            stdin=yaml.safe_dump_all(objects),
        ).stdout
        assert applied.count("(server dry run)") == len(objects), applied
        assert f"clusterrolebinding.rbac.authorization.k8s.io/{rbac.NAME}-{namespace}" in applied


class _RenamedSpec(KubeModel):
    replicas: int = 1


class _OldSpec(KubeModel):
    size: int = 1


class _DialStatus(KubeModel):
    seen: bool | None = None


@custom_kind(group="kustomize.example.com", plural="dials", version="v1alpha1", kind="Dial")
class _DialV1alpha1(CustomObject):
    spec: _OldSpec
    status: _DialStatus | None = None


@custom_kind(group="kustomize.example.com", plural="dials", kind="Dial")
class _Dial(CustomObject):
    spec: _RenamedSpec
    status: _DialStatus | None = None


_DIAL = versioned_kind(
    Version(_Dial, storage=True),
    Version(
        _DialV1alpha1,
        to_hub=lambda old: _Dial(metadata=old.metadata, spec=_RenamedSpec(replicas=old.spec.size)),
        from_hub=lambda new: _DialV1alpha1(
            metadata=new.metadata, spec=_OldSpec(size=new.spec.replicas)
        ),
    ),
)


def _allow(review: WebhookReview) -> Verdict:
    return allow()


def test_a_projects_cert_manager_component_builds_with_every_name_lined_up(
    kube_cluster: ClusterHandle, tmp_path: Path
) -> None:
    """A project's config/ (a validating webhook, a kind whose versions convert) built with
    kubectl's kustomize, config/default's cert-manager line uncommented: the Issuer, the
    Certificate for the webhook Service's names, its Secret mounted at --webhook-cert-dir,
    the CA injector's annotation naming the Certificate on the webhook configuration and on
    the converting CRD — final names, after config/default's prefix and namespace. With the
    line commented (as generated), none of it."""
    (registration,) = GUESTBOOK.controllers
    project = dataclasses.replace(
        GUESTBOOK,
        controllers=[dataclasses.replace(registration, webhooks=(Validator(_allow),))],
        kinds=[*GUESTBOOK.kinds, _DIAL],
    )
    config_dir = tmp_path / "config"
    for relative, text in config.config_files(project).items():
        (config_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        (config_dir / relative).write_text(text)
    plain = {_key(o): o for o in _kustomize(kube_cluster, config_dir / "default")}
    assert not [key for key in plain if key[0] in ("Issuer", "Certificate")]
    default = config_dir / "default" / "kustomization.yaml"
    line = config.CERT_MANAGER_LINE
    default.write_text(default.read_text().replace(line, line.removeprefix("#")))
    built = _kustomize(kube_cluster, config_dir / "default")

    def one(kind: str) -> dict[str, Any]:
        (found,) = [o for o in built if o["kind"] == kind]
        return found

    issuer, certificate = one("Issuer"), one("Certificate")
    namespace = "guestbook-system"
    assert issuer["metadata"]["namespace"] == certificate["metadata"]["namespace"] == namespace
    assert certificate["spec"]["issuerRef"]["name"] == issuer["metadata"]["name"]
    service = next(
        o for o in built if o["kind"] == "Service" and "webhook" in o["metadata"]["name"]
    )
    svc = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert certificate["spec"]["dnsNames"] == [svc, f"{svc}.cluster.local"]
    pod = one("Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert f"--webhook-cert-dir={config.CERT_DIR}" in container["args"]
    (mount,) = container["volumeMounts"]
    (volume,) = pod["volumes"]
    assert (mount["name"], mount["mountPath"]) == (volume["name"], config.CERT_DIR)
    assert volume["secret"]["secretName"] == certificate["spec"]["secretName"]
    injected = {"cert-manager.io/inject-ca-from": f"{namespace}/{certificate['metadata']['name']}"}
    dial = next(o for o in built if o["metadata"]["name"] == _DIAL.crd_name)
    for annotated in (one("ValidatingWebhookConfiguration"), dial):
        assert annotated["metadata"]["annotations"] == injected
    # nothing else changed: the same objects but for these
    assert {_key(o) for o in built} - set(plain) == {
        _key(issuer),
        _key(certificate),
    }


def test_a_projects_sharding_component_builds_sharded_with_every_name_lined_up(
    kube_cluster: ClusterHandle, tmp_path: Path
) -> None:
    """A project's config/ built with kubectl's kustomize, config/default's sharding line
    uncommented and 3 replicas asked by kustomize's ``replicas:`` (issue #50): the manager
    runs 3 replicas with ``--sharding``, its leader-election Role holds every Lease of its
    namespace, the kinds guard lets it change the shard labels, the shard-labels guard
    (prefixed) is bound by its prefixed name; nothing else differs from the unsharded build."""
    config_dir = tmp_path / "config"
    for relative, text in config.config_files(GUESTBOOK).items():
        (config_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        (config_dir / relative).write_text(text)
    plain = {_key(o): o for o in _kustomize(kube_cluster, config_dir / "default")}
    default = config_dir / "default" / "kustomization.yaml"
    line = config.SHARDING_LINE
    replicas = "replicas:\n- name: controller-manager\n  count: 3\n"
    default.write_text(default.read_text().replace(line, line.removeprefix("#")) + replicas)
    built = {_key(o): o for o in _kustomize(kube_cluster, config_dir / "default")}
    namespace = "guestbook-system"
    deployment = built["Deployment", namespace, "guestbook-controller-manager"]
    assert deployment["spec"]["replicas"] == 3
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][-1] == "--sharding"
    assert "--leader-elect" in container["args"]
    election = built["Role", namespace, "guestbook-leader-election-role"]
    assert election["rules"][0]["resources"] == ["leases"]
    assert "resourceNames" not in election["rules"][0]
    policies = {k[2]: o for k, o in built.items() if k[0] == "ValidatingAdmissionPolicy"}
    bindings = {k[2]: o for k, o in built.items() if k[0] == "ValidatingAdmissionPolicyBinding"}
    assert {b["spec"]["policyName"] for b in bindings.values()} == set(policies)
    assert "guestbook-shard-labels" in policies
    assert "shard.webapp.example.com/guestbook" in str(policies["guestbook-operator-kinds"])
    changed = {k for k in built if k not in plain or built[k] != plain[k]}
    assert changed == {
        ("Deployment", namespace, "guestbook-controller-manager"),
        ("Role", namespace, "guestbook-leader-election-role"),
        ("ValidatingAdmissionPolicy", namespace, "guestbook-operator-kinds"),
        ("ValidatingAdmissionPolicy", namespace, "guestbook-shard-labels"),
        ("ValidatingAdmissionPolicyBinding", namespace, "guestbook-shard-labels"),
    }
