"""Every test under tests/e2e runs against the real control plane and is marked ``e2e``.

Also: an async runtime ``client`` per test, and a throw-away CRD (``widget_crd``) with a
validation rule and a status subresource.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from lightkube import Client as LightClient
from lightkube import codecs
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

from appstack.runtime.client import Client
from appstack.runtime.resources import Resource
from appstack.testing.waiting import condition_status, wait_for

WIDGET_GROUP = "testbed.appstack.dev"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
async def client(kubeconfig: Path) -> AsyncIterator[Client]:
    async with await Client.connect(str(kubeconfig)) as runtime_client:
        yield runtime_client


@pytest.fixture
def widget_crd(kube: LightClient) -> Iterator[Resource]:
    """A namespaced CRD ``Widget<suffix>`` with ``spec.min <= spec.max`` and a status."""
    suffix = uuid.uuid4().hex[:6]
    plural, kind = f"widgets{suffix}", f"Widget{suffix}"
    name = f"{plural}.{WIDGET_GROUP}"
    spec_schema = {
        "type": "object",
        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "spec.min must not exceed spec.max"}
        ],
    }
    status_schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": spec_schema, "status": status_schema},
            }
        },
    }
    kube.create(
        codecs.from_dict(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": name},
                "spec": {
                    "group": WIDGET_GROUP,
                    "scope": "Namespaced",
                    "names": {"plural": plural, "singular": plural, "kind": kind},
                    "versions": [version],
                },
            }
        )
    )
    wait_for(
        lambda: condition_status(kube.get(CustomResourceDefinition, name), "Established") == "True",
        timeout=30,
        what=f"CRD {name} to be established",
    )
    yield Resource(WIDGET_GROUP, "v1", kind, plural)
    kube.delete(CustomResourceDefinition, name)
