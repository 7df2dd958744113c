"""The workloads' readers and writers (controllers/util/workloads.py): a Deployment is rolled
out when every wanted replica is current; a workload read from the cache may be one none of
our kinds controls, cached as metadata only (issue #34: no spec, no status): reading its
rollout says "not ready", it does not fail (AppStack reads a waiting component's Deployment
by name); container ports sharing a number or a name are declared once."""

from __future__ import annotations

from typing import Any

from appstack.controllers.util.workloads import (
    deployment_ready,
    deployment_rollout,
    statefulset_ready,
    unique_ports,
)


def _metadata_only(kind: str) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "shop-web", "namespace": "ns", "uid": "u", "generation": 2},
    }


def test_a_workload_cached_as_metadata_only_is_not_ready() -> None:
    assert deployment_ready(_metadata_only("Deployment")) == (False, "0/0")
    ready, _ = statefulset_ready(_metadata_only("StatefulSet"))
    assert not ready


def test_a_deployment_is_rolled_out_when_every_wanted_replica_is_current() -> None:
    def dep(want: int, updated: int, available: int, seen: int = 2) -> dict[str, Any]:
        status = {"observedGeneration": seen, "replicas": want}
        status |= {"updatedReplicas": updated, "availableReplicas": available}
        return {"metadata": {"generation": 2}, "spec": {"replicas": want}, "status": status}

    assert deployment_ready(dep(3, 3, 3)) == (True, "3/3")
    assert deployment_ready(dep(3, 3, 2)) == (False, "2/3")
    assert deployment_ready(dep(3, 3, 3, seen=1)) == (False, "3/3")
    assert deployment_ready(None) == (False, "0/0")
    assert not deployment_rollout(dep(3, 3, 3), want=4).done


def test_container_ports_sharing_a_number_or_name_are_declared_once() -> None:
    ports = [
        {"containerPort": 8080, "protocol": "TCP", "name": "http"},
        {"containerPort": 8080, "protocol": "TCP", "name": "alt"},
        {"containerPort": 8080, "protocol": "UDP"},
        {"containerPort": 9090, "protocol": "TCP", "name": "http"},
    ]
    assert unique_ports(ports) == [
        {"containerPort": 8080, "protocol": "TCP", "name": "http"},
        {"containerPort": 8080, "protocol": "UDP"},
        {"containerPort": 9090, "protocol": "TCP"},
    ]
