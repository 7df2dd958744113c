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

import pytest
from lightkube import Client as LightClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.util.meta import MANAGED_BY
from appstack.manifests.install import InstallOptions, install
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import CONFIG_MAP
from appstack_testbed.pytest_plugin import ClusterHandle
from tests.e2e.conftest import is_ready, until
from tests.e2e.installed import apply_install, remove_install, running_operator

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
        remove_install(kube, parts)


# ------------------------------------------------------------- ballast in labels (#46)
#: Labels of ≈ 1.3 MB on one object: 3,420 of the longest keys Kubernetes takes (a prefix of
#: 253 characters, a name of 63) and values of 63. The review's 8,600 labels of 20 + 63 and
#: 63 characters were as many bytes, but took the API server twice as long to write
#: (label by label: 9.2 s against 4.5 s for 24 objects, 114 s for the whole ballast); the
#: operator gets the same bytes, and the same 1.3 MB an object to cut down to 32 labels.
LABELS = 3_420
#: The longest label prefix (a DNS subdomain of 253 characters).
PREFIX = ".".join(["b" * 62] * 4)[:253]
#: In a namespace not enabled (the review's figures: 250 ConfigMaps made the operator's
#: restart peak 2.25 GiB, 130 AppServices OOM-killed it too) and, a tenth as many, in an
#: enabled one.
CLOSED_CONFIG_MAPS, CLOSED_APP_SERVICES = 250, 130
OPEN_CONFIG_MAPS, OPEN_APP_SERVICES = 25, 13


def _ballast() -> dict[str, str]:
    return {f"{PREFIX}/k{i:05d}-{'p' * 56}": "v" * 63 for i in range(LABELS)}


def _memory_limit(parts: Any) -> int:
    """The Deployment's memory limit, in bytes (``512Mi``)."""
    (container,) = parts.deployment["spec"]["template"]["spec"]["containers"]
    limit = str(container["resources"]["limits"]["memory"])
    assert limit.endswith("Mi"), limit
    return int(limit.removesuffix("Mi")) * MiB


# Serial (alone on the cluster): its operator is installed cluster-wide — it would act in
# every other test's namespace — and it writes 540 MB into the etcd every test shares.
@pytest.mark.serial
async def test_ballast_in_labels_enabled_or_not_does_not_run_the_operator_out_of_memory(
    kube: LightClient,
    kube_cluster: ClusterHandle,
    client: Client,
    namespace: str,
    tmp_path: Path,
) -> None:
    """Issue #46 P1: a user with plain ``edit`` in a namespace **not enabled**, holding no
    right of ours, writes ConfigMaps with 1.3 MB of labels (and one allowed to create our
    kinds there, labelled AppServices): the operator — installed cluster-wide, every
    namespace a tenant's — listed every ConfigMap of the cluster (a spec may name one) in
    pages of 500 with their labels and kept our kinds whole: 2.25 GiB at its restart,
    OOM-killed under its 512 MiB. Now a user's ConfigMaps are cached only in the enabled
    namespaces (key and version only), our kinds elsewhere as their name and status, every
    page is 25 objects, labels kept at most 32. Measured: its peak from its start, through
    its LIST, to an AppService reconciled, under the Deployment's limit; the closed
    namespace's AppServices told so (``NamespaceNotEnabled``)."""
    closed = f"{namespace}-closed"
    kube.create(Namespace(metadata=ObjectMeta(name=closed)))  # not enabled
    ops = f"ops-labels-{uuid.uuid4().hex[:6]}"
    parts = install(InstallOptions(namespace=ops))  # cluster-wide: every enabled namespace
    limit = _memory_limit(parts)
    labels = _ballast()

    def config_map(name: str, where: str) -> dict[str, Any]:
        meta = {"name": name, "namespace": where, "labels": labels}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}

    def app_service(name: str, where: str, size: int = 0, ballast: bool = True) -> dict[str, Any]:
        meta = {"name": name, "namespace": where, "labels": labels if ballast else {}}
        spec = {"size": size, "image": "nginx:1.27", "ports": [{"port": 80}]}
        return {
            "apiVersion": "appstack.dev/v1",
            "kind": "AppService",
            "metadata": meta,
            "spec": spec,
        }

    ballast = [
        *[(CONFIG_MAP, config_map(f"cm-{i:03d}", closed)) for i in range(CLOSED_CONFIG_MAPS)],
        *[(APP_SERVICE, app_service(f"app-{i:03d}", closed)) for i in range(CLOSED_APP_SERVICES)],
        *[(CONFIG_MAP, config_map(f"cm-{i:03d}", namespace)) for i in range(OPEN_CONFIG_MAPS)],
        *[(APP_SERVICE, app_service(f"app-{i:03d}", namespace)) for i in range(OPEN_APP_SERVICES)],
    ]
    started = time.monotonic()
    await _each(list(range(len(ballast))), lambda i: client.create(*ballast[i]))
    written = time.monotonic() - started
    samplers: list[MemorySampler] = []

    def sample(operator: subprocess.Popen[bytes]) -> None:
        samplers.append(MemorySampler(operator.pid))
        samplers[0].start()

    apply_install(kube, parts)
    try:
        try:
            with running_operator(kube, kube_cluster.kubeconfig, parts, tmp_path, sample) as op:
                (memory,) = samplers
                memory.read()
                listed, ready_after = memory.peak, memory.samples[-1][0]
                # Each status write to a 1.3 MB object costs the API server the object's
                # size twice over: under this ballast many time out (the fence's deadline)
                # and are retried with backoff — the operator keeps working meanwhile: an
                # AppService created now, beside the ballast, is reconciled to Ready while
                # the closed namespace's are told so (both waited for at once).
                waits = time.monotonic()
                await client.create(APP_SERVICE, app_service("web", namespace, 2, ballast=False))
                told = until(
                    client,
                    APP_SERVICE,
                    "app-000",
                    closed,
                    lambda a: any(
                        c.get("reason") == "NamespaceNotEnabled"
                        for c in (a.get("status") or {}).get("conditions") or []
                    ),
                    240,
                    "the closed namespace's AppService told so",
                )
                ready = until(client, APP_SERVICE, "web", namespace, is_ready, 240, "web Ready")
                await asyncio.gather(told, ready)
                waited = time.monotonic() - waits
                memory.read()
                assert op.poll() is None, "the operator exited"
        finally:
            for sampler in samplers:
                sampler.stop()
        log = (tmp_path / "operator.log").read_text()
        print(
            f"\nballast in labels ({LABELS} labels, ≈ 1.3 MB an object; written in "
            f"{written:.0f} s): {CLOSED_CONFIG_MAPS} ConfigMaps and {CLOSED_APP_SERVICES} "
            f"AppServices not enabled, {OPEN_CONFIG_MAPS} and {OPEN_APP_SERVICES} enabled: "
            f"ready after {ready_after:.1f} s at a peak of {listed / MiB:.1f} MiB; web Ready "
            f"and app-000 told so {waited:.0f} s later; then "
            f"{memory.summary()}; the limit {limit / MiB:.0f} MiB"
        )
        assert memory.peak < limit, memory.summary()
        assert "Traceback" not in log, log[-3000:]
    finally:
        kube.delete(Namespace, closed)
        remove_install(kube, parts)
