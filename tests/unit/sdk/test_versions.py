"""Several versions of one kind (sdk/versions.py): declarations refused with one sentence,
hub ↔ spoke conversion on typed models (metadata kept, what a spoke cannot say stashed
losslessly), the CRD of every version (crds.py) and the RBAC that writing its conversion
webhook needs (rbac.py); the field-by-field conversion a scaffolded version starts with
(copy_to_hub, copy_from_hub: lossless both ways)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from appstack.sdk import (
    ConversionRefused,
    CustomObject,
    KubeModel,
    OperatorIdentity,
    Version,
    VersionError,
    copy_from_hub,
    copy_to_hub,
    crd,
    crd_conversion_rules,
    custom_kind,
    derived_rules,
    stash,
    unstash,
    versioned_kind,
)
from appstack.sdk.config import Project, config_files, conversion_client
from appstack.sdk.kind import CustomKind
from appstack.sdk.versions import convert_object, spoke_fields_annotation

GROUP = "ex.example.com"
AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
SERVICE = {"service": {"namespace": "ops", "name": "ops-webhook-service"}}


class Status(KubeModel):
    ready: bool | None = None


class OldSpec(KubeModel):
    size: int = 1


class NewSpec(KubeModel):
    replicas: int = 1
    tier: str | None = None


def _declare(model: type[CustomObject], version: str, **options: Any) -> type[CustomObject]:
    return custom_kind(group=GROUP, plural="gadgets", version=version, kind="Gadget", **options)(
        model
    )


def _models() -> tuple[type[CustomObject], type[CustomObject]]:
    """A fresh v1alpha1 and v1 model (versioned_kind changes the hub's KIND)."""

    class Old(CustomObject):
        spec: OldSpec
        status: Status | None = None

    class New(CustomObject):
        spec: NewSpec
        status: Status | None = None

    return _declare(Old, "v1alpha1"), _declare(New, "v1", printer_columns=(AGE,))


def _functions(old: type[CustomObject], new: type[CustomObject]) -> dict[str, Any]:
    def to_hub(spoke: Any) -> Any:
        tier = unstash(spoke, "tier")
        return new(metadata=spoke.metadata, spec=NewSpec(replicas=spoke.spec.size, tier=tier))

    def from_hub(hub: Any) -> Any:
        if hub.spec.replicas > 9:
            raise ConversionRefused("replicas over 9 cannot be a size")
        spoke = old(metadata=hub.metadata, spec=OldSpec(size=hub.spec.replicas))
        stash(spoke, "tier", hub.spec.tier)
        return spoke

    return {"to_hub": to_hub, "from_hub": from_hub}


def _kind() -> CustomKind:
    old, new = _models()
    return versioned_kind(
        Version(new, storage=True),
        Version(old, deprecated=True, warning="use v1", **_functions(old, new)),
    )


def _hub_object(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": "ns", "uid": "u", "resourceVersion": "7"},
        "spec": spec,
    }


def test_the_hub_models_kind_carries_every_version() -> None:
    kind = _kind()
    hub = next(v for v in kind.versions if v.storage)
    assert hub.model.KIND is kind
    assert kind.version == "v1"
    assert kind.resource.version == "v1"  # controllers reconcile the hub
    assert [v.name for v in kind.versions] == ["v1", "v1alpha1"]


@pytest.mark.parametrize(
    ("versions", "said"),
    [
        (lambda old, new, f: [Version(new), Version(old, **f)], "no version is the storage"),
        (
            lambda old, new, f: [Version(new, storage=True), Version(old, storage=True)],
            "2 storage versions (v1, v1alpha1)",
        ),
        (
            lambda old, new, f: [Version(new, storage=True, served=False), Version(old, **f)],
            "the storage version v1 must be served",
        ),
        (
            lambda old, new, f: [Version(new, storage=True), Version(old)],
            "version v1alpha1 differs from the storage version v1 but has no to_hub nor from_hub",
        ),
        (
            lambda old, new, f: [
                Version(new, storage=True),
                Version(old, to_hub=f["to_hub"]),
            ],
            "has no from_hub",
        ),
        (
            lambda old, new, f: [Version(new, storage=True, **f), Version(old, **f)],
            "the storage version v1 is the hub: it converts nothing",
        ),
        (
            lambda old, new, f: [Version(new, storage=True), Version(old, warning="x", **f)],
            "has a warning but is not deprecated",
        ),
        (
            lambda old, new, f: [Version(new, storage=True), Version(new)],
            "version v1 is declared twice",
        ),
    ],
)
def test_a_wrong_declaration_is_refused_in_one_sentence(versions: Any, said: str) -> None:
    old, new = _models()
    with pytest.raises(VersionError) as refused:
        versioned_kind(*versions(old, new, _functions(old, new)))
    assert said in str(refused.value)
    assert str(refused.value).startswith("kind Gadget: ")
    assert "\n" not in str(refused.value)


def test_versions_of_another_kind_or_undeclared_models_are_refused() -> None:
    old, new = _models()

    class Other(CustomObject):
        spec: OldSpec
        status: Status | None = None

    custom_kind(group=GROUP, plural="others", version="v1alpha1")(Other)
    with pytest.raises(VersionError, match=r"declares others.ex.example.com \(Other\)"):
        versioned_kind(Version(new, storage=True), Version(Other, **_functions(old, new)))

    class Bare(KubeModel):
        pass

    with pytest.raises(VersionError, match="Bare is not a declared kind"):
        versioned_kind(Version(Bare, storage=True))  # type: ignore[arg-type]
    with pytest.raises(VersionError, match="at least one version"):
        versioned_kind()


def test_hub_to_spoke_to_hub_loses_nothing_and_keeps_the_metadata() -> None:
    kind = _kind()
    hub = _hub_object(replicas=3, tier="gold")
    spoke = convert_object(kind, hub, f"{GROUP}/v1alpha1")
    assert spoke["apiVersion"] == f"{GROUP}/v1alpha1"
    assert spoke["spec"] == {"size": 3}
    assert spoke["metadata"] == {
        **hub["metadata"],
        "annotations": {f"conversion.{GROUP}/tier": '"gold"'},
    }
    back = convert_object(kind, spoke, f"{GROUP}/v1")
    assert back == hub


def test_a_spoke_written_by_its_user_reaches_the_hub_with_what_it_kept() -> None:
    kind = _kind()
    spoke = convert_object(kind, _hub_object(replicas=3, tier="gold"), f"{GROUP}/v1alpha1")
    spoke["spec"]["size"] = 5
    spoke["metadata"]["labels"] = {"team": "a"}
    back = convert_object(kind, spoke, f"{GROUP}/v1")
    assert back["spec"] == {"replicas": 5, "tier": "gold"}
    assert back["metadata"]["labels"] == {"team": "a"}
    assert "annotations" not in back["metadata"]


def test_what_cannot_be_converted_is_refused_saying_why() -> None:
    kind = _kind()
    with pytest.raises(ConversionRefused, match="replicas over 9"):
        convert_object(kind, _hub_object(replicas=10), f"{GROUP}/v1alpha1")
    with pytest.raises(ConversionRefused, match=r"Gadget has no version ex\.example\.com/v9"):
        convert_object(kind, _hub_object(replicas=1), f"{GROUP}/v9")
    with pytest.raises(ConversionRefused, match=r"not a valid ex.example.com/v1: spec.replicas"):
        convert_object(kind, _hub_object(replicas="many"), f"{GROUP}/v1alpha1")
    spoke = convert_object(kind, _hub_object(replicas=1, tier="x"), f"{GROUP}/v1alpha1")
    spoke["metadata"]["annotations"][f"conversion.{GROUP}/tier"] = "{broken"
    with pytest.raises(ConversionRefused, match="is not what conversion kept"):
        convert_object(kind, spoke, f"{GROUP}/v1")


def test_the_crd_serves_every_version_and_converts_through_the_webhook() -> None:
    made = crd(_kind(), conversion=SERVICE)
    versions = {v["name"]: v for v in made["spec"]["versions"]}
    assert versions["v1"]["storage"] is True
    assert versions["v1"]["served"] is True
    assert "deprecated" not in versions["v1"]
    assert versions["v1"]["additionalPrinterColumns"] == [AGE]
    assert versions["v1alpha1"]["storage"] is False
    assert versions["v1alpha1"]["deprecated"] is True
    assert versions["v1alpha1"]["deprecationWarning"] == "use v1"
    assert versions["v1alpha1"]["subresources"] == {"status": {}}
    old = versions["v1alpha1"]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(old["properties"]) == {"size"}
    new = versions["v1"]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(new["properties"]) == {"replicas", "tier"}
    assert made["spec"]["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {
                "service": {"path": "/convert", "namespace": "ops", "name": "ops-webhook-service"}
            },
        },
    }


