"""Objects a spec names but does not own (sdk/kit/references.py): the index value of a named
object, the objects naming one found through the referring kind's index (no scan), and what
is cached of a referenced object (its metadata, without annotations or content)."""

from __future__ import annotations

from typing import Any

from appstack.runtime.cache import Cache
from appstack.runtime.controller import Request
from appstack.runtime.resources import CONFIG_MAP, SECRET, Resource
from appstack.runtime.watcher import Applied
from appstack.sdk.kit.references import (
    REFERENCES,
    metadata_only,
    reference,
    referrers,
    secret_metadata,
)
from tests.support.scripted_transport import scripted_client

WIDGET = Resource("example.com", "v1", "Widget", "widgets")


def _widget(name: str, namespace: str, *secrets: str) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"},
        "spec": {"secrets": list(secrets)},
    }


def test_a_reference_is_kind_namespace_and_name() -> None:
    assert reference("Secret", "shop", "db") == "Secret/shop/db"
    assert reference("ClusterRole", None, "view") == "ClusterRole//view"


def test_an_event_of_a_referenced_object_maps_to_the_objects_naming_it() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["shop", "blog"])
    cache.add_indexer(
        WIDGET,
        REFERENCES,
        lambda o: [
            reference("Secret", o["metadata"]["namespace"], s) for s in o["spec"]["secrets"]
        ],
    )
    for widget in (
        _widget("a", "shop", "db"),
        _widget("b", "shop", "db", "tls"),
        _widget("c", "shop", "tls"),
        _widget("d", "blog", "db"),  # another namespace's "db"
    ):
        informer = cache.informers(WIDGET)[widget["metadata"]["namespace"]]
        informer._deliver(Applied(informer._prepare(widget)))
    mapper = referrers(cache, WIDGET, SECRET)
    secret = {"metadata": {"name": "db", "namespace": "shop"}}
    assert sorted(mapper(secret), key=lambda r: r.name) == [
        Request("shop", "a"),
        Request("shop", "b"),
    ]
    assert list(mapper({"metadata": {"name": "unnamed", "namespace": "shop"}})) == []
    # the referenced kind's own name is the index's: a ConfigMap "db" is not the Secret
    assert list(referrers(cache, WIDGET, CONFIG_MAP)(secret)) == []


def test_a_referenced_object_is_cached_as_its_key_and_version_only() -> None:
    """Issue #46: its labels and managed fields too were kept — anyone may write 1.3 MB of
    labels on their own Secret. Now what keys and versions it: a referrer's mapper needs
    no more."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "data": {"password": "cA=="},
        "metadata": {
            "name": "db",
            "namespace": "shop",
            "uid": "u",
            "resourceVersion": "9",
            "labels": {"team": "a"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
            "managedFields": [{"manager": "kubectl"}],
            "ownerReferences": [{"uid": "o"}],
        },
    }
    kept = metadata_only(secret)
    assert kept == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "db",
            "namespace": "shop",
            "uid": "u",
            "resourceVersion": "9",
        },
    }
    assert secret_metadata is metadata_only
    assert metadata_only({}) == {"metadata": {}}
