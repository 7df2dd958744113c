"""Which IP addresses external middleware may point at (pure; used by the AppStack
reconciler, configured by ``appstack run --allow-external-ips --external-deny-cidr``).

An external middleware given as an IP address becomes a selector-less Service plus an
EndpointSlice that the operator writes — with the operator's rights, for any AppStack
author. Left open, that lets an author point a Service at another namespace's pods, the
node, or the cloud metadata endpoint (the CVE-2021-25740 class). So IP-backed external
middleware is an opt-in of the installer (:attr:`ExternalIPPolicy.allow`, off by default),
and even then loopback, link-local (the metadata address 169.254.169.254 among them),
unspecified and multicast addresses are always refused, as are the ranges the installer
adds (the cluster's pod and service ranges). Host names stay ExternalName Services and
are checked too (:meth:`ExternalIPPolicy.refusal`): an ExternalName that reaches into the
cluster or the node — ``localhost``, ``kubernetes.default``, ``<svc>.<ns>.svc...``,
``*.cluster.local``, ``<svc>.<ns>`` of a namespace that exists (:func:`refusal` looks it
up), cloud metadata names — is refused unless the installer allows it
(``--allow-external-cluster-names``). An IPv6 address carrying an IPv4 one (IPv4-mapped,
-compatible, NAT64, 6to4, Teredo) is judged by the IPv4 address it carries.

Whether a host is an address is decided as the clients that reach it decide it
(:func:`address`), not by :func:`ipaddress.ip_address`, which knows one spelling only:
inet_aton's forms, which glibc's and musl's ``getaddrinfo`` take (``127.1``,
``2130706433``, ``0x7f.0.0.1``, ``0177.0.0.1``), an address with a trailing dot
(``169.254.169.254.``, which URL parsers after the WHATWG standard — browsers, Node's
``fetch`` — take for the address; no host name is spelt so), and IPv6 in brackets or with
a zone are that address, and are judged — and written into the EndpointSlice — as it.
Before, they were judged as host names and passed (issue #34). Names that *resolve* to such
an address (``169.254.169.254.nip.io``, DNS rebinding) are not looked up: the operator
cannot judge them, a NetworkPolicy on the pods' egress can. See docs/security.md.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

ALWAYS_DENIED: tuple[Network, ...] = tuple(
    ipaddress.ip_network(cidr)
    for cidr in (
        "0.0.0.0/8",  # "this network", 0.0.0.0
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local, with the metadata address 169.254.169.254
        "224.0.0.0/4",  # multicast
        "100.100.100.200/32",  # Alibaba Cloud's metadata service
        "168.63.129.16/32",  # Azure's platform (wireserver) address
        "64:ff9b:1::/48",  # local-use NAT64: where the IPv4 address sits is the site's choice
        "::/128",  # unspecified
        "::1/128",  # loopback
        "::ffff:0:0/96",  # IPv4-mapped: the same addresses in IPv6 clothing
        "fe80::/10",  # link-local
        "fd00:ec2::254/128",  # the metadata address over IPv6 (AWS)
        "ff00::/8",  # multicast
    )
)


def parse_networks(cidrs: Iterable[str]) -> tuple[Network, ...]:
    """``10.96.0.0/12``-style ranges (a bare address is a /32 or /128)."""
    return tuple(ipaddress.ip_network(cidr.strip(), strict=False) for cidr in cidrs)


#: Host names that reach the node, the cluster's own Services or a cloud's metadata service.
CLUSTER_NAMES = frozenset(
    {"localhost", "kubernetes", "kubernetes.default", "metadata", "instance-data"}
)
CLUSTER_SUFFIXES = (
    ".localhost",
    ".svc",  # <svc>.<ns>.svc, resolved with the cluster domain
    ".cluster.local",
    ".internal",  # metadata.google.internal, instance-data.ec2.internal, ...
)
#: ``<svc>.<ns>`` resolves through the pods' search path into these namespaces' Services.
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
COMPATIBLE = ipaddress.ip_network("::/96")


#: One part of an IPv4 address as inet_aton reads it (C's strtoul, base 0): hexadecimal,
#: octal (a leading 0) or decimal.
_PART = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")


def _part(text: str) -> int:
    if text[:2] in ("0x", "0X"):
        return int(text[2:], 16)
    return int(text, 8) if text.startswith("0") else int(text)


def inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``text`` is to ``inet_aton`` (glibc's and musl's ``getaddrinfo``
    take the same): one to four parts, each hexadecimal, octal or decimal, the last filling
    the bytes left (``127.1`` is 127.0.0.1, ``2130706433`` too). None: not an address."""
    parts = text.split(".")
    if len(parts) > 4 or not all(_PART.fullmatch(part) for part in parts):
        return None
    *leading, last = [_part(part) for part in parts]
    if any(value > 0xFF for value in leading) or last >= 1 << (8 * (4 - len(leading))):
        return None
    number = sum(value << (8 * (3 - i)) for i, value in enumerate(leading))
    return ipaddress.IPv4Address(number + last)


