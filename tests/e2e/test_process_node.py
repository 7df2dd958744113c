"""The process-backed node runs real etcd as pods: probes, Services, StatefulSets, restarts,
volumes and a clean stop (:mod:`appstack.testing.procnode`)."""

from __future__ import annotations

import ipaddress
from typing import Any

from lightkube import Client, codecs
from lightkube.resources.core_v1 import Pod

from appstack.testing.procnode.runner import ProcessNodes
from appstack.testing.waiting import condition_status, wait_for
from tests.e2e import procnode_etcd as etcd


def create(kube: Client, namespace: str, manifest: dict[str, Any]) -> None:
    kube.create(codecs.from_dict(manifest), namespace=namespace)


def ready_pod(kube: Client, namespace: str, name: str, timeout: float = 60) -> Pod:
    return wait_for(
        lambda: (
            (pod := kube.get(Pod, name, namespace=namespace))
            and condition_status(pod, "Ready") == "True"
            and pod
        ),
        timeout=timeout,
        what=f"pod {name} Ready",
    )


def test_etcd_pod_becomes_ready_and_serves_through_its_service(
    kube: Client, namespace: str, process_node: ProcessNodes
) -> None:
    create(kube, namespace, etcd.single_pod("solo", process_node.name))
    create(kube, namespace, etcd.service("solo", "solo", headless=False))
    pod = ready_pod(kube, namespace, "solo")
    assert pod.status is not None
    assert pod.status.podIP is not None
    assert ipaddress.ip_address(pod.status.podIP) in process_node.network()
    assert pod.status.phase == "Running"
    address = process_node.service_address(namespace, "solo", 2379)
    wait_for(
        lambda: etcd.attempt(lambda: etcd.put(address, "greeting", "hello")),
        timeout=30,
        what="a put through the Service",
    )
    assert etcd.get(address, "greeting") == "hello"
    # The member really listens on its own pod IP (not 0.0.0.0), reachable from the host.
    assert etcd.get((pod.status.podIP, 2379), "greeting") == "hello"
