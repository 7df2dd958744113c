"""The local control plane's components: how each is started and how we know it is healthy.

Pure functions of a :class:`Layout` (paths, ports, sizes) → command lines and health URLs,
so they can be unit-tested and read in one place. :mod:`appstack_testbed.cluster` starts
them in :data:`ORDER` and stops them in reverse.

Sizing: the controller-manager and scheduler get client QPS/burst of 1000/2000 and more
concurrent syncs, the API server more in-flight requests, so that an operator benchmark
creating 1,000+ applications measures the operator, not the test bed.

Audit: the API server logs every *write* (create/update/patch/delete) at Metadata level,
with user and user agent, to ``logs/audit.log`` (rotated at 20 MB, one backup) — except
Events and the control plane's own components, so the log stays small and cheap. Read it
with :mod:`appstack_testbed.audit` (e.g. "no write from the old leader after takeover").
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from appstack_testbed import kwok

ORDER = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"  # first address of SERVICE_CIDR, the `kubernetes` Service
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
CLIENT_QPS = 1000
CLIENT_BURST = 2000
AUDIT_LOG = ("logs", "audit.log")
WRITE_VERBS = ["create", "update", "patch", "delete", "deletecollection"]

# Client identities: file stem -> (CN, O). The controller-manager and kwok act for many
# controllers/nodes at once and run as cluster admins; the scheduler has its default role.
CLIENTS: dict[str, tuple[str, str | None]] = {
    "admin": ("appstack-admin", "system:masters"),
    "kube-controller-manager": ("system:kube-controller-manager", "system:masters"),
    "kube-scheduler": ("system:kube-scheduler", None),
    "kwok": ("kwok-controller", "system:masters"),
    # Real nodes (appstack_testbed.realnode): the API server's identity towards kubelets
    # (logs, exec, port-forward), kube-proxy (bound to system:node-proxier by the default
    # RBAC) and CoreDNS (read-only RBAC of its own). Each kubelet has its own identity,
    # system:node:<name> in system:nodes, which the Node authorizer and NodeRestriction use.
    "kube-apiserver-kubelet-client": ("kube-apiserver-kubelet-client", "system:masters"),
    "kube-proxy": ("system:kube-proxy", None),
    "coredns": ("appstack:coredns", None),
}


def kubelet_identity(node: str) -> tuple[str, tuple[str, str]]:
    """The file stem and (CN, O) of a real node's kubelet."""
    return f"kubelet-{node}", (f"system:node:{node}", "system:nodes")


@dataclass(frozen=True)
class Layout:
    """Where one cluster's files are and which loopback ports it uses."""

    directory: Path
    bin_dir: Path
    ports: dict[str, int]
    nodes: int = 2
    pods_per_node: int = 5000
    extra_args: dict[str, list[str]] = field(default_factory=dict)

    def path(self, *parts: str) -> Path:
        return self.directory.joinpath(*parts)

    def binary(self, name: str) -> str:
        return str(self.bin_dir / name)

    def kubeconfig(self, identity: str) -> Path:
        if identity == "admin":
            return self.path("kubeconfig")
        return self.path("config", f"{identity}.kubeconfig")

    @property
    def api_url(self) -> str:
        return f"https://127.0.0.1:{self.ports['kube-apiserver']}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['etcd']}"


PORT_NAMES = (
    "etcd",
    "etcd-peer",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
)


def command(layout: Layout, name: str) -> list[str]:
    """The full command line of component ``name``."""
    builders = {
        "etcd": _etcd,
        "kube-apiserver": _apiserver,
        "kube-controller-manager": _controller_manager,
        "kube-scheduler": _scheduler,
        "kwok": _kwok,
    }
    return [*builders[name](layout), *layout.extra_args.get(name, [])]


def health_url(layout: Layout, name: str) -> str:
    port = layout.ports[name]
    return {
        "etcd": f"http://127.0.0.1:{port}/health",
        "kube-apiserver": f"https://127.0.0.1:{port}/readyz",
        "kube-controller-manager": f"https://127.0.0.1:{port}/healthz",
        "kube-scheduler": f"https://127.0.0.1:{port}/healthz",
        "kwok": f"http://127.0.0.1:{port}/healthz",
    }[name]


