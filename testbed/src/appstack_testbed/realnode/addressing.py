"""Where a cluster's real nodes live on the network (pure; unit-tested).

Each local cluster with real nodes gets an index ``k`` (0..63, unique among the clusters on
this machine, kept in its ``state.json``):

* a bridge ``asbr<k>`` on the host with the cluster's **gateway** ``10.120.<k>.1/24``: the
  nodes' way to the host, where the forwarder (:mod:`appstack_testbed.forward`) serves the
  API server and the image registry and CoreDNS answers;
* node ``i`` lives in the network namespace ``appstack-<k>-<i>``, its ``eth0`` (a veth whose
  host end ``as<k>n<i>`` is on the bridge) has ``10.120.<k>.<10+i>``;
* its pods get ``10.<130+k>.<i>.0/24`` (CNI bridge ``cni0`` inside the node's namespace);
  the host and the other nodes route that block through the node's address.

The host keeps ``ip_forward`` off: a node's namespace can reach the host, the other nodes and
their pods, and nothing beyond the machine. Nothing here overlaps the kwok nodes' addresses
(``10.15.0.0/16``, pod blocks from ``10.16.0.0/16``), the process nodes' (``10.200-249``), or
the Service range (``10.96.0.0/16``, which exists only inside the nodes' kube-proxy rules).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

MAX_CLUSTERS = 64
MAX_NODES = 32
SERVICE_CIDR = "10.96.0.0/16"
DNS_SERVICE_IP = "10.96.0.10"  # kube-dns, as kubeadm and kind give it
CLUSTER_DOMAIN = "cluster.local"


@dataclass(frozen=True)
class ClusterNetwork:
    """The addresses of one cluster's real nodes (``index`` is the cluster's ``k``)."""

    index: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < MAX_CLUSTERS:
            raise ValueError(f"cluster network index {self.index} is not in 0..{MAX_CLUSTERS - 1}")

    @property
    def bridge(self) -> str:
        return f"asbr{self.index}"

    @property
    def link(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(f"10.120.{self.index}.0/24")

    @property
    def gateway(self) -> str:
        """The host's address on the bridge: API server, registry and DNS for the nodes."""
        return f"10.120.{self.index}.1"

    @property
    def pod_cidr(self) -> str:
        """Every pod block of the cluster (kube-proxy's ``clusterCIDR``)."""
        return f"10.{130 + self.index}.0.0/16"

    def node(self, node_index: int) -> NodeNetwork:
        if not 0 <= node_index < MAX_NODES:
            raise ValueError(f"real node index {node_index} is not in 0..{MAX_NODES - 1}")
        return NodeNetwork(self, node_index)


@dataclass(frozen=True)
class NodeNetwork:
    """One real node's namespace, link and pod block."""

    cluster: ClusterNetwork
    index: int

    @property
    def name(self) -> str:
        """The Node's name (and hostname)."""
        return f"real-node-{self.index}"

    @property
    def netns(self) -> str:
        return f"appstack-{self.cluster.index}-{self.index}"

    @property
    def host_veth(self) -> str:
        return f"as{self.cluster.index}n{self.index}"

    @property
    def address(self) -> str:
        return f"10.120.{self.cluster.index}.{10 + self.index}"

    @property
    def pod_cidr(self) -> str:
        return f"10.{130 + self.cluster.index}.{self.index}.0/24"

    @property
    def pod_gateway(self) -> str:
        """``cni0``'s address inside the node's namespace."""
        return str(next(ipaddress.IPv4Network(self.pod_cidr).hosts()))


def free_index(taken: set[int]) -> int:
    """The lowest cluster index not in ``taken``."""
    for index in range(MAX_CLUSTERS):
        if index not in taken:
            return index
    raise RuntimeError(f"all {MAX_CLUSTERS} real-node networks are taken by other clusters")
