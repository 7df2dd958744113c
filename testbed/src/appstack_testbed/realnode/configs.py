"""The configuration files of one real node, as text (pure; unit-tested).

* containerd (CRI, runc, overlayfs, CNI, registry hosts), its state and socket under
  ``/run/appstack/<k>-<i>`` (short paths: unix sockets are limited to 107 bytes), its
  content and snapshots under the node's directory;
* the registry hosts (``certs.d``): **every** registry name resolves to the local registry
  through the cluster's gateway (``_default``, plus the names the examples and tests use,
  each with ``server`` set so that containerd never falls back to the internet);
* the CNI network (bridge ``cni0`` + host-local IPAM with the node's pod block, portmap);
* the kubelet (cgroupfs under a cgroup root of its own, so that several clusters' kubelets
  on one machine never clean up each other's pods; webhook authentication and authorization;
  cluster DNS; no upstream resolver: pods resolve the cluster domain only);
* kube-proxy (iptables mode, no conntrack sysctls: they are read-only in a network namespace).

Used by :mod:`.node`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from appstack_testbed.realnode.addressing import CLUSTER_DOMAIN, DNS_SERVICE_IP, NodeNetwork

CNI_BIN_DIR = "/usr/lib/cni"  # Debian's containernetworking-plugins
RUNC = "/usr/sbin/runc"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
REGISTRY_PORT_ON_GATEWAY = 5000
# Registry names given their own hosts.toml as well as `_default`: what the README, the
# examples and the tests name (and the usual public registries), so that a containerd that
# does not read `_default` still never leaves the machine for them.
KNOWN_REGISTRIES = (
    "docker.io",
    "registry-1.docker.io",
    "registry.k8s.io",
    "k8s.gcr.io",
    "gcr.io",
    "quay.io",
    "ghcr.io",
    "registry.example.com",
    "registry.gitlab.com",
    "public.ecr.aws",
    "mcr.microsoft.com",
)
# Kubelet fields that the oldest supported kubelet (1.30) does not know.
NEWER_KUBELET_FIELDS = {"failCgroupV1": (1, 31)}


@dataclass(frozen=True)
class NodePaths:
    """Where one real node keeps its files."""

    directory: Path  # <cluster dir>/nodes/<node name>
    run: Path  # /run/appstack/<k>-<i>

    @property
    def containerd_config(self) -> Path:
        return self.directory / "containerd.toml"

    @property
    def containerd_root(self) -> Path:
        return self.directory / "containerd"

    @property
    def containerd_state(self) -> Path:
        return self.run / "containerd"

    @property
    def containerd_socket(self) -> Path:
        return self.run / "containerd.sock"

    @property
    def registry_hosts(self) -> Path:
        return self.directory / "certs.d"

    @property
    def cni_conf_dir(self) -> Path:
        return self.directory / "net.d"

    @property
    def cni_ipam_dir(self) -> Path:
        return self.directory / "ipam"

    @property
    def kubelet_root(self) -> Path:
        return self.directory / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.directory / "kubelet.yaml"

    @property
    def kube_proxy_config(self) -> Path:
        return self.directory / "kube-proxy.yaml"

    @property
    def resolv_conf(self) -> Path:
        return self.directory / "resolv.conf"

    @property
    def pod_logs(self) -> Path:
        return self.directory / "pod-logs"


def cgroup_root(node: NodeNetwork) -> str:
    """The node's own cgroup parent, below which the kubelet creates ``kubepods``."""
    return f"/appstack/{node.netns}"


def containerd_config(paths: NodePaths, node: NodeNetwork) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    lines = [
        "version = 2",
        f'root = "{paths.containerd_root}"',
        f'state = "{paths.containerd_state}"',
        # Plugins a node here never uses (and the opt plugin would write to /opt).
        'disabled_plugins = ["io.containerd.internal.v1.opt", '
        '"io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", '
        '"io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", '
        '"io.containerd.tracing.processor.v1.otlp"]',
        "",
        "[grpc]",
        f'  address = "{paths.containerd_socket}"',
        "",
        f"[{cri}]",
        f'  sandbox_image = "{PAUSE_IMAGE}"',
        '  stream_server_address = "127.0.0.1"',
        '  stream_server_port = "0"',
        # Pod network namespaces under the node's state, not the shared /var/run/netns.
        "  netns_mounts_under_state_dir = true",
        "  enable_unprivileged_ports = true",
        # Without CAP_SYS_RESOURCE (as here) no process may lower its OOM score: the
        # kubelet's -998 for pod sandboxes would make every runc create fail.
        "  restrict_oom_score_adj = true",
        "  enable_unprivileged_icmp = true",
        f"[{cri}.containerd]",
        '  snapshotter = "overlayfs"',
        '  default_runtime_name = "runc"',
        f"[{cri}.containerd.runtimes.runc]",
        '  runtime_type = "io.containerd.runc.v2"',
        f"[{cri}.containerd.runtimes.runc.options]",
        f'  BinaryName = "{RUNC}"',
        "  SystemdCgroup = false",
        f"[{cri}.cni]",
        f'  bin_dir = "{CNI_BIN_DIR}"',
        f'  conf_dir = "{paths.cni_conf_dir}"',
        f"[{cri}.registry]",
        f'  config_path = "{paths.registry_hosts}"',
        "",
    ]
    return "\n".join(lines)


