"""An install as users apply it, for the e2e tests of the install paths: the objects of
:func:`appstack.manifests.install.install` applied (minus the Deployment — kwok cannot run
the operator's pod), and ``appstack run`` started as a process with **the generated
Deployment's own arguments and environment**, under a token of the generated
ServiceAccount (so its RBAC is exactly the generated Roles / ClusterRole)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from lightkube import Client as LightClient
from lightkube import KubeConfig, codecs
from lightkube.core.exceptions import ApiError

from appstack.manifests.install import Install
from appstack_testbed.waiting import eventually_sync
from tests.e2e.conftest import apply_objects, service_account_kubeconfig


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def admin_client(kubeconfig: Path) -> LightClient:
    """A lightkube client with the cluster's admin kubeconfig."""
    return LightClient(config=KubeConfig.from_file(str(kubeconfig)), field_manager="appstack-tests")


def apply_install(light: LightClient, parts: Install) -> None:
    """Everything but the Deployment (no kubelet here to run it)."""
    apply_objects(light, [o for o in parts.objects() if o is not parts.deployment])


def remove_install(light: LightClient, parts: Install) -> None:
    """The install's own objects but the CRDs (the session's): its namespace and its
    cluster-scoped grants and admission policies (named after its namespace). A test on the
    shared cluster must remove them: every install's policies match every appstack
    operator's token (whoever holds the guards' marker), so an install left behind holds
    the shared one to its own rules — an unsharded one refused the sharded install's
    shard-label patches (tests/e2e/test_sharding_install.py)."""
    for obj in reversed(parts.objects()):
        meta = obj["metadata"]
        if obj["kind"] == "CustomResourceDefinition" or meta.get("namespace"):
            continue  # a namespaced object goes with its namespace
        resource = codecs.from_dict(obj)
        try:
            light.delete(type(resource), meta["name"])
        except ApiError as error:
            if error.status.code != 404:
                raise


def operator_command(deployment: dict[str, Any], kubeconfig: Path, health: int) -> list[str]:
    """``appstack run`` with the container's args; local ports instead of the pod's."""
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return [
        sys.executable,
        "-m",
        "appstack",
        *container["args"],
        f"--kubeconfig={kubeconfig}",
        "--metrics-bind-address=0",
        f"--health-probe-bind-address=127.0.0.1:{health}",
    ]


@contextmanager
def running_operator(
    light: LightClient,
    admin_kubeconfig: Path,
    parts: Install,
    workdir: Path,
    started: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """The operator of ``parts`` running (ready) as its ServiceAccount until the block ends,
    then stopped with SIGTERM; fails with its log when it exits early or never gets ready.
    ``started`` is told about the process as soon as it is started (before it is ready)."""
    namespace = parts.deployment["metadata"]["namespace"]
    kubeconfig = service_account_kubeconfig(
        light, admin_kubeconfig, namespace, workdir / "operator-kubeconfig"
    )
    health = _free_port()
    log = workdir / "operator.log"
    env = {**os.environ, "POD_NAMESPACE": namespace, "POD_NAME": "operator-0"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            operator_command(parts.deployment, kubeconfig, health),
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        if started is not None:
            started(proc)

        def ready() -> bool:
            assert proc.poll() is None, f"operator exited: {log.read_text()[-3000:]}"
            return _ready(health)

        eventually_sync(
            ready,
            timeout=60,
            what="the operator ready",
            interval=0.2,
            diagnose=lambda: log.read_text()[-3000:],
        )
        yield proc
        # still running, or stopped by the test with SIGTERM (a clean exit): never crashed
        assert proc.poll() in {None, 0}, f"operator died: {log.read_text()[-3000:]}"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
