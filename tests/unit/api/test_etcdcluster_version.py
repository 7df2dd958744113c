"""Which EtcdCluster version changes are allowed (api/etcdcluster_version.py), without a cluster.
The CEL form of the same test runs on the API server in tests/e2e/test_etcdcluster_kind.py."""

from __future__ import annotations

import pytest

from appstack.api.etcdcluster import EtcdClusterSpec
from appstack.api.etcdcluster_version import DOWNGRADE, SKIP, VERSION_RULES, version_change_problem


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("3.5.21", "3.6.16", None),  # one minor up
        ("3.6.16", "3.6.17", None),  # patch up
        ("3.6.16", "3.6.15", None),  # patch down, same minor
        ("3.6.16", "3.6.16", None),
        ("3.6.16", "3.5.21", DOWNGRADE),
        ("3.6.0", "3.5.99", DOWNGRADE),
        ("3.6.16", "2.3.8", DOWNGRADE),
        ("3.4.30", "3.6.16", SKIP),
        ("3.5.0", "3.7.0", SKIP),
        ("3.6.16", "4.0.0", SKIP),
    ],
)
def test_version_changes(old: str, new: str, problem: str | None) -> None:
    assert version_change_problem(old, new) == problem


def test_the_rules_are_in_the_crd_schema_naming_the_version_field() -> None:
    rules = EtcdClusterSpec.model_json_schema()["x-kubernetes-validations"]
    for rule in VERSION_RULES:
        assert rule in rules
        assert rule["fieldPath"] == ".version"
        assert "oldSelf.version" in rule["rule"]  # a transition rule: updates only