def address(host: str) -> Address | None:
    """The IP address ``host`` spells for a client (None: a host name).

    Besides the usual spellings: inet_aton's forms (:func:`inet_aton`; glibc's and musl's
    ``getaddrinfo``), one trailing dot (an absolute name to ``getaddrinfo``, the address to
    a WHATWG URL parser, and never a real host's name), and IPv6 in brackets or with a zone
    (``fe80::1%eth0``; the zone is dropped: it means nothing beyond the node). Go's ``net``
    takes a subset of these (dotted decimal, IPv6 with a zone)."""
    text = host.removesuffix(".")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" not in text:
        return inet_aton(text)
    try:
        return ipaddress.IPv6Address(text.split("%", 1)[0])
    except ValueError:
        return None


def carried_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, compatible, NAT64, 6to4, Teredo)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in NAT64 or (ip in COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]  # the client's address
    return None


def cluster_name(host: str) -> bool:
    """Whether host name ``host`` reaches into the cluster or the node."""
    name = host.lower().rstrip(".")
    labels = name.split(".")
    return (
        name in CLUSTER_NAMES
        or name.endswith(CLUSTER_SUFFIXES)
        or name in ("cluster.local", "svc")
        or (len(labels) == 2 and labels[1] in SYSTEM_NAMESPACES)
    )


def search_path_namespace(host: str) -> str | None:
    """The namespace ``<svc>.<ns>`` would name through the pods' DNS search path (None: not
    of that form). Whether it reaches a Service depends on that namespace existing, which
    the reconciler looks up: ``example.com`` is a host unless a namespace ``com`` exists."""
    if address(host) is None:
        labels = host.lower().rstrip(".").split(".")
        if len(labels) == 2 and all(labels):
            return labels[1]
    return None


@dataclass(frozen=True)
class ExternalIPPolicy:
    """Whether IP addresses are allowed for external middleware, and which are not; whether
    host names inside the cluster are."""

    allow: bool = False
    deny: tuple[Network, ...] = ()
    allow_cluster_names: bool = False

    def refusal(self, host: str) -> str | None:
        """Why ``host`` may not be used (None: an allowed host name or address). An address
        is judged however it is spelt (:func:`address`)."""
        ip = address(host)
        if ip is None:
            if cluster_name(host) and not self.allow_cluster_names:
                return (
                    f"{host} names the node, the cluster's own Services or a metadata service; "
                    "external middleware may not (the operator's "
                    "--allow-external-cluster-names)"
                )
            return None
        spelt = host if host == str(ip) else f"{host} (the address {ip})"
        if not self.allow:
            return (
                f"{spelt} is an IP address; IP-backed external middleware is off in this "
                "installation (the operator's --allow-external-ips); use a host name"
            )
        candidates: list[Address] = [ip]
        if isinstance(ip, ipaddress.IPv6Address):
            carried = carried_ipv4(ip)
            if carried is not None:
                candidates.append(carried)
        for candidate in candidates:
            for network in (*ALWAYS_DENIED, *self.deny):
                if candidate.version == network.version and candidate in network:
                    return f"{spelt} is in {network}, which external middleware may not point at"
        return None


async def refusal(
    policy: ExternalIPPolicy, host: str, exists: Callable[[str], Awaitable[bool | None]]
) -> str | None:
    """:meth:`ExternalIPPolicy.refusal`, and ``<svc>.<ns>`` for any namespace that
    ``exists`` (the pods' DNS search path turns it into that namespace's Service; one the
    operator may not read, in a namespaced install, is not known to exist)."""
    refused = policy.refusal(host)
    namespace = search_path_namespace(host)
    if refused is None and namespace and not policy.allow_cluster_names and await exists(namespace):
        service = host.split(".", maxsplit=1)[0]
        return (
            f"{host} names Service {service} of namespace {namespace} (the pods' DNS search "
            "path); external middleware may not (the operator's --allow-external-cluster-names)"
        )
    return refused
