"""A whole Kubernetes cluster as local processes: etcd, API server, controller-manager,
scheduler, kwok (fake nodes whose pods become Running/Ready without containers) and, as
root, real nodes (a real kubelet, containerd and kube-proxy each: :mod:`appstack_testbed.realnode`).

``LocalCluster(name).up()`` builds the binaries if needed (cached), creates PKI and
configuration once, starts whatever is not running, waits until every component is
healthy, then creates the fake nodes and a default StorageClass, then the real nodes
(``real_nodes``; beside them the kwok nodes are tainted, so that ordinary pods run for
real and only pods that tolerate the taint are faked). It is idempotent and
the cluster keeps running after the calling process exits; ``down()`` stops it and
deletes its state. Files live in ``$APPSTACK_CACHE/clusters/<name>/``; the admin
kubeconfig is always ``<that dir>/kubeconfig``.

Used by the ``appstack cluster`` commands and the pytest plugin
(:mod:`appstack_testbed.pytest_plugin`); tests also stop/start single components
(e.g. restart the API server) through :meth:`LocalCluster.stop` / :meth:`LocalCluster.start`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import yaml

from appstack_testbed import control_plane, kwok
from appstack_testbed.build import GoBuilder, _file_lock, write_atomically
from appstack_testbed.pki import ClusterPKI, write_kubeconfig
from appstack_testbed.process import ComponentError, ComponentStatus, ManagedProcess
from appstack_testbed.realnode import cleanup
from appstack_testbed.realnode.addressing import free_index
from appstack_testbed.realnode.fleet import RealNodes
from appstack_testbed.realnode.network import bridges_in_use
from appstack_testbed.versions import Toolchain, cache_root

Printer = Callable[[str], None]

STORAGE_CLASS = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {
        "name": "standard",
        "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
    },
    "provisioner": "kubernetes.io/host-path",
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "Immediate",
}

#: How often a component that exits while it starts is started (a kubelet's restarts).
_START_ATTEMPTS = 3
_START_TIMEOUT = {
    "etcd": 30.0,
    "kube-apiserver": 90.0,
    "kube-controller-manager": 60.0,
    "kube-scheduler": 60.0,
    "kwok": 30.0,
}


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class LocalCluster:
    """One named local cluster (see the module docstring)."""

    def __init__(
        self,
        name: str = "appstack",
        *,
        toolchain: Toolchain | None = None,
        nodes: int = 2,
        pods_per_node: int = 5000,
        real_nodes: int | None = None,
        extra_args: dict[str, list[str]] | None = None,
        printer: Printer = _stderr,
    ) -> None:
        """``real_nodes``: how many real nodes to run (root only); None keeps what the
        cluster has (0 for a new one)."""
        self.name = name
        self.real_nodes = real_nodes
        self.extra_args = extra_args or {}
        self.toolchain = toolchain or Toolchain()
        self.directory = cache_root() / "clusters" / name
        self.nodes = nodes
        self.pods_per_node = pods_per_node
        self.print = printer

    # ----------------------------------------------------------------- paths and layout
    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (stable path: ``$APPSTACK_CACHE/clusters/<name>/kubeconfig``)."""
        return self.directory / "kubeconfig"

    @property
    def _state_file(self) -> Path:
        return self.directory / "state.json"

    def _write_state(self, state: dict[str, object]) -> None:
        """The state file replaced whole: :meth:`is_up` reads it without the cluster's lock
        (a parallel worker asks while another starts the cluster), and once read it empty."""
        write_atomically(self._state_file, json.dumps(state, indent=2).encode())

    def layout(self) -> control_plane.Layout:
        state = json.loads(self._state_file.read_text())
        return control_plane.Layout(
            directory=self.directory,
            bin_dir=self.toolchain.bin_dir,
            ports=state["ports"],
            nodes=state["nodes"],
            pods_per_node=state["pods_per_node"],
            extra_args=self.extra_args,
        )

    def process(self, component: str) -> ManagedProcess:
        return ManagedProcess(component, self.directory)

    def real(self) -> RealNodes | None:
        """The cluster's real nodes, or None if it has none."""
        if not self._state_file.exists():
            return None
        state = json.loads(self._state_file.read_text())
        if not state.get("real_nodes"):
            return None
        return RealNodes(
            self.layout(),
            self.toolchain,
            count=state["real_nodes"],
            index=state["network"],
            ready_port=state["real_ports"]["coredns-ready"],
            kubectl=self.kubectl,
            printer=self.print,
        )

    # ------------------------------------------------------------------------ lifecycle
    def build(self) -> None:
        GoBuilder(self.toolchain, self.print).ensure_all()

    def up(self) -> None:
        """Build if needed, start what is not running, wait until all is healthy. Several
        processes may ask at once (parallel test workers): one starts, the others wait for
        it and find everything running."""
        self.build()
        with self._lock():
            self._up()

    def _up(self) -> None:
        started = time.monotonic()
        self._prepare()
        layout = self.layout()
        for name in control_plane.ORDER:
            proc = self.process(name)
            if proc.running() and proc.args() != control_plane.command(layout, name):
                # Started by an older appstack (other flags, e.g. no audit log): restart it.
                self.print(f"[appstack]   {name}: its flags changed since it started; restarting")
                self.restart(name)
            elif not proc.running():
                self.start(name)
            elif not self._healthy(layout, name):
                self._wait_healthy(layout, name)
            if name == "kube-apiserver":
                self._bootstrap()
        real = self.real()
        if real is not None:
            real.up()
        # kwok's nodes (the real ones were waited for above)
        self.kubectl("wait", "--for=condition=Ready", "node", "-l", "type=kwok", "--timeout=60s")
        self.print(
            f"[appstack] cluster {self.name!r} is up ({time.monotonic() - started:.1f}s); "
            f"kubeconfig: {self.kubeconfig}"
        )

    def down(self) -> None:
        """Stop every component and delete the cluster's state (certificates, etcd data)."""
        with self._lock():
            self._down()

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        """The cluster's start/stop lock, across processes (beside, not in, its directory:
        ``down`` removes that)."""
        (cache_root() / "clusters").mkdir(parents=True, exist_ok=True)
        return _file_lock(cache_root() / "clusters" / f".{self.name}.lock")

    def _down(self) -> None:
        real = self.real()
        if real is not None:
            real.down()
        extra = sorted(
            p.stem
            for p in (self.directory / "pids").glob("*.pid")
            if p.stem not in control_plane.ORDER
        )
        for name in [*extra, *reversed(control_plane.ORDER)]:  # e.g. the demo's operator first
            self.process(name).stop()
        if self.directory.exists():
            # a node whose state is gone (an interrupted run, a previous down) may have left
            # its mounts: the tree cannot be removed while they stay
            cleanup.unmount_under(self.directory)
            shutil.rmtree(self.directory)
        if real is not None and not _clusters_with_real_nodes():
            real.registry.stop()  # the last cluster that used it (its images stay cached)

    def is_up(self) -> bool:
        return self._state_file.exists() and all(s.healthy for s in self.status())

    def status(self) -> list[ComponentStatus]:
        if not self._state_file.exists():
            return [ComponentStatus(n, None, False) for n in control_plane.ORDER]
        layout = self.layout()
        out = []
        for name in control_plane.ORDER:
            pid = self.process(name).pid()
            out.append(ComponentStatus(name, pid, pid is not None and self._healthy(layout, name)))
        real = self.real()
        for name, proc in real.components() if real is not None else []:
            pid = proc.pid()
            out.append(ComponentStatus(name, pid, pid is not None))
        return out

    def start(self, component: str) -> None:
        """Start one component (if not running) and wait until it is healthy.

        Starting the API server (or etcd) also restarts the running components that talk
        to it (controller-manager, scheduler, kwok): during an outage their client-go
        reflectors back off for up to 30 s, which would make the tests that follow slow
        and flaky. (Pods left Pending for good after an etcd restart on Kubernetes 1.30,
        first blamed on silent watches, were kwok's catch-up of a node's pods, which asked
        1.30 for a WatchList stream it refuses: see :mod:`appstack_testbed.kwok`.)
        """
        layout = self.layout()
        proc = self.process(component)
        if proc.running():
            self._wait_healthy(layout, component)
            return
        if component == "kwok" and self.process("kube-apiserver").running():
            self._release_node_leases(layout)
        # a component that exits while it starts is started again, as a kubelet restarts a
        # static pod (kube-apiserver 1.30 under load may fail a post-start hook, its
        # Service IP repair's first check, and exit: it comes up on the next start)
        for attempt in range(1, _START_ATTEMPTS + 1):
            proc.start(control_plane.command(layout, component))
            try:
                self._wait_healthy(layout, component)
                break
            except ComponentError as error:
                if proc.running() or attempt == _START_ATTEMPTS:
                    raise
                last = error.log_tail.strip().splitlines()[-1:] or [""]
                self.print(f"[appstack]   {component} exited while starting ({last[0]}); again")
        if component in ("etcd", "kube-apiserver"):
            after_server = control_plane.ORDER.index("kube-apiserver") + 1
            for dependent in control_plane.ORDER[after_server:]:
                if self.process(dependent).running():
                    self.process(dependent).stop()
                    self.start(dependent)

    def stop(self, component: str, sig: signal.Signals = signal.SIGTERM) -> None:
        """Stop one component (SIGTERM, or e.g. SIGKILL to simulate a crash)."""
        self.process(component).stop(sig=sig)

    def restart(self, component: str) -> None:
        self.stop(component)
        self.start(component)

    # ------------------------------------------------------------------------- helpers
    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run the cluster's kubectl with the admin kubeconfig; raises with stderr on failure."""
        cmd = [
            str(self.toolchain.binary("kubectl")),
            f"--kubeconfig={self.kubeconfig}",
            # Discovery cached with the cluster (removed by down), never ~/.kube/cache: a
            # cache from an older CRD (e.g. another category) must not outlive it.
            f"--cache-dir={self.directory / 'kubectl-cache'}",
            *args,
        ]
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False)
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}{proc.stdout}"
            )
        return proc

    def etcdctl(self, *args: str) -> str:
        cmd = [
            str(self.toolchain.binary("etcdctl")),
            f"--endpoints={self.layout().etcd_url}",
            *args,
        ]
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout

    # ----------------------------------------------------------------------- internals
    def _prepare(self) -> None:
        """Create state, PKI, kubeconfigs and config files (only what is missing)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self._state_file.exists():
            state = {
                "ports": control_plane.free_ports(control_plane.PORT_NAMES),
                "nodes": self.nodes,
                "pods_per_node": self.pods_per_node,
                "toolchain": self.toolchain.key,
            }
            self._write_state(state)
        self._prepare_real_nodes()
        layout = self.layout()
        pki = ClusterPKI(self.directory / "pki")
        pki.ensure(control_plane.CLIENTS, control_plane.SERVICE_IP)
        (self.directory / "config").mkdir(exist_ok=True)
        for identity in control_plane.CLIENTS:
            path = layout.kubeconfig(identity)
            if not path.exists():
                write_kubeconfig(
                    path,
                    server=layout.api_url,
                    ca=pki.ca.cert,
                    client=pki.client(identity),
                    cluster=self.name,
                    user=identity,
                )
        for path, text in control_plane.config_files(layout).items():
            path.write_text(text)

    def _prepare_real_nodes(self) -> None:
        """Record how many real nodes the cluster has, and claim a network for them once."""
        state = json.loads(self._state_file.read_text())
        wanted = state.get("real_nodes", 0) if self.real_nodes is None else self.real_nodes
        state["real_nodes"] = wanted
        if wanted and "network" not in state:
            (cache_root() / "clusters").mkdir(parents=True, exist_ok=True)
            with _file_lock(cache_root() / "clusters" / ".network.lock"):
                taken = {i for name, i in _networks().items() if name != self.name}
                state["network"] = free_index(taken | bridges_in_use())
                state["real_ports"] = control_plane.free_ports(("coredns-ready",))
                self._write_state(state)
        self._write_state(state)

    def _bootstrap(self) -> None:
        """Fake nodes and the default StorageClass (server-side apply: idempotent)."""
        layout = self.layout()
        tainted = self.real() is not None
        objects = [
            kwok.fake_node(i, pods=layout.pods_per_node, tainted=tainted)
            for i in range(layout.nodes)
        ]
        objects.append(STORAGE_CLASS)
        self.kubectl(
            "apply",
            "--server-side",
            "--field-manager=appstack-testbed",
            "-f",
            "-",
            stdin=yaml.safe_dump_all(objects),
        )

    def _release_node_leases(self, layout: control_plane.Layout) -> None:
        """A new kwok process has a new identity and would wait for its predecessor's node
        leases (40 s) to expire before managing the nodes again: release them first."""
        names = [kwok.node_name(i) for i in range(layout.nodes)]
        self.kubectl("delete", "lease", "--namespace=kube-node-lease", "--ignore-not-found", *names)

    def _healthy(self, layout: control_plane.Layout, name: str) -> bool:
        verify: ssl.SSLContext | bool = False  # controller-manager/scheduler: self-signed
        if name == "kube-apiserver":
            pki = layout.path("pki")
            verify = ssl.create_default_context(cafile=str(pki / "ca.crt"))
            verify.load_cert_chain(pki / "admin.crt", pki / "admin.key")
        try:
            response = httpx.get(control_plane.health_url(layout, name), verify=verify, timeout=2.0)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def _wait_healthy(self, layout: control_plane.Layout, name: str) -> None:
        proc = self.process(name)
        started = time.monotonic()
        deadline = started + _START_TIMEOUT[name]
        while not self._healthy(layout, name):
            if not proc.running():
                raise ComponentError(name, "exited during start-up", proc.log_tail())
            if time.monotonic() > deadline:
                raise ComponentError(
                    name,
                    f"not healthy after {_START_TIMEOUT[name]:.0f}s "
                    f"({control_plane.health_url(layout, name)})",
                    proc.log_tail(),
                )
            time.sleep(0.1)
        self.print(f"[appstack]   {name} healthy ({time.monotonic() - started:.1f}s)")


def _networks() -> dict[str, int]:
    """Cluster name -> real-node network index, for every cluster in the cache."""
    out: dict[str, int] = {}
    for state in (cache_root() / "clusters").glob("*/state.json"):
        try:
            data = json.loads(state.read_text())
        except (OSError, ValueError):
            continue
        if "network" in data:
            out[state.parent.name] = int(data["network"])
    return out


def _clusters_with_real_nodes() -> list[str]:
    return sorted(_networks())
