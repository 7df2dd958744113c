"""Managed mysql's own configuration end to end (seed 003's ``mysql-dataservice``
ConfigMap): the files become a ConfigMap mounted in /etc/mysql/conf.d, a change rewrites it
and restarts the instance (a new StatefulSet revision), removing them prunes the ConfigMap
and the mount."""

from __future__ import annotations

from typing import Any

from appstack.controllers.appstack import APP_STACK
from appstack.runtime.client import Client
from appstack.runtime.resources import CONFIG_MAP, STATEFUL_SET
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator, absent, until
from tests.e2e.test_appstack import _ready, _stack

CNF = "[mysqld]\nmax_connections = 500\n"


def _spec(files: dict[str, str] | None) -> dict[str, Any]:
    managed: dict[str, Any] = {"configFiles": files} if files else {}
    return {
        "middleware": [{"name": "mysql", "type": "mysql", "managed": managed}],
        "components": [{"name": "api", "image": "api:1", "uses": ["mysql"]}],
    }


def _mounted(sts: dict[str, Any]) -> bool:
    (mysqld,) = sts["spec"]["template"]["spec"]["containers"]
    return any(m["mountPath"] == "/etc/mysql/conf.d" for m in mysqld.get("volumeMounts", []))


async def test_mysql_config_files_are_mounted_rolled_and_pruned(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(APP_STACK, _stack("ds", namespace, **_spec({"dataservice.cnf": CNF})))
    await until(client, APP_STACK, "ds", namespace, _ready, 120, "Ready")
    config = await client.get(CONFIG_MAP, "ds-mysql-config", namespace)
    assert config["data"] == {"dataservice.cnf": CNF}
    sts = await client.get(STATEFUL_SET, "ds-mysql", namespace)
    assert _mounted(sts)
    digest = sts["spec"]["template"]["metadata"]["annotations"]["appstack.dev/config-hash"]

    changed = CNF + "max_allowed_packet = 64M\n"
    await client.patch(
        APP_STACK, "ds", {"spec": _spec({"dataservice.cnf": changed})}, namespace=namespace
    )
    await until(
        client,
        CONFIG_MAP,
        "ds-mysql-config",
        namespace,
        lambda cm: cm["data"] == {"dataservice.cnf": changed},
        60,
        "the ConfigMap rewritten",
    )
    rolled = await until(
        client,
        STATEFUL_SET,
        "ds-mysql",
        namespace,
        lambda s: (
            s["spec"]["template"]["metadata"]["annotations"]["appstack.dev/config-hash"] != digest
        ),
        60,
        "a new revision (mysqld restarts with the new files)",
    )
    assert _mounted(rolled)

    await client.patch(
        APP_STACK,
        "ds",
        [{"op": "remove", "path": "/spec/middleware/0/managed/configFiles"}],
        namespace=namespace,
        patch_type="json",
    )
    await until(
        client, STATEFUL_SET, "ds-mysql", namespace, lambda s: not _mounted(s), 60, "unmounted"
    )

    await eventually(
        lambda: absent(client, CONFIG_MAP, "ds-mysql-config", namespace),
        timeout=60,
        what="the ConfigMap pruned",
        interval=0.2,
    )
