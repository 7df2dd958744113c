"""A pod's volumes as host directories, and the bind mounts its containers get.

* ``persistentVolumeClaim``: the bound PV's ``hostPath`` (the test bed's controller-manager
  provisions hostPath PVs under /tmp and deletes the directory when the claim is deleted,
  reclaim policy Delete), so data outlives container restarts and pod re-creation;
* ``hostPath``: that path;
* ``emptyDir``: a directory of the pod (removed with the pod);
* ``secret`` / ``configMap`` / ``downwardAPI`` are not all covered: secret and configMap
  volumes are written as files once, when the pod starts (``items`` and ``defaultMode``
  honoured; later changes are not propagated).

Used by :mod:`appstack_testbed.procnode.pod`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lightkube import AsyncClient
from lightkube.resources.core_v1 import (
    ConfigMap,
    PersistentVolume,
    PersistentVolumeClaim,
    Secret,
)


class NotReadyYet(RuntimeError):
    """A volume cannot be set up yet (e.g. its claim is not bound); the pod waits."""


@dataclass(frozen=True)
class Mount:
    """One bind mount inside a container's mount namespace."""

    source: Path
    target: str
    read_only: bool


async def volume_dirs(
    client: AsyncClient, pod: Mapping[str, Any], pod_dir: Path
) -> dict[str, Path]:
    """Volume name -> host directory, creating what the pod owns."""
    namespace = pod["metadata"]["namespace"]
    out: dict[str, Path] = {}
    for volume in pod["spec"].get("volumes") or []:
        name = volume["name"]
        if "persistentVolumeClaim" in volume:
            out[name] = await _claim_dir(client, namespace, volume["persistentVolumeClaim"])
        elif "hostPath" in volume:
            out[name] = Path(volume["hostPath"]["path"])
            if (volume["hostPath"].get("type") or "") == "DirectoryOrCreate":
                out[name].mkdir(parents=True, exist_ok=True)
        elif "secret" in volume or "configMap" in volume:
            out[name] = pod_dir / "volumes" / name
            await _write_files(client, namespace, volume, out[name])
        else:  # emptyDir and anything else: a scratch directory of the pod
            out[name] = pod_dir / "volumes" / name
            out[name].mkdir(parents=True, exist_ok=True)
    return out


def mounts(container: Mapping[str, Any], dirs: Mapping[str, Path]) -> list[Mount]:
    out = []
    for mount in container.get("volumeMounts") or []:
        source = dirs[mount["name"]]
        if mount.get("subPath"):
            source = source / mount["subPath"]
            if not source.exists():
                source.mkdir(parents=True)
        out.append(Mount(source, mount["mountPath"], bool(mount.get("readOnly"))))
    return out


async def _claim_dir(client: AsyncClient, namespace: str, ref: Mapping[str, Any]) -> Path:
    claim = await client.get(PersistentVolumeClaim, ref["claimName"], namespace=namespace)
    volume_name = claim.spec.volumeName if claim.spec else None
    if not volume_name or claim.status is None or claim.status.phase != "Bound":
        raise NotReadyYet(f"persistentvolumeclaim {ref['claimName']!r} is not bound")
    volume = await client.get(PersistentVolume, volume_name)
    if volume.spec is None or volume.spec.hostPath is None:
        raise NotReadyYet(f"persistentvolume {volume_name!r} is not a hostPath volume")
    path = Path(volume.spec.hostPath.path)
    path.mkdir(parents=True, exist_ok=True)
    return path


async def _write_files(
    client: AsyncClient, namespace: str, volume: Mapping[str, Any], target: Path
) -> None:
    is_secret = "secret" in volume
    source = volume["secret"] if is_secret else volume["configMap"]
    name = source["secretName"] if is_secret else source["name"]
    try:
        if is_secret:
            obj = await client.get(Secret, name, namespace=namespace)
            data = {k: base64.b64decode(v) for k, v in (obj.data or {}).items()}
        else:
            cm = await client.get(ConfigMap, name, namespace=namespace)
            data = {k: v.encode() for k, v in (cm.data or {}).items()}
    except Exception as error:
        if source.get("optional"):
            data = {}
        else:
            raise NotReadyYet(
                f"{'secret' if is_secret else 'configmap'} {name!r}: {error}"
            ) from error
    items = source.get("items") or [{"key": k, "path": k} for k in data]
    target.mkdir(parents=True, exist_ok=True)
    for item in items:
        path = target / item["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.get(item["key"], b""))
        path.chmod(item.get("mode", source.get("defaultMode", 0o644)))