def test_a_converting_kinds_crd_needs_the_webhooks_address() -> None:
    with pytest.raises(ValueError, match="Gadget's versions convert: its CRD needs"):
        crd(_kind())


def test_versions_of_one_schema_convert_with_strategy_none() -> None:
    class Same(CustomObject):
        spec: NewSpec
        status: Status | None = None

    _, new = _models()
    kind = versioned_kind(Version(new, storage=True), Version(_declare(Same, "v1beta1")))
    made = crd(kind)
    assert made["spec"]["conversion"] == {"strategy": "None"}
    assert [v["name"] for v in made["spec"]["versions"]] == ["v1", "v1beta1"]
    # no webhook to point the CRD at; its storage still migrates (stored versions trimmed)
    assert crd_conversion_rules(kind) == [
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["get"],
            "resourceNames": ["gadgets.ex.example.com"],
        },
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions/status"],
            "verbs": ["patch"],
            "resourceNames": ["gadgets.ex.example.com"],
        },
    ]


def test_a_single_version_kind_is_unchanged() -> None:
    _, new = _models()
    made = crd(new.KIND)
    assert "conversion" not in made["spec"]
    assert [v["name"] for v in made["spec"]["versions"]] == ["v1"]


def test_the_operator_may_patch_its_own_crd_only() -> None:
    kind = _kind()
    expected = {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["get", "patch"],
        "resourceNames": ["gadgets.ex.example.com"],
    }
    status = {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions/status"],
        "verbs": ["patch"],
        "resourceNames": ["gadgets.ex.example.com"],
    }
    assert crd_conversion_rules(kind) == [expected, status]
    assert expected in derived_rules(kind)
    assert status in derived_rules(kind)
    assert crd_conversion_rules(_models()[1].KIND) == []  # one version: nothing


