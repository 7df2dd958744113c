"""The objects an AppStack names without owning them (controllers/appstack/references.py,
sdk/kit/references.py): the index from a stack to each ConfigMap and Secret it
reads, the mapper from one of them back to the stacks, and what the cache keeps of them —
metadata only, never a Secret's data — while our own children stay whole."""

from __future__ import annotations

from typing import Any

from appstack.controllers.appstack import APP_STACK
from appstack.controllers.appstack.references import referenced
from appstack.runtime.cache import Cache
from appstack.runtime.controller import Request
from appstack.runtime.resources import CONFIG_MAP, SECRET
from appstack.runtime.watcher import Applied
from appstack.sdk.kit.references import (
    REFERENCES,
    metadata_only,
    reference,
    referrers,
    secret_metadata,
)
from tests.support.scripted_transport import scripted_client


def _stack(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"},
        "spec": spec,
    }


_IDP = {
    "name": "idp",
    "type": "service",
    "external": {
        "url": "https://idp.example.com",
        "authMethod": "bearer",
        "secretRef": {"name": "tok"},
    },
}
_APP = {
    "name": "app",
    "image": "app:1",
    "uses": ["idp"],
    "envs": [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}}],
    "configs": [
        {"name": "site", "mountPath": "/srv", "configMap": "site"},
        {"name": "app-conf", "mountPath": "/etc/app", "files": {"a.conf": "x"}},
    ],
}


def test_a_stack_is_indexed_by_every_configmap_and_secret_it_reads() -> None:
    stack = _stack("shop", middleware=[_IDP], components=[_APP])
    assert referenced(stack) == [
        "ConfigMap/ns/site",  # not app-conf: that one is ours, watched as a child
        "Secret/ns/env-secret",
        "Secret/ns/tok",
    ]
    assert referenced(_stack("bad", components="nope")) == []  # invalid: reads nothing


def test_an_event_of_a_named_object_maps_to_the_stacks_naming_it() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["ns"])
    cache.add_indexer(APP_STACK, REFERENCES, referenced)
    informer = cache.informers(APP_STACK)["ns"]
    informer._deliver(Applied(_stack("shop", middleware=[_IDP], components=[_APP])))
    informer._deliver(Applied(_stack("other", components=[{"name": "x", "image": "x:1"}])))
    secrets = referrers(cache, APP_STACK, SECRET)
    config_maps = referrers(cache, APP_STACK, CONFIG_MAP)
    assert list(secrets({"metadata": {"name": "tok", "namespace": "ns"}})) == [
        Request("ns", "shop")
    ]
    assert list(config_maps({"metadata": {"name": "site", "namespace": "ns"}})) == [
        Request("ns", "shop")
    ]
    assert list(config_maps({"metadata": {"name": "tok", "namespace": "ns"}})) == []  # a kind
    assert list(secrets({"metadata": {"name": "tok", "namespace": "elsewhere"}})) == []
    assert reference("Secret", "ns", "tok") == "Secret/ns/tok"


def _secret(**labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": "tok",
            "namespace": "ns",
            "uid": "u",
            "resourceVersion": "7",
            "labels": labels,
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{data...}"},
        },
        "data": {"token": "c2VjcmV0"},
    }


def test_only_metadata_is_kept_of_a_secret_or_of_a_configmap_not_ours() -> None:
    kept = secret_metadata(_secret(**{"app.kubernetes.io/managed-by": "appstack"}))
    assert kept == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "tok",
            "namespace": "ns",
            "uid": "u",
            "resourceVersion": "7",
        },
    }
    theirs = {**_secret(), "kind": "ConfigMap", "data": {"a": "b"}}
    assert "data" not in metadata_only(theirs)


def test_referenced_kinds_are_listed_and_watched_as_metadata_only() -> None:
    """Issue #28 P1.2: the server sends no data for them (PartialObjectMetadata), so no page
    of every Secret's or ConfigMap's content is ever held; the owned kind stays apart."""
    from appstack.runtime import apirequest  # noqa: PLC0415
    from appstack.runtime.resources import CONFIG_MAP, SECRET  # noqa: PLC0415

    meta = SECRET.metadata_only()
    assert meta != SECRET
    assert meta.kind == "Secret"  # the same kind for references
    listed = apirequest.list_page(meta, "ns")
    assert listed.headers["Accept"].startswith(
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    )
    watched = apirequest.watch(meta, "ns", resource_version="1")
    assert "as=PartialObjectMetadata;" in watched.headers["Accept"]
    assert apirequest.list_page(CONFIG_MAP, "ns").headers["Accept"] == "application/json"
    from appstack.controllers.appstack.reconciler import AppStackReconciler  # noqa: PLC0415

    assert all(r.only_metadata for r in AppStackReconciler.references)
    assert CONFIG_MAP in AppStackReconciler.owns
