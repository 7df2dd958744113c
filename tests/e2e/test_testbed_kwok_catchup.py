"""kwok starts the pods bound to a node before it managed that node, as a kubelet starts the
pods bound to its node before it registered or restarted.

This is what a restarted kwok meets when its first list of pods arrives before it holds
its nodes' Leases: it skips those pods and relies on a catch-up of each node's pods once it
holds the Lease. The chaos e2e (tests/e2e/test_chaos.py) restarts kwok with every API
server and etcd fault; on Kubernetes 1.30 that catch-up asked for a WatchList stream, which
1.30 refuses, so the pods bound during the restart stayed Pending for good and the run
stalled with their AppServices never Ready. A new node makes the same order certain: its
pods exist (and are skipped) before kwok takes its Lease.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lightkube import ApiError, Client, codecs
from lightkube.models.core_v1 import Container, PodSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node, Pod

from appstack_testbed import kwok
from appstack_testbed.waiting import condition_status, eventually_sync

# Serial (alone on the cluster): it adds a Node that any test's pods could be scheduled to.
pytestmark = pytest.mark.serial

NODE_INDEX = 9  # beyond the test bed's nodes (0 and 1)


@pytest.fixture
def late_node(kube: Client) -> Iterator[str]:
    """A kwok node's name, the Node created by the test when it wants; deleted afterwards."""
    name = kwok.node_name(NODE_INDEX)
    yield name
    try:
        kube.delete(Node, name)
    except ApiError as error:
        if error.status.code != 404:
            raise


def _pod(name: str, namespace: str, node: str) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=PodSpec(nodeName=node, containers=[Container(name="web", image="nginx:1.27")]),
    )


def test_pods_bound_before_kwok_manages_their_node_become_ready(
    kube: Client, namespace: str, late_node: str
) -> None:
    for i in range(3):  # bound directly, as the scheduler does
        kube.create(_pod(f"early-{i}", namespace, late_node))
    node = kwok.fake_node(NODE_INDEX, pods=110)
    del node["metadata"]["labels"]["type"]  # not one of the test bed's kwok nodes
    kube.create(codecs.from_dict(node))

    def not_ready() -> list[str]:
        pods = list(kube.list(Pod, namespace=namespace))
        return [
            str(p.metadata.name if p.metadata else "")
            for p in pods
            if p.status is None
            or p.status.phase != "Running"
            or condition_status(p, "Ready") != "True"
        ]

    # kwok takes a new node's Lease and readies its pods within a second or two.
    eventually_sync(lambda: not not_ready(), timeout=60, interval=0.5, what="the early pods Ready")
    assert len(list(kube.list(Pod, namespace=namespace))) == 3
