"""Periodic resync (``appstack run --sync-period``) for every kind (EtcdCluster: one real
member on the process node): an idle resync writes nothing, and a change no watch reports
(an AppService status someone overwrote: a status-only update does not wake its
controller) is repaired within the sync period, by the real ``appstack run`` process."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.appstack import APP_STACK
from appstack.controllers.crontab import CRON_TAB
from appstack.controllers.etcdcluster import ETCD_CLUSTER
from appstack.controllers.mongodbcommunity import MONGODB_COMMUNITY
from appstack.controllers.registry import ALL
from appstack.runtime.client import Client
from appstack.runtime.resources import DEPLOYMENT, SECRET
from appstack_testbed.pytest_plugin import ClusterHandle, RealNodeHandle
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import (
    E2E_OPTIONS,
    RunningOperator,
    appstack_run,
    is_ready,
    program,
    start_operator,
    until,
)
from tests.e2e.etcd_load import wait_healthy


def _obj(kind: str, name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _secret(name: str, namespace: str, password: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": {"username": "u", "password": password},
    }


def _stack(name: str, namespace: str) -> dict[str, Any]:
    """A stack whose component reads an external database's Secret."""
    database = {
        "name": "db",
        "type": "mysql",
        "external": {"host": "db.example.com", "port": 3306, "secretRef": {"name": "db-auth"}},
    }
    app = {
        "name": "app",
        "image": "registry.example.com/appstack/stackapp:1.0",  # the test bed's app image
        "uses": ["db"],
        "ports": [{"port": 8080}],
        "resources": {"requests": {"cpu": "0.25", "memory": "0.5Gi"}},
        "config": {"mountPath": "/etc/app", "files": {"app.conf": "x = 1\n"}},
    }
    return _obj("AppStack", name, namespace, middleware=[database], components=[app])


@pytest.fixture
async def fast_resync(operator_kubeconfig: Path, namespace: str) -> AsyncIterator[RunningOperator]:
    """The operator with a 1 s sync period for every kind (as ``--sync-period 1s``)."""
    controllers = {c.name: {**E2E_OPTIONS.get(c.name, {}), "sync_period": 1.0} for c in ALL}
    running = await start_operator(operator_kubeconfig, namespace, controllers)
    yield running
    await running.stop()


def _reconciles(operator: RunningOperator, controller: str) -> float:
    registry = operator.manager.metrics.registry
    return sum(
        registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": controller, "result": result}
        )
        or 0.0
        for result in ("success", "requeue", "requeue_after", "error")
    )


def _writes(operator: RunningOperator) -> float:
    counter = operator.manager.metrics.rest_requests
    return sum(
        sample.value
        for metric in counter.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
        and sample.labels["method"] in ("POST", "PUT", "PATCH", "DELETE")
    )


async def _resync_rounds(operator: RunningOperator, objects: dict[str, int], rounds: int) -> None:
    """Wait until every controller has looked at each of its objects ``rounds`` more times
    (nothing else wakes them: the objects are settled)."""
    start = {name: _reconciles(operator, name) for name in objects}
    await eventually(
        lambda: all(
            _reconciles(operator, name) >= start[name] + rounds * count
            for name, count in objects.items()
        ),
        timeout=30,
        what=f"{rounds} resync rounds of every controller",
    )


async def _etcd_healthy(client: Client, namespace: str, cluster: ClusterHandle) -> None:
    """The one-member EtcdCluster ``idle`` healthy; if not, what its member said (its
    container's log), so a failure in a long run shows its cause."""
    try:
        await wait_healthy(client, "idle", namespace, 1)
    except AssertionError as error:
        said = cluster.require_local().kubectl(
            f"--namespace={namespace}", "logs", "idle-0", "--tail=40", check=False
        )
        raise AssertionError(f"{error}\nmember log: {said.stdout}{said.stderr}") from error


