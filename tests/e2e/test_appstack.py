"""AppStack end to end (the dataservice example: test_dataservice.py): updates, config
changes, pruning, external middleware, validation, drift and deletion."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from appstack.controllers.appstack import APP_STACK, desired
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.informer import FuncHandler, Informer
from appstack.runtime.resources import (
    CONFIG_MAP,
    DEPLOYMENT,
    ENDPOINT_SLICE,
    PVC,
    SECRET,
    SERVICE,
    STATEFUL_SET,
)
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator, absent, events_of, events_until, until

_COMPONENT = {"name": "app", "image": "web:1"}


def _stack(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _reason(obj: dict[str, Any]) -> tuple[str, str]:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return condition["status"], condition["reason"]
    return "", ""


def _ready(obj: dict[str, Any]) -> bool:
    return _reason(obj) == ("True", "Ready")


class Timeline:
    """Which members' workloads were seen and deleted — and, for ordering, what the API
    held at those moments.

    Two watches (Deployments, StatefulSets) deliver in no common order, so comparing their
    arrival times can put a consumer "before" a StatefulSet the operator had already seen
    ready. Ordering is judged instead from a read made right after the event arrives: when
    the operator created a consumer after its dependency was ready, a read made after the
    consumer is seen must find the dependency ready (``ready_when_added``); when it deleted
    a dependency after its consumers were gone, a read made after the deletion is seen must
    not find them (``present_when_deleted``)."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client, self.namespace = client, namespace
        self.added: set[str] = set()
        self.deleted: set[str] = set()
        self.ready_when_added: dict[str, set[str]] = {}
        self.present_when_deleted: dict[str, set[str]] = {}
        self.reads: list[asyncio.Future[None]] = []
        self.informers = [
            Informer(client, res, namespace=namespace) for res in (DEPLOYMENT, STATEFUL_SET)
        ]
        for informer in self.informers:
            informer.add_handler(
                FuncHandler(add=self._seen, update=lambda _o, n: self._seen(n), delete=self._gone)
            )
        self.tasks = [asyncio.ensure_future(i.run()) for i in self.informers]

    def _seen(self, obj: dict[str, Any]) -> None:
        member = obj["metadata"].get("labels", {}).get("appstack.dev/member")
        if member and member not in self.added:
            self.added.add(member)
            self._read(self.ready_when_added, member, ready_only=True)

    def _gone(self, obj: dict[str, Any]) -> None:
        member = obj["metadata"].get("labels", {}).get("appstack.dev/member")
        if member and member not in self.deleted:
            self.deleted.add(member)
            self._read(self.present_when_deleted, member, ready_only=False)

    def _read(self, into: dict[str, set[str]], member: str, *, ready_only: bool) -> None:
        async def read() -> None:
            found: set[str] = set()
            for resource in (DEPLOYMENT, STATEFUL_SET):
                items, _ = await self.client.list(resource, self.namespace)
                for obj in items:
                    name = obj["metadata"].get("labels", {}).get("appstack.dev/member")
                    if name and (not ready_only or _workload_ready(obj)):
                        found.add(name)
            into[member] = found

        self.reads.append(asyncio.ensure_future(read()))

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.reads)


def _workload_ready(obj: dict[str, Any]) -> bool:
    status, want = obj.get("status") or {}, obj["spec"].get("replicas", 0)
    return status.get("readyReplicas") == want and status.get("availableReplicas", want) == want


async def _small_stack(client: Client, namespace: str) -> None:
    await client.create(
        APP_STACK,
        _stack(
            "shop",
            namespace,
            middleware=[{"name": "db", "type": "postgres", "managed": {}}],
            components=[
                {
                    "name": "api",
                    "image": "api:1",
                    "uses": ["db"],
                    "ports": [{"port": 8080}],
                    "config": {"mountPath": "/etc/api", "files": {"app.conf": "level=info"}},
                },
                {"name": "web", "image": "web:1", "dependsOn": ["api"], "ports": [{"port": 80}]},
                {"name": "worker", "image": "worker:1", "uses": ["db"]},
            ],
        ),
    )
    await until(client, APP_STACK, "shop", namespace, _ready, 120, "the shop stack to be Ready")


