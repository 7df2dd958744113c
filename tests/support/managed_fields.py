"""Managed-fields test data shared by the unit tests of the runtime's trimming
(tests/unit/runtime/test_managedfields.py, test_cache.py) and the kit's comparison
(tests/unit/sdk/kit/test_compare.py): what the API server records of an apply, and a
Deployment with several managers' entries."""

from __future__ import annotations

import json
from typing import Any


def k(**keys: Any) -> str:
    """A ``fieldsV1`` list item key (``k:{...}``) of ``keys``."""
    return "k:" + json.dumps(keys, separators=(",", ":"))


# What the API server records (fieldsV1, as it writes it) for an apply of the Deployment
# test_compare.py wants (its _want()).
APPLIED: dict[str, Any] = {
    "f:metadata": {"f:labels": {"f:app": {}}, "f:ownerReferences": {k(uid="u1"): {}}},
    "f:spec": {
        "f:replicas": {},
        "f:template": {
            "f:spec": {
                "f:containers": {
                    k(name="app"): {
                        ".": {},
                        "f:name": {},
                        "f:image": {},
                        "f:env": {k(name="A"): {".": {}, "f:name": {}, "f:value": {}}},
                        "f:ports": {
                            k(containerPort=80, protocol="TCP"): {".": {}, "f:containerPort": {}}
                        },
                        "f:resources": {"f:limits": {"f:cpu": {}}},
                    }
                },
                "f:finalizers": {'v:"x"': {}},
            }
        },
    },
}


def entry(manager: str, operation: str, **more: Any) -> dict[str, Any]:
    """A managed-fields entry of ``manager``."""
    return {"manager": manager, "operation": operation, "fieldsV1": {"f:x": {}}, **more}


def deployment() -> dict[str, Any]:
    """A Deployment with entries of the controller manager, ours (status update and apply)
    and kubectl's apply."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "resourceVersion": "4",
            "managedFields": [
                entry("kube-controller-manager", "Update"),
                entry("appstack", "Update", subresource="status"),
                entry("appstack", "Apply"),
                entry("kubectl", "Apply"),
            ],
        },
    }
