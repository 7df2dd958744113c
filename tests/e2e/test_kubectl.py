"""kubectl as users type it: ``kubectl get appstack NAME`` addresses the AppStack (the
category is ``appstack-all``, not AppStack's singular name), ``kubectl get appstack-all``
lists every kind, and ``-o wide`` shows the Ready condition's reason and message."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.appstack import APP_STACK
from appstack.runtime.client import Client
from appstack_testbed.pytest_plugin import ClusterHandle
from tests.e2e.conftest import RunningOperator, is_ready, until

pytestmark = pytest.mark.our_names


async def test_kubectl_gets_an_appstack_by_name_and_all_kinds_by_category(
    kube_cluster: ClusterHandle, client: Client, namespace: str, operator: RunningOperator
) -> None:
    local = kube_cluster.require_local()
    await client.create(
        APP_STACK,
        {
            "apiVersion": "appstack.dev/v1",
            "kind": "AppStack",
            "metadata": {"name": "shop", "namespace": namespace},
            "spec": {"components": [{"name": "web", "image": "web:1", "ports": [{"port": 80}]}]},
        },
    )
    await client.create(
        APP_SERVICE,
        {
            "apiVersion": "appstack.dev/v1",
            "kind": "AppService",
            "metadata": {"name": "blog", "namespace": namespace},
            "spec": {"image": "blog:1", "ports": [{"port": 80}]},
        },
    )
    await until(client, APP_STACK, "shop", namespace, is_ready, 60, "shop Ready")
    await until(client, APP_SERVICE, "blog", namespace, is_ready, 60, "blog Ready")

    def kubectl(*args: str) -> list[list[str]]:
        out = local.kubectl(*args, f"--namespace={namespace}").stdout
        return [line.split() for line in out.splitlines()]

    header, row = await asyncio.to_thread(kubectl, "get", "appstack", "shop")
    assert header == ["NAME", "READY", "STATUS", "AGE"]
    assert row[:3] == ["shop", "1/1", "Ready"]

    listed = await asyncio.to_thread(kubectl, "get", "appstack-all", "-o", "name")
    assert sorted(line[0] for line in listed) == [
        "appservice.appstack.dev/blog",
        "appstack.appstack.dev/shop",
    ]

    wide = await asyncio.to_thread(
        local.kubectl, "get", "appsvc", "blog", "-o", "wide", f"-n={namespace}"
    )
    row = _table(wide.stdout)
    assert list(row)[-3:] == ["REASON", "MESSAGE", "AGE"]
    assert row["REASON"] == "Ready"
    assert row["MESSAGE"] == _condition(await client.get(APP_SERVICE, "blog", namespace))
    stack_wide = await asyncio.to_thread(
        local.kubectl, "get", "stack", "shop", "-o", "wide", f"-n={namespace}"
    )
    row = _table(stack_wide.stdout)
    assert list(row) == ["NAME", "READY", "STATUS", "MESSAGE", "AGE"]
    assert row["MESSAGE"] == _condition(await client.get(APP_STACK, "shop", namespace))


def _table(text: str) -> dict[str, str]:
    """kubectl's one-row table as column → cell (cells may contain spaces)."""
    header, row = text.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    bounds = zip(starts, [*starts[1:], None], strict=True)
    return {header[a:b].strip(): row[a:b].strip() for a, b in bounds}


def _condition(obj: dict[str, object]) -> str:
    conditions = (obj.get("status") or {}).get("conditions") or []  # type: ignore[union-attr]
    (ready,) = [c for c in conditions if c["type"] == "Ready"]
    return str(ready["message"])


async def test_kubectl_appstack_is_the_cli_as_a_kubectl_plugin(
    kube_cluster: ClusterHandle, client: Client, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kubectl-appstack`` (a console script of the package) on PATH: kubectl finds it
    and passes the arguments and its environment (KUBECONFIG) on."""
    local = kube_cluster.require_local()
    scripts = Path(sys.executable).parent
    assert (scripts / "kubectl-appstack").is_file()
    monkeypatch.setenv("PATH", f"{scripts}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("KUBECONFIG", str(local.kubeconfig))
    kubectl = str(local.toolchain.binary("kubectl"))

    def run(*args: str) -> str:
        proc = subprocess.run([kubectl, *args], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert (await asyncio.to_thread(run, "appstack", "--help")).startswith(
        "Usage: kubectl appstack [OPTIONS] COMMAND [ARGS]..."
    )
    assert "kubectl-appstack" in await asyncio.to_thread(run, "plugin", "list")
    await client.create(
        APP_SERVICE,
        {
            "apiVersion": "appstack.dev/v1",
            "kind": "AppService",
            "metadata": {"name": "blog", "namespace": namespace},
            "spec": {"image": "blog:1", "ports": [{"port": 80}]},
        },
    )
    shown = await asyncio.to_thread(
        run, "appstack", "status", "appservice/blog", f"--namespace={namespace}", "-o", "json"
    )
    assert json.loads(shown)["name"] == "blog", shown
