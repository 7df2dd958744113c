"""Where the API server is and who we are: kubeconfig files and in-cluster configuration.

Our own small loader, because ``kubernetes_asyncio.config`` imports the whole generated
client (≈ 38 MB of the operator's memory, ``docs/performance.md``). It reads what the
operator's users have: ``$KUBECONFIG`` (several files, merged as kubectl does: the first
file naming an entry wins) or ``~/.kube/config``, a context (the current one unless
named); the cluster's ``server``, ``certificate-authority(-data)``,
``insecure-skip-tls-verify``, ``tls-server-name`` and ``proxy-url``; the user's client
certificate and key (files or data), ``token``, ``tokenFile`` and ``exec`` plugins
(``client.authentication.k8s.io`` ``ExecCredential``: run again when the credential
expires, or after a 401). Relative paths are relative to the file that names them. In a
pod (``KUBERNETES_SERVICE_HOST`` set and no kubeconfig asked for) the ServiceAccount's
projected token and CA are used. Users of other kinds (``auth-provider``, basic auth)
are loaded by ``kubernetes_asyncio`` as before (imported only then).

:func:`load` returns a :class:`Connection` and the token's
:data:`~appstack.runtime.credentials.Reload` (None when it cannot change). Used by
:mod:`appstack.runtime.transport`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from appstack.runtime import credentials

IN_CLUSTER_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
_EXPIRY_MARGIN = 10.0  # seconds before an exec credential's expiry it is run again


class KubeconfigError(Exception):
    """The kubeconfig cannot be used (missing context, cluster or file; a failed plugin):
    the user's to fix, its message says what is wrong."""


class LegacyAuthMissing(KubeconfigError):
    """The kubeconfig needs kubernetes_asyncio, which is not installed (raised by
    :mod:`appstack.runtime.transport`)."""


@dataclass
class Connection:
    """What a client needs to reach the API server as us (the fields
    :mod:`~appstack.runtime.transport` reads, as on ``kubernetes_asyncio``'s
    ``Configuration``): ``api_key["BearerToken"]`` is the ``Authorization`` value, kept
    current by the :class:`~appstack.runtime.credentials.Credentials` hook."""

    host: str
    ssl_ca_cert: str | None = None
    ca_data: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    cert_data: bytes | None = None
    key_data: bytes | None = None
    verify_ssl: bool = True
    tls_server_name: str | None = None
    proxy: str | None = None
    api_key: dict[str, str] = field(default_factory=dict)
    refresh_api_key_hook: Any = None

    async def auth_settings(self) -> dict[str, dict[str, str]]:
        """The headers that authenticate a request (the token refreshed first if due)."""
        if self.refresh_api_key_hook is not None:
            await self.refresh_api_key_hook(self)
        token = self.api_key.get("BearerToken")
        return {"BearerToken": {"key": "Authorization", "value": token}} if token else {}


def in_cluster_requested(kubeconfig: str | None, context: str | None = None) -> bool:
    """In a pod, with no kubeconfig (nor a context of one) asked for."""
    return "KUBERNETES_SERVICE_HOST" in os.environ and not (
        kubeconfig or context or os.environ.get("KUBECONFIG")
    )


def in_cluster() -> tuple[Connection, credentials.Reload]:
    """The pod's ServiceAccount: projected token (re-read by the credentials) and CA."""
    host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
    host = f"[{host}]" if ":" in host else host
    token = Path(credentials.IN_CLUSTER_TOKEN).read_text().strip()
    connection = Connection(f"https://{host}:{port}", ssl_ca_cert=IN_CLUSTER_CA)
    connection.api_key["BearerToken"] = f"Bearer {token}"
    return connection, credentials.token_file(credentials.IN_CLUSTER_TOKEN)


def merged(paths: list[Path]) -> dict[str, Any]:
    """The kubeconfig files merged: the first file naming a cluster, user or context wins;
    each entry's relative paths are made absolute against its own file's directory."""
    import yaml  # noqa: PLC0415 - files only: in a pod the operator never holds YAML (0.6 MiB)

    result: dict[str, Any] = {"clusters": {}, "users": {}, "contexts": {}}
    for path in paths:
        try:
            document = yaml.safe_load(path.read_text()) or {}
        except (OSError, UnicodeDecodeError) as error:
            raise KubeconfigError(f"cannot read kubeconfig {path}: {error}") from error
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(error, "problem", None) or " ".join(str(error).split())
            raise KubeconfigError(
                f"kubeconfig {path} is not valid YAML{where}: {problem}"
            ) from error
        if not isinstance(document, dict):
            raise KubeconfigError(f"kubeconfig {path} is not a kubeconfig (a YAML mapping)")
        if not result.get("current-context"):
            result["current-context"] = document.get("current-context") or None
        for section, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for entry in document.get(section) or []:
                body = dict(entry.get(inner) or {})
                result[section].setdefault(entry["name"], (body, path.parent))
    return result