async def test_an_image_change_rolls_only_its_component_and_a_config_change_rolls_pods(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await _small_stack(client, namespace)
    before = {
        n: await client.get(DEPLOYMENT, f"shop-{n}", namespace) for n in ("api", "web", "worker")
    }

    stack = await client.get(APP_STACK, "shop", namespace)
    stack["spec"]["components"][1]["image"] = "web:2"
    await client.update(APP_STACK, stack)
    await until(
        client,
        APP_STACK,
        "shop",
        namespace,
        lambda s: _ready(s) and s["status"]["observedGeneration"] == 2,
        60,
        "web:2",
    )
    after = {
        n: await client.get(DEPLOYMENT, f"shop-{n}", namespace) for n in ("api", "web", "worker")
    }
    assert after["web"]["metadata"]["generation"] > before["web"]["metadata"]["generation"]
    for name in ("api", "worker"):
        assert after[name]["metadata"]["generation"] == before[name]["metadata"]["generation"]

    stack = await client.get(APP_STACK, "shop", namespace)
    stack["spec"]["components"][0]["config"]["files"]["app.conf"] = "level=debug"
    await client.update(APP_STACK, stack)
    await until(
        client,
        APP_STACK,
        "shop",
        namespace,
        lambda s: _ready(s) and s["status"]["observedGeneration"] == 3,
        60,
        "config",
    )
    api = await client.get(DEPLOYMENT, "shop-api", namespace)
    old_hash = before["api"]["spec"]["template"]["metadata"]["annotations"]
    assert api["spec"]["template"]["metadata"]["annotations"] != old_hash
    config = await client.get(CONFIG_MAP, "shop-api-config", namespace)
    assert config["data"] == {"app.conf": "level=debug"}


async def test_removing_a_component_prunes_what_it_owned(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await _small_stack(client, namespace)
    stack = await client.get(APP_STACK, "shop", namespace)
    stack["spec"]["components"] = [
        c for c in stack["spec"]["components"] if c["name"] != "api"
    ] + []
    stack["spec"]["components"][0]["dependsOn"] = []  # web depended on api
    await client.update(APP_STACK, stack)

    await until(
        client,
        APP_STACK,
        "shop",
        namespace,
        lambda s: _ready(s) and s["status"]["readyMembers"] == "3/3",
        60,
        "3 members",
    )
    for res, name in (
        (DEPLOYMENT, "shop-api"),
        (SERVICE, "shop-api"),
        (CONFIG_MAP, "shop-api-config"),
    ):
        with pytest.raises(errors.NotFound):
            await client.get(res, name, namespace)


async def test_external_middleware_gets_a_stable_service_and_consumers_get_references(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(
        APP_STACK,
        _stack(
            "ext",
            namespace,
            middleware=[
                {
                    "name": "legacy-db",
                    "type": "mysql",
                    "external": {
                        "host": "db.corp.example.com",
                        "port": 3307,
                        "secretRef": {"name": "legacy-db-auth", "usernameKey": "user"},
                    },
                },
                {
                    "name": "cache",
                    "type": "redis",
                    "external": {"host": "10.20.30.40", "port": 6380},
                },
            ],
            components=[{"name": "app", "image": "app:1", "uses": ["legacy-db", "cache"]}],
        ),
    )
    await until(client, APP_STACK, "ext", namespace, _ready, 60, "the external stack")

    db = await client.get(SERVICE, "ext-legacy-db", namespace)
    assert db["spec"]["type"] == "ExternalName"
    assert db["spec"]["externalName"] == "db.corp.example.com"
    endpoints = await client.get(ENDPOINT_SLICE, "ext-cache-external", namespace)
    assert endpoints["endpoints"][0]["addresses"] == ["10.20.30.40"]
    assert endpoints["metadata"]["labels"]["kubernetes.io/service-name"] == "ext-cache"
    app = await client.get(DEPLOYMENT, "ext-app", namespace)
    env = {e["name"]: e for e in app["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["LEGACY_DB_HOST"]["value"] == "ext-legacy-db"
    assert env["LEGACY_DB_PORT"]["value"] == "3307"
    assert env["LEGACY_DB_USERNAME"]["valueFrom"]["secretKeyRef"] == {
        "name": "legacy-db-auth",
        "key": "user",
    }
    assert env["CACHE_HOST"]["value"] == "ext-cache"
    assert "CACHE_PASSWORD" not in env  # no secretRef given


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"components": [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]},
            "component names must be unique",
        ),
        (
            {
                "middleware": [{"name": "a", "type": "redis", "managed": {}}],
                "components": [{"name": "a", "image": "x"}],
            },
            "may not have the name of a middleware",
        ),
        (
            {"components": [{"name": "a", "image": "x", "dependsOn": ["ghost"]}]},
            "dependsOn must name members of this stack",
        ),
        (
            {"components": [{"name": "a", "image": "x", "uses": ["ghost"]}]},
            "uses must name middleware, or a component with ports, of this stack",
        ),
        (
            {
                "components": [
                    {"name": "a", "image": "x", "uses": ["b"]},
                    {"name": "b", "image": "x"},
                ]
            },
            "uses must name middleware, or a component with ports, of this stack",
        ),
        (
            {
                "middleware": [
                    {
                        "name": "db",
                        "type": "mysql",
                        "external": {"host": "db", "port": 3306, "password": "hunter2"},
                    }
                ],
                "components": [{"name": "a", "image": "x"}],
            },
            "credentials are never inline",
        ),
        (
            {
                "middleware": [{"name": "db", "type": "oracle", "managed": {}}],
                "components": [{"name": "a", "image": "x"}],
            },
            "spec.middleware[0].type",
        ),
        (
            {
                "middleware": [{"name": "db", "type": "mysql"}],
                "components": [{"name": "a", "image": "x"}],
            },
            "exactly one of managed, external",
        ),
    ],
)
async def test_an_invalid_stack_is_rejected_at_admission(
    client: Client, namespace: str, spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(errors.Invalid) as caught:
        await client.create(APP_STACK, _stack("bad", namespace, **spec))
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("component", "message"),
    [
        (
            {"env": {"A": "1"}, "envs": [{"name": "A", "value": "2"}]},
            "a variable may be set in env or in envs, not in both",
        ),
        ({"envs": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}, "envs[1]"),
        ({"ports": [{"port": 80}, {"port": 80, "targetPort": 81}]}, "port numbers must be unique"),
        ({"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]}, "names must be unique"),
        ({"ports": [{"port": 80}, {"port": 81, "name": "p80"}]}, "kept for ports without a name"),
        ({"ports": [{"port": 80, "name": "Web"}]}, "spec.components[0].ports[0].name"),
    ],
)
async def test_duplicate_variables_and_ports_are_rejected_at_admission(
    client: Client, namespace: str, component: dict[str, Any], message: str
) -> None:
    spec = {
        "middleware": [{"name": "order-db", "type": "redis", "managed": {}}],
        "components": [{**_COMPONENT, **component}],
    }
    with pytest.raises(errors.Invalid) as caught:
        await client.create(APP_STACK, _stack("dup", namespace, **spec))
    assert message in caught.value.message, caught.value.message


_MANAGED = {"name": "db", "type": "redis", "managed": {}}


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        ("9lives", {"components": [{"name": "a", "image": "x"}]}, "metadata.name must"),
        ("s" * 30, {"components": [{"name": "c" * 33, "image": "x"}]}, "<stack>-<member>"),
        (
            "s" * 30,
            {"middleware": [{**_MANAGED, "name": "m" * 22}], "components": [_COMPONENT]},
            "<stack>-<middleware>",
        ),
        ("ok", {"components": [{"name": "a", "image": "Web:1"}]}, "spec.components[0].image"),
        (
            "ok",
            {
                "middleware": [{**_MANAGED, "managed": {"version": "7 latest"}}],
                "components": [_COMPONENT],
            },
            "spec.middleware[0].managed.version",
        ),
        (
            "ok",
            {
                "middleware": [{**_MANAGED, "managed": {"initScriptsConfigMap": ".."}}],
                "components": [_COMPONENT],
            },
            "spec.middleware[0].managed.initScriptsConfigMap",
        ),
        (
            "ok",
            {
                "middleware": [
                    {
                        "name": "db",
                        "type": "mysql",
                        "external": {"host": "db", "port": 3306, "secretRef": {"name": "."}},
                    }
                ],
                "components": [_COMPONENT],
            },
            "spec.middleware[0].external.secretRef.name",
        ),
    ],
)
async def test_names_images_and_references_that_cannot_work_are_rejected_at_admission(
    client: Client, namespace: str, name: str, spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(errors.Invalid) as caught:
        await client.create(APP_STACK, _stack(name, namespace, **spec))
    assert message in caught.value.message, caught.value.message


@pytest.mark.parametrize(
    "component",
    [
        {"env": {"ORDER_DB_HOST": "elsewhere"}},
        {"envs": [{"name": "ORDER_DB_PASSWORD", "value": "inline"}]},
    ],
)
async def test_a_variable_colliding_with_an_injected_one_is_reported_as_invalid(
    client: Client, namespace: str, operator: RunningOperator, component: dict[str, Any]
) -> None:
    spec = {
        "middleware": [{"name": "order-db", "type": "redis", "managed": {}}],
        "components": [{**_COMPONENT, "uses": ["order-db"], **component}],
    }
    await client.create(APP_STACK, _stack("clash", namespace, **spec))
    stack = await until(
        client,
        APP_STACK,
        "clash",
        namespace,
        lambda s: _reason(s) == ("False", "InvalidSpec"),
        30,
        "Ready=False InvalidSpec",
    )
    (ready,) = [c for c in stack["status"]["conditions"] if c["type"] == "Ready"]
    assert "is injected for order-db" in ready["message"], ready["message"]
    await events_of(
        client, namespace, "InvalidSpec", about="clash", type_="Warning", note="order-db"
    )
    deployments, _ = await client.list(DEPLOYMENT, namespace)
    assert not deployments


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"type": "postgres"}, "type cannot change"),
        ({"managed": {"storage": {"size": "2Gi"}}}, "managed.storage.size cannot change"),
        ({"managed": {"storage": {"storageClassName": "fast"}}}, "storageClassName cannot change"),
    ],
)
async def test_immutable_middleware_fields_are_refused_on_change_at_admission(
    client: Client, namespace: str, change: dict[str, Any], message: str
) -> None:
    cache = {"name": "cache", "type": "redis", "managed": {"storage": {"size": "1Gi"}}}
    spec = {"middleware": [_MANAGED, cache], "components": [_COMPONENT]}
    await client.create(APP_STACK, _stack("frozen", namespace, **spec))
    changed = [_MANAGED, {**cache, **change}]
    with pytest.raises(errors.Invalid) as caught:
        await client.patch(
            APP_STACK, "frozen", namespace=namespace, patch={"spec": {"middleware": changed}}
        )
    assert message in caught.value.message, caught.value.message
    assert "spec.middleware[1]" in caught.value.message, caught.value.message
    # What may change still can: retention, resources, other members, the list's order.
    mutable = {**cache, "managed": {"storage": {"size": "1Gi", "retainOnDelete": False}}}
    await client.patch(
        APP_STACK,
        "frozen",
        namespace=namespace,
        patch={"spec": {"middleware": [mutable, {**_MANAGED, "name": "other"}]}},
    )


