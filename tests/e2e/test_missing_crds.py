"""`appstack run` on a cluster without our CRDs (or with only some): one clear error naming
the missing ones, and exit 1 — not informers retrying list/watch forever while the process
looks alive. On a cluster of the module's own (the session's has the CRDs installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lightkube import Client as LightClient
from lightkube import KubeConfig

from appstack.manifests import crds
from appstack_testbed.cluster import LocalCluster
from tests.e2e.conftest import apply_objects

ALL_CRDS = sorted(crd["metadata"]["name"] for crd in crds.all_crds())


def _run(kubeconfig: Path) -> tuple[int, list[dict[str, object]]]:
    argv = [sys.executable, "-m", "appstack", "run", f"--kubeconfig={kubeconfig}"]
    argv += ["--metrics-bind-address=0", "--health-probe-bind-address=0", "--log-format=json"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    lines = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    return proc.returncode, lines


def test_the_operator_stops_at_once_naming_the_crds_it_misses(fresh_cluster: LocalCluster) -> None:
    code, lines = _run(fresh_cluster.kubeconfig)
    assert code == 1, lines
    (error,) = [line for line in lines if line["level"] == "error"]
    assert error["missing"] == ALL_CRDS
    assert "install the CRDs first" in str(error["error"])
    assert not any("retrying" in str(line.get("event")) for line in lines)

    config = KubeConfig.from_file(str(fresh_cluster.kubeconfig))
    light = LightClient(config=config, field_manager="appstack-tests")
    (appservices,) = [c for c in crds.all_crds() if c["spec"]["names"]["kind"] == "AppService"]
    apply_objects(light, [appservices])
    code, lines = _run(fresh_cluster.kubeconfig)
    assert code == 1, lines
    (error,) = [line for line in lines if line["level"] == "error"]
    assert error["missing"] == [n for n in ALL_CRDS if n != appservices["metadata"]["name"]]
