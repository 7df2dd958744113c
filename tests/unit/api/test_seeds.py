"""Seed operators' objects (their own API groups) are explained, never passed through:
:mod:`appstack.api.seeds` and ``appstack render`` on each seed's own example."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from appstack.api.seeds import foreign_problem
from appstack.cli import main
from appstack.controllers.registry import ALL

OURS = {c.kind.kind for c in ALL}

# Each seed's example as the seed prints it (shared/seeds 000, 001, 003, 004).
SEED_000 = """\
apiVersion: app.example.com/v1
kind: AppService
metadata:
  name: nginx-app
spec:
  size: 2
  image: nginx:1.7.9
  ports:
    - port: 80
      targetPort: 80
      nodePort: 30002
"""
SEED_001 = SEED_000.replace("app.example.com", "kosmos.io").replace(
    "nginx-app", "appservice-sample"
)
SEED_003 = """\
apiVersion: d3os-product.com.d3os/v1
kind: DataService
metadata:
  name: dataservice-sample
"""
SEED_004 = """\
apiVersion: "stable.example.com/v1"
kind: CronTab
metadata:
  name: my-new-cron-object
spec:
  cronSpec: "* * * * * *"
  image: busybox
"""

SEED_004_MONGODB = """\
apiVersion: mongodbcommunity.mongodb.com/v1
kind: MongoDBCommunity
metadata:
  name: example-mongodb
spec:
  members: 3
  type: ReplicaSet
  version: "4.2.6"
"""


@pytest.mark.parametrize(
    ("seed", "message"),
    [
        (SEED_000, "AppService is served as appstack.dev/v1; change apiVersion"),
        (SEED_001, "AppService is served as appstack.dev/v1; change apiVersion"),
        (SEED_004, "CronTab is served as appstack.dev/v1; change apiVersion"),
        (SEED_004_MONGODB, "MongoDBCommunity is served as appstack.dev/v1; change apiVersion"),
        (
            SEED_003,
            "DataService (d3os-product.com.d3os/v1, a seed operator's) is served as "
            "AppStack in appstack.dev/v1; the DataService system is one AppStack",
        ),
    ],
)
def test_render_says_what_to_change_in_each_seed_example(seed: str, message: str) -> None:
    result = CliRunner().invoke(main, ["render", "-f", "-"], input=seed)
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert "kind: Deployment" not in result.output  # nothing rendered, nothing passed on


def test_the_seed_example_with_our_api_version_renders() -> None:
    fixed = SEED_004.replace('"stable.example.com/v1"', "appstack.dev/v1")
    result = CliRunner().invoke(main, ["render", "-f", "-"], input=fixed)
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.output)["spec"]["schedule"] == "* * * * *"


def _doc(api_version: str, kind: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}


def test_any_version_of_a_seed_group_and_our_kinds_anywhere_are_foreign() -> None:
    assert "change apiVersion (was app.example.com/v1alpha1)" in str(
        foreign_problem(_doc("app.example.com/v1alpha1", "AppService"), OURS)
    )
    assert "AppStack is served as appstack.dev/v1" in str(
        foreign_problem(_doc("example.org/v2", "AppStack"), OURS)
    )
    unknown = foreign_problem(_doc("kosmos.io/v1", "Widget"), OURS)
    assert unknown == (
        "kosmos.io/v1 is a seed operator's API group; appstack serves AppService as "
        "appstack.dev/v1, not Widget"
    )


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [("appstack.dev/v1", "AppService"), ("v1", "ConfigMap"), ("apps/v1", "Deployment")],
)
def test_our_objects_and_ordinary_ones_are_not_foreign(api_version: str, kind: str) -> None:
    assert foreign_problem(_doc(api_version, kind), OURS) is None
