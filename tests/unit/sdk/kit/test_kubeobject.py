"""An object of the API as the controllers read it (sdk/kit/kubeobject.py): whatever has
``metadata.name`` is one, anything else is refused where a reconcile reads it."""

from __future__ import annotations

from typing import Any

import pytest

from appstack.sdk.kit.kubeobject import as_object


def test_an_object_with_a_named_metadata_is_an_object_as_it_is() -> None:
    raw: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    obj = as_object(raw)
    assert obj is raw  # the cache's dict itself, not a copy
    assert obj["metadata"]["name"] == "x"


@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"metadata": None},
        {"metadata": {}},
        {"metadata": {"name": 7}},
        {"metadata": "x"},
        {"spec": {"name": "x"}},
    ],
)
def test_anything_without_a_name_is_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"no metadata\.name"):
        as_object(raw)
