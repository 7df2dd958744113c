"""The CustomResourceDefinition of a declared kind (:func:`crd`), generated from its
:class:`~appstack.sdk.kind.CustomKind` — names, scope, printer columns, subresources, and
the Pydantic models the structural schema comes from (:mod:`appstack.sdk.schema`), with
the kind's name rules as CEL at the schema's root. Pure. Used by appstack's install
(:mod:`appstack.manifests.crds`) and by any operator built on the SDK (``make manifests``
of a scaffolded project): a CRD carries only the labels its caller gives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from appstack.sdk.kind import CustomKind
from appstack.sdk.schema import root_schema


def crd(kind: CustomKind, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The CustomResourceDefinition of one declared kind, labelled ``labels`` (none by
    default: the CRD is its author's, not any installer's)."""
    metadata: dict[str, Any] = {"name": kind.crd_name}
    if labels:
        metadata["labels"] = dict(labels)
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
