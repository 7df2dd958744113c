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
are not affected. See docs/security.md.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

ALWAYS_DENIED: tuple[Network, ...] = tuple(
    ipaddress.ip_network(cidr)
    for cidr in (
        "0.0.0.0/8",  # "this network", 0.0.0.0
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local, with the metadata address 169.254.169.254
        "224.0.0.0/4",  # multicast
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


@dataclass(frozen=True)
class ExternalIPPolicy:
    """Whether IP addresses are allowed for external middleware, and which are not."""

    allow: bool = False
    deny: tuple[Network, ...] = ()

    def refusal(self, host: str) -> str | None:
        """Why ``host`` may not be used (None: a host name, or an allowed address)."""
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return None
        if not self.allow:
            return (
                f"{host} is an IP address; IP-backed external middleware is off in this "
                "installation (the operator's --allow-external-ips); use a host name"
            )
        for network in (*ALWAYS_DENIED, *self.deny):
            if ip.version == network.version and ip in network:
                return f"{host} is in {network}, which external middleware may not point at"
        return None
