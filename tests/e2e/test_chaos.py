"""Chaos under load, small (the full-size run is bench/chaos.py): 100 AppServices and 3
AppStacks (a managed MySQL and three components each) are created in batches while, in
turn, the Lease holder of two operator replicas is SIGKILLed (and replaced), the API server
is restarted and etcd is restarted. Afterwards every object has converged, every child
exists exactly once and is owned by its parent, nothing was lost, and the API server's
audit log shows no write by a replica that did not hold the Lease when it was received."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from appstack_testbed.chaos_run import FAULTS, Plan, run, small_stack
from appstack_testbed.pytest_plugin import ClusterHandle

# Serial (make test's second phase, alone on the cluster): it restarts the API server and etcd
# under every test, and reads the whole audit log.
pytestmark = pytest.mark.serial


async def test_faults_under_load_lose_nothing_duplicate_nothing_and_stay_fenced(
    operator_kubeconfig: Path, leases_here: str, kube_cluster: ClusterHandle, tmp_path: Path
) -> None:
    cluster = kube_cluster.require_local()
    namespace = leases_here  # the replicas' Lease, under the generated leader-election Role
    plan = Plan(
        namespace,
        apps=100,
        stacks=3,
        stack=small_stack(),
        faults=FAULTS,
        operator_args=("--concurrency=8",),
        timeout=300,
    )
    outcome = await run(cluster, operator_kubeconfig, plan, tmp_path)
    print(json.dumps(outcome.figures, indent=1))

    assert outcome.audit_complete, "the audit log rotated away part of the run"
    assert outcome.lost == []
    assert outcome.pending == []
    report = outcome.children
    assert report.missing == []
    assert report.duplicates == []
    assert report.orphans == []
    # 100 x (Deployment, Service) + 3 x (StatefulSet, 2 Services, Secret; 3 Deployments,
    # 2 Services, 1 ConfigMap): the expectation is not empty, and all of it was found.
    assert report.expected == report.found == 100 * 2 + 3 * 10
    assert outcome.unfenced == [], "\n".join(map(str, outcome.unfenced[:20]))
    # The check compared something: several leaders wrote, and the kill moved the Lease.
    assert len([w for w in outcome.writes.values() if w]) >= 2, outcome.writes
    assert len(outcome.tenures) >= 2
    assert outcome.faults[0]["new_leader"] != outcome.faults[0]["killed"]
