"""Pod addresses and names on a process node: one loopback IP per pod, and /etc/hosts.

Like 127.0.0.0/8, a block routed ``local`` on the loopback device is entirely local: a
pod's process can bind its own IP and the host can reach it, with no other network
setup. Loopback addresses themselves cannot be used: the API server refuses them in
Endpoints/EndpointSlices. So each node claims a free ``10.<A>.<node>.0/24`` (``ip route
add local ... dev lo``, :func:`claim`; :func:`release` removes it when the agent stops),
so that the process nodes of several test clusters on one machine never share a block.

Names: like CoreDNS for a headless Service, a pod whose ``hostname``/``subdomain`` match
a headless Service has ``<hostname>.<service>.<ns>.svc.cluster.local`` (and the shorter
``.svc`` and ``<hostname>.<service>`` forms); we read them from the EndpointSlices the
controller-manager keeps (ready endpoints only, unless the Service publishes not-ready
addresses, exactly as DNS would serve them). Each pod's process sees them in a private
``/etc/hosts`` (:func:`hosts_file`), rewritten in place when endpoints change.

Used by :mod:`appstack_testbed.procnode.agent`.
"""

from __future__ import annotations

import hashlib
import ipaddress
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

CLUSTER_DOMAIN = "cluster.local"


def claim(cluster: str, index: int, record: Path) -> ipaddress.IPv4Network:
    """Route a free ``10.<A>.<index>.0/24`` block ``local`` on lo and return it.

    ``A`` starts at a hash of the cluster's name (200..249) and moves on while another
    agent holds the block (``ip route add`` fails: it exists). ``record`` keeps the block
    so that an agent restarted after a crash takes its own block back."""
    if record.exists():
        previous = ipaddress.IPv4Network(record.read_text().strip())
        if _ip("route", "show", "table", "local", str(previous)).stdout.strip():
            return previous
    start = int(hashlib.sha256(cluster.encode()).hexdigest(), 16) % 50
    for step in range(50):
        block = ipaddress.IPv4Network(f"10.{200 + (start + step) % 50}.{index % 256}.0/24")
        if _ip("route", "add", "local", str(block), "dev", "lo", "table", "local").returncode == 0:
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(f"{block}\n")
            return block
    raise RuntimeError(f"no free 10.200-249.{index}.0/24 block for process node {index}")


def release(block: ipaddress.IPv4Network, record: Path) -> None:
    _ip("route", "del", "local", str(block), "dev", "lo", "table", "local")
    record.unlink(missing_ok=True)


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], check=False, capture_output=True, text=True)


class AddressPool:
    """Hands out the node's pod IPs; a released IP is reused last (like a CNI's IPAM)."""

    def __init__(self, network: ipaddress.IPv4Network) -> None:
        self._free = [str(ip) for ip in list(network.hosts())[1:]]  # .1 is the "gateway"
        self._used: dict[str, str] = {}  # pod uid -> ip

    def take(self, uid: str, wanted: str | None = None) -> str:
        """The pod's IP: ``wanted`` (an IP it already reports, after an agent restart) if
        free, else the next free one."""
        if uid in self._used:
            return self._used[uid]
        ip = wanted if wanted in self._free else self._free[0]
        self._free.remove(ip)
        self._used[uid] = ip
        return ip

    def release(self, uid: str) -> None:
        ip = self._used.pop(uid, None)
        if ip is not None:
            self._free.append(ip)


def slice_names(endpoint_slice: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """``(ip, names)`` for each endpoint of a Service's slice that DNS would serve by name."""
    meta = endpoint_slice["metadata"]
    service = (meta.get("labels") or {}).get("kubernetes.io/service-name")
    if not service or endpoint_slice.get("addressType") != "IPv4":
        return []
    out: list[tuple[str, list[str]]] = []
    for endpoint in endpoint_slice.get("endpoints") or []:
        hostname = endpoint.get("hostname")
        ready = (endpoint.get("conditions") or {}).get("ready")
        if not hostname or ready is False:
            continue
        names = pod_names(hostname, service, meta["namespace"])
        out.extend((ip, names) for ip in endpoint.get("addresses") or [])
    return out


def pod_names(hostname: str, subdomain: str, namespace: str) -> list[str]:
    base = f"{hostname}.{subdomain}.{namespace}.svc"
    return [f"{base}.{CLUSTER_DOMAIN}", base, f"{hostname}.{subdomain}"]


def hosts_file(own: tuple[str, list[str]] | None, entries: Iterable[tuple[str, list[str]]]) -> str:
    """/etc/hosts for one pod: localhost, the pod's own names first, then everyone's."""
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    if own is not None:
        lines.append(f"{own[0]}\t{' '.join(own[1])}")
    seen = {own[0]} if own is not None else set()
    for ip, names in sorted(entries):
        if ip not in seen:
            seen.add(ip)
            lines.append(f"{ip}\t{' '.join(names)}")
    return "\n".join(lines) + "\n"


def write_in_place(path: Path, text: str) -> None:
    """Rewrite without replacing the inode: a bind mount of the file must see the change."""
    if path.exists() and path.read_text() == text:
        return
    with open(path, "r+" if path.exists() else "w") as handle:
        handle.write(text)
        handle.truncate()
