"""Short-lived credentials: re-read a rotated bearer token, and notice when it is rejected.

kubernetes_asyncio reads a kubeconfig ``tokenFile`` once, runs an exec plugin again only
when its credential has expired, and re-reads the in-cluster (projected ServiceAccount)
token once a minute but not after a 401. Like client-go, :class:`Credentials` re-reads
every :data:`REFRESH_PERIOD` and whenever the API server answers 401 (the client then
retries the request once if the token changed). It is installed as the configuration's
``refresh_api_key_hook``, which the client awaits before every request.

It also keeps the time since the API server started rejecting us (401 on any request,
403 on a read — list/watch), cleared by the next authenticated answer below 500; the manager's
``/healthz`` fails once that lasts longer than a threshold, so the kubelet restarts the
process instead of letting it loop silently. Used by :mod:`appstack.runtime.client`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger(__name__)

REFRESH_PERIOD = 60.0
IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"  # noqa: S105 - a path

#: ``reload(force)`` -> the ``Authorization`` value (``"Bearer ..."``) or None.
Reload = Callable[[bool], Awaitable[str | None]]


class Credentials:
    """The token source of one client configuration, and whether the server accepts it."""

    def __init__(
        self,
        reload: Reload | None = None,
        *,
        period: float = REFRESH_PERIOD,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reload = reload
        self._period = period
        self._clock = clock
        self._loaded_at = clock()
        self._configuration: Any = None
        self._rejected_since: float | None = None

    @classmethod
    def install(cls, configuration: Any, reload: Reload | None) -> Credentials:
        """Make a new instance the ``refresh_api_key_hook`` of ``configuration``."""
        credentials = cls(reload)
        credentials._configuration = configuration
        configuration.refresh_api_key_hook = credentials
        return credentials

    @classmethod
    def of(cls, configuration: Any) -> Credentials:
        """The instance installed on ``configuration`` (a static one if none is)."""
        hook = getattr(configuration, "refresh_api_key_hook", None)
        return hook if isinstance(hook, Credentials) else cls.install(configuration, None)

    async def __call__(self, configuration: Any) -> None:
        """The hook: re-read the token when it is older than the refresh period."""
        if self._reload is not None and self._clock() - self._loaded_at >= self._period:
            await self._load(force=False)

    async def reload(self) -> bool:
        """Re-read the token now (after a 401); True if it changed."""
        return await self._load(force=True)

    def observe(self, method: str, status: int) -> None:
        """Record one response's status (401 anywhere, or 403 on a read, is a rejection)."""
        if status == 401 or (status == 403 and method == "GET"):
            if self._rejected_since is None:
                self._rejected_since = self._clock()
                log.warning("the API server rejected our credentials", status=status)
        elif status < 500:  # authenticated (even if then not found, conflict, forbidden...)
            self._rejected_since = None

    def rejected_for(self) -> float:
        """Seconds since the API server started rejecting us (0 while it accepts us)."""
        return 0.0 if self._rejected_since is None else self._clock() - self._rejected_since

    async def _load(self, *, force: bool) -> bool:
        if self._reload is None:
            return False
        self._loaded_at = self._clock()
        try:
            token = await self._reload(force)
        except Exception as error:  # keep the old token, say why
            log.warning("could not re-read the credentials", error=str(error))
            return False
        keys = self._configuration.api_key
        if not token or keys.get("BearerToken") == token:
            return False
        keys["BearerToken"] = token
        log.info("credentials re-read: the token changed")
        return True


def token_file(path: str) -> Reload:
    """Re-read a token file (a projected ServiceAccount token, or kubeconfig ``tokenFile``)."""

    async def reload(_force: bool) -> str | None:
        token = Path(path).read_text().strip()
        return f"Bearer {token}" if token else None

    return reload


def from_kubeconfig(loader: Any) -> Reload | None:
    """The token source of a kubernetes_asyncio ``KubeConfigLoader``'s user, if it has one
    that can change: an exec plugin (run again when expired, or forced after a 401) or a
    ``tokenFile`` (read again)."""
    user = getattr(loader, "_user", None)
    if not user:
        return None
    if "exec" in user:

        async def run_plugin(force: bool) -> str | None:
            if force and hasattr(loader, "exec_plugin_expiry"):
                del loader.exec_plugin_expiry
            await loader.load_from_exec_plugin()
            return getattr(loader, "token", None)

        return run_plugin
    if "tokenFile" in user:

        async def read_file(_force: bool) -> str | None:
            loader._load_user_token()
            return getattr(loader, "token", None)

        return read_file
    return None
