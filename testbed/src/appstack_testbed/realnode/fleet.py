"""A local cluster's real nodes and the services they need, started and stopped together.

:meth:`RealNodes.up` (after the control plane is up): installs what the host lacks
(containerd, runc, CNI plugins, iptables — Debian packages), builds the kubelet and
kube-proxy from the cluster's Kubernetes modules and CoreDNS and the registry (cached),
starts the machine's registry and pushes the standard images (:mod:`appstack_testbed.images`),
makes the cluster's bridge, starts the forwarder, CoreDNS and the volume watcher
(:mod:`.volumes`), applies kube-dns and the endpoints, then starts each node
(:class:`~.node.RealNode`) and waits until the API server reports it Ready.
:meth:`RealNodes.down` undoes all of it. Used by :class:`appstack_testbed.cluster.LocalCluster`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import yaml

from appstack_testbed import control_plane
from appstack_testbed.build import GoBuilder, node_components
from appstack_testbed.images import build as images
from appstack_testbed.images.catalog import standard
from appstack_testbed.pki import ClusterPKI, write_kubeconfig
from appstack_testbed.process import ComponentError, ManagedProcess
from appstack_testbed.realnode import network, services
from appstack_testbed.realnode.addressing import ClusterNetwork
from appstack_testbed.realnode.node import NodeSetup, RealNode
from appstack_testbed.registry import LocalRegistry
from appstack_testbed.rootfs import NODE_TOOLS, ensure_tools
from appstack_testbed.versions import SharedTools, Toolchain

Printer = Callable[[str], None]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
READY_TIMEOUT = 120.0
# The cluster's processes for its real nodes, beside the nodes' own.
SERVICES = ("forward", "coredns", "volumes")


def prepare(toolchain: Toolchain, registry: LocalRegistry, printer: Printer) -> None:
    """What a real node needs before it starts, built or installed once (cached): the
    host's packages, the node's components, the machine's registry (started) and the
    standard images in it. Minutes on a cold machine; seconds after."""
    ensure_tools(printer, NODE_TOOLS)
    GoBuilder(toolchain, printer).ensure_components(node_components(toolchain))
    registry.ensure()
    images.ensure(standard(), registry, printer)


class RealNodes:
    """The real nodes of one cluster (``count`` of them, on network ``index``)."""

    def __init__(
        self,
        layout: control_plane.Layout,
        toolchain: Toolchain,
        *,
        count: int,
        index: int,
        ready_port: int,
        kubectl: Kubectl,
        printer: Printer,
    ) -> None:
        self.layout = layout
        self.toolchain = toolchain
        self.count = count
        self.net = ClusterNetwork(index)
        self.ready_port = ready_port
        self.kubectl = kubectl
        self.print = printer
        self.registry = LocalRegistry(printer)

    # ------------------------------------------------------------------------- pieces
    def nodes(self, count: int | None = None) -> list[RealNode]:
        return [
            RealNode(self._setup(), self.net.node(i), self.print)
            for i in range(self.count if count is None else count)
        ]

    def _setup(self) -> NodeSetup:
        pki = self.layout.path("pki")
        return NodeSetup(
            cluster_dir=self.layout.directory,
            bin_dir=self.toolchain.bin_dir,
            kubernetes_version=self.toolchain.kubernetes,
            ca_file=pki / "ca.crt",
            gateway=self.net.gateway,
        )

    def process(self, name: str) -> ManagedProcess:
        return ManagedProcess(name, self.layout.directory)

    @property
    def api_port(self) -> int:
        return self.layout.ports["kube-apiserver"]

    # ---------------------------------------------------------------------------- up
    def up(self) -> None:
        started = time.monotonic()
        prepare(self.toolchain, self.registry, self.print)
        self._identities()
        network.ensure_bridge(self.net)
        self._ensure(
            "forward",
            services.forward_command(
                self.net, api_port=self.api_port, registry=self.registry.address
            ),
        )
        self._ensure(
            "volumes",
            [
                sys.executable,
                "-m",
                "appstack_testbed.realnode.volumes",
                str(self.layout.kubeconfig("admin")),
            ],
        )
        self._start_dns()
        self._apply(services.objects(self.net, api_port=self.api_port))
        nodes = self.nodes()
        for node in nodes:
            node.start([n.node for n in nodes])
        for extra in self._extra_nodes():
            extra.stop()
        self._wait_ready([n.name for n in nodes])
        self.print(
            f"[appstack] {len(nodes)} real node(s) Ready "
            f"({time.monotonic() - started:.1f}s): {', '.join(n.name for n in nodes)}"
        )

    def _identities(self) -> None:
        """Kubeconfigs that reach the API server through the gateway (node side)."""
        pki = ClusterPKI(self.layout.path("pki"))
        kubelets: dict[str, tuple[str, str | None]] = dict(
            control_plane.kubelet_identity(self.net.node(i).name) for i in range(self.count)
        )
        pki.ensure(kubelets, control_plane.SERVICE_IP)
        for identity in [*kubelets, "kube-proxy"]:
            path = self._setup().kubeconfig(identity)
            if not path.exists():
                write_kubeconfig(
                    path,
                    server=f"https://{self.net.gateway}:{self.api_port}",
                    ca=pki.ca.cert,
                    client=pki.client(identity),
                    cluster=self.layout.directory.name,
                    user=identity,
                    tls_server_name="localhost",
                )

    def _ensure(self, name: str, command: list[str]) -> None:
        proc = self.process(name)
        if proc.running() and proc.args() != command:
            proc.stop()
        if not proc.running():
            proc.start(command)

    def _start_dns(self) -> None:
        corefile = self.layout.path("config", "Corefile")
        text = services.corefile(
            self.net, kubeconfig=self.layout.kubeconfig("coredns"), ready_port=self.ready_port
        )
        if not corefile.exists() or corefile.read_text() != text:
            corefile.write_text(text)
            self.process("coredns").stop()  # CoreDNS's reload plugin is not on: restart
        binary = SharedTools().binary("coredns")
        self._ensure("coredns", services.coredns_command(binary, corefile))

    def _dns_ready(self) -> bool:
        try:
            url = f"http://127.0.0.1:{self.ready_port}/ready"
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def _apply(self, objects: list[dict[str, Any]]) -> None:
        self.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=appstack-testbed",
            "-f",
            "-",
            stdin=yaml.safe_dump_all(objects),
        )

    def _extra_nodes(self) -> list[RealNode]:
        """Nodes of an earlier, bigger ``count`` that still run (scaled down)."""
        extra = []
        for path in sorted((self.layout.directory / "nodes").glob("real-node-*")):
            index = int(path.name.rsplit("-", 1)[1])
            if index >= self.count:
                extra.append(RealNode(self._setup(), self.net.node(index), self.print))
        return extra

    def _wait_ready(self, names: list[str]) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        pending = list(names)
        while pending:
            out = self.kubectl("get", "nodes", "-o", "json", check=False)
            items = json.loads(out.stdout).get("items", []) if out.returncode == 0 else []
            ready = {
                n["metadata"]["name"]
                for n in items
                if any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in n.get("status", {}).get("conditions", [])
                )
            }
            pending = [n for n in names if n not in ready]
            if pending and not self._dns_ready() and time.monotonic() > deadline - 60:
                raise ComponentError("coredns", "not ready", self.process("coredns").log_tail())
            if not pending:
                break
            if time.monotonic() > deadline:
                node = next(n for n in self.nodes() if n.name == pending[0])
                raise ComponentError(
                    f"kubelet on {node.name}",
                    f"node not Ready after {READY_TIMEOUT:.0f}s",
                    node.process("kubelet").log_tail(),
                )
            time.sleep(0.5)

    # -------------------------------------------------------------------------- down
    def down(self) -> None:
        """Stop every node (and what they run), CoreDNS and the forwarder; remove the bridge."""
        for node in [*self.nodes(), *self._extra_nodes()]:
            node.stop()
        for name in SERVICES:
            self.process(name).stop()
        network.remove_bridge(self.net)

    def components(self) -> list[tuple[str, ManagedProcess]]:
        out = [(name, self.process(name)) for name in SERVICES]
        for node in self.nodes():
            out += [(f"{c}/{node.name}", node.process(c)) for c in node.components]
        return out
