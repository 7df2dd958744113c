"""``appstack status STACK``: the tree of a running AppStack — its members and the objects
made for each, with readiness — as text and as JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import yaml
from click.testing import CliRunner, Result

from appstack.cli import main
from appstack.controllers.appservice import APP_SERVICE
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

    # the kubeconfig as kubectl reads it: a $KUBECONFIG list, merged, and --context
    context = yaml.safe_load(kubeconfig.read_text())["current-context"]
    listed = await asyncio.to_thread(
        CliRunner().invoke,
        main,
        ["status", "shop", "-n", namespace, "--context", context, "-o", "json"],
        env={"KUBECONFIG": f"{kubeconfig.parent / 'absent.yaml'}:{kubeconfig}"},
    )
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.output)["ready"] == "True"


async def test_status_of_an_appservice_shows_its_pods_and_why_they_wait(
    client: Client, namespace: str, operator: RunningOperator, kubeconfig: Path
) -> None:
    """``appstack status appservice/NAME``: Ready and Available, and one line per pod."""
    app = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"image": "nginx:1.7.9", "size": 2, "ports": [{"port": 80}]},
    }
    await client.create(APP_SERVICE, app)
    await until(client, APP_SERVICE, "web", namespace, is_ready, 120, "web Ready")

    def status(*args: str) -> Result:
        argv = ["status", *args, "-n", namespace, f"--kubeconfig={kubeconfig}"]
        return CliRunner().invoke(main, argv)

    result = await asyncio.to_thread(status, "appsvc/web", "-o", "json")
    assert result.exit_code == 0, result.output
    tree = json.loads(result.output)
    assert (tree["kind"], tree["ready"], tree["available"]) == ("AppService", "True", "True")
    assert tree["count"] == "2/2"
    assert len(tree["items"]) == 2
    assert all(i["name"].startswith("Pod/web-") and i["ready"] == "1/1" for i in tree["items"])
    lines = (await asyncio.to_thread(status, "appservice/web")).output.splitlines()
    assert lines[1].startswith("AppService/web")
    assert "available True" in lines[1]
    unknown = await asyncio.to_thread(status, "widget/web")
    assert unknown.exit_code == 1
    assert "'widget' is not a kind of ours" in unknown.output
    missing = await asyncio.to_thread(status, "etcd/nope")
    assert missing.exit_code == 1
    assert f"EtcdCluster {namespace}/nope not found" in missing.output
