"""CustomResourceDefinitions generated from the Pydantic models in :mod:`appstack.api`."""

from __future__ import annotations

import inspect
from typing import Any

from appstack.api import appservice
from appstack.api.schema import structural_schema

LABELS = {"app.kubernetes.io/part-of": "appstack", "app.kubernetes.io/managed-by": "appstack"}


def _root_schema(model: Any, spec: Any, status: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "description": inspect.cleandoc(model.__doc__ or ""),
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion of this object."},
            "kind": {"type": "string", "description": "Kind of this object."},
            "metadata": {"type": "object"},
            "spec": structural_schema(spec),
            "status": structural_schema(status),
        },
        "required": ["spec"],
    }


def appservice_crd() -> dict[str, Any]:
    a = appservice
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{a.PLURAL}.{a.GROUP}", "labels": LABELS},
        "spec": {
            "group": a.GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": a.KIND,
                "listKind": f"{a.KIND}List",
                "plural": a.PLURAL,
                "singular": a.KIND.lower(),
                "shortNames": ["appsvc"],
                "categories": ["appstack"],
            },
            "versions": [
                {
                    "name": a.VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": _root_schema(
                            a.AppService, a.AppServiceSpec, a.AppServiceStatus
                        )
                    },
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.size",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                    "additionalPrinterColumns": [
                        {
                            "name": "Ready",
                            "type": "string",
                            "jsonPath": ".status.ready",
                            "description": "Ready pods / desired size",
                        },
                        {
                            "name": "Up-to-date",
                            "type": "integer",
                            "jsonPath": ".status.updatedReplicas",
                        },
                        {
                            "name": "Available",
                            "type": "integer",
                            "jsonPath": ".status.availableReplicas",
                        },
                        {"name": "Image", "type": "string", "jsonPath": ".spec.image"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                }
            ],
        },
    }


def all_crds() -> list[dict[str, Any]]:
    return [appservice_crd()]
