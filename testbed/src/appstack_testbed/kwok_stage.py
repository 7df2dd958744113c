"""A kwok ``Stage`` object (:func:`stage`), and the stages that play pods which cannot start
(:func:`failing_pod_stages`): an image tagged ``:pull-fails`` gets ``ErrImagePull`` then
``ImagePullBackOff``; one tagged ``:crashes`` is ``CrashLoopBackOff`` with restarts. Used by
:mod:`appstack_testbed.kwok`, whose ``pod-ready`` stage leaves such pods alone
(:func:`image_tag`).
"""

from __future__ import annotations

from typing import Any

_NOT_DELETING = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}

_PULL_FAILS = """\
phase: Pending
conditions:
- type: PodScheduled
  status: "True"
  lastTransitionTime: {{ Now | Quote }}
- type: Ready
  status: "False"
  reason: ContainersNotReady
  lastTransitionTime: {{ Now | Quote }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: ""
  ready: false
  started: false
  restartCount: 0
  state:
    waiting:
      reason: REASON
      message: {{ printf "MESSAGE \\"%s\\"" .image | Quote }}
{{ end }}
"""

_CRASHES = """\
{{ $now := Now }}
phase: Running
startTime: {{ $now | Quote }}
conditions:
- type: PodScheduled
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
- type: Ready
  status: "False"
  reason: ContainersNotReady
  lastTransitionTime: {{ $now | Quote }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: {{ printf "kwok://%s" .image | Quote }}
  ready: false
  started: false
  restartCount: 4
  lastState:
    terminated:
      exitCode: 1
      reason: Error
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
  state:
    waiting:
      reason: CrashLoopBackOff
      message: {{ printf "back-off 1m20s restarting failed container=%s" .name | Quote }}
{{ end }}
"""


def image_tag(tag: str) -> str:
    """A selector key: "true" when a container's image has tag ``tag``."""
    return f'[.spec.containers.[].image | endswith(":{tag}")] | any'


def stage(
    name: str,
    kind: str,
    match: list[dict[str, Any]],
    nxt: dict[str, Any],
    *,
    delay_ms: int | None = None,
    jitter_ms: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": match},
        "next": nxt,
    }
    if delay_ms is not None:
        spec["delay"] = {
            "durationMilliseconds": delay_ms,
            "jitterDurationMilliseconds": jitter_ms or delay_ms,
        }
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": spec,
    }


def failing_pod_stages() -> list[dict[str, Any]]:
    """The stages of pods whose image cannot be pulled or whose container crashes."""
    return [
        stage(
            "pod-pull-fails",
            "Pod",
            [
                _NOT_DELETING,
                {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
                {"key": ".status.containerStatuses", "operator": "DoesNotExist"},
                {"key": image_tag("pull-fails"), "operator": "In", "values": ["true"]},
            ],
            {
                "statusTemplate": _PULL_FAILS.replace("REASON", "ErrImagePull").replace(
                    "MESSAGE", "failed to pull image"
                )
            },
        ),
        stage(
            "pod-pull-backoff",
            "Pod",
            [
                _NOT_DELETING,
                {
                    "key": ".status.containerStatuses.[].state.waiting.reason",
                    "operator": "In",
                    "values": ["ErrImagePull"],
                },
            ],
            {
                "statusTemplate": _PULL_FAILS.replace("REASON", "ImagePullBackOff").replace(
                    "MESSAGE", "Back-off pulling image"
                )
            },
            delay_ms=500,
        ),
        stage(
            "pod-crashes",
            "Pod",
            [
                _NOT_DELETING,
                {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
                {"key": image_tag("crashes"), "operator": "In", "values": ["true"]},
            ],
            {"statusTemplate": _CRASHES},
        ),
    ]