def registry_hosts(gateway: str) -> dict[str, str]:
    """``<registry name>/hosts.toml`` -> content: every name served by the local registry."""
    mirror = f"http://{gateway}:{REGISTRY_PORT_ON_GATEWAY}"
    text = "\n".join(
        [
            f'server = "{mirror}"',
            "",
            f'[host."{mirror}"]',
            '  capabilities = ["pull", "resolve"]',
            "",
        ]
    )
    return {f"{name}/hosts.toml": text for name in ("_default", *KNOWN_REGISTRIES)}


def cni_config(paths: NodePaths, node: NodeNetwork) -> str:
    """The node's pod network: bridge ``cni0`` with its pod block, no masquerading (pod
    traffic never needs to leave the machine), hairpin for a pod reaching itself through a
    Service, and host ports (portmap)."""
    config = {
        "cniVersion": "1.0.0",
        "name": "appstack",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": node.pod_cidr, "gateway": node.pod_gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(paths.cni_ipam_dir),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    return json.dumps(config, indent=2) + "\n"


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.removeprefix("v").split(".")[:2]
    return int(major), int(minor)


def kubelet_config(
    paths: NodePaths, node: NodeNetwork, *, ca_file: Path, kubernetes_version: str
) -> str:
    config: dict[str, object] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.address,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca_file)},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{paths.containerd_socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root(node),
        "cgroupsPerQOS": True,
        "enforceNodeAllocatable": ["pods"],
        "failSwapOn": False,
        "failCgroupV1": False,
        "clusterDNS": [DNS_SERVICE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        # Pods with dnsPolicy Default get no upstream resolver: nothing resolves outside.
        "resolvConf": str(paths.resolv_conf),
        "podLogsDir": str(paths.pod_logs),
        "syncFrequency": "10s",
        "nodeStatusUpdateFrequency": "5s",
        "serializeImagePulls": False,
        "maxPods": 110,
        "evictionHard": {
            "memory.available": "50Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
        },
        "imageGCHighThresholdPercent": 99,
        "imageGCLowThresholdPercent": 98,
        "containerLogMaxSize": "10Mi",
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "protectKernelDefaults": False,
        "shutdownGracePeriod": "0s",
    }
    for field, since in NEWER_KUBELET_FIELDS.items():
        if _minor(kubernetes_version) < since:
            config.pop(field, None)
    return yaml.safe_dump(config, sort_keys=False)


def kube_proxy_config(node: NodeNetwork, *, kubeconfig: Path) -> str:
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": node.name,
        "bindAddress": "0.0.0.0",  # noqa: S104 - inside the node's network namespace
        "clusterCIDR": node.cluster.pod_cidr,
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        # kube-proxy would set conntrack sysctls, which are read-only in a network namespace.
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
        "iptables": {"syncPeriod": "30s", "minSyncPeriod": "0s"},
    }
    return yaml.safe_dump(config, sort_keys=False)


def kubelet_command(
    binary: Path, paths: NodePaths, node: NodeNetwork, *, kubeconfig: Path
) -> list[str]:
    return [
        str(binary),
        f"--config={paths.kubelet_config}",
        f"--kubeconfig={kubeconfig}",
        f"--root-dir={paths.kubelet_root}",
        f"--hostname-override={node.name}",
        f"--node-ip={node.address}",
        "--node-labels=type=real",
        "--v=1",
    ]


def kube_proxy_command(binary: Path, paths: NodePaths) -> list[str]:
    return [str(binary), f"--config={paths.kube_proxy_config}", "--v=1"]


def containerd_command(paths: NodePaths) -> list[str]:
    return ["/usr/bin/containerd", f"--config={paths.containerd_config}"]
