"""Open up hostPath volumes for the real nodes' non-root containers:
``python -m appstack_testbed.realnode.volumes KUBECONFIG``.

The default StorageClass is the controller-manager's own host-path provisioner (it binds at
once, which the kwok nodes' pods need); it creates each volume's directory under
``/tmp/hostpath_pv`` as ``root 0750``, and the kubelet applies no ``fsGroup`` to hostPath
volumes, so a container running as its image's user (MySQL as 999, say) could not write its
data. This watcher makes each such directory ``0777`` as soon as its PersistentVolume
appears (before any pod can be scheduled onto the claim), which is what kind's
local-path-provisioner does for its volumes. A managed process of each cluster with real
nodes (:mod:`.fleet`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from lightkube import Client, KubeConfig
from lightkube.resources.core_v1 import PersistentVolume

BASE = Path("/tmp/hostpath_pv")  # noqa: S108 - the in-tree provisioner's fixed location


def open_up(volume: PersistentVolume) -> None:
    host_path = volume.spec.hostPath if volume.spec is not None else None
    if host_path is None or not host_path.path:
        return
    path = Path(host_path.path)
    if path.parent == BASE and path.is_dir() and (path.stat().st_mode & 0o777) != 0o777:
        with contextlib.suppress(OSError):
            os.chmod(path, 0o777)  # noqa: S103 - the point: any pod user may write
            name = volume.metadata.name if volume.metadata is not None else "?"
            print(f"opened {path} ({name})", flush=True)


def main(kubeconfig: str) -> None:
    client = Client(config=KubeConfig.from_file(kubeconfig))
    while True:
        try:
            for _, volume in client.watch(PersistentVolume):
                open_up(volume)
        except Exception as error:  # an API server restart: watch again
            print(f"watch ended ({type(error).__name__}: {error}); watching again", flush=True)
            time.sleep(1)


if __name__ == "__main__":
    main(sys.argv[1])