def config_files(layout: Layout) -> dict[Path, str]:
    """Files the components read besides certificates and kubeconfigs."""
    scheduler = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {
            "kubeconfig": str(layout.kubeconfig("kube-scheduler")),
            "qps": CLIENT_QPS,
            "burst": CLIENT_BURST,
        },
        "leaderElection": {"leaderElect": False},
    }
    return {
        layout.path("config", "kube-scheduler.yaml"): yaml.safe_dump(scheduler),
        layout.path("config", "audit-policy.yaml"): yaml.safe_dump(audit_policy()),
        kwok_config_path(layout): kwok.kwok_config(),
    }


def kwok_config_path(layout: Layout) -> Path:
    """kwok's ``--config`` file, named after its content: a changed configuration changes
    kwok's command line, so ``LocalCluster.up()`` restarts a kwok started with another."""
    digest = hashlib.sha256(kwok.kwok_config().encode()).hexdigest()[:12]
    return layout.path("config", f"kwok-{digest}.yaml")


def audit_policy() -> dict[str, object]:
    """Writes only, at Metadata level; not Events, not the control plane's own clients."""
    control_plane = [CLIENTS[name][0] for name in ("kube-controller-manager", "kube-scheduler")]
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived"],
        "rules": [
            {"level": "None", "users": [*control_plane, CLIENTS["kwok"][0], "system:apiserver"]},
            {
                "level": "None",
                "resources": [
                    {"group": "", "resources": ["events"]},
                    {"group": "events.k8s.io", "resources": ["events"]},
                ],
            },
            {"level": "Metadata", "verbs": WRITE_VERBS},
            {"level": "None"},
        ],
    }


def _etcd(layout: Layout) -> list[str]:
    peer = f"http://127.0.0.1:{layout.ports['etcd-peer']}"
    return [
        layout.binary("etcd"),
        "--name=appstack",
        f"--data-dir={layout.path('etcd')}",
        f"--listen-client-urls={layout.etcd_url}",
        f"--advertise-client-urls={layout.etcd_url}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=appstack={peer}",
        # A test bed: durability across power loss is not needed, speed is.
        "--unsafe-no-fsync",
        "--quota-backend-bytes=8589934592",
        "--log-level=warn",
    ]


def _apiserver(layout: Layout) -> list[str]:
    pki = layout.path("pki")
    return [
        layout.binary("kube-apiserver"),
        f"--etcd-servers={layout.etcd_url}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={layout.ports['kube-apiserver']}",
        f"--cert-dir={pki}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        "--authorization-mode=Node,RBAC",
        # As on OpenShift: setting an ownerReference needs `delete` on the child, and
        # blockOwnerDeletion needs `update` on the owner's finalizers — the e2e operator
        # runs under the generated RBAC, so a missing grant fails the suite.
        # NodeRestriction: a real node's kubelet changes only its own Node and pods.
        # PodNodeSelector/PodTolerationRestriction: a namespace's annotations place its pods
        # (the e2e tests keep theirs on the kwok nodes unless they ask for a real node).
        "--enable-admission-plugins=OwnerReferencesPermissionEnforcement,NodeRestriction,"
        "PodNodeSelector,PodTolerationRestriction",
        f"--kubelet-client-certificate={pki / 'kube-apiserver-kubelet-client.crt'}",
        f"--kubelet-client-key={pki / 'kube-apiserver-kubelet-client.key'}",
        "--kubelet-preferred-address-types=InternalIP,Hostname",
        f"--service-account-issuer={SA_ISSUER}",
        f"--api-audiences={SA_ISSUER}",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        # The `kubernetes` Service would point at 127.0.0.1, which Endpoints may not hold.
        "--endpoint-reconciler-type=none",
        # No kube-proxy on the host, where this API server runs: it calls webhooks (admission
        # and CRD conversion) and aggregated APIs at a ready endpoint of their Service — a
        # pod address, which the host routes — rather than at the ClusterIP, which only the
        # nodes' rules translate. What a kube-proxy'd control plane reaches, reached.
        "--enable-aggregator-routing=true",
        "--allow-privileged=true",
        "--max-requests-inflight=1000",
        "--max-mutating-requests-inflight=500",
        "--profiling=false",
        # Close watches promptly on SIGTERM (otherwise shutdown waits for them to drain).
        "--shutdown-watch-termination-grace-period=1s",
        f"--audit-policy-file={layout.path('config', 'audit-policy.yaml')}",
        f"--audit-log-path={layout.path(*AUDIT_LOG)}",
        "--audit-log-format=json",
        "--audit-log-maxsize=20",
        "--audit-log-maxbackup=1",
    ]


