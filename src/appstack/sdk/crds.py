"""The CustomResourceDefinition of a declared kind (:func:`crd`), generated from its
:class:`~appstack.sdk.kind.CustomKind` — names, scope, printer columns, subresources, and
the Pydantic models the structural schema comes from (:mod:`appstack.sdk.schema`), with
the kind's name rules as CEL at the schema's root. Pure. Used by appstack's install
(:mod:`appstack.manifests.crds`) and by any operator built on the SDK (``make manifests``
of a scaffolded project): a CRD carries only the labels its caller gives it. A kind of
several versions (:func:`appstack.sdk.versions.versioned_kind`) gets every version, and
``spec.conversion`` a webhook (``/convert`` where ``conversion`` says) when they differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from appstack.sdk.kind import CustomKind
from appstack.sdk.schema import root_schema
from appstack.sdk.versions import CONVERT_PATH, Version, spokes_differ


def crd(
    kind: CustomKind,
    labels: Mapping[str, str] | None = None,
    *,
    conversion: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The CustomResourceDefinition of one declared kind, labelled ``labels`` (none by
    default: the CRD is its author's, not any installer's). A kind whose versions convert
    needs ``conversion``: the webhook's ``clientConfig`` (a ``service`` — its ``path``
    defaults to ``/convert`` — or a ``url``); ValueError without it."""
    metadata: dict[str, Any] = {"name": kind.crd_name}
    if labels:
        metadata["labels"] = dict(labels)
    if kind.versions:
        made = _crd(kind, metadata)
        made["spec"]["versions"] = [_version(v) for v in kind.versions]
        if spokes_differ(kind):
            made["spec"]["conversion"] = _conversion(kind, conversion)
        else:
            made["spec"]["conversion"] = {"strategy": "None"}
        return made
    return _crd(kind, metadata)


def _version(version: Version) -> dict[str, Any]:
    kind = version.kind
    made: dict[str, Any] = {
        "name": kind.version,
        "served": version.served,
        "storage": version.storage,
    }
    if version.deprecated:
        made["deprecated"] = True
        if version.warning:
            made["deprecationWarning"] = version.warning
    made["schema"] = {"openAPIV3Schema": version.schema}
    made["subresources"] = dict(kind.subresources)
    made["additionalPrinterColumns"] = [dict(c) for c in kind.printer_columns]
    return made


def _conversion(kind: CustomKind, client: Mapping[str, Any] | None) -> dict[str, Any]:
    if not client or not ("url" in client or "service" in client):
        raise ValueError(
            f"{kind.kind}'s versions convert: its CRD needs the conversion webhook's "
            "clientConfig (crd(kind, conversion={'service': {...}}) or {'url': ...})"
        )
    config = dict(client)
    if "service" in config:
        config["service"] = {"path": CONVERT_PATH, **config["service"]}
    return {
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": config},
    }


def _crd(kind: CustomKind, metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": kind.group,
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "names": {
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.singular,
                "shortNames": list(kind.short_names),
                "categories": list(kind.categories),
            },
            "versions": [
                {
                    "name": kind.version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": root_schema(kind.model, kind.spec, kind.status)},
                    "subresources": dict(kind.subresources),
                    "additionalPrinterColumns": [dict(c) for c in kind.printer_columns],
                }
            ],
        },
    }
