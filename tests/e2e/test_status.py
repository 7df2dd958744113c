"""``appstack status STACK``: the tree of a running AppStack — its members and the objects
made for each, with readiness — as text and as JSON; its dependency graph redrawn by
``--watch`` as the stack changes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
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


async def test_status_graph_watch_redraws_the_waves_as_the_stack_changes(
    client: Client, namespace: str, operator: RunningOperator, kubeconfig: Path
) -> None:
    """``appstack status NAME --graph --watch``: the graph drawn, drawn again when the stack
    changes (a member added, in a wave of its own, waiting for the one it depends on), and
    a last line when the stack is deleted, then exit 0."""
    stack = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": "graphed", "namespace": namespace},
        "spec": {
            "middleware": [{"name": "db", "type": "postgres", "managed": {}}],
            "components": [
                {"name": "api", "image": "api:1", "uses": ["db"], "ports": [{"port": 80}]}
            ],
        },
    }
    await client.create(APP_STACK, stack)
    await until(client, APP_STACK, "graphed", namespace, is_ready, 120, "graphed Ready")
    watcher = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "appstack",
        "status",
        "graphed",
        "--graph",
        "--watch",
        "-n",
        namespace,
        f"--kubeconfig={kubeconfig}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert watcher.stdout is not None
    seen: list[str] = []

    async def read_until(text: str, timeout: float) -> str:
        """The first line from now holding ``text`` (AssertionError: output ended or the
        time ran out first, with what was printed)."""

        async def lines() -> str:
            while got := await watcher.stdout.readline():  # type: ignore[union-attr]
                seen.append(got.decode())
                if text in seen[-1]:
                    return seen[-1]
            raise AssertionError(f"output ended before {text!r}: {''.join(seen)}")

        try:
            return await asyncio.wait_for(lines(), timeout)
        except TimeoutError:
            raise AssertionError(f"no {text!r} in {timeout}s: {''.join(seen)}") from None

    try:
        await read_until("BLOCKED BY", 30)
        db = await read_until(" db ", 10)
        api = await read_until(" api ", 10)
        assert db.split()[:4] == ["1", "db", "Middleware/postgres", "Ready"], db
        assert api.split() == ["2", "api", "Component", "Ready", "uses", "db"], api
        await client.patch(
            APP_STACK,
            "graphed",
            {
                "spec": {
                    "components": [
                        {"name": "api", "image": "api:1", "uses": ["db"], "ports": [{"port": 80}]},
                        {"name": "web", "image": "web:1", "dependsOn": ["api"]},
                    ]
                }
            },
            namespace=namespace,
        )
        web = await read_until("dependsOn api", 60)  # in a third wave, needing api
        assert web.split()[:3] == ["3", "web", "Component"], web
        await client.delete(APP_STACK, "graphed", namespace)
        await read_until("AppStack " + namespace + "/graphed deleted", 120)
        assert await asyncio.wait_for(watcher.wait(), 30) == 0
    finally:
        if watcher.returncode is None:
            watcher.send_signal(signal.SIGINT)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(watcher.wait(), 10)
            if watcher.returncode is None:
                watcher.kill()
    assert watcher.stderr is not None
    errors = (await watcher.stderr.read()).decode()
    assert "Traceback" not in errors, errors
