"""CustomResourceDefinitions generated from the Pydantic models in :mod:`appstack.api`."""

from __future__ import annotations

import inspect
from typing import Any

from appstack.api import appservice, appstack, crontab
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


def _crd(
    module: Any,
    models: tuple[Any, Any, Any],
    short_names: list[str],
    subresources: dict[str, Any],
    columns: list[dict[str, str]],
) -> dict[str, Any]:
    model, spec, status = models
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{module.PLURAL}.{module.GROUP}", "labels": LABELS},
        "spec": {
            "group": module.GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": module.KIND,
                "listKind": f"{module.KIND}List",
                "plural": module.PLURAL,
                "singular": module.KIND.lower(),
                "shortNames": short_names,
                "categories": ["appstack"],
            },
            "versions": [
                {
                    "name": module.VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": _root_schema(model, spec, status)},
                    "subresources": subresources,
                    "additionalPrinterColumns": columns,
                }
            ],
        },
    }


_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def appservice_crd() -> dict[str, Any]:
    a = appservice
    return _crd(
        a,
        (a.AppService, a.AppServiceSpec, a.AppServiceStatus),
        ["appsvc"],
        {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.size",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            },
        },
        [
            {
                "name": "Ready",
                "type": "string",
                "jsonPath": ".status.ready",
                "description": "Ready pods / desired size",
            },
            {"name": "Up-to-date", "type": "integer", "jsonPath": ".status.updatedReplicas"},
            {"name": "Available", "type": "integer", "jsonPath": ".status.availableReplicas"},
            {"name": "Image", "type": "string", "jsonPath": ".spec.image"},
            _AGE,
        ],
    )


def crontab_crd() -> dict[str, Any]:
    c = crontab
    return _crd(
        c,
        (c.CronTab, c.CronTabSpec, c.CronTabStatus),
        ["ct"],
        {"status": {}},
        [
            {"name": "Schedule", "type": "string", "jsonPath": ".spec.cronSpec"},
            {"name": "Suspend", "type": "boolean", "jsonPath": ".spec.suspend"},
            {"name": "Active", "type": "integer", "jsonPath": ".status.active"},
            {"name": "Last Schedule", "type": "date", "jsonPath": ".status.lastScheduleTime"},
            _AGE,
        ],
    )


def appstack_crd() -> dict[str, Any]:
    a = appstack
    return _crd(
        a,
        (a.AppStack, a.AppStackSpec, a.AppStackStatus),
        ["stack"],
        {"status": {}},
        [
            {
                "name": "Ready",
                "type": "string",
                "jsonPath": ".status.readyMembers",
                "description": "Ready members / all members",
            },
            {
                "name": "Status",
                "type": "string",
                "jsonPath": '.status.conditions[?(@.type=="Ready")].reason',
            },
            _AGE,
        ],
    )


def all_crds() -> list[dict[str, Any]]:
    return [appservice_crd(), appstack_crd(), crontab_crd()]
