"""The process node's agent: a small kubelet for tests, one asyncio process per node.

:class:`NodeAgent` registers its Node (:mod:`~appstack_testbed.procnode.node`), keeps the
heartbeats going, watches the pods bound to it and runs each as a
:class:`~appstack_testbed.procnode.pod.PodWorker`; a pod marked for deletion is stopped
(SIGTERM, its grace period, SIGKILL) and then deleted with grace 0, as a kubelet does.
It watches EndpointSlices to keep every pod's /etc/hosts current
(:mod:`~appstack_testbed.procnode.network`). On SIGTERM it stops every process it started
(the pods stay in the API, like a stopped kubelet's). State: ``<state>/pods/<ns>/<name>/``
holds each pod's hosts file, logs, scratch volumes and ``<container>.pid``.

Run by ``python -m appstack_testbed.procnode`` (:mod:`~appstack_testbed.procnode.runner`
starts it for the pytest fixture and ``appstack cluster up --process-nodes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import AsyncIterable, Callable
from pathlib import Path
from typing import Any

from lightkube import ALL_NS, ApiError, AsyncClient
from lightkube.resources.core_v1 import Pod
from lightkube.resources.discovery_v1 import EndpointSlice

from appstack_testbed.procnode import network, node
from appstack_testbed.procnode.container import now_rfc3339
from appstack_testbed.procnode.pod import PodWorker, remove_pod_dir

log = logging.getLogger(__name__)
SHUTDOWN_GRACE = 10.0
READY_FILE = "agent-ready"  # written once registered (the runner waits for it)
NETWORK_FILE = "network"  # the block of pod IPs this node claimed


class NodeAgent:
    """One process node (see the module docstring)."""

    def __init__(self, client: AsyncClient, cluster: str, index: int, state: Path) -> None:
        self.client = client
        self.name = node.node_name(index)
        self.cluster = cluster
        self.index = index
        self.network = ipaddress.IPv4Network("10.0.0.0/24")  # claimed in run()
        self.pool = network.AddressPool(self.network)
        self.state = state
        self.workers: dict[str, PodWorker] = {}
        self.deleting: set[str] = set()
        self.slices: dict[str, list[tuple[str, list[str]]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self, stop: asyncio.Event) -> None:
        started = now_rfc3339()
        self.network = network.claim(self.cluster, self.index, self.state / NETWORK_FILE)
        self.pool = network.AddressPool(self.network)
        await node.register(self.client, self.name)
        await node.heartbeat(self.client, self.name, started)
        await self._forget_gone_pods()
        (self.state / READY_FILE).write_text(f"{self.network}\n")
        loops = [
            asyncio.ensure_future(self._heartbeats(started)),
            asyncio.ensure_future(self._watch(self._pods, self._on_pod)),
            asyncio.ensure_future(self._watch(self._endpoint_slices, self._on_slice)),
        ]
        log.info("node %s ready (pods in %s)", self.name, self.network)
        await stop.wait()
        for task in loops:
            task.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
        await self.shutdown()

    async def shutdown(self) -> None:
        """Stop every process (the pods stay, as with a stopped kubelet)."""
        workers = list(self.workers.values())
        await asyncio.gather(*(w.terminate(SHUTDOWN_GRACE, report=False) for w in workers))
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        network.release(self.network, self.state / NETWORK_FILE)
        (self.state / READY_FILE).unlink(missing_ok=True)

    async def _forget_gone_pods(self) -> None:
        """Remove the directories of pods deleted while no agent ran (the new agent adopts
        the others: their processes are started again)."""
        bound = {
            (p.metadata.namespace, p.metadata.name)
            async for p in self.client.list(
                Pod, namespace=ALL_NS, fields={"spec.nodeName": self.name}
            )
            if p.metadata is not None
        }
        for directory in self.state.glob("pods/*/*"):
            if (directory.parent.name, directory.name) not in bound:
                remove_pod_dir(directory)
        for directory in self.state.glob("pods/*"):
            with contextlib.suppress(OSError):
                directory.rmdir()  # a namespace's, now empty

    # ------------------------------------------------------------------ watches
    async def _heartbeats(self, started: str) -> None:
        while True:
            await asyncio.sleep(node.HEARTBEAT_SECONDS)
            try:
                await node.heartbeat(self.client, self.name, started)
            except Exception as error:  # the API server may be restarting: try again
                log.warning("heartbeat: %s", error)

    def _pods(self) -> AsyncIterable[tuple[str, Any]]:
        return self.client.watch(Pod, namespace=ALL_NS, fields={"spec.nodeName": self.name})

    def _endpoint_slices(self) -> AsyncIterable[tuple[str, Any]]:
        return self.client.watch(EndpointSlice, namespace=ALL_NS)

    async def _watch(
        self,
        source: Callable[[], AsyncIterable[tuple[str, Any]]],
        handle: Callable[[str, dict[str, Any]], None],
    ) -> None:
        while True:
            try:
                async for event, obj in source():
                    handle(event, obj.to_dict())
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a watch ends (expired, API server restart): again
                log.info("watch restarts after: %s", error)
                await asyncio.sleep(0.5)

    def _on_slice(self, event: str, obj: dict[str, Any]) -> None:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        if event == "DELETED":
            self.slices.pop(key, None)
        else:
            self.slices[key] = network.slice_names(obj)
        entries = self.hosts_entries()
        for worker in self.workers.values():
            worker.update_hosts(entries)

    def hosts_entries(self) -> list[tuple[str, list[str]]]:
        return [entry for entries in self.slices.values() for entry in entries]

    def _on_pod(self, event: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        if event == "DELETED" or meta.get("deletionTimestamp"):
            if uid not in self.deleting:
                self.deleting.add(uid)
                self._spawn(self._delete(pod, already_gone=event == "DELETED"))
            return
        if uid in self.workers or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        wanted = (pod.get("status") or {}).get("podIP")
        ip = self.pool.take(uid, wanted)
        directory = self.state / "pods" / meta["namespace"] / meta["name"]
        worker = PodWorker(self.client, pod, ip, directory, self.hosts_entries())
        self.workers[uid] = worker
        worker.start()
        log.info("pod %s/%s started on %s", meta["namespace"], meta["name"], ip)

    async def _delete(self, pod: dict[str, Any], *, already_gone: bool) -> None:
        meta = pod["metadata"]
        worker = self.workers.get(meta["uid"])
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
        if worker is not None:
            await worker.terminate(float(grace))
            worker.remove()
            self.workers.pop(meta["uid"], None)
        self.pool.release(meta["uid"])
        if not already_gone:
            with contextlib.suppress(ApiError):
                await self.client.delete(
                    Pod, meta["name"], namespace=meta["namespace"], grace_period=0
                )
        log.info("pod %s/%s stopped and removed", meta["namespace"], meta["name"])

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
