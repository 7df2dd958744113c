"""The seed's own controller as a peer of ``bench/peers.py``: kosmos-io/simple-controller,
built from a snapshot of its repository (docs/performance.md, "The seed's own controller
as a peer"). Nothing of its code is in this repository; the bench takes its binary and its
CRD (``deploy/crd.yaml`` there) by path: ``--seed-binary`` / ``--seed-crd``, or the
environment variables :data:`BINARY_ENV` / :data:`CRD_ENV`.

How it must be run follows from its ``cmd/main.go``: ``ctrl.NewManager(GetConfigOrDie(),
ctrl.Options{})`` and no ``flag.Parse()``, so it takes no flags (the kubeconfig comes from
``$KUBECONFIG``), serves ``/metrics`` on controller-runtime 0.16's default ``:8080``
(:data:`METRICS_PORT`, all interfaces: the port must be free), has no health probe and no
leader election, and watches its kind cluster-wide: ``kosmos.io/v1`` AppService
(:data:`APP_SERVICE`), whose objects the bench creates for it.

Pure but for :func:`install_crd` and :func:`port_free`; used by ``bench/peers.py`` and
:mod:`peerbench.operators`, unit tested in ``tests/unit/bench/test_seed_peer.py``.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from appstack.core.resource import Resource
from appstack.runtime import Client

APP_SERVICE = Resource("kosmos.io", "v1", "AppService", "appservices")
CRD = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
CRD_NAME = "appservices.kosmos.io"
METRICS_PORT = 8080
BINARY_ENV = "APPSTACK_SEED_BINARY"
CRD_ENV = "APPSTACK_SEED_CRD"
LABEL = "the seed's own controller (kosmos-io/simple-controller, built from its repository)"
HOW = 'see docs/performance.md, "The seed\'s own controller as a peer"'


class SeedError(ValueError):
    """The seed peer was asked for but its binary or CRD is missing or not the seed's."""


def paths(
    binary: str | None, crd: str | None, env: Mapping[str, str] = os.environ
) -> tuple[Path, Path]:
    """The binary and CRD paths: the arguments, else the environment; both must be files."""
    found = []
    for given, var, what in ((binary, BINARY_ENV, "--seed-binary"), (crd, CRD_ENV, "--seed-crd")):
        value = given or env.get(var)
        if not value:
            raise SeedError(f"the seed peer needs {what} PATH (or ${var}); {HOW}")
        path = Path(value).expanduser()
        if not path.is_file():
            raise SeedError(f"{what} {path}: no such file; {HOW}")
        found.append(path)
    if not os.access(found[0], os.X_OK):
        raise SeedError(f"--seed-binary {found[0]} is not executable")
    return found[0], found[1]


def read_crd(text: str) -> dict[str, Any]:
    """The seed's CRD out of ``text`` (YAML, one or more documents): the one defining
    ``appservices.kosmos.io`` with a served ``v1``; :class:`SeedError` if there is none."""
    for doc in yaml.safe_load_all(text):
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            continue
        if doc.get("metadata", {}).get("name") != CRD_NAME:
            continue
        served = [v.get("name") for v in doc["spec"].get("versions", []) if v.get("served")]
        if APP_SERVICE.version not in served:
            raise SeedError(f"{CRD_NAME} serves {served}, not {APP_SERVICE.version}")
        return doc
    raise SeedError(f"no CustomResourceDefinition {CRD_NAME} in the given CRD file")


def established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


async def install_crd(client: Client, crd: dict[str, Any], timeout: float = 60) -> None:
    """Server-side apply the seed's CRD and wait until it is Established."""
    await client.apply(CRD, crd)
    deadline = time.monotonic() + timeout
    while not established(await client.get(CRD, CRD_NAME)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{CRD_NAME} not Established after {timeout}s")
        await asyncio.sleep(0.2)


def port_free(port: int = METRICS_PORT) -> bool:
    """Whether nothing listens on ``port`` (the seed binds ``:port``, every interface). With
    ``SO_REUSEADDR``, as Go's listener binds: the bench's own scrapes of a seed that ran just
    before leave connections in TIME_WAIT on the port, which do not keep the seed out."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))  # noqa: S104 - the address the seed itself binds
        except OSError:
            return False
    return True
