"""``appstack status NAME --graph`` without a cluster: the demo's DataService
(examples/dataservice.yaml) halfway through its start — its waves, what each member needs
and who blocks whom — drawn as text, DOT and Mermaid and compared to golden files in
tests/support/golden/ (a change to the drawing is a reviewed change to those files:
``UPDATE_GOLDEN=1`` rewrites them); the command's refusals. The drawing's own rules:
tests/unit/sdk/kit/test_graphs.py."""

from __future__ import annotations

import os
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from appstack.cli import main
from appstack.cli.status_kinds import draw, graph_of
from appstack.controllers.appstack.view import tree
from tests.support.paths import REPO_ROOT

GOLDEN = REPO_ROOT / "tests" / "support" / "golden"

#: Each member's state halfway through the start: the first wave up, auth still starting,
#: trd-adapter's image not pulled, what needs auth waiting for it.
STATES = {
    "mysql": ("Middleware/mysql", "Ready", ""),
    "uuc": ("Middleware/service", "Ready", ""),
    "eureka": ("Component", "Ready", ""),
    "auth": ("Component", "Progressing", "0/1 replicas ready"),
    "ds-adapter": ("Component", "Ready", ""),
    "es-adapter": ("Component", "Ready", ""),
    "trd-adapter": ("Component", "Failed", "ImagePullBackOff"),
    "api-manager": ("Component", "WaitingForDependencies", "waiting for auth"),
    "gateway-master": ("Component", "WaitingForDependencies", "waiting for auth, api-manager"),
    "gateway-web": ("Component", "WaitingForDependencies", "waiting for gateway-master"),
    "proxy": ("Component", "WaitingForDependencies", "waiting for gateway-web, trd-adapter"),
    "web": ("Component", "WaitingForDependencies", "waiting for proxy"),
}


def dataservice() -> dict[str, Any]:
    """The demo's AppStack as written, with a status of members as :data:`STATES`."""
    docs = yaml.safe_load_all((REPO_ROOT / "examples" / "dataservice.yaml").read_text())
    stack: dict[str, Any] = next(d for d in docs if d and d["kind"] == "AppStack")
    stack["metadata"]["namespace"] = "shop"
    members = [
        {"name": name, "kind": kind, "ready": "", "state": state, "message": message}
        for name, (kind, state, message) in STATES.items()
    ]
    ready = sum(state == "Ready" for _, state, _ in STATES.values())
    stack["status"] = {
        "readyMembers": f"{ready}/{len(members)}",
        "members": members,
        "conditions": [{"type": "Ready", "status": "False", "reason": "Progressing"}],
    }
    return stack


@pytest.mark.parametrize(
    ("output", "golden"), [("tree", "txt"), ("dot", "dot"), ("mermaid", "mmd")]
)
def test_the_dataservice_graph_is_drawn_as_its_golden_file(output: str, golden: str) -> None:
    drawn = draw(tree(dataservice(), []), output, graph=True)
    path = GOLDEN / f"dataservice-graph.{golden}"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(drawn)
    assert drawn == path.read_text()


def test_the_dataservice_graph_has_the_controllers_waves_and_blockers() -> None:
    graph = graph_of(tree(dataservice(), []))
    assert graph is not None
    assert [list(w) for w in graph.waves] == [
        ["eureka", "mysql", "uuc"],
        ["auth", "ds-adapter", "es-adapter", "trd-adapter"],
        ["api-manager"],
        ["gateway-master"],
        ["gateway-web"],
        ["proxy"],
        ["web"],
    ]
    assert graph.blocked_by("api-manager") == ["auth"]
    assert graph.blocked_by("proxy") == ["gateway-web", "trd-adapter"]
    assert graph.blocked_by("auth") == []
    labels = {(e.source, e.target): e.label for e in graph.edges}
    assert labels[("auth", "mysql")] == "uses"
    assert labels[("api-manager", "auth")] == "dependsOn"
    assert labels[("api-manager", "eureka")] == "uses"


def test_a_member_both_used_and_depended_on_is_one_uses_edge() -> None:
    stack = dataservice()
    stack["spec"]["components"][1]["dependsOn"] = ["eureka"]  # auth also uses eureka
    graph = graph_of(tree(stack, []))
    assert graph is not None
    assert [e.label for e in graph.edges if (e.source, e.target) == ("auth", "eureka")] == ["uses"]


def test_a_kind_without_a_graph_is_refused_before_any_cluster_is_asked() -> None:
    result = CliRunner().invoke(
        main, ["status", "appservice/web", "-n", "default", "--graph", "--kubeconfig=/nonexistent"]
    )
    assert result.exit_code == 1, result.output
    assert "AppService draws no dependency graph" in result.output
    assert "Traceback" not in result.output
    dot = CliRunner().invoke(main, ["status", "etcd/e", "-n", "default", "-o", "dot"])
    assert dot.exit_code == 1
    assert "EtcdCluster draws no dependency graph" in dot.output


def test_the_graph_as_data_is_the_graph_drawn() -> None:
    shown = yaml.safe_load(draw(tree(dataservice(), []), "yaml", graph=True))
    assert shown["title"].startswith("AppStack shop/dataservice: Progressing (5/12 ready)")
    assert {n["name"] for n in shown["nodes"]} == set(STATES)
    assert shown["waves"][0] == ["eureka", "mysql", "uuc"]


def test_the_docs_show_the_golden_graph() -> None:
    """docs/appstack.md shows what the command draws, not an older drawing."""
    page = (REPO_ROOT / "docs" / "appstack.md").read_text()
    assert (
        "```text\n$ appstack status dataservice --graph\n"
        + (GOLDEN / "dataservice-graph.txt").read_text()
        + "```"
        in page
    )
    assert "```mermaid\n" + (GOLDEN / "dataservice-graph.mmd").read_text() + "```" in page
