"""Server-side apply scenarios played against both the in-memory API server
(tests/unit/runtime/test_fake.py) and the real one (tests/e2e/test_fake_parity.py), with
one expected outcome: the fake keeps field ownership as the API server does — a field
applied with the value another manager set is co-owned (no conflict), another value is a
conflict, and the pod spec's lists of type map (volumes, volume mounts, image pull
secrets, topology spread constraints) are merged item by item, each item its applier's.

A scenario is steps (a field manager applies an object, with or without ``force``) each
expected to pass or to conflict, and what the object holds at the end, as ``project``
reads it (a sorted projection, so the server's defaults and list order do not matter).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from appstack.runtime import CONFIG_MAP, DEPLOYMENT, Client, Conflict, Resource

Obj = dict[str, Any]


@dataclass(frozen=True)
class Step:
    manager: str
    obj: Obj
    force: bool = False
    conflict: bool = False  # expected


@dataclass(frozen=True)
class Scenario:
    resource: Resource
    steps: tuple[Step, ...]
    project: Callable[[Obj], Any]
    expected: Any


def _cm(**data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": data}


def _deployment(pod: Obj, container: Obj) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "s"},
        "spec": {
            "selector": {"matchLabels": {"app": "s"}},
            "template": {
                "metadata": {"labels": {"app": "s"}},
                "spec": {**pod, "containers": [{"name": "app", **container}]},
            },
        },
    }


def _pod_lists(obj: Obj) -> Obj:
    pod = obj["spec"]["template"]["spec"]
    (app,) = [c for c in pod["containers"] if c["name"] == "app"]
    return {
        "image": app.get("image"),
        "volumes": sorted(v["name"] for v in pod.get("volumes", [])),
        "mounts": sorted(m["mountPath"] for m in app.get("volumeMounts", [])),
        "pullSecrets": sorted(s["name"] for s in pod.get("imagePullSecrets", [])),
        "spread": sorted(
            (t["topologyKey"], t["whenUnsatisfiable"])
            for t in pod.get("topologySpreadConstraints", [])
        ),
    }


def _spread(key: str, when: str) -> Obj:
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": "s"}},
    }


def _a(volume: str, mount: str, secret: str, spread: Obj, image: str = "app:1") -> Obj:
    return _deployment(
        {
            "volumes": [{"name": volume, "emptyDir": {}}],
            "imagePullSecrets": [{"name": secret}],
            "topologySpreadConstraints": [spread],
        },
        {"image": image, "volumeMounts": [{"name": volume, "mountPath": mount}]},
    )


SCENARIOS: dict[str, Scenario] = {
    # b applies the value a set: co-owners; a stops applying it: it stays (b's); b changes
    # it with no conflict (a owns it no more)
    "same value is co-owned": Scenario(
        CONFIG_MAP,
        (
            Step("a", _cm(x="1", y="1")),
            Step("b", _cm(x="1")),
            Step("a", _cm(y="1")),
            Step("b", _cm(x="2")),
        ),
        lambda obj: obj.get("data"),
        {"x": "2", "y": "1"},
    ),
    "another value is a conflict, force takes it": Scenario(
        CONFIG_MAP,
        (
            Step("a", _cm(x="1")),
            Step("b", _cm(x="2"), conflict=True),
            Step("b", _cm(x="2"), force=True),
            Step("a", _cm(x="3"), conflict=True),  # b owns it now, a no longer
        ),
        lambda obj: obj.get("data"),
        {"x": "2"},
    ),
    "pod spec lists are merged by their keys": Scenario(
        DEPLOYMENT,
        (
            Step("a", _a("va", "/a", "ra", _spread("zone", "DoNotSchedule"))),
            Step("b", _a("vb", "/b", "rb", _spread("host", "ScheduleAnyway"))),
            # a stops applying its items: they go, b's stay (and the image both applied)
            Step(
                "a",
                _deployment({}, {"image": "app:1"}),
            ),
        ),
        _pod_lists,
        {
            "image": "app:1",
            "volumes": ["vb"],
            "mounts": ["/b"],
            "pullSecrets": ["rb"],
            "spread": [("host", "ScheduleAnyway")],
        },
    ),
    "both managers' pod spec items are kept": Scenario(
        DEPLOYMENT,
        (
            Step("a", _a("va", "/a", "ra", _spread("zone", "DoNotSchedule"))),
            Step("b", _a("vb", "/b", "rb", _spread("host", "ScheduleAnyway"))),
            Step(
                "b", _a("vb", "/b", "rb", _spread("host", "ScheduleAnyway"), "app:2"), conflict=True
            ),
        ),
        _pod_lists,
        {
            "image": "app:1",
            "volumes": ["va", "vb"],
            "mounts": ["/a", "/b"],
            "pullSecrets": ["ra", "rb"],
            "spread": [("host", "ScheduleAnyway"), ("zone", "DoNotSchedule")],
        },
    ),
}


async def play(client: Client, namespace: str, scenario: Scenario) -> Any:
    """Play ``scenario`` in ``namespace`` (its object named ``s``), asserting each step's
    outcome; the object's projection at the end."""
    for number, step in enumerate(scenario.steps):
        manager = Client(client.transport, field_manager=step.manager)
        obj = {**step.obj, "metadata": {**step.obj["metadata"], "namespace": namespace}}
        try:
            await manager.apply(scenario.resource, obj, force=step.force)
        except Conflict:
            assert step.conflict, f"step {number} ({step.manager}): unexpected conflict"
        else:
            assert not step.conflict, f"step {number} ({step.manager}): no conflict"
    return scenario.project(await client.get(scenario.resource, "s", namespace))
