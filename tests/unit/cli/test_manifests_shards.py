"""``appstack manifests --shards N`` (docs/sharding.md): N replicas each run with
``--sharding``, and what cannot shard is refused in one line."""

from __future__ import annotations

import yaml
from click.testing import CliRunner

from appstack.cli import main


def test_shards_make_that_many_sharded_replicas() -> None:
    done = CliRunner().invoke(main, ["manifests", "-o", "-", "--shards", "3"])
    assert done.exit_code == 0, done.output
    objects = [o for o in yaml.safe_load_all(done.stdout) if o]
    (deployment,) = (o for o in objects if o["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 3
    assert "--sharding" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert any(o["metadata"]["name"].startswith("appstack-shard-labels-") for o in objects)


def test_what_cannot_shard_is_refused_in_one_line() -> None:
    for args, said in (
        (["--shards", "1"], "--shards 1 is one replica: give 2 or more"),
        (["--shards", "2", "--no-leader-elect"], "--shards elects its coordinator"),
    ):
        refused = CliRunner().invoke(main, ["manifests", "-o", "-", *args])
        assert refused.exit_code == 2
        assert said in refused.output
        assert "Traceback" not in refused.output


def test_autoscale_adds_a_horizontal_pod_autoscaler_and_leaves_it_the_replicas() -> None:
    """``--shards 2 --autoscale 2:6``: the chart's ``autoscaling`` as a flag — a
    HorizontalPodAutoscaler of the Deployment between 2 and 6 shards at 80 % of the CPU
    requests, and a Deployment with no replicas of its own (a re-apply does not undo the
    autoscaler); in --output-dir's operator.yaml too."""
    done = CliRunner().invoke(main, ["manifests", "-o", "-", "--shards", "2", "--autoscale", "2:6"])
    assert done.exit_code == 0, done.output
    objects = [o for o in yaml.safe_load_all(done.stdout) if o]
    (deployment,) = (o for o in objects if o["kind"] == "Deployment")
    assert "replicas" not in deployment["spec"]
    (hpa,) = (o for o in objects if o["kind"] == "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert hpa["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    target = hpa["spec"]["metrics"][0]["resource"]["target"]
    assert target == {"type": "Utilization", "averageUtilization": 80}
    plain = CliRunner().invoke(main, ["manifests", "-o", "-", "--shards", "2"])
    assert "HorizontalPodAutoscaler" not in plain.stdout


def test_autoscale_without_shards_or_out_of_range_is_refused_in_one_line() -> None:
    for args, said in (
        (["--autoscale", "2:4"], "--autoscale sets the shards of a sharded install"),
        (["--shards", "2", "--autoscale", "4"], "--autoscale 4: MIN:MAX, e.g. 2:6"),
        (["--shards", "2", "--autoscale", "1:4"], "at least 2 shards, MAX not below MIN"),
        (["--shards", "3", "--autoscale", "4:2"], "at least 2 shards, MAX not below MIN"),
        (["--shards", "5", "--autoscale", "2:4"], "--shards 5 is outside it"),
    ):
        refused = CliRunner().invoke(main, ["manifests", "-o", "-", *args])
        assert refused.exit_code == 2, args
        assert said in refused.output, refused.output
        assert "Traceback" not in refused.output
