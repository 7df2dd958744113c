"""The chart's ``terminationGracePeriodSeconds`` and ``gracefulShutdownTimeout`` with the
real ``helm`` (``helm template``, offline; the test bed's binary, built if missing as
tests/unit/manifests/test_chart_sharding.py does): by default the pods get the install's 30 s
and the operator no flag (its own default, 20 s: the default render stays the generated
install's, which test_chart_sharding.py compares); raised, exactly those two change, and
``appstack run`` reads the rendered flag as the duration given; a timeout not below the grace
period fails the render, saying why, as does one that is no duration when the schema is
skipped (the schema refuses it first, naming the value)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.cli.run import run
from appstack.core import defaults
from appstack.manifests import chart
from appstack.sdk import OperatorOptions
from tests.unit.manifests.helm_chart import SHARDED, helm_template

FLAG = "--graceful-shutdown-timeout"
NOT_BELOW = "is not below terminationGracePeriodSeconds"
Obj = dict[str, Any]


def _helm(helm: Path, *values: str) -> subprocess.CompletedProcess[str]:
    return helm_template(helm, "appstack", *values, tests=False)


def deployment(helm: Path, *values: str) -> Obj:
    proc = _helm(helm, *values)
    assert proc.returncode == 0, proc.stderr
    (found,) = [o for o in yaml.safe_load_all(proc.stdout) if o and o["kind"] == "Deployment"]
    return dict(found)


def refused(helm: Path, *values: str) -> str:
    proc = _helm(helm, *values)
    assert proc.returncode != 0, f"accepted: {values}"
    return proc.stderr


def pod_and_args(obj: Obj) -> tuple[Obj, list[str]]:
    pod = obj["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return pod, list(container["args"])


def shutdown_timeout(args: list[str]) -> float:
    """The seconds ``appstack run`` reads from the operator's arguments (after ``run``)."""
    assert args[0] == "run"
    with run.make_context("run", args[1:]) as ctx:
        return float(ctx.params["shutdown_timeout"])


def test_the_defaults_are_the_operators_own(helm: Path) -> None:
    values = chart.values()
    assert values["gracefulShutdownTimeout"] == defaults.SHUTDOWN_TIMEOUT == "20s"
    assert OperatorOptions().shutdown_timeout == 20.0
    pod, args = pod_and_args(deployment(helm))
    assert pod["terminationGracePeriodSeconds"] == values["terminationGracePeriodSeconds"] == 30
    assert not [a for a in args if a.startswith(FLAG)]  # the install's: no flag
    assert shutdown_timeout(args) == 20.0


@pytest.mark.parametrize(
    ("timeout", "grace", "seconds"),
    [("1m", 90, 60.0), ("1m30s", 91, 90.0), ("59.5s", 60, 59.5), ("500ms", 30, 0.5)],
)
def test_raised_only_the_grace_period_and_the_flag_change(
    helm: Path, timeout: str, grace: int, seconds: float
) -> None:
    sets = (
        f"--set=terminationGracePeriodSeconds={grace}",
        f"--set=gracefulShutdownTimeout={timeout}",
    )
    for sharding in ((), (SHARDED,)):
        before = deployment(helm, *sharding)
        after = deployment(helm, *sharding, *sets, "--set=extraArgs={--log-level=debug}")
        pod, args = pod_and_args(after)
        assert pod["terminationGracePeriodSeconds"] == grace
        assert args[-2:] == [f"{FLAG}={timeout}", "--log-level=debug"]  # extraArgs win
        assert shutdown_timeout(args) == seconds
        pod["terminationGracePeriodSeconds"] = 30
        pod["containers"][0]["args"] = args[:-2]
        assert after == before


def test_a_large_grace_period_from_a_values_file_renders_as_an_integer(
    helm: Path, tmp_path: Path
) -> None:
    """Helm reads a values file's number as a float (printed 1e+06 unless made an int)."""
    values = tmp_path / "values.yaml"
    values.write_text("terminationGracePeriodSeconds: 1000000\ngracefulShutdownTimeout: 1h\n")
    pod, args = pod_and_args(deployment(helm, f"--values={values}"))
    assert pod["terminationGracePeriodSeconds"] == 1000000
    assert shutdown_timeout(args) == 3600.0


@pytest.mark.parametrize(
    ("timeout", "grace"),
    [("30s", None), ("20s", 20), ("1m", 60), ("60.5s", 60), ("1h", 3600), ("2m", 90)],
)
def test_a_timeout_not_below_the_grace_period_is_refused(
    helm: Path, timeout: str, grace: int | None
) -> None:
    sets = [f"--set=gracefulShutdownTimeout={timeout}"]
    sets += [f"--set=terminationGracePeriodSeconds={grace}"] if grace is not None else []
    for sharding in ((), (SHARDED,)):
        message = refused(helm, *sharding, *sets)
        assert f"gracefulShutdownTimeout={timeout} {NOT_BELOW}={grace or 30}" in message


def test_what_is_no_duration_or_no_grace_period_is_refused(helm: Path) -> None:
    for timeout in ("15", "20", "1d", "-5s", "1m 30s", "soon"):
        value = f"--set-string=gracefulShutdownTimeout={timeout}"
        assert "/gracefulShutdownTimeout" in refused(helm, value)
        # the schema skipped, the template refuses it too, saying why
        skipped = refused(helm, "--skip-schema-validation", value)
        assert f"gracefulShutdownTimeout={timeout} is not a duration" in skipped
    for grace in ("0", "-1", "2.5"):
        assert "/terminationGracePeriodSeconds" in refused(
            helm, f"--set=terminationGracePeriodSeconds={grace}"
        )
    assert NOT_BELOW in refused(
        helm, "--skip-schema-validation", "--set=terminationGracePeriodSeconds=0"
    )
