"""``--sync-period`` without a cluster: durations, the flag, the period each kind gets,
and the generated install and chart carrying it."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from appstack.cli import main
from appstack.controllers.registry import ALL, by_kind
from appstack.core.duration import DEFAULT_SYNC_PERIOD, parse_duration
from appstack.manifests import chart, workload


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10m", 600.0),
        ("90s", 90.0),
        ("1h30m", 5400.0),
        ("2.5m", 150.0),
        ("500ms", 0.5),
        ("45", 45.0),
    ],
)
def test_durations_read_as_go_and_controller_runtime_flags_do(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "ten minutes", "1h 2m", "-5m", "0s", "0"])
def test_what_is_not_a_positive_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_the_flag_is_documented_and_checked_before_anything_runs() -> None:
    help_text = CliRunner().invoke(main, ["run", "--help"]).output
    assert "--sync-period" in help_text
    assert f"[default: {DEFAULT_SYNC_PERIOD}]" in help_text
    result = CliRunner().invoke(main, ["run", "--sync-period", "soon"])
    assert result.exit_code == 2
    assert "'soon' is not a duration such as 90s, 10m or 1h30m" in result.output


def test_every_kind_resyncs_at_the_sync_period() -> None:
    default = parse_duration(DEFAULT_SYNC_PERIOD)
    assert default == 600.0
    for controller in ALL:
        assert controller.resync_period() == default, controller.name
        assert controller.resync_period(5.0) == 5.0, controller.name
    stack = by_kind("AppStack")
    assert stack is not None
    assert stack.resync_period(3600.0) == 3600.0  # the Secrets it reads are watched


def test_the_install_and_the_chart_pass_the_sync_period() -> None:
    (container,) = workload.deployment()["spec"]["template"]["spec"]["containers"]
    assert f"--sync-period={DEFAULT_SYNC_PERIOD}" in container["args"]
    assert chart.values()["syncPeriod"] == DEFAULT_SYNC_PERIOD
    rendered = chart.render()
    deployment = rendered["templates/manager/operator.yaml"]
    assert "- --sync-period={{ toString .Values.syncPeriod }}" in deployment
    assert yaml.safe_load(rendered["values.yaml"])["syncPeriod"] == DEFAULT_SYNC_PERIOD


def test_appstack_manifests_takes_the_sync_period_and_checks_it() -> None:
    result = CliRunner().invoke(main, ["manifests", "-o", "-", "--sync-period", "90s"])
    assert result.exit_code == 0, result.output
    (deployment,) = (d for d in yaml.safe_load_all(result.output) if d["kind"] == "Deployment")
    assert "--sync-period=90s" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    refused = CliRunner().invoke(main, ["manifests", "-o", "-", "--sync-period", "often"])
    assert refused.exit_code == 2
    assert "'often' is not a duration" in refused.output
