"""The local image registry: the CNCF distribution registry on 127.0.0.1, one per machine.

Built from Go modules (:func:`appstack_testbed.build.shared_components`), it stores its
images under ``$APPSTACK_CACHE/registry`` so that they outlive the clusters (a warm cluster
pulls what an earlier one pushed). Every real node's containerd uses it for every registry
name (:mod:`appstack_testbed.realnode.configs`), reaching it through its cluster's gateway
(:mod:`appstack_testbed.forward`), so pulls are real pulls — pull policies, digests,
``ErrImagePull`` for an image nobody built — and nothing is fetched from outside.

:meth:`LocalRegistry.ensure` starts it unless it runs; :meth:`push` copies an oci-archive
in under a name (skopeo); :meth:`has` asks whether a tag exists. Used by
:mod:`appstack_testbed.images` and :mod:`appstack_testbed.cluster`.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import yaml

from appstack_testbed.build import GoBuilder, _file_lock, shared_components
from appstack_testbed.control_plane import free_ports
from appstack_testbed.process import ComponentError, ManagedProcess
from appstack_testbed.versions import SharedTools, cache_root

Printer = Callable[[str], None]
MANIFEST_TYPES = ", ".join(
    (
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    )
)


class LocalRegistry:
    """The machine's registry (see the module docstring)."""

    def __init__(self, printer: Printer) -> None:
        self.print = printer
        self.directory = cache_root() / "registry"
        self.tools = SharedTools()

    @property
    def process(self) -> ManagedProcess:
        return ManagedProcess("registry", self.directory)

    @property
    def port(self) -> int:
        return int(json.loads((self.directory / "state.json").read_text())["port"])

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def ensure(self) -> None:
        """Build (once) and start the registry unless it runs and answers."""
        GoBuilder(self.tools, self.print).ensure_components(shared_components(self.tools))
        self.directory.mkdir(parents=True, exist_ok=True)
        with _file_lock(self.directory / ".start.lock"):
            state = self.directory / "state.json"
            if not state.exists():
                state.write_text(json.dumps({"port": free_ports(("registry",))["registry"]}))
            if self.process.running() and self._answers(patience=30):
                return  # a busy machine (parallel tests pushing) may keep it a while
            self.process.stop()
            config = self.directory / "config.yml"
            config.write_text(yaml.safe_dump(self._config(), sort_keys=False))
            binary = self.tools.binary("registry")
            self.process.start([str(binary), "serve", str(config)])
            deadline = time.monotonic() + 30
            while not self._answers():
                if time.monotonic() > deadline:
                    raise ComponentError("registry", "did not start", self.process.log_tail())
                if not self.process.running():
                    # the port is still held by the registry of a cluster just taken down
                    # (seen right after `appstack cluster down`): start again once it is free
                    if "address already in use" not in self.process.log_tail(3):
                        raise ComponentError("registry", "did not start", self.process.log_tail())
                    time.sleep(0.5)
                    self.process.start([str(binary), "serve", str(config)])
                time.sleep(0.1)
        self.print(f"[appstack]   registry on {self.address} ({self.directory / 'data'})")

    def stop(self) -> None:
        self.process.stop()

    def _config(self) -> dict[str, object]:
        return {
            "version": 0.1,
            "log": {"level": "warn", "accesslog": {"disabled": True}},
            "storage": {
                "filesystem": {"rootdirectory": str(self.directory / "data")},
                "delete": {"enabled": True},
            },
            "http": {"addr": self.address},
        }

    def _answers(self, patience: float = 0) -> bool:
        """It answers ``/v2/``, within ``patience`` seconds of tries (once if 0)."""
        deadline = time.monotonic() + patience
        while True:
            try:
                with urllib.request.urlopen(f"http://{self.address}/v2/", timeout=2) as response:
                    return bool(response.status == 200)
            except (urllib.error.URLError, OSError):
                if time.monotonic() >= deadline or not self.process.running():
                    return False
                time.sleep(0.5)

    def has(self, repository: str, tag: str) -> bool:
        """Whether ``repository:tag`` is in the registry."""
        request = urllib.request.Request(
            f"http://{self.address}/v2/{repository}/manifests/{tag}",
            method="HEAD",
            headers={"Accept": MANIFEST_TYPES},
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
                return bool(response.status == 200)
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return False
            raise

    def push(self, archive: Path, repository: str, tag: str) -> None:
        """Copy an oci-archive into the registry as ``repository:tag``."""
        target = f"docker://{self.address}/{repository}:{tag}"
        proc = subprocess.run(
            [
                "skopeo",
                "copy",
                "--quiet",
                "--dest-tls-verify=false",
                f"oci-archive:{archive}",
                target,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"skopeo copy {archive} -> {target} failed: {proc.stderr.strip()}")
