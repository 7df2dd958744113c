"""The operator's conversion webhook (sdk/kit/conversion.py): which kinds it converts, the
ConversionReview it answers for them (typed conversion inside, a refusal as the client's
message), and its CRDs pointed at it — a URL in developer mode, only the CA bundle
in-cluster, nothing written when already so — and back at the Service when a developer-mode
operator stops."""

from __future__ import annotations

import base64

import pytest

from appstack.runtime.client import Client
from appstack.runtime.conversion import ConversionError
from appstack.runtime.fake import FakeApiServer
from appstack.sdk import (
    ConversionRefused,
    CustomObject,
    KubeModel,
    Version,
    crd,
    custom_kind,
    versioned_kind,
)
from appstack.sdk.kind import CustomKind
from appstack.sdk.kit.conversion import (
    CRDS,
    conversion_webhook,
    converting_kinds,
    crd_patch,
    point_crds,
    restore_crds,
    service_client,
)

GROUP = "kit.example.com"


class Spec1(KubeModel):
    size: int = 1


class Spec2(KubeModel):
    replicas: int = 1


class Status(KubeModel):
    ready: bool | None = None


@custom_kind(group=GROUP, plural="things", version="v1alpha1", kind="Thing")
class ThingV1alpha1(CustomObject):
    spec: Spec1
    status: Status | None = None


@custom_kind(group=GROUP, plural="things")
class Thing(CustomObject):
    spec: Spec2
    status: Status | None = None


def _up(old: ThingV1alpha1) -> Thing:
    return Thing(metadata=old.metadata, spec=Spec2(replicas=old.spec.size))


def _down(hub: Thing) -> ThingV1alpha1:
    if hub.spec.replicas < 0:
        raise ConversionRefused("negative")
    return ThingV1alpha1(metadata=hub.metadata, spec=Spec1(size=hub.spec.replicas))


THING = versioned_kind(
    Version(Thing, storage=True), Version(ThingV1alpha1, to_hub=_up, from_hub=_down)
)


class Single(CustomObject):
    spec: Spec1
    status: Status | None = None


SINGLE: CustomKind = custom_kind(group=GROUP, plural="singles")(Single).KIND


def test_only_kinds_whose_versions_convert_are_served_once_each() -> None:
    assert converting_kinds([SINGLE, THING, THING]) == [THING]
    assert conversion_webhook([SINGLE]) is None


def test_the_webhook_converts_its_kinds_and_refuses_others() -> None:
    conversion = conversion_webhook([THING])
    assert conversion is not None
    assert conversion.path == "/convert"
    old = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Thing",
        "metadata": {"name": "t"},
        "spec": {"size": 4},
    }
    converted = conversion.converter(old, f"{GROUP}/v1")
    assert isinstance(converted, dict)
    assert converted["spec"] == {"replicas": 4}
    hub = {**old, "apiVersion": f"{GROUP}/v1", "spec": {"replicas": -1}}
    with pytest.raises(ConversionError, match="negative"):
        conversion.converter(hub, f"{GROUP}/v1alpha1")
    with pytest.raises(ConversionError, match=r"converts no Single of kit\.example\.com"):
        conversion.converter({**old, "kind": "Single"}, f"{GROUP}/v1")


def test_the_patch_points_at_a_url_or_writes_only_the_ca() -> None:
    url = crd_patch("https://127.0.0.1:9443/", b"PEM")
    config = url["spec"]["conversion"]["webhook"]["clientConfig"]
    assert config == {
        "url": "https://127.0.0.1:9443/convert",
        "service": None,  # a merge patch drops the Service
        "caBundle": base64.b64encode(b"PEM").decode(),
    }
    service = crd_patch(None, b"PEM")["spec"]["conversion"]["webhook"]["clientConfig"]
    assert service == {"caBundle": base64.b64encode(b"PEM").decode()}


async def test_the_crd_is_patched_once_then_left_alone() -> None:
    api = FakeApiServer([CRDS])
    client = Client(api, field_manager="operator")
    service = {"service": {"namespace": "ops", "name": "ops-webhook-service"}}
    await client.create(CRDS, crd(THING, conversion=service))
    await point_crds(client, [THING], None, b"CA1")
    config = (await client.get(CRDS, THING.crd_name))["spec"]["conversion"]["webhook"][
        "clientConfig"
    ]
    assert config["caBundle"] == base64.b64encode(b"CA1").decode()
    assert config["service"]["path"] == "/convert"
    patches = [r for r in api.requests if r.method == "PATCH"]
    await point_crds(client, [THING], None, b"CA1")
    assert [r for r in api.requests if r.method == "PATCH"] == patches
    await point_crds(client, [THING], "https://127.0.0.1:1", b"CA2")
    config = (await client.get(CRDS, THING.crd_name))["spec"]["conversion"]["webhook"][
        "clientConfig"
    ]
    assert config == {
        "url": "https://127.0.0.1:1/convert",
        "caBundle": base64.b64encode(b"CA2").decode(),
    }


async def test_a_developer_mode_url_is_pointed_back_at_the_service_as_generated() -> None:
    api = FakeApiServer([CRDS])
    client = Client(api, field_manager="operator")
    service = service_client("ops-webhook-service", "ops")
    generated = crd(THING, conversion=service)
    await client.create(CRDS, generated)
    url = "https://127.0.0.1:9443"
    await point_crds(client, [THING], url, b"DEV-CA")
    # someone else's URL is left alone; ours is replaced by the generated Service
    assert await restore_crds(client, [THING], "https://10.0.0.1:1", service) == []
    assert await restore_crds(client, [THING], url, service) == [THING.crd_name]
    restored = (await client.get(CRDS, THING.crd_name))["spec"]["conversion"]
    assert restored == generated["spec"]["conversion"]  # no url, no developer's CA
    assert await restore_crds(client, [THING], url, service) == []  # done: nothing written