def test_the_projects_config_points_a_converting_crd_at_its_webhook_service() -> None:
    kind = _kind()
    project = Project(
        OperatorIdentity(project="gadgets", domain="ex.example.com"), "gadgets", [], [kind]
    )
    files = config_files(project)
    generated = files[f"crd/bases/{GROUP}_gadgets.yaml"]
    assert "strategy: Webhook" in generated
    assert conversion_client(project, kind) == {
        "service": {
            "namespace": "gadgets-system",
            "name": "gadgets-webhook-service",
            "path": "/convert",
        }
    }
    _, single = _models()
    assert conversion_client(project, single.KIND) is None


def test_a_project_that_only_converts_gets_the_service_port_and_certificate_it_needs() -> None:
    """No admission webhook declared, one converting kind: the webhook server still runs
    (its CRD calls /convert), so the install has its Service, port and certificate Secret —
    and no webhook configuration, nor the role to write one."""
    kind = _kind()
    project = Project(
        OperatorIdentity(project="gadgets", domain="ex.example.com"), "gadgets", [], [kind]
    )
    files = config_files(project)
    service = yaml.safe_load(files["webhook/service.yaml"].split("\n", 1)[1])
    assert service["metadata"]["name"] == "webhook-service"  # gadgets-webhook-service, prefixed
    assert "webhook/manifests.yaml" not in files
    assert yaml.safe_load(files["webhook/kustomization.yaml"])["resources"] == ["service.yaml"]
    assert "../webhook" in yaml.safe_load(files["default/kustomization.yaml"])["resources"]
    assert "rbac/webhook_cert_role.yaml" in files
    assert "rbac/webhook_role.yaml" not in files
    # cert-manager's variant injects the CA into the CRD's conversion webhook
    patch = files[f"certmanager/inject_ca_gadgets.{GROUP}.yaml"]
    (injected,) = [d for d in yaml.safe_load_all(patch) if d]
    assert (injected["kind"], injected["metadata"]["name"]) == (
        "CustomResourceDefinition",
        f"gadgets.{GROUP}",
    )
    assert injected["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "gadgets-system/gadgets-serving-cert"
    }
    manager = [d for d in yaml.safe_load_all(files["manager/manager.yaml"]) if d]
    (container,) = manager[-1]["spec"]["template"]["spec"]["containers"]
    assert {"name": "webhook-server", "containerPort": 9443, "protocol": "TCP"} in container[
        "ports"
    ]
    # one version only: nothing of it
    _, single = _models()
    plain = config_files(
        Project(OperatorIdentity(project="g", domain="ex.example.com"), "g", [], [single.KIND])
    )
    assert not any(path.startswith("webhook/") for path in plain)


class KeptSpecV1(KubeModel):
    size: int = 1
    foo: str | None = None


class KeptSpecV2(KubeModel):
    foo: str | None = None
    color: str | None = None


def _copying_kind() -> tuple[CustomKind, type[CustomObject], type[CustomObject]]:
    """v1 (the hub: ``size`` and ``foo``) and v2 (``foo`` and ``color``), converted by
    copy_to_hub / copy_from_hub alone, as ``appstack create api`` scaffolds a new version."""

    class V1(CustomObject):
        spec: KeptSpecV1
        status: Status | None = None

    class V2(CustomObject):
        spec: KeptSpecV2
        status: Status | None = None

    hub, spoke = _declare(V1, "v1"), _declare(V2, "v2")
    kind = versioned_kind(
        Version(hub, storage=True),
        Version(
            spoke,
            to_hub=lambda obj: copy_to_hub(obj, hub),
            from_hub=lambda obj: copy_from_hub(obj, spoke),
        ),
    )
    return kind, hub, spoke


