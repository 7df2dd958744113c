"""What kwok does with our fake nodes and their pods, and the fake nodes themselves.

kwok v0.8 ships no built-in behaviour: every transition is a ``Stage`` (a selector on the
object plus a status template rendered with Go templates). We give it six that behave like
a healthy kubelet:

* ``node-initialize``  a new node becomes Ready, with addresses, capacity and node info;
* ``node-heartbeat``   Ready nodes refresh their conditions now and then (leases are
                       renewed by kwok itself, ``--node-lease-duration-seconds``);
* ``pod-ready``        a scheduled, pending pod gets an IP, running containers, Ready=True;
* ``pod-complete``     a running pod owned by a Job succeeds (so Jobs and CronJobs finish);
* ``pod-complete-helm-test``  so does a running Helm test hook pod (``helm test`` waits);
* ``pod-delete``       a pod marked for deletion is removed (there is no kubelet to do it);

and three (:mod:`appstack_testbed.kwok_stage`) that play pods which cannot start,
recognised by their image's tag, so that the operator's reports of them can be tested
(``pod-ready`` leaves such pods alone):

* ``pod-pull-fails``   an image tagged ``:pull-fails`` cannot be pulled: ``ErrImagePull``,
                       then (``pod-pull-backoff``) ``ImagePullBackOff``;
* ``pod-crashes``      an image tagged ``:crashes`` exits with 1 and is restarted, in
                       ``CrashLoopBackOff`` with a ``restartCount``.

Pods that cannot be scheduled (a request no node can hold) are the real scheduler's:
``PodScheduled=False``, reason ``Unschedulable``.

Used by :mod:`appstack_testbed.cluster`, which writes :func:`kwok_config` to a file and
creates :func:`fake_node` objects after the API server is up.
"""

from __future__ import annotations

from typing import Any

import yaml

from appstack_testbed.kwok_stage import failing_pod_stages, image_tag, stage

NODE_ANNOTATION = "kwok.x-k8s.io/node"
_NOT_DELETING = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}
_READY_STATUS = '.status.conditions.[] | select( .type == "Ready" ) | .status'

_CONDITIONS = """\
conditions:
{{ range NodeConditions }}
- type: {{ .type | Quote }}
  status: {{ .status | Quote }}
  reason: {{ .reason | Quote }}
  message: {{ .message | Quote }}
  lastHeartbeatTime: {{ Now | Quote }}
  lastTransitionTime: {{ or $.metadata.creationTimestamp Now | Quote }}
{{ end }}
"""

_NODE_INITIALIZE = (
    _CONDITIONS
    + """\
{{ with .status.addresses }}
addresses:
{{ YAML . }}
{{ end }}
{{ with NodePort }}
daemonEndpoints:
  kubeletEndpoint:
    Port: {{ . }}
{{ end }}
{{ with .status.capacity }}
capacity:
{{ YAML . 1 }}
allocatable:
{{ YAML . 1 }}
{{ end }}
nodeInfo:
  architecture: amd64
  operatingSystem: linux
  kubeletVersion: {{ printf "kwok-%s" Version | Quote }}
  kubeProxyVersion: {{ printf "kwok-%s" Version | Quote }}
  containerRuntimeVersion: {{ printf "kwok-%s" Version | Quote }}
  kernelVersion: {{ printf "kwok-%s" Version | Quote }}
  osImage: "kwok"
  machineID: ""
  bootID: ""
  systemUUID: ""
phase: Running
"""
)

_POD_READY = """\
{{ $now := Now }}
phase: Running
startTime: {{ $now | Quote }}
conditions:
{{ range list "PodScheduled" "Initialized" "ContainersReady" "Ready" }}
- type: {{ . | Quote }}
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
{{ range $.spec.readinessGates }}
- type: {{ .conditionType | Quote }}
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: {{ printf "kwok://%s" .image | Quote }}
  ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      reason: Completed
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
{{ end }}
{{ with NodeIPsWith .spec.nodeName }}
hostIP: {{ index . 0 | Quote }}
hostIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
{{ with PodIPsWith .spec.nodeName (or .spec.hostNetwork false) (or .metadata.uid "") \
(or .metadata.name "") (or .metadata.namespace "") }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
"""

