"""``appstack render`` (cli/render.py) prints exactly the children the reconcilers apply,
and passes on what is not one of our kinds."""

from __future__ import annotations

from typing import Any

import yaml

from appstack.cli.render import PLACEHOLDER_UID, render_documents
from appstack.controllers.registry import by_kind
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
