"""The process node's Node object and its heartbeats (status conditions and Lease).

:func:`node_manifest` is the Node the agent registers: labelled
``appstack.dev/process-node=true`` and tainted ``appstack.dev/process-node=true:NoSchedule``
(only pods that ask for it land here), without kwok's annotation (kwok leaves it alone).
:func:`heartbeat` refreshes ``Ready`` and renews the node's Lease in ``kube-node-lease``
as a kubelet does every 10 s. Used by :mod:`appstack_testbed.procnode.agent`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from lightkube import AsyncClient
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Node
from lightkube.types import PatchType

from appstack_testbed.procnode.container import now_rfc3339

LABEL = "appstack.dev/process-node"
FIELD_MANAGER = "appstack-procnode"
LEASE_SECONDS = 40
HEARTBEAT_SECONDS = 10.0


def node_name(index: int) -> str:
    return f"appstack-proc-{index}"


def node_manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                LABEL: "true",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "process",
            },
        },
        "spec": {
            "taints": [{"key": LABEL, "value": "true", "effect": "NoSchedule"}],
        },
    }


def node_status(started: str, pods: int = 250) -> dict[str, Any]:
    now = now_rfc3339()
    conditions = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
        ("Ready", "True", "KubeletReady"),
    ]
    capacity = {"cpu": "8", "memory": "16Gi", "pods": str(pods), "ephemeral-storage": "100Gi"}
    return {
        "conditions": [
            {
                "type": kind,
                "status": value,
                "reason": reason,
                "message": "appstack process node",
                "lastHeartbeatTime": now,
                "lastTransitionTime": started,
            }
            for kind, value, reason in conditions
        ],
        "addresses": [
            {"type": "InternalIP", "address": "127.0.0.1"},
            {"type": "Hostname", "address": "localhost"},
        ],
        "capacity": capacity,
        "allocatable": capacity,
        "nodeInfo": {
            "architecture": "amd64",
            "operatingSystem": "linux",
            "kubeletVersion": "appstack-procnode",
            "kubeProxyVersion": "appstack-procnode",
            "containerRuntimeVersion": "process://appstack",
            "kernelVersion": "",
            "osImage": "host processes",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }


async def register(client: AsyncClient, name: str) -> None:
    obj = Node.from_dict(node_manifest(name))
    await client.apply(obj, field_manager=FIELD_MANAGER, force=True)  # type: ignore[call-overload]


async def heartbeat(client: AsyncClient, name: str, started: str) -> None:
    await client.patch(
        Node.Status, name, {"status": node_status(started)}, patch_type=PatchType.MERGE
    )
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-node-lease"},
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
    }
    obj = Lease.from_dict(lease)
    await client.apply(obj, field_manager=FIELD_MANAGER, force=True)  # type: ignore[call-overload]
