"""A project's generated install (appstack.sdk.config): config/admission/ holds the SDK's
admission guards, each policy with its binding, included from config/default with a
kustomize name reference (a binding follows its policy's prefix); the namespace enabler
ClusterRole is in config/rbac; the operator acts only in enabled namespaces unless the
project enables them all; the files scaffolded once (manager, default, prometheus) are the
user's, and what `appstack edit` changes in them is only the image and the flags its
settings decide. A project that declares webhooks gets config/webhook (their Service and
configurations), the webhook port, the RBAC for its own configurations and certificate
Secret; one that declares none, nothing of it."""

from __future__ import annotations

import dataclasses
from typing import Any

import yaml

from appstack.runtime import Verdict, allow
from appstack.sdk import Mutator, Validator, WebhookReview, config
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
        if path.endswith(".json"):  # JSON has no comment: config/grafana's kustomization says
            assert files[f"{path.rpartition('/')[0]}/kustomization.yaml"].startswith(config.HEADER)
            continue
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


def _with_webhooks(*webhooks: Validator | Mutator) -> config.Project:
    (registration,) = PROJECT.controllers
    return dataclasses.replace(
        PROJECT, controllers=[dataclasses.replace(registration, webhooks=webhooks)]
    )


def _allow(review: WebhookReview) -> Verdict:
    return allow()


def test_a_project_without_webhooks_has_nothing_of_them() -> None:
    files = config.config_files(PROJECT)
    assert not [p for p in files if p.startswith("webhook/") or "webhook" in p]
    assert "../webhook" not in yaml.safe_load(files["default/kustomization.yaml"])["resources"]
    assert "webhook" not in files["manager/manager.yaml"]
    default, manager = files["default/kustomization.yaml"], files["manager/manager.yaml"]
    assert config.with_webhooks(default, manager, PROJECT) == (default, manager)


def test_a_project_with_webhooks_gets_their_service_configurations_port_and_rbac() -> None:
    project = _with_webhooks(Validator(_allow))
    files = config.config_files(project)
    webhook = sorted(p for p in files if p.startswith("webhook/"))
    assert webhook == [
        "webhook/kustomization.yaml",
        "webhook/manifests.yaml",
        "webhook/service.yaml",
    ]
    assert yaml.safe_load(files["webhook/kustomization.yaml"])["resources"] == [
        "manifests.yaml",
        "service.yaml",
    ]
    (configuration,) = _objects(files["webhook/manifests.yaml"])  # validating only
    assert configuration["kind"] == "ValidatingWebhookConfiguration"
    assert configuration["metadata"]["name"] == "validating-webhooks"  # guestbook- prefixed
    (hook,) = configuration["webhooks"]
    assert hook["clientConfig"] == {
        "service": {
            "namespace": "system",
            "name": "webhook-service",
            "path": "/validate-webapp-example-com-v1-guestbook",
            "port": 443,
        }
    }  # no caBundle: the operator writes it
    assert hook["namespaceSelector"]["matchLabels"] == {"webapp.example.com/enabled": "true"}
    (service,) = _objects(files["webhook/service.yaml"])
    assert service["metadata"]["name"] == "webhook-service"
    assert service["spec"]["ports"] == [
        {"port": 443, "protocol": "TCP", "targetPort": "webhook-server"}
    ]
    assert service["spec"]["selector"] == {
        "control-plane": "controller-manager",
        "app.kubernetes.io/name": "guestbook",
    }
    (container,) = config.deployment(project)["spec"]["template"]["spec"]["containers"]
    assert {"name": "webhook-server", "containerPort": 9443, "protocol": "TCP"} in container[
        "ports"
    ]
    default = yaml.safe_load(files["default/kustomization.yaml"])["resources"]
    assert default.index("../webhook") < default.index("../manager")
    # its own configurations and its certificate's Secret, by their final names
    (hooks,) = _objects(files["rbac/webhook_role.yaml"])
    assert hooks["kind"] == "ClusterRole"
    assert hooks["rules"] == [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingwebhookconfigurations"],
            "verbs": ["get", "update", "patch"],
            "resourceNames": ["guestbook-validating-webhooks"],
        }
    ]
    (cert,) = _objects(files["rbac/webhook_cert_role.yaml"])
    assert (cert["kind"], cert["metadata"]["namespace"]) == ("Role", "system")
    assert cert["rules"][0]["resourceNames"] == ["guestbook-webhook-server-cert"]
    assert cert["rules"][1] == {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}
    rbac = yaml.safe_load(files["rbac/kustomization.yaml"])["resources"]
    for name in ("webhook_role", "webhook_role_binding", "webhook_cert_role"):
        assert f"{name}.yaml" in rbac
    (bound,) = _objects(files["rbac/webhook_cert_role_binding.yaml"])
    assert bound["roleRef"]["name"] == "webhook-cert-role"
    both = config.config_files(_with_webhooks(Validator(_allow), Mutator(_allow)))
    kinds = [o["kind"] for o in _objects(both["webhook/manifests.yaml"])]
    assert kinds == ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"]
    (both_roles,) = _objects(both["rbac/webhook_role.yaml"])
    assert [r["resourceNames"] for r in both_roles["rules"]] == [
        ["guestbook-validating-webhooks"],
        ["guestbook-mutating-webhooks"],
    ]


