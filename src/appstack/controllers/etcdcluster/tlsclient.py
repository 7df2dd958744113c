"""The Secrets of an EtcdCluster's TLS, read by name, and the operator's ``SSLContext``.

:class:`TLSSecrets` reads every Secret ``spec.tls`` names (``get`` by name: the operator
may not list or watch Secrets), checks them with :func:`.tls.secret_problem`, and turns
the operator's client Secret into an :class:`ssl.SSLContext` that trusts its ``ca.crt``
and presents its ``tls.crt``/``tls.key``. Contexts are cached per Secret uid and
resourceVersion, so a Secret updated in place (certificate rotation) is picked up on the
next reconcile; at most :data:`CONTEXTS` of them, the least recently used dropped first
(a cluster deleted, or a tenant cycling Secret names, leaves nothing behind for good).
``ssl`` loads a key pair only from files: the PEM is written into a private temporary
directory (mode 0700), loaded and deleted at once. Nothing read is logged or copied
anywhere. Used by the EtcdCluster reconciler.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from appstack.api.etcdcluster import TLSSpec
from appstack.controllers.etcdcluster import tls
from appstack.runtime import SECRET, Client, NotFound, load_cert_chain
from appstack.sdk import Problem

#: Contexts kept at most (one per TLS EtcdCluster in use: about 10 KiB each).
CONTEXTS = 256


@dataclass(frozen=True)
class Checked:
    """The outcome of one read: the operator's context (None: plain clients) or why not."""

    context: ssl.SSLContext | None
    problem: Problem | None


def client_context(data: dict[str, str]) -> ssl.SSLContext:
    """A context verifying servers against ``ca.crt`` and presenting ``tls.crt``/
    ``tls.key`` (base64 values of a Secret's ``data``); raises :class:`ssl.SSLError`
    or :class:`ValueError` when they do not load."""
    pem = {key: base64.b64decode(data[key]) for key in tls.KEYS}
    context = ssl.create_default_context(cadata=pem["ca.crt"].decode())
    # no file: the operator's root filesystem is read-only (runtime/certdata.py)
    load_cert_chain(context, pem["tls.crt"], pem["tls.key"])
    return context


class TLSSecrets:
    """Reads and checks one cluster's TLS Secrets; caches the operator's context."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._contexts: OrderedDict[tuple[str, str], tuple[str, ssl.SSLContext]] = OrderedDict()

    async def _get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self.client.get(SECRET, name, namespace)
        except NotFound:
            return None

    async def check(self, namespace: str, spec: TLSSpec | None) -> Checked:
        names = tls.secret_names(spec)
        if not names:
            return Checked(None, None)
        read = await asyncio.gather(*(self._get(namespace, n) for n in names.values()))
        for (role, name), secret in zip(names.items(), read, strict=True):
            problem = tls.secret_problem(role, name, secret)
            if problem is not None:
                return Checked(None, problem)
        operator = dict(zip(names, read, strict=True)).get("operator")
        if operator is None:
            return Checked(None, None)
        meta = operator["metadata"]
        version = f"{meta.get('uid')}/{meta.get('resourceVersion')}"
        key = (namespace, meta["name"])
        cached = self._contexts.get(key)
        if cached is not None and cached[0] == version:
            self._contexts.move_to_end(key)
            return Checked(cached[1], None)
        try:
            context = client_context(operator["data"])
        except (ssl.SSLError, ValueError) as error:
            reason = getattr(error, "reason", None) or type(error).__name__
            message = f"Secret {meta['name']} (operator TLS) does not load: {reason}"
            return Checked(None, Problem("TLSSecretInvalid", message))
        self._contexts[key] = (version, context)
        self._contexts.move_to_end(key)
        while len(self._contexts) > CONTEXTS:
            self._contexts.popitem(last=False)
        return Checked(context, None)
