"""The shipped alert rules under promtool (built from Go modules by the test bed): they
load (``promtool check rules``), and each fires on a broken operator only after its
``for:`` and never on a healthy one (``promtool test rules`` on
tests/monitoring/alerts_test.yaml); every shipped alert must have both cases. The
dashboard's queries are checked to parse the same way (as recording rules)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.manifests import dashboard
from appstack.sdk import OperatorIdentity, alerting_rules
from appstack_testbed import prometheus
from appstack_testbed.prometheus_config import alert_names, rule_groups

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "deploy" / "monitoring" / "prometheus-rule.yaml"
ALERTS_TEST = ROOT / "tests" / "monitoring" / "alerts_test.yaml"
RULES_NAME = "operator.rules.yaml"  # what alerts_test.yaml's rule_files names


@pytest.fixture
def promtool(prometheus_binaries: prometheus.Binaries) -> prometheus.Binaries:
    return prometheus_binaries  # built once into the cache (about 8 minutes the first time)


def shipped_groups() -> dict[str, Any]:
    (rule,) = [d for d in yaml.safe_load_all(SHIPPED.read_text()) if d]
    return rule_groups(rule)


def _layout(tmp_path: Path, groups: dict[str, Any]) -> Path:
    (tmp_path / RULES_NAME).write_text(yaml.safe_dump(groups, sort_keys=False))
    return Path(shutil.copy(ALERTS_TEST, tmp_path / ALERTS_TEST.name))


def test_the_shipped_rules_pass_promtool_check(
    promtool: prometheus.Binaries, tmp_path: Path
) -> None:
    rules = tmp_path / RULES_NAME
    rules.write_text(yaml.safe_dump(shipped_groups(), sort_keys=False))
    checked = promtool.promtool("check", "rules", str(rules))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alert_names(shipped_groups()))} rules found" in checked.stdout


def test_every_shipped_alert_has_a_firing_and_a_silent_case() -> None:
    cases = yaml.safe_load(ALERTS_TEST.read_text())["tests"]
    checks = [c for case in cases for c in case.get("alert_rule_test", [])]
    fires = {c["alertname"] for c in checks if c.get("exp_alerts")}
    silent = {c["alertname"] for c in checks if not c.get("exp_alerts")}
    shipped = set(alert_names(shipped_groups()))
    assert shipped, "no alerts in the shipped PrometheusRule"
    assert shipped - fires == set(), "shipped alerts without a case where they fire"
    assert shipped - silent == set(), "shipped alerts without a case where they stay silent"
    assert (fires | silent) - shipped == set(), "cases for alerts that are not shipped"


def test_the_shipped_alerts_fire_as_the_unit_tests_expect(
    promtool: prometheus.Binaries, tmp_path: Path
) -> None:
    tests = _layout(tmp_path, shipped_groups())
    result = promtool.promtool("test", "rules", str(tests), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("alert", alert_names(shipped_groups()))
def test_the_unit_tests_catch_an_alert_that_fires_without_waiting(
    promtool: prometheus.Binaries, tmp_path: Path, alert: str
) -> None:
    """The cases are not vacuous: with its ``for:`` dropped, each alert fails them."""
    groups = shipped_groups()
    for group in groups["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == alert:
                rule.pop("for")
    tests = _layout(tmp_path, groups)
    result = promtool.promtool("test", "rules", str(tests), cwd=tmp_path)
    assert result.returncode != 0, result.stdout
    assert alert in result.stdout + result.stderr


def test_the_dashboard_queries_parse(promtool: prometheus.Binaries, tmp_path: Path) -> None:
    records = [
        {"record": f"appstack:dashboard_query_{i}", "expr": expr}
        for i, expr in enumerate(dashboard.expressions())
    ]
    rules = tmp_path / "dashboard.rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": records}]}))
    checked = promtool.promtool("check", "rules", str(rules))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_an_operators_own_alerts_load_whatever_its_controllers_are_named(
    promtool: prometheus.Binaries, tmp_path: Path
) -> None:
    """The alerts every SDK operator gets select its controllers by name in a PromQL regex:
    names with regex characters (``guest-book``, ``a.b``) still give rules promtool loads."""
    from dataclasses import replace  # noqa: PLC0415

    from tests.support.guestbook import PROJECT  # noqa: PLC0415

    (plain,) = PROJECT.controllers
    named = [replace(plain, name="guest-book"), replace(plain, name="a.b")]
    identity = OperatorIdentity(project="guest-book", domain="webapp.example.com")
    rules = alerting_rules(identity, named, lease_duration=15)
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "guest-book", "rules": rules}]}))
    checked = promtool.promtool("check", "rules", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(rules)} rules found" in checked.stdout
