"""Real etcd processes on loopback addresses, started straight from the test bed's binary.

Each member listens on its own 127.x.y.z address (client 2379, peer 2380) with a data
directory under the test's tmp path; :class:`LocalEtcd` starts, adds and stops them. Used
by the tests of the etcd client (test_etcdapi.py) — never a mock.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from appstack_testbed.versions import Toolchain


def subnet() -> str:
    """A 127.a.b prefix of this process, so parallel sessions do not collide."""
    pid = os.getpid()
    return f"127.{100 + pid % 100}.{pid // 100 % 250}"


@dataclass
class LocalEtcd:
    """Members named m1, m2, ... at ``<subnet>.<n>``; ``binary`` defaults to the test bed's."""

    root: Path
    binary: Path = field(default_factory=lambda: Toolchain().binary("etcd"))
    prefix: str = field(default_factory=subnet)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    flags: tuple[str, ...] = ()  # more flags for every member (e.g. a small quota)

    def ip(self, n: int) -> str:
        return f"{self.prefix}.{n}"

    def client(self, n: int) -> str:
        return f"http://{self.ip(n)}:2379"

    def peer(self, n: int) -> str:
        return f"http://{self.ip(n)}:2380"

    def start(self, n: int, initial: dict[int, str], state: str = "new") -> None:
        name = f"m{n}"
        cluster = ",".join(f"m{i}={self.peer(i)}" for i in sorted(initial))
        log = (self.root / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen(
            [
                str(self.binary),
                f"--name={name}",
                f"--data-dir={self.root / name}",
                f"--listen-client-urls={self.client(n)}",
                f"--advertise-client-urls={self.client(n)}",
                f"--listen-peer-urls={self.peer(n)}",
                f"--initial-advertise-peer-urls={self.peer(n)}",
                f"--initial-cluster={cluster}",
                f"--initial-cluster-state={state}",
                "--initial-cluster-token=test",
                *self.flags,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def stop(self, n: int) -> None:
        proc = self.procs.pop(f"m{n}", None)
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(int(name[1:]))
