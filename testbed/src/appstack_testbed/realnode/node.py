"""One real node's processes: containerd, the kubelet and kube-proxy, in the node's network
namespace, as managed processes of the cluster (pid and log files like the control plane's).

:meth:`RealNode.start` makes the network (:mod:`.network`), writes the configuration
(:mod:`.configs`), clears what a crashed run may have left, starts containerd, then the
kubelet and kube-proxy, each once the one before answers; :meth:`RealNode.stop` stops them
in reverse, kills the containers and their shims, unmounts and removes cgroups and the
network. Whether the node is Ready is the API server's business: :class:`LocalCluster`
waits for that. Used by :mod:`appstack_testbed.cluster`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from appstack_testbed.process import ComponentError, ManagedProcess
from appstack_testbed.realnode import cleanup, configs, network
from appstack_testbed.realnode.addressing import NodeNetwork

Printer = Callable[[str], None]
RUN_ROOT = Path("/run/appstack")


@dataclass(frozen=True)
class NodeSetup:
    """What a node needs from its cluster."""

    cluster_dir: Path
    bin_dir: Path
    kubernetes_version: str
    ca_file: Path
    gateway: str

    def kubeconfig(self, identity: str) -> Path:
        """A kubeconfig of ``identity`` that reaches the API server through the gateway."""
        return self.cluster_dir / "config" / f"{identity}.gateway.kubeconfig"


class RealNode:
    """Node ``network.name`` of a local cluster (see the module docstring)."""

    def __init__(self, setup: NodeSetup, node: NodeNetwork, printer: Printer) -> None:
        self.setup = setup
        self.node = node
        self.print = printer
        self.paths = configs.NodePaths(
            directory=setup.cluster_dir / "nodes" / node.name,
            run=RUN_ROOT / f"{node.cluster.index}-{node.index}",
        )

    @property
    def name(self) -> str:
        return self.node.name

    def process(self, component: str) -> ManagedProcess:
        return ManagedProcess(f"{component}-{self.node.name}", self.setup.cluster_dir)

    @property
    def components(self) -> tuple[str, ...]:
        return ("containerd", "kubelet", "kube-proxy")

    def commands(self) -> dict[str, list[str]]:
        binary = self.setup.bin_dir
        return {
            "containerd": configs.containerd_command(self.paths),
            "kubelet": configs.kubelet_command(
                binary / "kubelet",
                self.paths,
                self.node,
                kubeconfig=self.setup.kubeconfig(f"kubelet-{self.node.name}"),
            ),
            "kube-proxy": configs.kube_proxy_command(binary / "kube-proxy", self.paths),
        }

    def running(self) -> bool:
        return all(self.process(c).running() for c in self.components)

    # ---------------------------------------------------------------------------- start
    def start(self, others: Sequence[NodeNetwork] = ()) -> None:
        """Start what is not running (restarting a component whose command changed)."""
        network.ensure_node(self.node, others)
        changed = self._write_configs()
        commands = self.commands()
        if not self.process("containerd").running():
            self._clear_leftovers()
        cleanup.ensure_cgroups(configs.cgroup_root(self.node))
        netns = Path("/var/run/netns") / self.node.netns
        for component in self.components:
            proc = self.process(component)
            if proc.running() and component in changed:
                self.print(
                    f"[appstack]   {component} on {self.name}: new configuration; restarting"
                )
                proc.stop()
            if proc.running() and proc.args() != commands[component]:
                self.print(
                    f"[appstack]   {component} on {self.name}: its flags changed; restarting"
                )
                proc.stop()
            if not proc.running():
                started = time.monotonic()
                proc.start(commands[component], netns=netns)
                self._wait_started(component)
                self.print(
                    f"[appstack]   {component} on {self.name} started "
                    f"({time.monotonic() - started:.1f}s)"
                )

    def _write_configs(self) -> set[str]:
        """Write what changed; the components whose configuration file changed."""
        paths, node = self.paths, self.node
        for directory in (
            paths.directory,
            paths.run,
            paths.cni_conf_dir,
            paths.cni_ipam_dir,
            paths.kubelet_root,
            paths.pod_logs,
        ):
            directory.mkdir(parents=True, exist_ok=True)
        files = {
            paths.containerd_config: configs.containerd_config(paths, node),
            paths.cni_conf_dir / "10-appstack.conflist": configs.cni_config(paths, node),
            paths.kubelet_config: configs.kubelet_config(
                paths,
                node,
                ca_file=self.setup.ca_file,
                kubernetes_version=self.setup.kubernetes_version,
            ),
            paths.kube_proxy_config: configs.kube_proxy_config(
                node, kubeconfig=self.setup.kubeconfig("kube-proxy")
            ),
            # No nameserver: pods with dnsPolicy Default resolve nothing (nothing leaves).
            paths.resolv_conf: "# appstack test bed: no upstream resolver\n",
        }
        for name, text in configs.registry_hosts(self.setup.gateway).items():
            files[paths.registry_hosts / name] = text
        owners = {
            paths.containerd_config: "containerd",
            paths.kubelet_config: "kubelet",
            paths.kube_proxy_config: "kube-proxy",
        }
        changed: set[str] = set()
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text() != text:
                if path.exists() and path in owners:
                    changed.add(owners[path])
                path.write_text(text)
        return changed

    def _wait_started(self, component: str, timeout: float = 60.0) -> None:
        proc = self.process(component)
        deadline = time.monotonic() + timeout
        while not self._answers(component):
            if not proc.running():
                raise ComponentError(
                    f"{component} on {self.name}", "exited during start-up", proc.log_tail()
                )
            if time.monotonic() > deadline:
                raise ComponentError(
                    f"{component} on {self.name}", f"not up after {timeout:.0f}s", proc.log_tail()
                )
            time.sleep(0.2)

    def _answers(self, component: str) -> bool:
        if component == "containerd":
            return (
                subprocess.run(
                    ["ctr", f"--address={self.paths.containerd_socket}", "version"],
                    capture_output=True,
                    check=False,
                ).returncode
                == 0
            )
        # The kubelet and kube-proxy serve /healthz on 127.0.0.1 of the node's namespace
        # (whether the node is Ready is asked of the API server, by the cluster).
        port = {"kubelet": 10248, "kube-proxy": 10256}[component]
        probe = (
            "import urllib.request\n"
            f"urllib.request.urlopen('http://127.0.0.1:{port}/healthz', timeout=2)\n"
        )
        return (
            subprocess.run(
                ["ip", "netns", "exec", self.node.netns, sys.executable, "-c", probe],
                capture_output=True,
                check=False,
            ).returncode
            == 0
        )

    # ----------------------------------------------------------------------------- stop
    def stop(self) -> None:
        """Stop the kubelet and kube-proxy, then every container and containerd; clean up."""
        for component in reversed(self.components):
            if component != "containerd":
                self.process(component).stop()
        self._clear_leftovers(stop_containerd=True)
        network.remove_node(self.node)

    def _clear_leftovers(self, *, stop_containerd: bool = False) -> None:
        cleanup.kill_containers(configs.cgroup_root(self.node), self.paths.containerd_socket)
        if stop_containerd:
            self.process("containerd").stop()
        cleanup.unmount_under(self.paths.run)
        cleanup.unmount_under(self.paths.directory)
        cleanup.remove_cgroups(configs.cgroup_root(self.node))
        if stop_containerd:
            shutil.rmtree(self.paths.run, ignore_errors=True)
