"""appstack's kinds are declared once (api/kind.py): each kind's names, resource and paths
derive from its declaration under the group, and a model's apiVersion and kind default to
and must match it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from appstack.api.appservice import AppService
from appstack.api.kind import GROUP, group_key


def test_each_kind_is_derived_from_its_declaration() -> None:
    kind = AppService.KIND
    assert kind.api_version == f"{GROUP}/v1"
    assert (kind.kind, kind.plural, kind.singular) == ("AppService", "appservices", "appservice")
    assert str(kind.resource) == f"appservices.{GROUP}"
    assert kind.resource.path("ns", "web") == f"/apis/{GROUP}/v1/namespaces/ns/appservices/web"
    assert group_key("stack") == f"{GROUP}/stack"


def test_api_version_and_kind_default_to_and_must_match_the_declaration() -> None:
    app = AppService.model_validate({"metadata": {"name": "x"}, "spec": {"image": "nginx"}})
    assert (app.api_version, app.kind) == (f"{GROUP}/v1", "AppService")
    with pytest.raises(ValidationError, match="apiVersion"):
        AppService.model_validate({"apiVersion": f"{GROUP}/v2", "spec": {"image": "nginx"}})
    with pytest.raises(ValidationError, match="kind"):
        AppService.model_validate({"kind": "AppStack", "spec": {"image": "nginx"}})
