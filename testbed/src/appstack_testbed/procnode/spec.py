"""What a container becomes as a process: its binary, argv and environment (pure functions).

Images are not pulled: an image maps to a locally built binary (:func:`image_binary`);
``etcd`` images of a built release (:mod:`appstack_testbed.etcd_releases`) run that
release's ``etcd``, and argv[0] ``etcd``/``etcdctl``/``etcdutl`` (bare or as an absolute
path such as ``/usr/local/bin/etcd``) resolve to the same release's binaries.
``$(VAR)`` references in env values, command and args expand as Kubernetes does.

Used by :mod:`appstack_testbed.procnode.pod` (and unit-tested on its own).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from appstack_testbed import etcd_releases

_REF = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


class UnsupportedImage(ValueError):
    """The image has no local binary (the pod stays Waiting with this message)."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: defined names are replaced, ``$$`` is ``$``,
    undefined references stay as written."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _REF.sub(one, text)


def image_binary_dir(image: str) -> Path:
    """The directory of the binaries an image runs (built on first use)."""
    name, tag = _split_image(image)
    version = etcd_releases.normalize(tag) if name == "etcd" else None
    if version is None:
        raise UnsupportedImage(
            f"image {image!r} has no local binary (supported: etcd:<version>, e.g. "
            f"etcd:{etcd_releases.RELEASES[0]})"
        )
    return etcd_releases.ensure(version)


def _split_image(image: str) -> tuple[str, str]:
    ref = image.split("@", 1)[0]
    repo, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "latest")
    return repo.rsplit("/", 1)[-1], tag


def argv(container: Mapping[str, Any], env: Mapping[str, str], bin_dir: Path) -> list[str]:
    """command + args, expanded, with argv[0] resolved to a local binary.

    As with etcd's images (no ENTRYPOINT, ``CMD ["/usr/local/bin/etcd"]``): without a
    command, ``args`` alone are the command line, and with neither, etcd runs."""
    command = [expand(c, env) for c in container.get("command") or []]
    args = [expand(a, env) for a in container.get("args") or []]
    out = command + args if command else args or ["/usr/local/bin/etcd"]
    return [resolve_binary(out[0], bin_dir), *out[1:]]


def resolve_binary(program: str, bin_dir: Path) -> str:
    """``etcd``, ``/usr/local/bin/etcdctl``... -> the release's binary; others unchanged
    (e.g. ``/bin/sh`` runs the host's shell)."""
    base = program.rsplit("/", 1)[-1]
    if base in etcd_releases.BINARIES and (program == base or program.startswith("/usr/")):
        return str(bin_dir / base)
    return program


Lookup = Callable[[str, str, str], str | None]  # (kind "secret"/"configmap", name, key)


def environment(
    container: Mapping[str, Any],
    fields: Mapping[str, str],
    lookup: Lookup,
    all_keys: Callable[[str, str], Mapping[str, str]],
) -> dict[str, str]:
    """The container's environment: envFrom, then env (literal, fieldRef, secretKeyRef,
    configMapKeyRef), each value expanded against the variables defined before it.

    ``fields`` holds the downward-API values (``metadata.name``, ``status.podIP``...);
    ``lookup`` reads one key, ``all_keys`` a whole Secret/ConfigMap (for envFrom)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        for kind, ref in (("configmap", "configMapRef"), ("secret", "secretRef")):
            if ref in source:
                for key, value in all_keys(kind, source[ref]["name"]).items():
                    env[prefix + key] = value
    for var in container.get("env") or []:
        resolved = _value(var, env, fields, lookup)
        if resolved is not None:
            env[var["name"]] = resolved
    return env


def _value(
    var: Mapping[str, Any], env: Mapping[str, str], fields: Mapping[str, str], lookup: Lookup
) -> str | None:
    if "value" in var:
        return expand(str(var["value"]), env)
    source = var.get("valueFrom") or {}
    if "fieldRef" in source:
        path = source["fieldRef"]["fieldPath"]
        if path not in fields:
            raise ValueError(f"env {var['name']}: unsupported fieldPath {path}")
        return fields[path]
    for kind, ref in (("secret", "secretKeyRef"), ("configmap", "configMapKeyRef")):
        if ref in source:
            got = lookup(kind, source[ref]["name"], source[ref]["key"])
            if got is None and not source[ref].get("optional"):
                raise LookupError(f"env {var['name']}: {kind} {source[ref]['name']} has no key")
            return got
    return "" if not source else None


def downward_fields(pod: Mapping[str, Any], pod_ip: str, host_ip: str) -> dict[str, str]:
    """The fieldRef paths a process can read."""
    meta = pod["metadata"]
    fields = {
        "metadata.name": meta["name"],
        "metadata.namespace": meta["namespace"],
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": pod["spec"].get("nodeName", ""),
        "spec.serviceAccountName": pod["spec"].get("serviceAccountName", ""),
        "status.podIP": pod_ip,
        "status.hostIP": host_ip,
    }
    for key, value in (meta.get("labels") or {}).items():
        fields[f"metadata.labels['{key}']"] = value
    for key, value in (meta.get("annotations") or {}).items():
        fields[f"metadata.annotations['{key}']"] = value
    return fields