async def test_an_idle_resync_issues_no_writes(
    client: Client,
    namespace: str,
    fast_resync: RunningOperator,
    real_node: RealNodeHandle,
    kube_cluster: ClusterHandle,
) -> None:
    # Integer and non-canonical quantities: the API server stores them as "1", "500m",
    # "1Gi"; comparing them as written would re-apply (and record Updated) on every resync.
    resources = {
        "limits": {"cpu": 1, "memory": "1024Mi"},
        "requests": {"cpu": "0.5", "memory": "0.5Gi"},
    }
    for i in range(3):
        app = _obj("AppService", f"idle-{i}", namespace, image="nginx:1.27", ports=[{"port": 80}])
        app["spec"]["resources"] = resources
        await client.create(APP_SERVICE, app)
    await client.create(SECRET, _secret("db-auth", namespace, "one"))
    await client.create(APP_STACK, _stack("idle", namespace))
    # Rounded to once a minute (a Warning Event, once), on a schedule that stays idle.
    await client.create(
        CRON_TAB, _obj("CronTab", "idle", namespace, cronSpec="*/10 0 0 1 1 *", image="busybox")
    )
    # A one-member etcd, a real container on the test bed's real node: healthy and idle.
    etcd = _obj("EtcdCluster", "idle", namespace, replicas=1, storage="1Gi")
    await client.create(ETCD_CLUSTER, etcd)
    # A one-member MongoDBCommunity with a user (its pod cannot start here: no mongo image;
    # its status is settled, Pending, with the user's connection-string Secret written).
    # Named apart from the EtcdCluster: its StatefulSet's Pod idle-0 would be the etcd
    # member's name, and whichever came first held it (the EtcdCluster then, rightly,
    # refused a Pod not its own: a flaky failure).
    user = {
        "name": "app",
        "passwordSecretRef": {"name": "db-auth"},
        "roles": [{"name": "readWrite", "db": "app"}],
    }
    mdbc = _obj(
        "MongoDBCommunity", "idle-db", namespace, members=1, type="ReplicaSet", version="8.0.4"
    )
    mdbc["spec"]["users"] = [user]
    await client.create(MONGODB_COMMUNITY, mdbc)
    for i in range(3):
        await until(client, APP_SERVICE, f"idle-{i}", namespace, is_ready, 60)
    await until(client, APP_STACK, "idle", namespace, is_ready, 60)
    await until(client, CRON_TAB, "idle", namespace, is_ready, 60)
    await _etcd_healthy(client, namespace, kube_cluster)
    await until(
        client,
        MONGODB_COMMUNITY,
        "idle-db",
        namespace,
        lambda o: bool(
            (o.get("status") or {}).get("users", [{}])[0].get("connectionStringSecretName")
        ),
        60,
        "the MongoDBCommunity's user Secret",
    )

    objects = {"appservice": 3, "appstack": 1, "crontab": 1, "etcdcluster": 1}
    objects["mongodbcommunity"] = 1
    assert set(objects) == {c.name for c in ALL}, "every kind is in this test"
    await _resync_rounds(fast_resync, objects, 1)  # what was in flight has landed
    before = _writes(fast_resync)
    await _resync_rounds(fast_resync, objects, 3)
    assert _writes(fast_resync) == before


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind), {})


def _settled(app: dict[str, Any]) -> bool:
    return is_ready(app) and _condition(app, "Progressing").get("status") == "False"


def _rolled_out(deployment: dict[str, Any]) -> bool:
    progressing = _condition(deployment, "Progressing").get("reason")
    return progressing == "NewReplicaSetAvailable" and (
        deployment["status"].get("observedGeneration") == deployment["metadata"]["generation"]
    )


async def test_appstack_run_sync_period_repairs_what_no_watch_reports(
    client: Client, namespace: str, operator_kubeconfig: Path, tmp_path: Path
) -> None:
    argv = appstack_run(
        operator_kubeconfig,
        namespace,
        "--sync-period=1s",  # the default is 10 minutes: only the flag is this fast
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
        "--log-format=json",
    )
    with program(argv, tmp_path / "operator.log") as operator:
        await client.create(APP_SERVICE, _obj("AppService", "web", namespace, image="nginx:1.27"))
        app = await until(client, APP_SERVICE, "web", namespace, _settled, 60, "the app")
        # The Deployment's last status write (which wakes the app) is behind us too.
        await until(client, DEPLOYMENT, "web", namespace, _rolled_out, 60, "the rollout")
        ready = app["status"]["ready"]

        # A status-only update: no event reaches the reconciler (status_changes=False).
        # Twice: the second time surely after the last write the rollout still had due.
        for _ in range(2):
            await client.patch_status(
                APP_SERVICE, "web", {"ready": "0/0", "readyReplicas": 0}, namespace=namespace
            )
            overwritten = time.monotonic()
            repaired = await until(
                client,
                APP_SERVICE,
                "web",
                namespace,
                lambda a: a["status"]["ready"] == ready,
                30,  # the default sync period (10 minutes) would be too late: the flag did it
                "the overwritten status to be repaired within the sync period",
            )
            elapsed = time.monotonic() - overwritten
            print(f"overwritten status repaired after {elapsed:.1f}s (sync period 1s)")
            assert repaired["status"]["readyReplicas"] == app["status"]["readyReplicas"]
    assert operator.proc.returncode == 0, operator.tail()