def test_fields_copied_by_name_and_what_either_side_lacks_kept_both_ways() -> None:
    kind, hub, _ = _copying_kind()
    stored = _hub_object(size=3, foo="x") | {"status": {"ready": True}}
    read = convert_object(kind, stored, f"{GROUP}/v2")
    assert read["spec"] == {"foo": "x"}
    assert read["status"] == {"ready": True}
    assert read["metadata"]["annotations"] == {
        f"conversion.{GROUP}/hub-fields": '{"spec": {"size": 3}}'
    }
    read["spec"]["color"] = "red"  # a field only v2 has, written by a v2 client
    back = convert_object(kind, read, f"{GROUP}/v1")
    assert back["spec"] == {"size": 3, "foo": "x"}
    assert back["metadata"]["annotations"] == {
        spoke_fields_annotation(GROUP, "v2"): '{"spec": {"color": "red"}}'
    }
    again = convert_object(kind, back, f"{GROUP}/v2")
    assert again["spec"] == {"foo": "x", "color": "red"}
    assert again["metadata"]["annotations"] == read["metadata"]["annotations"]
    # nothing v2 lacks, nothing kept: the hub's object carries no annotation
    plain = convert_object(kind, {**read, "spec": {"foo": "y"}}, f"{GROUP}/v1")
    assert "annotations" not in plain["metadata"]
    assert hub.model_validate(plain).spec.size == 3


def test_a_copied_value_the_other_version_refuses_is_a_conversion_refused() -> None:
    kind, _, spoke = _copying_kind()
    stored = _hub_object(foo="x")
    stored["metadata"]["annotations"] = {spoke_fields_annotation(GROUP, "v2"): "not json"}
    with pytest.raises(ConversionRefused, match=r"v2-fields is not what conversion kept"):
        convert_object(kind, stored, f"{GROUP}/v2")
    stored["metadata"]["annotations"] = {
        spoke_fields_annotation(GROUP, "v2"): '{"spec": {"color": 5}}'
    }
    with pytest.raises(ConversionRefused, match=r"not a valid .*/v2: spec\.color"):
        convert_object(kind, stored, f"{GROUP}/v2")
    original = spoke.model_validate({"metadata": {"name": "g"}, "spec": {"color": "red"}})
    copy_to_hub(original, kind.model)
    assert original.metadata == {"name": "g"}  # the spoke given is left as it was


class SeedSpecV1alpha1(KubeModel):
    size: int = 1
    image: str = "nginx"
    legacy: str = "on"


class SeedSpecV1(KubeModel):
    replicas: int = 1
    image: str = "nginx"


def test_a_renamed_field_and_a_default_are_not_kept_in_an_annotation() -> None:
    """copy_to_hub / copy_from_hub with ``renamed`` (seed 000's v1alpha1 size, v1's
    replicas): the value under the other name, nothing kept; a field the hub lacks holding
    its default is not kept either (the way back fills it in again)."""

    class New(CustomObject):
        spec: SeedSpecV1
        status: Status | None = None

    class Old(CustomObject):
        spec: SeedSpecV1alpha1
        status: Status | None = None

    hub, spoke = _declare(New, "v1"), _declare(Old, "v1alpha1")
    renamed = {"size": "replicas"}
    kind = versioned_kind(
        Version(hub, storage=True),
        Version(
            spoke,
            to_hub=lambda obj: copy_to_hub(obj, hub, renamed),
            from_hub=lambda obj: copy_from_hub(obj, spoke, renamed),
        ),
    )
    written = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"size": 3, "image": "x"},
    }
    stored = convert_object(kind, written, f"{GROUP}/v1")
    assert stored["spec"] == {"replicas": 3, "image": "x"}
    assert "annotations" not in stored["metadata"]
    read = convert_object(kind, stored, f"{GROUP}/v1alpha1")
    assert read["spec"] == {"size": 3, "image": "x", "legacy": "on"}
    assert "annotations" not in read["metadata"]
    assert convert_object(kind, read, f"{GROUP}/v1") == stored
    # a value other than its default is kept, and comes back
    kept = convert_object(kind, {**written, "spec": {"size": 2, "legacy": "off"}}, f"{GROUP}/v1")
    assert kept["metadata"]["annotations"] == {
        spoke_fields_annotation(GROUP, "v1alpha1"): '{"spec": {"legacy": "off"}}'
    }
    assert convert_object(kind, kept, f"{GROUP}/v1alpha1")["spec"] == {
        "size": 2,
        "image": "nginx",
        "legacy": "off",
    }