def test_a_first_webhook_is_wired_into_the_files_scaffolded_once_keeping_the_rest() -> None:
    plain = config.config_files(PROJECT)
    edited_default = plain["default/kustomization.yaml"] + "patches:\n- path: mine.yaml\n"
    manager = plain["manager/manager.yaml"].replace("cpu: 10m", "cpu: 20m")
    project = _with_webhooks(Validator(_allow))
    default, wired = config.with_webhooks(edited_default, manager, project)
    body = yaml.safe_load(default)
    assert body["patches"] == [{"path": "mine.yaml"}]
    assert (
        body["resources"]
        == yaml.safe_load(config.config_files(project)["default/kustomization.yaml"])["resources"]
    )
    (deployment,) = [o for o in _objects(wired) if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["ports"][-1]["name"] == "webhook-server"
    assert container["resources"]["requests"]["cpu"] == "20m"
    assert default.startswith(config.SCAFFOLDED_HEADER)
    assert config.with_webhooks(default, wired, project) == (default, wired)  # once


def test_the_guards_let_the_operator_write_only_its_own_certificate_secret() -> None:
    def conditions(project: config.Project) -> list[dict[str, str]]:
        files = config.config_files(project)
        policy = _objects(files["admission/operator_writes_policy.yaml"])[0]
        return list(policy["spec"]["matchConditions"])

    assert "webhook-certificate" not in str(conditions(PROJECT))
    (exempt,) = [
        c for c in conditions(_with_webhooks(Validator(_allow))) if "certificate" in c["name"]
    ]
    assert "request.namespace == 'guestbook-system'" in exempt["expression"]
    assert "request.name == 'guestbook-webhook-server-cert'" in exempt["expression"]
    assert "object.type == 'kubernetes.io/tls'" in exempt["expression"]
    assert "request.operation != 'DELETE'" in exempt["expression"]


def test_a_project_with_webhooks_gets_a_cert_manager_component_off_until_one_line() -> None:
    """config/certmanager (kubebuilder's config/certmanager, as a kustomize Component): a
    self-signed Issuer, a Certificate for the webhook Service's final DNS names whose Secret
    the manager mounts at --webhook-cert-dir, and the CA injector's annotation naming that
    Certificate on each webhook configuration; config/default turns it on with one
    commented line (built with kustomize: tests/e2e/test_kustomize.py)."""
    project = _with_webhooks(Validator(_allow), Mutator(_allow))
    files = config.config_files(project)
    assert sorted(p for p in files if p.startswith("certmanager/")) == [
        "certmanager/certificate.yaml",
        "certmanager/inject_ca_mutatingwebhookconfiguration.yaml",
        "certmanager/inject_ca_validatingwebhookconfiguration.yaml",
        "certmanager/issuer.yaml",
        "certmanager/kustomization.yaml",
        "certmanager/kustomizeconfig.yaml",
        "certmanager/manager_cert_dir_patch.yaml",
        "certmanager/manager_webhook_patch.yaml",
    ]
    component = yaml.safe_load(files["certmanager/kustomization.yaml"])
    assert component["kind"] == "Component"
    assert component["resources"] == ["issuer.yaml", "certificate.yaml"]
    assert [p["path"] for p in component["patches"]][:2] == [
        "manager_webhook_patch.yaml",
        "manager_cert_dir_patch.yaml",
    ]
    # one object a file (kustomize before v5.1 reads one object from a patch file)
    assert sorted(p["path"] for p in component["patches"][2:]) == [
        "inject_ca_mutatingwebhookconfiguration.yaml",
        "inject_ca_validatingwebhookconfiguration.yaml",
    ]
    (issuer,) = _objects(files["certmanager/issuer.yaml"])
    (certificate,) = _objects(files["certmanager/certificate.yaml"])
    assert certificate["spec"]["issuerRef"] == {"kind": "Issuer", "name": "selfsigned-issuer"}
    assert issuer["metadata"]["name"] == "selfsigned-issuer"
    assert certificate["spec"]["dnsNames"] == [
        "guestbook-webhook-service.guestbook-system.svc",
        "guestbook-webhook-service.guestbook-system.svc.cluster.local",
    ]
    secret = certificate["spec"]["secretName"]
    assert config.serving_certificate(project) == ("guestbook-system", secret)
    (mounted,) = _objects(files["certmanager/manager_webhook_patch.yaml"])
    pod = mounted["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "webhook-cert", "secret": {"secretName": secret}}]
    assert pod["containers"][0]["volumeMounts"][0]["mountPath"] == config.CERT_DIR
    (arg,) = yaml.safe_load(files["certmanager/manager_cert_dir_patch.yaml"])
    assert arg["value"] == f"--webhook-cert-dir={config.CERT_DIR}"
    injected = [
        obj
        for path in sorted(files)
        if path.startswith("certmanager/inject_ca_")
        for obj in _objects(files[path])
    ]
    configured = _objects(files["webhook/manifests.yaml"])
    assert sorted((o["kind"], o["metadata"]["name"]) for o in injected) == sorted(
        (o["kind"], o["metadata"]["name"]) for o in configured
    )
    for patch in injected:
        assert patch["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": f"guestbook-system/{secret}"
        }
    # off by default: one commented line turns it on
    default = files["default/kustomization.yaml"]
    assert "components" not in yaml.safe_load(default)
    assert default.count(config.CERT_MANAGER_LINE) == 1
    body = yaml.safe_load(default.replace(config.CERT_MANAGER_LINE, config.CERT_MANAGER_LINE[1:]))
    assert body["components"] == ["../certmanager"]
    # a project without webhooks: none of it
    plain = config.config_files(PROJECT)
    assert not [p for p in plain if p.startswith("certmanager/")]
    assert "certmanager" not in plain["default/kustomization.yaml"]


def test_a_first_webhook_brings_the_cert_manager_line_once_and_keeps_it_turned_on() -> None:
    plain = config.config_files(PROJECT)
    project = _with_webhooks(Validator(_allow))
    default, manager = config.with_webhooks(
        plain["default/kustomization.yaml"], plain["manager/manager.yaml"], project
    )
    assert default.count(config.CERT_MANAGER_LINE) == 1
    turned_on = default.replace(config.CERT_MANAGER_LINE, config.CERT_MANAGER_LINE[1:])
    assert config.with_webhooks(turned_on, manager, project) == (turned_on, manager)


def _patched(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """``obj`` with the top-level JSON patch ``ops`` applied (all config/sharding writes)."""
    out = dict(obj)
    for op in ops:
        key = op["path"].removeprefix("/")
        assert "/" not in key
        assert op["op"] in ("add", "replace", "remove")
        if op["op"] == "remove":
            del out[key]
        else:
            out[key] = op["value"]
    return out


def test_config_sharding_is_exactly_the_sharded_install_off_until_one_line() -> None:
    """config/sharding (a kustomize Component, issue #50): config/rbac and config/admission
    with its patches applied and its resources added are exactly the project's install
    generated sharded — the leader-election Role on every Lease of the namespace, the kinds
    guard letting the token change the two shard labels, the shard-labels guard — and the
    manager gets --sharding; config/default turns it on with one commented line (built
    with kustomize: tests/e2e/test_kustomize.py)."""
    files = config.config_files(PROJECT)
    component = yaml.safe_load(files["sharding/kustomization.yaml"])
    assert component["kind"] == "Component"
    assert component["configurations"] == ["kustomizeconfig.yaml"]
    assert component["resources"] == ["shard_labels_policy.yaml"]
    sharded = dataclasses.replace(PROJECT, sharded=True)

    def objects(project: config.Project) -> dict[tuple[str, str], dict[str, Any]]:
        every = {**config.rbac_objects(project), **config.admission_objects(project)}
        return {
            (o["kind"], o["metadata"]["name"]): o
            for value in every.values()
            for o in (value if isinstance(value, list) else [value])
        }

    built = objects(PROJECT)
    for resource in component["resources"]:
        for obj in _objects(files[f"sharding/{resource}"]):
            built[obj["kind"], obj["metadata"]["name"]] = obj
    patched = set()
    for patch in component["patches"]:
        target, ops = patch["target"], yaml.safe_load(files[f"sharding/{patch['path']}"])
        if target["kind"] == "Deployment":
            assert ops == [config.SHARDING_ARG]
            continue
        key = (target["kind"], target["name"])
        built[key] = _patched(built[key], ops)
        patched.add(key)
    assert built == objects(sharded)
    assert patched == {
        ("Role", "leader-election-role"),
        ("ValidatingAdmissionPolicy", "operator-kinds"),
    }
    leases = objects(sharded)["Role", "leader-election-role"]["rules"][0]
    assert leases["resources"] == ["leases"]
    assert "resourceNames" not in leases
    assert {"list", "watch", "delete"} <= set(leases["verbs"])
    # off by default: one commented line turns it on
    default = files["default/kustomization.yaml"]
    assert "components" not in yaml.safe_load(default)
    body = yaml.safe_load(default.replace(config.SHARDING_LINE, config.SHARDING_LINE[1:]))
    assert body["components"] == ["../sharding"]


def test_the_sharding_line_reaches_a_project_scaffolded_before_its_first_controller() -> None:
    """`appstack init` writes config/default/kustomization.yaml before any controller
    exists (no sharding line then); the first `make manifests` with a controller adds the
    commented line once, and keeps it as the user left it after."""
    empty = dataclasses.replace(PROJECT, controllers=[], kinds=[])
    at_init = config.config_files(empty)["default/kustomization.yaml"]
    assert config.SHARDING_LINE not in at_init
    manager = config.config_files(PROJECT)["manager/manager.yaml"]
    default, _ = config.with_webhooks(at_init, manager, PROJECT)
    assert default.count(config.SHARDING_LINE) == 1
    again, _ = config.with_webhooks(default, manager, PROJECT)
    assert again == default
    turned_on = default.replace(config.SHARDING_LINE, config.SHARDING_LINE[1:])
    assert config.with_webhooks(turned_on, manager, PROJECT)[0] == turned_on
