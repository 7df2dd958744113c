"""The documentation's code blocks against the API server, one test per page
(:mod:`tests.doc_blocks` says which blocks and how): each YAML object of ours is created
with a server-side dry run (or refused, where the page says so), then the page's shell
blocks run in order, as its reader would type them, then its runnable Python blocks — in a
namespace of the test's own (the kubeconfig's current namespace), with the operator
watching it, from a directory holding the checkout's files, with ``kubectl`` and
``appstack`` on ``PATH``. kwok nodes only: nothing here needs a container to really run."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from appstack_testbed.pytest_plugin import ClusterHandle
from tests.doc_blocks import Fenced, fenced, objects_to_create, on_cluster, pages_on_cluster
from tests.e2e.conftest import RunningOperator
from tests.e2e.shell_blocks import SHELLS

# The pages' examples take the seed's NodePorts: in turn with the other tests that do.
pytestmark = [pytest.mark.node_ports(30002, 30160, 30161), pytest.mark.our_names]

PAGES = pages_on_cluster()


def _reader_env(
    kube_cluster: ClusterHandle, kubeconfig: Path, namespace: str, tmp: Path
) -> dict[str, str]:
    """The environment of a reader whose kubeconfig's current namespace is ``namespace``."""
    config = yaml.safe_load(kubeconfig.read_text())
    current = config.get("current-context")
    for context in config.get("contexts") or []:
        if context["name"] == current:
            context["context"]["namespace"] = namespace
    mine = tmp / "kubeconfig"
    mine.write_text(yaml.safe_dump(config))
    path = [
        str(Path(sys.executable).parent),  # appstack
        str(kube_cluster.require_local().toolchain.bin_dir),  # kubectl of the cluster's version
        os.environ.get("PATH", "/usr/bin:/bin"),
    ]
    return {
        **os.environ,
        "PATH": os.pathsep.join(path),
        "KUBECONFIG": str(mine),
        "KUBECACHEDIR": str(tmp / "kube-cache"),  # discovery as of now, a reader's own
    }


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _dry_run(block: Fenced, page: list[Fenced], cwd: Path, env: dict[str, str]) -> None:
    """Create the block's objects with a server-side dry run: accepted, or refused with
    the page's words."""
    for obj in objects_to_create(block, page):
        text = yaml.safe_dump(obj)
        proc = _run(
            ["kubectl", "create", "--dry-run=server", "-o", "name", "-f", "-"], cwd, env, text
        )
        out = proc.stdout + proc.stderr
        if block.note == "refused":
            assert proc.returncode != 0, f"{block.name}: accepted, the page says refused:\n{text}"
            assert block.reason in out, f"{block.name}: refused otherwise:\n{out}"
        else:
            assert proc.returncode == 0, f"{block.name}: refused:\n{text}\n{out}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
async def test_the_pages_blocks_run(  # noqa: PLR0917 - fixtures
    page: Path,
    operator: RunningOperator,
    kube_cluster: ClusterHandle,
    kubeconfig: Path,
    namespace: str,
    workdir: Path,
    tmp_path: Path,
) -> None:
    blocks = fenced(page)
    env = _reader_env(kube_cluster, kubeconfig, namespace, tmp_path)
    mine = [b for b in blocks if on_cluster(b, blocks)]
    assert mine, f"{page.name}: nothing to run"
    for block in (b for b in mine if b.language == "yaml"):
        await asyncio.to_thread(_dry_run, block, blocks, workdir, env)
    for block in (b for b in mine if b.language in SHELLS):
        script = "\n".join(block.commands) + "\n"
        proc = await asyncio.to_thread(
            _run, ["bash", "-euo", "pipefail", "-c", script], workdir, env
        )
        assert proc.returncode == 0, (
            f"{block.name} failed ({proc.returncode}):\n$ {script}\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    for block in (b for b in mine if b.language == "python"):
        proc = await asyncio.to_thread(_run, [sys.executable, "-c", block.text], workdir, env)
        assert proc.returncode == 0, f"{block.name} failed:\n{proc.stdout}{proc.stderr}"
