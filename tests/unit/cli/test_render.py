"""``appstack render`` (cli/render.py) prints exactly the children the reconcilers apply,
and passes on what is not one of our kinds."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import yaml

from appstack.cli.render import CEL_NOTE, PLACEHOLDER_UID, RenderError, render_documents
from appstack.controllers.registry import by_kind
from appstack.sdk import cel
from tests.support.paths import REPO_ROOT as ROOT


def test_render_prints_exactly_the_children_the_reconcilers_apply() -> None:
    docs = [
        d
        for name in ("appservice.yaml", "dataservice.yaml", "etcdcluster.yaml")
        for d in yaml.safe_load_all((ROOT / "examples" / name).read_text())
        if d
    ]
    expected: list[dict[str, Any]] = []
    for doc in docs:
        controller = by_kind(doc["kind"])
        if controller is None:
            expected.append(doc)
            continue
        parsed = controller.kind.model.model_validate(doc)
        obj = parsed.to_dict()
        obj["metadata"] = {"namespace": "default", **obj["metadata"], "uid": PLACEHOLDER_UID}
        expected += controller.children(obj, parsed.spec)
    assert render_documents(docs) == expected
    assert len(expected) > len(docs)


PORTS = {
    "apiVersion": "appstack.dev/v1",
    "kind": "AppService",
    "metadata": {"name": "ports"},
    "spec": {"image": "nginx:1.27", "ports": [{"port": 80}, {"port": 81}]},
}


def test_the_crds_cel_rules_refuse_as_admission_does_naming_the_field() -> None:
    notes: list[str] = []
    with pytest.raises(RenderError) as refused:
        render_documents([PORTS], notes)
    assert refused.value.problems == [
        "AppService ports: spec.ports: every port needs a name when there is more than one port"
    ]
    assert notes == []


def test_without_the_cel_engine_render_says_the_rules_were_left_to_the_api_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the module (the package's attribute of that name is the `render` command)
    monkeypatch.setattr(sys.modules[render_documents.__module__], "cel_available", lambda: False)
    monkeypatch.setattr(cel, "available", lambda: False)  # and the SDK's own check
    notes: list[str] = []
    rendered = render_documents([PORTS, {**PORTS, "metadata": {"name": "again"}}], notes)
    assert {o["kind"] for o in rendered} == {"Deployment", "Service"}
    assert notes == [CEL_NOTE]  # once
    assert "pip install 'cel-expr-python>=0.1.3,<0.2'" in CEL_NOTE  # never appstack by name
