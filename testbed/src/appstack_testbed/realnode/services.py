"""The cluster services real nodes need, run on the host beside the control plane (pure).

* the **forwarder** (:mod:`appstack_testbed.forward`): the API server and the registry,
  which listen on 127.0.0.1, reachable from the nodes at the cluster's gateway;
* **CoreDNS** (built from Go modules), on the gateway's port 53, serving the cluster domain
  from the API server (Services, headless Services' pods, reverse lookups) and answering
  NXDOMAIN for every other name: there is no upstream, nothing leaves the machine;
* the API objects that make them the cluster's own: the ``kube-dns`` Service at
  ``10.96.0.10`` (the kubelet's ``clusterDNS``) and the ``kubernetes`` Service's endpoint
  (the forwarder: the API server's own endpoint reconciler is off, since 127.0.0.1 may not
  be an endpoint), as EndpointSlices the test bed manages; CoreDNS's read-only RBAC.

Pure functions of the cluster's addresses and ports; :mod:`appstack_testbed.cluster` starts
the processes and applies the objects.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from appstack_testbed.realnode.addressing import (
    CLUSTER_DOMAIN,
    DNS_SERVICE_IP,
    ClusterNetwork,
)
from appstack_testbed.realnode.configs import REGISTRY_PORT_ON_GATEWAY

MANAGED_BY = {"endpointslice.kubernetes.io/managed-by": "appstack-testbed"}
COREDNS_USER = "appstack:coredns"


def forward_command(net: ClusterNetwork, *, api_port: int, registry: str) -> list[str]:
    gateway = net.gateway
    return [
        sys.executable,
        "-m",
        "appstack_testbed.forward",
        f"{gateway}:{api_port}=127.0.0.1:{api_port}",
        f"{gateway}:{REGISTRY_PORT_ON_GATEWAY}={registry}",
    ]


def corefile(net: ClusterNetwork, *, kubeconfig: Path, ready_port: int) -> str:
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {net.gateway}
    errors
    ready 127.0.0.1:{ready_port}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
    cache 5
    loadbalance
}}
.:53 {{
    bind {net.gateway}
    errors
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""


def coredns_command(binary: Path, corefile_path: Path) -> list[str]:
    return [str(binary), "-conf", str(corefile_path)]


def objects(net: ClusterNetwork, *, api_port: int) -> list[dict[str, Any]]:
    """kube-dns, the endpoints of kube-dns and kubernetes, and CoreDNS's RBAC."""
    dns_ports = [
        {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
    ]
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kube-dns",
                "namespace": "kube-system",
                "labels": {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"},
            },
            "spec": {
                "clusterIP": DNS_SERVICE_IP,
                "ports": [{**p, "targetPort": 53} for p in dns_ports],
            },
        },
        _slice("kube-system", "kube-dns", net.gateway, dns_ports),
        _slice(
            "default",
            "kubernetes",
            net.gateway,
            [{"name": "https", "port": api_port, "protocol": "TCP"}],
        ),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": COREDNS_USER},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["endpoints", "services", "pods", "namespaces"],
                    "verbs": ["list", "watch"],
                },
                {
                    "apiGroups": ["discovery.k8s.io"],
                    "resources": ["endpointslices"],
                    "verbs": ["list", "watch"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": COREDNS_USER},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": COREDNS_USER,
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": COREDNS_USER}
            ],
        },
    ]


def _slice(
    namespace: str, service: str, address: str, ports: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service}-testbed",
            "namespace": namespace,
            "labels": {"kubernetes.io/service-name": service, **MANAGED_BY},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": ports,
    }
