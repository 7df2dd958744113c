"""``appstack status STACK``: the tree of a running AppStack — its members and the objects
made for each, with readiness — as text and as JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner, Result

from appstack.cli import main
from appstack.controllers.appstack import APP_STACK
from appstack.runtime.client import Client
from tests.e2e.conftest import RunningOperator, is_ready, until


async def test_status_shows_members_their_objects_and_readiness(
    client: Client, namespace: str, operator: RunningOperator, kubeconfig: Path
) -> None:
    await client.create(
        APP_STACK,
        {
            "apiVersion": "appstack.dev/v1",
            "kind": "AppStack",
            "metadata": {"name": "shop", "namespace": namespace},
            "spec": {
                "middleware": [{"name": "db", "type": "postgres", "managed": {}}],
                "components": [
                    {"name": "api", "image": "api:1", "uses": ["db"], "ports": [{"port": 80}]}
                ],
            },
        },
    )
    await until(client, APP_STACK, "shop", namespace, is_ready, 120, "shop Ready")

    def status(*args: str) -> Result:
        argv = ["status", "shop", "-n", namespace, f"--kubeconfig={kubeconfig}", *args]
        return CliRunner().invoke(main, argv)

    result = await asyncio.to_thread(status, "-o", "json")
    assert result.exit_code == 0, result.output
    tree = json.loads(result.output)
    assert (tree["ready"], tree["readyMembers"]) == ("True", "2/2")
    members = {m["name"]: m for m in tree["members"]}
    assert set(members) == {"db", "api"}
    db = {(o["kind"], o["name"]): o["ready"] for o in members["db"]["objects"]}
    assert db[("StatefulSet", "shop-db")] == "1/1"
    assert ("Service", "shop-db") in db
    api = {(o["kind"], o["name"]): o["ready"] for o in members["api"]["objects"]}
    assert api[("Deployment", "shop-api")] == "1/1"
    assert all(m["state"] == "Ready" for m in tree["members"])

    text = (await asyncio.to_thread(status)).output
    lines = text.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS"]
    assert lines[1].startswith("AppStack/shop")
    assert "2/2" in lines[1]
    assert any(line.startswith("├─ db (") or line.startswith("└─ db (") for line in lines)
    assert any("Deployment/shop-api" in line and "1/1" in line for line in lines)

    missing = await asyncio.to_thread(
        CliRunner().invoke, main, ["status", "nope", "-n", namespace, f"--kubeconfig={kubeconfig}"]
    )
    assert missing.exit_code == 1
    assert f"AppStack {namespace}/nope not found" in missing.output
