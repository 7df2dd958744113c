"""A project's generated install (appstack.sdk.config): config/admission/ holds the SDK's
admission guards, each policy with its binding, included from config/default with a
kustomize name reference (a binding follows its policy's prefix); the namespace enabler
ClusterRole is in config/rbac; the operator acts only in enabled namespaces unless the
project enables them all; the files scaffolded once (manager, default, prometheus) are the
user's, and what `appstack edit` changes in them is only the image and the flags its
settings decide."""

from __future__ import annotations

from typing import Any

import yaml

from appstack.sdk import config
from tests.support.guestbook import PROJECT

POLICIES = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


def _objects(text: str) -> list[dict[str, Any]]:
    return [o for o in yaml.safe_load_all(text) if o]


def _args(project: config.Project) -> list[str]:
    (container,) = config.deployment(project)["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def test_config_has_the_admission_guards_included_from_default() -> None:
    files = config.config_files(PROJECT)
    admission = sorted(p for p in files if p.startswith("admission/"))
    assert admission == [
        "admission/baseline_policy.yaml",
        "admission/kustomization.yaml",
        "admission/kustomizeconfig.yaml",
        "admission/namespace_labels_policy.yaml",
        "admission/operator_events_policy.yaml",
        "admission/operator_kinds_policy.yaml",
        "admission/operator_lease_duration_policy.yaml",
        "admission/operator_writes_policy.yaml",
    ]
    kustomization = yaml.safe_load(files["admission/kustomization.yaml"])
    assert kustomization["configurations"] == ["kustomizeconfig.yaml"]
    assert sorted(kustomization["resources"]) == [
        p.removeprefix("admission/") for p in admission if p.endswith("_policy.yaml")
    ]
    (reference,) = yaml.safe_load(files["admission/kustomizeconfig.yaml"])["nameReference"]
    assert reference["kind"] == "ValidatingAdmissionPolicy"
    assert reference["fieldSpecs"][0]["path"] == "spec/policyName"
    default = yaml.safe_load(files["default/kustomization.yaml"])
    assert "../admission" in default["resources"]
    assert default["namePrefix"] == "guestbook-"
    # before the prefix: each file a policy and its binding, named alike
    policy, binding = _objects(files["admission/operator_writes_policy.yaml"])
    assert policy["metadata"]["name"] == binding["spec"]["policyName"] == "operator-writes"
    (enabler,) = _objects(files["rbac/namespace_enabler_role.yaml"])
    assert enabler["metadata"]["name"] == "namespace-enabler"
    assert (
        "namespace_enabler_role.yaml"
        in yaml.safe_load(files["rbac/kustomization.yaml"])["resources"]
    )


def test_the_operator_acts_only_in_enabled_namespaces_unless_the_project_says_all() -> None:
    assert "--enable-all-namespaces" not in _args(PROJECT)
    assert "--enable-all-namespaces" not in config.config_files(PROJECT)["manager/manager.yaml"]
    everywhere = config.Project(
        identity=PROJECT.identity,
        package=PROJECT.package,
        controllers=PROJECT.controllers,
        kinds=PROJECT.kinds,
        enable_all_namespaces=True,
    )
    assert "--enable-all-namespaces" in _args(everywhere)
    writes = _objects(config.config_files(everywhere)["admission/operator_writes_policy.yaml"])[0]
    enabled = next(v for v in writes["spec"]["variables"] if v["name"] == "enabled")
    assert enabled["expression"] == "true"


def test_the_files_scaffolded_once_say_they_are_the_users() -> None:
    files = config.config_files(PROJECT)
    for path, text in files.items():
        mine = path in config.SCAFFOLDED
        assert text.startswith(config.SCAFFOLDED_HEADER if mine else config.HEADER), path
    assert set(config.SCAFFOLDED) <= set(files)
    assert not any(p.startswith(("crd/", "rbac/", "admission/")) for p in config.SCAFFOLDED)


def test_the_image_is_set_as_kustomize_edit_set_image_sets_it() -> None:
    text = config.config_files(PROJECT)["manager/kustomization.yaml"]
    text = text.replace("resources:", "commonLabels:\n  team: mine\nresources:")
    tagged = yaml.safe_load(config.with_image(text, "registry.example:5000/guestbook:1.2"))
    assert tagged["images"] == [
        {"name": "controller", "newName": "registry.example:5000/guestbook", "newTag": "1.2"}
    ]
    assert tagged["commonLabels"] == {"team": "mine"}  # the user's, kept
    digest = "sha256:" + "a" * 64
    pinned = yaml.safe_load(config.with_image(text, f"registry.example/guestbook@{digest}"))
    assert pinned["images"] == [
        {"name": "controller", "newName": "registry.example/guestbook", "digest": digest}
    ]
    assert config.with_image(text, "guestbook:1").startswith(config.SCAFFOLDED_HEADER)


def test_the_settings_change_only_their_own_flags_in_an_edited_manager() -> None:
    text = config.config_files(PROJECT)["manager/manager.yaml"]
    edited = text.replace("memory: 256Mi", "memory: 300Mi").replace(
        "- --log-format=json", "- --log-format=json\n        - --sync-period=5m"
    )
    assert edited != text
    everywhere = config.Project(
        identity=PROJECT.identity,
        package=PROJECT.package,
        controllers=PROJECT.controllers,
        kinds=PROJECT.kinds,
        namespaced=True,
        enable_all_namespaces=True,
    )
    opened = config.with_args(edited, everywhere)
    (deployment,) = [o for o in _objects(opened) if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][-2:] == ["--namespace=$(POD_NAMESPACE)", "--enable-all-namespaces"]
    assert "--sync-period=5m" in container["args"]
    assert container["resources"]["limits"]["memory"] == "300Mi"
    closed = config.with_args(opened, PROJECT)
    assert "--enable-all-namespaces" not in closed
    assert "--sync-period=5m" in closed
