"""CustomResourceDefinitions generated from the kinds declared in :mod:`appstack.api`
(:class:`~appstack.api.kind.CustomKind`: names, scope, columns, subresources, and the
Pydantic models the schema comes from), one per registered controller."""

from __future__ import annotations

import inspect
from typing import Any

from appstack.api.kind import CustomKind
from appstack.api.schema import structural_schema
from appstack.controllers.registry import ALL

LABELS = {"app.kubernetes.io/part-of": "appstack", "app.kubernetes.io/managed-by": "appstack"}


def _root_schema(model: Any, spec: Any, status: Any) -> dict[str, Any]:
    rules = [rule.schema() for rule in model.NAME_RULES if rule.cel is not None]
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
        **({"x-kubernetes-validations": rules} if rules else {}),
    }


def crd(kind: CustomKind) -> dict[str, Any]:
    """The CustomResourceDefinition of one declared kind."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.crd_name, "labels": LABELS},
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
                    "schema": {"openAPIV3Schema": _root_schema(kind.model, kind.spec, kind.status)},
                    "subresources": dict(kind.subresources),
                    "additionalPrinterColumns": [dict(c) for c in kind.printer_columns],
                }
            ],
        },
    }


def all_crds() -> list[dict[str, Any]]:
    """One CRD per registered controller's kind."""
    return [crd(controller.kind) for controller in ALL]
