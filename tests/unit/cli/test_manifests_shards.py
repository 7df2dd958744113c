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
