"""A tenant cannot run the operator out of memory (issue #34, P1): 220 ConfigMaps of 0.9 MB of
random data each, labelled ``app.kubernetes.io/managed-by=appstack`` in a namespace the
operator watches — what anyone with ``edit`` there can do — made the operator, which
caches every object of a child kind carrying that label, hold them all: one LIST page of
500 decoded at once, then the cache. It was OOM-killed about 4 s after every start under
its 512 MiB limit.

Here the installed operator (the generated install, watching that namespace, started as
``tests/e2e/installed.py`` does: the Deployment's arguments, its ServiceAccount's token)
starts beside those ConfigMaps; its resident memory is read from ``/proc/<pid>/status``
from its start, while it lists (until ``/readyz``: its caches synced) and while it
reconciles an AppService created after that (until Ready, its pods on kwok nodes). Its
peak (``VmHWM``, the kernel's own high-water mark) must stay under :data:`PEAK_BOUND` and
it must never exit. Now a LIST holds at most one page of 25 full objects as sent, each
object is cut down as its page arrives, and a ConfigMap none of our kinds controls is
cached as metadata only.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import threading
import time
import uuid
from contextlib import suppress
from pathlib import Path
from typing import Any

from lightkube import Client as LightClient
from lightkube import codecs
from lightkube.core.exceptions import ApiError

from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.util.meta import MANAGED_BY
from appstack.manifests.install import InstallOptions, install
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import CONFIG_MAP
from appstack_testbed.pytest_plugin import ClusterHandle
from tests.e2e.conftest import is_ready, until
from tests.e2e.installed import apply_install, running_operator

COUNT = 220
SIZE = 900_000  # characters of data per ConfigMap: 0.9 MB, base64 of random bytes
MiB = 1024 * 1024
#: The operator's peak is ≈ 57 MiB when it lists an empty namespace; a LIST page of 25 such
#: ConfigMaps is 22.5 MB, and a page costs about three times its size at its peak (the
#: answer's chunks, their join, what they decode to): ≈ 125 MiB measured. The bound leaves
#: room for a slower, busier machine; a cache that kept the ConfigMaps' data could not stay
#: under it (≈ 150 MB packed: base64 of random bytes deflates to ¾ only), nor could a LIST
#: page of more than ≈ 50 of them (50: 193 MiB). Before: ≈ 630 MiB, over the 512 MiB limit.
PEAK_BOUND = 200 * MiB


def _config_map(name: str, namespace: str) -> dict[str, Any]:
    data = base64.b64encode(os.urandom(SIZE * 3 // 4)).decode()  # incompressible
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
        "data": {"blob": data},
    }


async def _each(names: list[str], work: Any, parallel: int = 8) -> None:
    limit = asyncio.Semaphore(parallel)

    async def one(name: str) -> None:
        async with limit:
            await work(name)

    await asyncio.gather(*(one(name) for name in names))


class MemorySampler:
    """Reads ``VmRSS`` and ``VmHWM`` of a process from ``/proc/<pid>/status`` every
    ``interval`` seconds, in a thread (the tests' waits may block the event loop)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid, self.interval = pid, interval
        self.samples: list[tuple[float, int]] = []  # (seconds since start, RSS bytes)
        self.peak = 0  # VmHWM, bytes: the kernel's high-water mark, between samples too
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = time.monotonic()

    def read(self) -> None:
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:  # exited: what was read last stands
            return
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if "VmHWM" not in fields:  # a zombie: its memory is gone
            return
        rss, hwm = (int(fields[key].split()[0]) * 1024 for key in ("VmRSS", "VmHWM"))
        self.samples.append((time.monotonic() - self._started, rss))
        self.peak = max(self.peak, hwm)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.read()

    def start(self) -> None:
        self.read()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.read()

    def summary(self) -> str:
        rss = [r for _, r in self.samples]
        last = rss[-1] if rss else 0
        return (
            f"peak (VmHWM) {self.peak / MiB:.1f} MiB, highest sampled RSS "
            f"{max(rss, default=0) / MiB:.1f} MiB, last {last / MiB:.1f} MiB, "
            f"{len(rss)} samples over {self.samples[-1][0] if self.samples else 0:.1f} s"
        )


def _remove_install(kube: LightClient, objects: list[dict[str, Any]]) -> None:
    """The install's own objects but the CRDs (shared by the session): its namespace and
    its cluster-scoped grants and policies (named after its namespace)."""
    for obj in reversed(objects):
        meta = obj["metadata"]
        if obj["kind"] == "CustomResourceDefinition" or meta.get("namespace"):
            continue  # a namespaced object goes with its namespace
        resource = codecs.from_dict(obj)
        try:
            kube.delete(type(resource), meta["name"])
        except ApiError as error:
            if error.status.code != 404:
                raise


async def test_labelled_configmaps_of_a_tenant_do_not_run_the_operator_out_of_memory(
    kube: LightClient,
    kube_cluster: ClusterHandle,
    client: Client,
    namespace: str,
    tmp_path: Path,
) -> None:
    ops = f"ops-memory-{uuid.uuid4().hex[:6]}"
    parts = install(InstallOptions(namespace=ops, watch_namespaces=(namespace,)))
    names = [f"tenant-blob-{i:03d}" for i in range(COUNT)]

    async def create(name: str) -> None:
        await client.create(CONFIG_MAP, _config_map(name, namespace))

    async def delete(name: str) -> None:
        with suppress(errors.NotFound):
            await client.delete(CONFIG_MAP, name, namespace)

    samplers: list[MemorySampler] = []

    def sample(operator: subprocess.Popen[bytes]) -> None:
        samplers.append(MemorySampler(operator.pid))
        samplers[0].start()

    apply_install(kube, parts)
    try:
        await _each(names, create)
        try:
            with running_operator(kube, kube_cluster.kubeconfig, parts, tmp_path, sample) as op:
                # /readyz said 200: every cache listed, the ConfigMaps among them
                (memory,) = samplers
                memory.read()
                listed, ready_after = memory.peak, memory.samples[-1][0]
                app = {
                    "apiVersion": "appstack.dev/v1",
                    "kind": "AppService",
                    "metadata": {"name": "web", "namespace": namespace},
                    "spec": {"size": 2, "image": "nginx:1.27", "ports": [{"port": 80}]},
                }
                await client.create(APP_SERVICE, app)
                await until(client, APP_SERVICE, "web", namespace, is_ready, 90, "web Ready")
                memory.read()
                assert op.poll() is None, "the operator exited"
        finally:
            for sampler in samplers:
                sampler.stop()
        log = (tmp_path / "operator.log").read_text()
        print(  # the figures: peak and time to ready
            f"\n{COUNT} ConfigMaps of {SIZE / 1e6:.1f} MB: ready after {ready_after:.1f} s at "
            f"a peak of {listed / MiB:.1f} MiB; then {memory.summary()}"
        )
        assert memory.peak < PEAK_BOUND, memory.summary()
        assert "Traceback" not in log, log[-3000:]
    finally:
        await _each(names, delete)
        _remove_install(kube, parts.objects())
