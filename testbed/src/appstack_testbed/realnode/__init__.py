"""Real nodes: a real kubelet with containerd and runc, kube-proxy and CNI, in a network
namespace of their own, beside the control plane and the kwok nodes.

* :mod:`.addressing` — which addresses a cluster's real nodes, pods and gateway use (pure);
* :mod:`.network` — the namespaces, bridge, veths and routes (``ip``), and their removal;
* :mod:`.configs` — containerd, registry hosts, CNI, kubelet and kube-proxy configuration (pure);
* :mod:`.hosttools` — the Debian packages a node needs on the host (containerd, runc, CNI
  plugins, iptables), installed with apt-get when missing;
* :mod:`.node` — one node's processes: start, wait until Ready, stop, clean up;
* :mod:`.cleanup` — what a stopped node leaves behind (containers, mounts, cgroups).

Used by :class:`appstack_testbed.cluster.LocalCluster` (``real_nodes``); see docs/design.md,
"Real nodes".
"""
