"""Create and remove a cluster's real-node network with ``ip`` (root; idempotent).

:func:`ensure_bridge` makes the cluster's bridge and gateway on the host,
:func:`ensure_node` a node's namespace with its veth, address, routes and sysctls, and
:func:`remove_node` / :func:`remove_bridge` take them away again. Routes to every node's pod
block are kept on the host and in every node's namespace, so pods reach pods on other nodes
and the host reaches every pod (the e2e tests and an operator running on the host do).
Addresses come from :mod:`.addressing`. Used by :mod:`.node`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from appstack_testbed.realnode.addressing import ClusterNetwork, NodeNetwork


class NetworkError(RuntimeError):
    """An ``ip`` command failed; the message has the command and its output."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


def _exists(*args: str) -> bool:
    return _ip(*args, check=False).returncode == 0


def link_exists(name: str) -> bool:
    return _exists("link", "show", "dev", name)


def netns_exists(name: str) -> bool:
    return name in namespaces()


def namespaces() -> list[str]:
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def ensure_bridge(net: ClusterNetwork) -> None:
    """The cluster's bridge with the gateway address, up."""
    if not link_exists(net.bridge):
        _ip("link", "add", net.bridge, "type", "bridge")
    address = f"{net.gateway}/{net.link.prefixlen}"
    if address not in _ip("-4", "addr", "show", "dev", net.bridge).stdout:
        _ip("addr", "add", address, "dev", net.bridge)
    _ip("link", "set", net.bridge, "up")


def ensure_node(node: NodeNetwork, others: Sequence[NodeNetwork] = ()) -> None:
    """The node's namespace, its ``eth0`` on the bridge, its routes and sysctls."""
    net = node.cluster
    if not netns_exists(node.netns):
        _ip("netns", "add", node.netns)
    if not link_exists(node.host_veth):
        _ip(
            "link",
            "add",
            node.host_veth,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            node.netns,
        )
    _ip("link", "set", node.host_veth, "master", net.bridge, "up")
    inside = ("-n", node.netns)
    address = f"{node.address}/{net.link.prefixlen}"
    if address not in _ip(*inside, "-4", "addr", "show", "dev", "eth0").stdout:
        _ip(*inside, "addr", "add", address, "dev", "eth0")
    _ip(*inside, "link", "set", "lo", "up")
    _ip(*inside, "link", "set", "eth0", "up")
    _ip(*inside, "route", "replace", "default", "via", net.gateway)
    for key, value in NODE_SYSCTLS.items():
        _sysctl(node.netns, key, value)
    _ip("route", "replace", node.pod_cidr, "via", node.address, "dev", net.bridge)
    for other in others:
        if other.index == node.index:
            continue
        _ip(*inside, "route", "replace", other.pod_cidr, "via", other.address)
        if netns_exists(other.netns):
            _ip("-n", other.netns, "route", "replace", node.pod_cidr, "via", node.address)


# Inside the node's namespace only: it routes between its pods and eth0 (the host's own
# ip_forward stays off), and bridged pod traffic passes kube-proxy's iptables rules (a pod
# reaching a Service whose endpoint is on the same bridge).
NODE_SYSCTLS = {
    "net/ipv4/ip_forward": "1",
    "net/bridge/bridge-nf-call-iptables": "1",
    "net/ipv4/conf/all/route_localnet": "1",
}


def _sysctl(netns: str, key: str, value: str) -> None:
    command = f"echo {value} > /proc/sys/{key}"
    proc = subprocess.run(
        ["ip", "netns", "exec", netns, "sh", "-c", command],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise NetworkError(f"sysctl {key}={value} in {netns}: {proc.stderr.strip()}")


def remove_node(node: NodeNetwork) -> None:
    """The node's namespace (its veth goes with it) and the host's route to its pods."""
    _ip("route", "del", node.pod_cidr, check=False)
    if netns_exists(node.netns):
        _ip("netns", "del", node.netns, check=False)
    if link_exists(node.host_veth):
        _ip("link", "del", node.host_veth, check=False)


def remove_bridge(net: ClusterNetwork) -> None:
    if link_exists(net.bridge):
        _ip("link", "del", net.bridge, check=False)


def bridges_in_use() -> set[int]:
    """Cluster indexes whose bridge exists on this machine (``asbr<k>``)."""
    out = _ip("-o", "link", "show", "type", "bridge", check=False).stdout
    taken: set[int] = set()
    for line in out.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith("asbr") and name[4:].isdigit():
            taken.add(int(name[4:]))
    return taken
