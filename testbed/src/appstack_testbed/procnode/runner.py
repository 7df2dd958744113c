"""Start and stop process-node agents beside a local cluster, and the handle tests use.

:class:`ProcessNodes` starts ``count`` agents (``python -m appstack_testbed.procnode``) as
detached components of a :class:`~appstack_testbed.cluster.LocalCluster` (pid file
``procnode-N``, log ``logs/procnode-N.log``; ``cluster down`` stops them too), waits until
their Nodes are Ready, and gives tests what the contract with the EtcdCluster tests names:
``name``, ``service_address``, ``kill``, ``pod_dir``/``pid``/``processes``. Used by the
``process_node`` pytest fixture and ``appstack cluster up --process-nodes N``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import os
import signal
import sys
import threading
from pathlib import Path

from lightkube import ApiError, Client, KubeConfig
from lightkube.resources.core_v1 import Node

from appstack_testbed import etcd_releases
from appstack_testbed.cluster import LocalCluster, Printer
from appstack_testbed.process import ManagedProcess
from appstack_testbed.procnode import network, node
from appstack_testbed.procnode.agent import NETWORK_FILE, READY_FILE
from appstack_testbed.procnode.sandbox import MARKER
from appstack_testbed.serviceproxy import ServiceProxy
from appstack_testbed.waiting import condition_status, wait_for


class ProcessNodes:
    """The process nodes of one local cluster (see the module docstring)."""

    def __init__(
        self,
        cluster: LocalCluster,
        count: int = 1,
        printer: Printer | None = None,
        *,
        first: int = 0,
    ) -> None:
        self.cluster = cluster
        self.indexes = range(first, first + count)
        self.print = printer or cluster.print
        self.client = Client(config=KubeConfig.from_file(str(cluster.kubeconfig)))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proxies: dict[tuple[str, str, int], ServiceProxy] = {}

    @property
    def name(self) -> str:
        """The first node's name (``appstack-proc-0`` unless ``first`` says otherwise)."""
        return node.node_name(self.indexes[0])

    @property
    def names(self) -> list[str]:
        return [node.node_name(i) for i in self.indexes]

    def state(self, index: int | None = None) -> Path:
        index = self.indexes[0] if index is None else index
        return self.cluster.directory / "procnode" / node.node_name(index)

    def network(self, index: int | None = None) -> ipaddress.IPv4Network:
        """The block the node's pod IPs come from (while its agent runs)."""
        return ipaddress.IPv4Network((self.state(index) / NETWORK_FILE).read_text().strip())

    def agent(self, index: int | None = None) -> ManagedProcess:
        index = self.indexes[0] if index is None else index
        return ManagedProcess(f"procnode-{index}", self.cluster.directory)

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Build the etcd releases if needed, start the agents, wait until Ready."""
        for version in etcd_releases.RELEASES:
            etcd_releases.ensure(version, self.print)
        for index in self.indexes:
            agent = self.agent(index)
            if not agent.running():
                (self.state(index) / READY_FILE).unlink(missing_ok=True)
                agent.start(
                    [
                        sys.executable,
                        "-m",
                        "appstack_testbed.procnode",
                        f"--kubeconfig={self.cluster.kubeconfig}",
                        f"--cluster={self.cluster.name}",
                        f"--index={index}",
                        f"--state={self.state(index)}",
                    ]
                )
        for index, name in zip(self.indexes, self.names, strict=True):
            wait_for(
                functools.partial(self._ready, name, index),
                timeout=60,
                what=f"process node {name} Ready",
            )
        self.print(f"[appstack] process nodes ready: {', '.join(self.names)}")

    def _ready(self, name: str, index: int) -> bool:
        if not self.agent(index).running():
            raise RuntimeError(f"{name} agent exited:\n{self.agent(index).log_tail()}")
        if not (self.state(index) / READY_FILE).exists():
            return False
        return condition_status(self.client.get(Node, name), "Ready") == "True"

    def stop(self) -> None:
        """Stop the agents (each stops its processes first) and the Service proxies."""
        for index in self.indexes:
            self.agent(index).stop(timeout=60)
            record = self.state(index) / NETWORK_FILE
            if record.exists():  # the agent died without cleaning up (e.g. SIGKILL)
                network.release(ipaddress.IPv4Network(record.read_text().strip()), record)
        if self._loop is not None:
            for proxy in self._proxies.values():
                asyncio.run_coroutine_threadsafe(proxy.stop(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop = None
            self._proxies.clear()

    def remove(self) -> None:
        """:meth:`stop`, then delete the Nodes: for a node a test added for a while. A
        stopped agent's Node keeps looking Ready until the node controller's grace period
        ends (and its pods stay bound to it, which :meth:`stop` wants, for an agent to adopt
        them); a pod created meanwhile for any process node could land there and never run."""
        self.stop()
        for name in self.names:
            with contextlib.suppress(ApiError):
                self.client.delete(Node, name)

    # ------------------------------------------------------------------ access
    def service_address(self, namespace: str, service: str, port: int) -> tuple[str, int]:
        """A loopback (host, port) whose connections reach the Service's ready endpoints."""
        key = (namespace, service, port)
        if key not in self._proxies:
            proxy = ServiceProxy(self.client, namespace, service, port)
            asyncio.run_coroutine_threadsafe(proxy.start(), self._event_loop()).result(10)
            self._proxies[key] = proxy
        proxy = self._proxies[key]
        return proxy.host, proxy.port

    def pod_dir(self, namespace: str, pod: str, index: int | None = None) -> Path:
        """The pod's directory on its node (hosts file, logs, scratch volumes, pid files)."""
        return self.state(index) / "pods" / namespace / pod

    def pid(self, namespace: str, pod: str, container: str | None = None) -> int | None:
        """The live pid of a pod's container (the first container when not named)."""
        for index in self.indexes:
            directory = self.pod_dir(namespace, pod, index)
            files = sorted(directory.glob(f"{container or '*'}.pid"))
            if files:
                with contextlib.suppress(ValueError, FileNotFoundError):
                    return int(files[0].read_text())
        return None

    def kill(
        self, namespace: str, pod: str, container: str | None = None, sig: int = signal.SIGKILL
    ) -> int:
        """Crash a pod's process (not a deletion); returns the pid killed."""
        pid = self.pid(namespace, pod, container)
        if pid is None:
            raise LookupError(f"pod {namespace}/{pod} has no running process")
        os.kill(pid, sig)
        return pid

    def processes(self) -> list[int]:
        """Pids of every live process started by these nodes (their children included)."""
        marks = {f"{MARKER}={self.state(i)}".encode() for i in self.indexes}
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if any(m in (entry / "environ").read_bytes().split(b"\0") for m in marks):
                    out.append(int(entry.name))
        return out

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="service-proxies", daemon=True).start()
            self._loop = loop
        return self._loop