def _files(kubeconfig: str | None) -> list[Path]:
    """The files to read: ``kubeconfig`` (it must exist), else those of ``$KUBECONFIG``
    that exist (one at least), else ``~/.kube/config``."""
    if kubeconfig:
        path = Path(kubeconfig).expanduser()
        if not path.exists():
            raise KubeconfigError(f"kubeconfig {path} does not exist")
        return [path]
    named = [Path(p).expanduser() for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if named:
        found = [p for p in named if p.exists()]
        if not found:
            paths = ", ".join(str(p) for p in named)
            raise KubeconfigError(f"no kubeconfig: none of $KUBECONFIG's files exists ({paths})")
        return found
    default = Path("~/.kube/config").expanduser()
    if not default.exists():
        raise KubeconfigError(f"no kubeconfig: $KUBECONFIG is not set and {default} does not exist")
    return [default]


def current_namespace(kubeconfig: str | None = None, context: str | None = None) -> str:
    """The namespace of ``context`` (default: the current context; what kubectl uses
    without ``-n``), else ``default`` (also without a kubeconfig): a command-line tool's
    default namespace."""
    import yaml  # noqa: PLC0415

    try:
        config = merged(_files(kubeconfig))
    except (KubeconfigError, OSError, yaml.YAMLError):
        return "default"
    ctx, _ = config["contexts"].get(context or config.get("current-context"), ({}, None))
    return str(ctx.get("namespace") or "default")


def _path(base: Path, value: str | None) -> str | None:
    return None if not value else str((base / Path(value).expanduser()).resolve())


def _data(value: str) -> bytes:
    return base64.b64decode(value)


async def load(
    kubeconfig: str | None = None, context: str | None = None
) -> tuple[Connection, credentials.Reload | None] | None:
    """The connection of ``context`` (default: the current one) and its token source, or
    None for a user this loader does not handle (``auth-provider``, basic auth)."""
    config = merged(_files(kubeconfig))
    name = context or config["current-context"]
    if not name:
        raise KubeconfigError("kubeconfig has no current-context (kubectl config use-context)")
    if name not in config["contexts"]:
        raise KubeconfigError(f"kubeconfig has no context {name!r}")
    ctx, _ = config["contexts"][name]
    if ctx.get("cluster") not in config["clusters"]:
        raise KubeconfigError(f"context {name!r}: no cluster {ctx.get('cluster')!r}")
    cluster, cluster_dir = config["clusters"][ctx["cluster"]]
    if not cluster.get("server"):
        raise KubeconfigError(f"cluster {ctx['cluster']!r} has no server")
    user, user_dir = config["users"].get(ctx.get("user"), ({}, Path()))
    if {"auth-provider", "username", "password"} & set(user):
        return None
    connection = Connection(
        str(cluster["server"]).rstrip("/"),
        ssl_ca_cert=_path(cluster_dir, cluster.get("certificate-authority")),
        ca_data=_data(cluster["certificate-authority-data"]).decode()
        if cluster.get("certificate-authority-data")
        else None,
        cert_file=_path(user_dir, user.get("client-certificate")),
        key_file=_path(user_dir, user.get("client-key")),
        cert_data=_data(user["client-certificate-data"])
        if user.get("client-certificate-data")
        else None,
        key_data=_data(user["client-key-data"]) if user.get("client-key-data") else None,
        verify_ssl=not cluster.get("insecure-skip-tls-verify", False),
        tls_server_name=cluster.get("tls-server-name") or None,
        proxy=cluster.get("proxy-url") or None,
    )
    source: credentials.Reload | None = None
    if user.get("exec"):
        plugin = ExecPlugin(user["exec"], user_dir)
        status = await plugin.run()
        if status.get("clientCertificateData"):
            connection.cert_data = status["clientCertificateData"].encode()
            connection.key_data = str(status.get("clientKeyData", "")).encode()
        if plugin.token:
            connection.api_key["BearerToken"] = f"Bearer {plugin.token}"
        source = plugin.reload
    elif user.get("tokenFile"):
        source = credentials.token_file(_path(user_dir, user["tokenFile"]) or "")
        connection.api_key["BearerToken"] = await source(False) or ""
    elif user.get("token"):
        connection.api_key["BearerToken"] = f"Bearer {user['token']}"
    return connection, source


class ExecPlugin:
    """A kubeconfig ``exec`` credential plugin, run again when its credential expires (or
    when forced: the API server rejected the token)."""

    def __init__(self, spec: dict[str, Any], base: Path) -> None:
        self.spec = spec
        command = str(spec["command"])
        self.command = _path(base, command) if os.sep in command else command
        self.token: str | None = None
        self.expires: float | None = None

    async def run(self) -> dict[str, Any]:
        """Run the plugin; its ExecCredential's ``status``."""
        env = {**os.environ, **{e["name"]: e["value"] for e in self.spec.get("env") or []}}
        info = {"apiVersion": self.spec.get("apiVersion"), "kind": "ExecCredential"}
        env["KUBERNETES_EXEC_INFO"] = json.dumps({**info, "spec": {"interactive": False}})
        process = await asyncio.create_subprocess_exec(
            str(self.command),
            *[str(a) for a in self.spec.get("args") or []],
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await process.communicate()
        if process.returncode != 0:
            raise KubeconfigError(
                f"exec plugin {self.command} failed ({process.returncode}): {err.decode()[:500]}"
            )
        status: dict[str, Any] = json.loads(out).get("status") or {}
        self.token = status.get("token")
        expiry = status.get("expirationTimestamp")
        self.expires = (
            datetime.fromisoformat(expiry.replace("Z", "+00:00")).timestamp() if expiry else None
        )
        return status

    async def reload(self, force: bool) -> str | None:
        """The ``Authorization`` value: run again if forced or the credential expired."""
        due = self.expires is not None and time.time() >= self.expires - _EXPIRY_MARGIN
        if force or due or self.token is None:
            await self.run()
        return f"Bearer {self.token}" if self.token else None
