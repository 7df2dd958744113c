"""One pod on a process node: its directory, IP, volumes, containers and status.

:class:`PodWorker` prepares the pod (a directory ``<state>/pods/<ns>/<name>``, its
loopback IP, volumes, a private /etc/hosts), runs its init containers one after another,
then its containers (:class:`~appstack_testbed.procnode.container.ContainerRunner`), and
writes ``status`` (phase, conditions, containerStatuses, podIP/hostIP) whenever something
changes. :meth:`PodWorker.terminate` stops it as a kubelet does on deletion.

Used by :mod:`appstack_testbed.procnode.agent`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lightkube import ApiError, AsyncClient
from lightkube.resources.core_v1 import ConfigMap, Pod, Secret
from lightkube.types import PatchType

from appstack_testbed.procnode import network, sandbox, spec, status, volumes
from appstack_testbed.procnode.container import ContainerRunner, Launch, now_rfc3339

log = logging.getLogger(__name__)
HOST_IP = "127.0.0.1"


def remove_pod_dir(directory: Path) -> None:
    """Delete a pod's directory, and its namespace's once empty."""
    shutil.rmtree(directory, ignore_errors=True)
    with contextlib.suppress(OSError):
        directory.parent.rmdir()


class PodWorker:
    """Runs one pod (see the module docstring)."""

    def __init__(
        self,
        client: AsyncClient,
        pod: Mapping[str, Any],
        pod_ip: str,
        directory: Path,
        hosts: Sequence[tuple[str, list[str]]],
    ) -> None:
        self.client = client
        self.pod = pod
        self.ip = pod_ip
        self.directory = directory
        self.runners: list[ContainerRunner] = []
        self.init_done = False
        self.error: str | None = None
        self.error_reason = "CreateContainerConfigError"
        self.started_at = now_rfc3339()
        self.transitions: dict[str, tuple[str, str]] = {}
        self._changed = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._reporter: asyncio.Task[None] | None = None
        self._entries = list(hosts)
        meta = pod["metadata"]
        self.key = f"{meta['namespace']}/{meta['name']}"
        old = self.directory / "uid"
        if old.exists() and old.read_text() != meta["uid"]:
            shutil.rmtree(self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "uid").write_text(meta["uid"])
        (self.directory / "ip").write_text(pod_ip)
        self.update_hosts(self._entries)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())
        self._reporter = asyncio.ensure_future(self._report_loop())

    async def terminate(self, grace: float, *, report: bool = True) -> None:
        """SIGTERM every container, SIGKILL after ``grace``; wait until all are gone.

        ``report=False`` (the agent stops, the pod stays) writes no status from now on: the
        pod must not look finished to the next agent, which runs it again."""
        self._stop.set()
        if not report:
            await self._stop_reporting()
        await asyncio.gather(*(r.stop(grace) for r in self.runners))
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        await self._stop_reporting()

    async def _stop_reporting(self) -> None:
        if self._reporter is not None:
            self._reporter.cancel()
            await asyncio.gather(self._reporter, return_exceptions=True)

    def remove(self) -> None:
        remove_pod_dir(self.directory)

    def update_hosts(self, entries: Sequence[tuple[str, list[str]]]) -> None:
        self._entries = list(entries)
        pod_spec = self.pod["spec"]
        hostname = pod_spec.get("hostname") or self.pod["metadata"]["name"]
        names = [hostname]
        if pod_spec.get("subdomain"):
            ns = self.pod["metadata"]["namespace"]
            names = [*network.pod_names(hostname, pod_spec["subdomain"], ns), hostname]
        text = network.hosts_file((self.ip, names), self._entries)
        network.write_in_place(self.directory / "hosts", text)

    def changed(self) -> None:
        self._changed.set()

    # -------------------------------------------------------------------- running
    async def _run(self) -> None:
        try:
            await self._prepare_and_run()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # reported in status; the agent keeps running
            log.exception("pod %s failed", self.key)
            self.error = f"{type(error).__name__}: {error}"
            if isinstance(error, spec.UnsupportedImage):
                self.error_reason = "ErrImagePull"
            self.changed()

    async def _prepare_and_run(self) -> None:
        dirs = await self._volumes()
        if dirs is None:
            return
        policy = self.pod["spec"].get("restartPolicy", "Always")
        for container in self.pod["spec"].get("initContainers") or []:
            runner = await self._runner(
                container, dirs, "OnFailure" if policy != "Never" else "Never"
            )
            self.runners = [runner]
            if self._stop.is_set():  # terminated while the runner was being made
                return
            await runner.run()
            if self._stop.is_set() or runner.state["terminated"]["exitCode"] != 0:
                return
        self.init_done = True
        containers = self.pod["spec"]["containers"]
        self.runners = [await self._runner(c, dirs, policy) for c in containers]
        if self._stop.is_set():
            return
        self.changed()
        await asyncio.gather(*(r.run() for r in self.runners))

    async def _volumes(self) -> dict[str, Path] | None:
        while not self._stop.is_set():
            try:
                dirs = await volumes.volume_dirs(self.client, self.pod, self.directory)
            except volumes.NotReadyYet as waiting:
                self.error, self.error_reason = str(waiting), "ContainerCreating"
                self.changed()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), 1.0)
                continue
            self.error, self.error_reason = None, "CreateContainerConfigError"
            return dirs
        return None

    async def _runner(
        self, container: Mapping[str, Any], dirs: Mapping[str, Path], policy: str
    ) -> ContainerRunner:
        bin_dir = await asyncio.to_thread(spec.image_binary_dir, str(container.get("image", "")))
        refs = await self._references(container)
        env = spec.environment(
            container,
            spec.downward_fields(self.pod, self.ip, HOST_IP),
            lambda kind, name, key: refs.get((kind, name), {}).get(key),
            lambda kind, name: refs.get((kind, name), {}),
        )
        # As the image's ENV PATH would: its binaries first (a shell script calls etcdctl).
        env = {"PATH": f"{bin_dir}:{sandbox.HOST_PATH}", **env}
        name = container["name"]
        previous = status.previous_restarts(self.pod, name)
        launch = Launch(
            argv=spec.argv(container, env, bin_dir),
            env=env,
            hosts=self.directory / "hosts",
            mounts=volumes.mounts(container, dirs),
            workdir=container.get("workingDir") or str(self.directory / "work" / name),
            log=self.directory / f"{name}.log",
            pid_file=self.directory / f"{name}.pid",
            node_state=self.directory.parents[2],
            pod_ip=self.ip,
            resolve_argv=lambda argv: [spec.resolve_binary(argv[0], bin_dir), *argv[1:]],
        )
        return ContainerRunner(
            container,
            launch,
            restart_policy=policy,
            on_change=self.changed,
            restart_count=previous,
            grace=float(self.pod["spec"].get("terminationGracePeriodSeconds", 30)),
        )

    async def _references(
        self, container: Mapping[str, Any]
    ) -> dict[tuple[str, str], dict[str, str]]:
        """The Secrets and ConfigMaps the container's environment reads (missing: empty)."""
        wanted = status.env_references(container)
        ns = self.pod["metadata"]["namespace"]
        out: dict[tuple[str, str], dict[str, str]] = {}
        for kind, name in wanted:
            try:
                if kind == "secret":
                    secret = await self.client.get(Secret, name, namespace=ns)
                    out[(kind, name)] = {
                        k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()
                    }
                else:
                    cm = await self.client.get(ConfigMap, name, namespace=ns)
                    out[(kind, name)] = dict(cm.data or {})
            except ApiError as error:
                if error.status.code != 404:
                    raise
        return out

    # ------------------------------------------------------------------ reporting
    async def _report_loop(self) -> None:
        meta = self.pod["metadata"]
        sent: dict[str, Any] | None = None
        while True:
            await self._changed.wait()
            self._changed.clear()
            body = status.pod_status(self, HOST_IP)
            if body == sent:
                continue
            try:
                await self.client.patch(
                    Pod.Status,
                    meta["name"],
                    {"status": body},
                    namespace=meta["namespace"],
                    patch_type=PatchType.MERGE,
                )
                sent = body
            except ApiError as error:
                if error.status.code == 404:
                    return
                log.warning("status of %s: %s", self.key, error)
                self._changed.set()
            except Exception as error:  # the API server may be restarting: try again
                log.warning("status of %s: %s", self.key, error)
                self._changed.set()
                await asyncio.sleep(0.5)
            await asyncio.sleep(0.05)