async def test_members_whose_pods_cannot_start_are_failed_with_the_pods_reason(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    spec = {
        "middleware": [{"name": "cache", "type": "redis", "managed": {"version": "pull-fails"}}],
        "components": [
            {"name": "api", "image": "api:crashes"},
            {"name": "web", "image": "web:1"},
        ],
    }
    await client.create(APP_STACK, _stack("stuck", namespace, **spec))

    def states(s: dict[str, Any]) -> dict[str, tuple[str, str]]:
        members = (s.get("status") or {}).get("members") or []
        return {m["name"]: (m["state"], m["message"]) for m in members}

    stack = await until(
        client,
        APP_STACK,
        "stuck",
        namespace,
        lambda s: (
            states(s).get("cache", ("",))[0] == "Failed"
            and "ImagePullBackOff" in states(s)["cache"][1]
            and states(s).get("api", ("",))[0] == "Failed"
            and states(s).get("web", ("",))[0] == "Ready"
        ),
        60,
        "cache and api Failed with their pods' reasons, web Ready",
    )
    cache_state, api_state = states(stack)["cache"], states(stack)["api"]
    assert 'Back-off pulling image "redis:pull-fails"' in cache_state[1], cache_state
    assert api_state[1].startswith("CrashLoopBackOff: pod stuck-api-"), api_state
    assert "restarted 4 times" in api_state[1]
    status, reason = _reason(stack)
    assert (status, reason) in {("False", "ImagePullBackOff"), ("False", "CrashLoopBackOff")}
    await events_of(client, namespace, reason, about="stuck", type_="Warning")


async def test_a_dependency_cycle_is_reported_with_the_cycle_spelled_out(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(
        APP_STACK,
        _stack(
            "loop",
            namespace,
            components=[
                {"name": "a", "image": "x", "dependsOn": ["b"]},
                {"name": "b", "image": "x", "dependsOn": ["a"]},
            ],
        ),
    )
    stack = await until(
        client,
        APP_STACK,
        "loop",
        namespace,
        lambda s: _reason(s) == ("False", "InvalidSpec"),
        30,
        "InvalidSpec",
    )
    message = next(c["message"] for c in stack["status"]["conditions"] if c["type"] == "Ready")
    assert "dependency cycle: a -> b -> a" in message
    deployments, _ = await client.list(DEPLOYMENT, namespace)
    assert deployments == []


async def test_a_deleted_member_workload_is_restored_and_deleting_the_stack_keeps_the_data(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await _small_stack(client, namespace)
    old = await client.get(DEPLOYMENT, "shop-worker", namespace)
    await client.delete(DEPLOYMENT, "shop-worker", namespace)
    await until(
        client,
        DEPLOYMENT,
        "shop-worker",
        namespace,
        lambda new: new["metadata"]["uid"] != old["metadata"]["uid"],
        10,
        "the deleted Deployment restored",
    )

    await client.delete(APP_STACK, "shop", namespace)

    async def children() -> list[dict[str, Any]]:  # they go with the stack (garbage collector)
        deployments, _ = await client.list(DEPLOYMENT, namespace)
        sets, _ = await client.list(STATEFUL_SET, namespace)
        return deployments + sets

    await eventually(
        children,
        lambda left: not left,
        timeout=120,
        what="children garbage-collected",
        interval=0.5,
    )
    claims, _ = await client.list(PVC, namespace)
    assert len(claims) == 1  # the database's data is retained


async def test_deleting_a_stack_tears_down_consumers_before_what_they_use(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await _small_stack(client, namespace)
    timeline = Timeline(client, namespace)
    await asyncio.gather(*(i.wait_synced() for i in timeline.informers))

    await client.delete(APP_STACK, "shop", namespace)

    await eventually(
        lambda: absent(client, APP_STACK, "shop", namespace),
        timeout=120,
        what="the stack gone (its finalizer removed)",
        interval=0.2,
    )
    await timeline.stop()
    assert timeline.deleted == {"api", "web", "worker", "db"}
    gone_before = timeline.present_when_deleted
    assert "web" not in gone_before["api"]  # web depends on api
    assert not {"api", "worker"} & gone_before["db"]  # api and worker use db

    def teardown(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [e for e in events if e.get("reason") == "TearingDown"]

    events = await events_until(client, namespace, lambda es: len(teardown(es)) >= 3, "3 waves")
    waves = [e["note"] for e in sorted(teardown(events), key=lambda e: e["eventTime"])]
    assert waves == ["deleting web", "deleting api, worker", "deleting db"]


async def test_a_changed_secret_rolls_the_pods_of_the_components_that_use_it(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(
        SECRET,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "db-auth", "namespace": namespace},
            "stringData": {"username": "u", "password": "one"},
        },
    )
    await client.create(
        APP_STACK,
        _stack(
            "rot",
            namespace,
            middleware=[
                {
                    "name": "db",
                    "type": "mysql",
                    "external": {
                        "host": "db.example.com",
                        "port": 3306,
                        "secretRef": {"name": "db-auth"},
                    },
                }
            ],
            components=[
                {"name": "app", "image": "app:1", "uses": ["db"]},
                {"name": "other", "image": "other:1"},
            ],
        ),
    )
    await until(client, APP_STACK, "rot", namespace, _ready, 60, "the stack")

    def annotations(dep: dict[str, Any]) -> dict[str, str]:
        return dict(dep["spec"]["template"]["metadata"].get("annotations") or {})

    app = await client.get(DEPLOYMENT, "rot-app", namespace)
    other = await client.get(DEPLOYMENT, "rot-other", namespace)
    before = annotations(app)["appstack.dev/secrets-hash"]
    # Derived from the Secret's uid and resourceVersion only: it tells nothing of the data.
    used = await client.get(SECRET, "db-auth", namespace)
    assert before == desired.secrets_version([("db-auth", used)])

    await client.patch(SECRET, "db-auth", {"stringData": {"password": "two"}}, namespace=namespace)

    await until(
        client,
        DEPLOYMENT,
        "rot-app",
        namespace,
        lambda app: annotations(app).get("appstack.dev/secrets-hash") != before,
        30,
        "the Secret change to roll the pods",
    )
    unchanged = await client.get(DEPLOYMENT, "rot-other", namespace)
    assert unchanged["metadata"]["generation"] == other["metadata"]["generation"]


async def test_a_member_whose_service_is_rejected_is_failed_and_the_others_still_run(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(
        SERVICE,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "squatter", "namespace": namespace},
            "spec": {
                "type": "NodePort",
                "selector": {"x": "y"},
                "ports": [{"port": 80, "nodePort": 31888}],
            },
        },
    )
    await client.create(
        APP_STACK,
        _stack(
            "np",
            namespace,
            components=[
                {"name": "front", "image": "web:1", "ports": [{"port": 80, "nodePort": 31888}]},
                {"name": "back", "image": "api:1"},
            ],
        ),
    )

    stack = await until(
        client,
        APP_STACK,
        "np",
        namespace,
        lambda s: _reason(s) == ("False", "NodePortConflict"),
        30,
        "Ready=False NodePortConflict",
    )
    members = {m["name"]: m for m in stack["status"]["members"]}
    assert members["front"]["state"] == "Failed"
    assert "already allocated" in members["front"]["message"]
    await until(
        client,
        APP_STACK,
        "np",
        namespace,
        lambda s: {m["name"]: m["state"] for m in s["status"]["members"]}["back"] == "Ready",
        30,
        "the other member to be Ready",
    )


async def test_a_member_is_found_by_the_service_name_it_sets(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    """Seed 003's services find MySQL as mysql-dataservice and each other by bare names
    (api-manager): ``serviceName`` names the member's Service and what ``uses`` injects;
    two members with one name are refused at admission, a name of the stack's own
    (``<stack>-...``) is Ready=False InvalidSpec, and another stack's Service of that
    name is not taken over (ServiceConflict)."""
    spec = {
        "middleware": [
            {"name": "mysql", "serviceName": "mysql-dataservice", "type": "mysql", "managed": {}}
        ],
        "components": [
            {
                "name": "api-manager",
                "serviceName": "api-manager",
                "image": "app:1",
                "ports": [{"port": 9085}],
            },
            {**_COMPONENT, "uses": ["mysql", "api-manager"]},
        ],
    }
    await client.create(APP_STACK, _stack("dataservice", namespace, **spec))
    await until(client, SERVICE, "mysql-dataservice", namespace, lambda s: True, 30, "mysql's")
    await until(client, SERVICE, "api-manager", namespace, lambda s: True, 30, "api-manager's")
    app = await until(
        client, DEPLOYMENT, "dataservice-app", namespace, lambda d: True, 60, "the app"
    )
    env = {
        e["name"]: e.get("value") for e in app["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["MYSQL_HOST"] == "mysql-dataservice"
    assert env["API_MANAGER_HOST"] == "api-manager"
    assert env["API_MANAGER_URL"] == "http://api-manager:9085"
    # the workloads keep the stack's names; only the Services are renamed
    await until(client, STATEFUL_SET, "dataservice-mysql", namespace, lambda s: True, 30, "sts")
    services, _ = await client.list(SERVICE, namespace)
    assert "dataservice-api-manager" not in {s["metadata"]["name"] for s in services}

    twice = {
        "components": [
            {**_COMPONENT, "serviceName": "x"},
            {"name": "b", "image": "b:1", "serviceName": "x"},
        ]
    }
    with pytest.raises(errors.ApiError) as refused:
        await client.create(APP_STACK, _stack("twice", namespace, **twice))
    assert "serviceName must be unique in the stack" in refused.value.message

    own = {"components": [{**_COMPONENT, "serviceName": "mine-other"}]}
    await client.create(APP_STACK, _stack("mine", namespace, **own))
    stack = await until(
        client,
        APP_STACK,
        "mine",
        namespace,
        lambda s: _reason(s) == ("False", "InvalidSpec"),
        30,
        "InvalidSpec",
    )
    (ready,) = [c for c in stack["status"]["conditions"] if c["type"] == "Ready"]
    assert "serviceName" in ready["message"]

    thief = {"components": [{**_COMPONENT, "serviceName": "api-manager", "ports": [{"port": 80}]}]}
    await client.create(APP_STACK, _stack("thief", namespace, **thief))
    await until(
        client,
        APP_STACK,
        "thief",
        namespace,
        lambda s: _reason(s)[1] == "ServiceConflict",
        30,
        "ServiceConflict",
    )
    kept = await client.get(SERVICE, "api-manager", namespace)
    assert kept["metadata"]["labels"]["appstack.dev/stack"] == "dataservice"