_POD_COMPLETE = """\
{{ $now := Now }}
phase: Succeeded
conditions:
{{ range list "Ready" "ContainersReady" }}
- type: {{ . | Quote }}
  status: "False"
  reason: PodCompleted
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: false
  started: false
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      reason: Completed
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
{{ end }}
"""


def stages() -> list[dict[str, Any]]:
    not_ready = {"key": _READY_STATUS, "operator": "NotIn", "values": ["True"]}
    ready = {"key": _READY_STATUS, "operator": "In", "values": ["True"]}
    return [
        stage("node-initialize", "Node", [not_ready], {"statusTemplate": _NODE_INITIALIZE}),
        stage(
            "node-heartbeat",
            "Node",
            [{"key": ".status.phase", "operator": "In", "values": ["Running"]}, ready],
            {"statusTemplate": _CONDITIONS},
            delay_ms=60_000,
            jitter_ms=90_000,
        ),
        stage(
            "pod-ready",
            "Pod",
            [
                _NOT_DELETING,
                {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
                not_ready,
                {"key": image_tag("pull-fails"), "operator": "NotIn", "values": ["true"]},
                {"key": image_tag("crashes"), "operator": "NotIn", "values": ["true"]},
            ],
            {"statusTemplate": _POD_READY},
        ),
        *failing_pod_stages(),
        stage(
            "pod-complete",
            "Pod",
            [
                _NOT_DELETING,
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                {"key": ".metadata.ownerReferences.[].kind", "operator": "In", "values": ["Job"]},
            ],
            {"statusTemplate": _POD_COMPLETE},
        ),
        stage(
            "pod-complete-helm-test",
            "Pod",
            [
                _NOT_DELETING,
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                {
                    "key": '.metadata.annotations["helm.sh/hook"]',
                    "operator": "In",
                    "values": ["test"],
                },
            ],
            {"statusTemplate": _POD_COMPLETE},
        ),
        stage(
            "pod-delete",
            "Pod",
            [{"key": ".metadata.deletionTimestamp", "operator": "Exists"}],
            {"delete": True},
        ),
    ]


def kwok_config(*, node_lease_seconds: int = 40, parallelism: int = 16) -> str:
    """The ``--config`` file: options plus all stages, as multi-document YAML."""
    options = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        "options": {
            "manageNodesWithAnnotationSelector": f"{NODE_ANNOTATION}=fake",
            "nodeLeaseDurationSeconds": node_lease_seconds,
            # kwok applies its defaults only to flags, not to a config file: be explicit.
            "podPlayStageParallelism": parallelism,
            "nodePlayStageParallelism": 4,
            "nodeLeaseParallelism": 4,
            "podsOnNodeSyncParallelism": 2,
            # The catch-up of a node's pods when kwok starts managing it (the pods it saw
            # before it held the node's Lease, e.g. right after a restart, were skipped) is
            # a paged LIST: a WatchList stream (sendInitialEvents) is refused by servers
            # without that feature gate (Kubernetes 1.30), kwok does not fall back, and
            # those pods would stay Pending for good.
            "enablePodsOnNodeSyncListPager": True,
            "enablePodsOnNodeSyncStreamWatch": False,
        },
    }
    return yaml.safe_dump_all([options, *stages()], sort_keys=False)


def node_name(index: int) -> str:
    return f"kwok-node-{index}"


# Beside real nodes, kwok's nodes are tainted so that only pods that ask land on them: the
# examples' and the seeds' pods run for real, the scale tests (and the e2e namespaces that
# annotate themselves for it, see the pytest plugin) keep kwok's fake pods.
TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}


def fake_node(
    index: int, *, pods: int, cpu: str = "1000", memory: str = "4Ti", tainted: bool = False
) -> dict[str, Any]:
    """A Node that kwok manages; each node has its own pod CIDR big enough for ``pods``."""
    name = node_name(index)
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": "1Ti"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/role": "agent",
                "type": "kwok",
                "topology.kubernetes.io/zone": f"zone-{index % 3}",
            },
        },
        # 10.(16+i).0.0/16: addresses only ever written into status, never contacted.
        "spec": {
            "podCIDR": f"10.{16 + index}.0.0/16",
            "podCIDRs": [f"10.{16 + index}.0.0/16"],
            "taints": [TAINT] if tainted else [],
        },
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "addresses": [
                {"type": "InternalIP", "address": f"10.15.0.{index + 1}"},
                {"type": "Hostname", "address": name},
            ],
        },
    }
