"""Every command the README shows is run, as its reader would type it, so the README cannot
drift from the code.

The reader's cluster is a local cluster of its own with a real node, in the state ``make
demo`` leaves it (CRDs, RBAC and admission policies installed, the operator running under
its ServiceAccount): every shell block of README.md then runs in order
(:mod:`tests.e2e.shell_blocks`), in a directory holding the checkout's files, with
``kubectl``, ``appstack``, ``helm`` and ``make`` on ``PATH`` and ``KUBECONFIG`` pointing at
that cluster. A block the README marks ``<!-- not run: reason -->`` is skipped with that
reason (``make demo`` and ``make test`` themselves are what CI runs: ``.ci/run``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from appstack.api.namespaces import ENABLED
from appstack_testbed import demo
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.helm import Helm
from appstack_testbed.pytest_plugin import ClusterHandle
from tests.e2e.shell_blocks import Block, blocks, run_pasted

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BLOCKS = blocks(README)


def test_the_readme_shows_commands_and_says_why_a_block_is_not_run() -> None:
    assert [b for b in BLOCKS if not b.skip], "the README shows no command that is run"
    for block in BLOCKS:
        assert block.commands, f"{block.name}: an empty shell block"
        if block.skip is not None:
            assert len(block.skip) > 10, f"{block.name}: say why it is not run"


@pytest.fixture(scope="module")
def reader_cluster(kube_cluster: ClusterHandle) -> Iterator[LocalCluster]:
    """A cluster of the reader's own, as ``make demo`` leaves it (without its examples)."""
    kube_cluster.require_local()
    if os.geteuid() != 0:
        pytest.skip("the README's cluster has a real node, which needs root")
    cluster = LocalCluster(f"readme-{uuid.uuid4().hex[:6]}", nodes=1, real_nodes=1)
    cluster.up()
    demo.start_operator(cluster, demo.install(cluster))
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="module")
def reader_env(
    reader_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    helm = Helm.ensure(reader_cluster.kubeconfig, tmp_path_factory.mktemp("helm"))
    path = [
        str(Path(sys.executable).parent),  # appstack, make's venv tools
        str(reader_cluster.toolchain.bin_dir),  # kubectl of the cluster's version
        str(helm.binary.parent),
        os.environ.get("PATH", "/usr/bin:/bin"),
    ]
    return {
        **os.environ,
        "PATH": os.pathsep.join(path),
        "KUBECONFIG": str(reader_cluster.kubeconfig),
        "APPSTACK_CLUSTER": reader_cluster.name,  # `appstack cluster ...` commands
    }


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_readme_block(block: Block, reader_env: dict[str, str], workdir: Path) -> None:
    if block.skip is not None:
        pytest.skip(block.skip)
    what = f"{block.name} (README.md line {block.line})"
    run_pasted(block.script, workdir, reader_env, what, timeout=900)


def test_make_install_and_make_run_reconcile_the_seed_sample(
    reader_cluster: LocalCluster, reader_env: dict[str, str], workdir: Path
) -> None:
    """The seed's own workflow (seed 001): the CRDs with ``make install``, the operator from
    the checkout with ``make run`` against the current kubeconfig, then its sample."""
    reader_cluster.process(demo.OPERATOR).stop()  # make run is the only operator now
    install = subprocess.run(
        ["make", "install"],
        cwd=workdir,
        env=reader_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    log = workdir.parent / "make-run.log"
    with open(log, "wb") as out:
        run = subprocess.Popen(
            ["make", "run"],
            cwd=workdir,
            env=reader_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        kubectl = str(reader_cluster.toolchain.binary("kubectl"))
        steps = [
            [kubectl, "create", "namespace", "seed-workflow"],
            [kubectl, "label", "namespace", "seed-workflow", f"{ENABLED}=true"],
            [kubectl, "-n", "seed-workflow", "apply", "-f", "examples/appservice.yaml"],
            [
                kubectl,
                "-n",
                "seed-workflow",
                "wait",
                "--for=condition=Ready",
                "appservice/appservice-sample",
                "--timeout=3m",
            ],
        ]
        for step in steps:
            proc = subprocess.run(
                step, cwd=workdir, env=reader_env, capture_output=True, text=True, check=False
            )
            assert proc.returncode == 0, (
                f"{step}: {proc.stdout}{proc.stderr}\n{log.read_text()[-2000:]}"
            )
        assert run.poll() is None, log.read_text()[-2000:]
    finally:
        os.killpg(run.pid, signal.SIGTERM)
        run.wait(timeout=60)