def _controller_manager(layout: Layout) -> list[str]:
    pki = layout.path("pki")
    kubeconfig = layout.kubeconfig("kube-controller-manager")
    return [
        layout.binary("kube-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={layout.ports['kube-controller-manager']}",
        "--leader-elect=false",
        "--controllers=*",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        f"--kube-api-qps={CLIENT_QPS}",
        f"--kube-api-burst={CLIENT_BURST}",
        "--concurrent-deployment-syncs=20",
        "--concurrent-replicaset-syncs=20",
        "--concurrent-statefulset-syncs=20",
        "--concurrent-gc-syncs=40",
        "--concurrent-service-endpoint-syncs=20",
        "--concurrent-job-syncs=10",
        "--concurrent-cron-job-syncs=10",
        # Dynamic provisioning of hostPath volumes (kubernetes.io/host-path), so every
        # PersistentVolumeClaim of the default StorageClass binds, however many there are.
        "--enable-hostpath-provisioner=true",
    ]


def _scheduler(layout: Layout) -> list[str]:
    kubeconfig = layout.kubeconfig("kube-scheduler")
    return [
        layout.binary("kube-scheduler"),
        f"--config={layout.path('config', 'kube-scheduler.yaml')}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={layout.ports['kube-scheduler']}",
    ]


def _kwok(layout: Layout) -> list[str]:
    return [
        layout.binary("kwok"),
        f"--kubeconfig={layout.kubeconfig('kwok')}",
        f"--config={kwok_config_path(layout)}",
        f"--server-address=127.0.0.1:{layout.ports['kwok']}",
        "--node-ip=10.15.0.254",
        "--cidr=10.15.128.0/17",
    ]


# Ports handed out by free_ports, across processes (parallel test workers start clusters,
# Prometheus servers and registries at the same time): a port is claimed for CLAIM_SECONDS,
# long enough for whoever asked to bind it, and never handed out while a cluster's state
# records it (a stopped component keeps its port for its restart).
PORT_CLAIMS = "ports.json"
CLAIM_SECONDS = 600


def free_ports(names: tuple[str, ...]) -> dict[str, int]:
    """Distinct free loopback ports below the ephemeral range, so a restart can reuse them;
    never one another process was just given, nor one a cluster or registry records."""
    from appstack_testbed.build import _file_lock  # noqa: PLC0415 - build imports this module
    from appstack_testbed.versions import cache_root  # noqa: PLC0415

    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    claims_file = root / PORT_CLAIMS
    with _file_lock(root / ".ports.lock"):
        now = time.time()
        try:
            claims = {int(p): t for p, t in json.loads(claims_file.read_text()).items()}
        except (OSError, ValueError):
            claims = {}
        claims = {p: t for p, t in claims.items() if now - t < CLAIM_SECONDS}
        taken = set(claims) | recorded_ports(root)
        ports: dict[str, int] = {}
        rng = random.Random(os.getpid() ^ time.time_ns())  # noqa: S311 - not security relevant
        while len(ports) < len(names):
            port = rng.randrange(20000, 29999)
            if port in ports.values() or port in taken:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            ports[names[len(ports)]] = port
        claims.update(dict.fromkeys(ports.values(), now))
        claims_file.write_text(json.dumps({str(p): t for p, t in sorted(claims.items())}))
    return ports


def recorded_ports(root: Path) -> set[int]:
    """The ports the cache's clusters (``clusters/*/state.json``) and registry record."""
    found: set[int] = set()
    for state in [*root.glob("clusters/*/state.json"), root / "registry" / "state.json"]:
        try:
            recorded = json.loads(state.read_text())
        except (OSError, ValueError):
            continue
        for key in ("ports", "real_ports"):
            found.update(int(p) for p in (recorded.get(key) or {}).values())
        if isinstance(recorded.get("port"), int):
            found.add(recorded["port"])
    return found
