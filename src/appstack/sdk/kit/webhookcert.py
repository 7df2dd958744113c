"""The admission webhooks' serving certificate, shared by every replica of an operator
through a Secret (``<project>-webhook-server-cert`` in its namespace, type
``kubernetes.io/tls`` with ``ca.crt``), so that the one CA bundle in the webhook
configurations verifies whichever replica the Service picks. Used by
:class:`appstack.sdk.kit.webhooks.WebhookServing` in-cluster.

* :meth:`SharedCertificate.obtain`: the Secret as it is, or, when there is none, a new
  self-signed certificate (:func:`appstack.runtime.issue_certificate`) created in it — two
  replicas starting together both try; the loser's create is refused (409) and it reads
  the winner's.
* :meth:`SharedCertificate.refresh`: the Secret read again; a certificate within a third of
  its lifetime from expiry (:func:`due`) is renewed by whichever replica sees it first, its
  write conditioned on the Secret's ``resourceVersion`` (a replica that loses the race
  reads the winner's). The renewed Secret's ``ca.crt`` holds the new certificate and the
  old one (while it is valid), so the CA bundle written from it verifies both while
  replicas move from one to the other.

The certificate's validity is kept in two annotations (``<domain>/webhook-cert-not-before``
and ``-not-after``), so that no replica loads ``cryptography`` to read it; a Secret
without them (or without a certificate and key) is renewed.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from appstack.runtime.client import Client
from appstack.runtime.errors import AlreadyExists, Conflict, NotFound
from appstack.runtime.resources import SECRET
from appstack.runtime.servingcert import IssuedCertificate, issue_certificate

log = structlog.get_logger(__name__)

CERT, KEY, CA = "tls.crt", "tls.key", "ca.crt"
TLS_TYPE = "kubernetes.io/tls"
#: How much of a certificate's lifetime is left when it is renewed.
RENEW_WHEN_LEFT = 1 / 3

Now = Callable[[], datetime.datetime]


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


@dataclass(frozen=True)
class Stored:
    """The certificate a Secret holds: the serving certificate and key, the CA bundle
    (``ca.crt``: the certificate, and the previous one during a rotation), its validity
    (None when the Secret does not say), the Secret's ``resourceVersion``."""

    cert: bytes
    key: bytes
    ca: bytes
    not_before: datetime.datetime | None
    not_after: datetime.datetime | None
    resource_version: str


def due(stored: Stored, now: datetime.datetime) -> bool:
    """Whether ``stored`` is to be renewed at ``now``: within a third of its lifetime from
    its end, or its validity unknown, or no certificate and key in it."""
    if not stored.cert or not stored.key or stored.not_before is None or stored.not_after is None:
        return True
    lifetime = stored.not_after - stored.not_before
    return now >= stored.not_after - lifetime * RENEW_WHEN_LEFT


class SharedCertificate:
    """The certificate in the Secret ``name`` of ``namespace``, made for ``names`` (the
    Service's DNS names) and valid ``validity`` seconds when this replica makes it;
    ``domain`` prefixes the validity annotations, ``labels`` are the Secret's. ``make``
    and ``now`` are the certificate maker and the clock (tests replace them)."""

    def __init__(
        self,
        client: Client,
        name: str,
        namespace: str,
        names: list[str],
        *,
        domain: str,
        validity: float | None = None,
        labels: Mapping[str, str] | None = None,
        make: Callable[[list[str], float | None], IssuedCertificate] = issue_certificate,
        now: Now = _utc_now,
    ) -> None:
        self.client = client
        self.name = name
        self.namespace = namespace
        self.names = names
        self.validity = validity
        self.labels = dict(labels or {})
        self.make = make
        self.now = now
        self.not_before_key = f"{domain}/webhook-cert-not-before"
        self.not_after_key = f"{domain}/webhook-cert-not-after"

    # ----------------------------------------------------------------- the Secret
    def _parse(self, secret: Mapping[str, Any]) -> Stored:
        data = secret.get("data") or {}
        meta = secret.get("metadata") or {}
        notes = meta.get("annotations") or {}

        def field(key: str) -> bytes:
            try:
                return base64.b64decode(data.get(key) or "")
            except ValueError:
                return b""

        def when(key: str) -> datetime.datetime | None:
            try:
                return datetime.datetime.fromisoformat(notes[key])
            except (KeyError, TypeError, ValueError):
                return None

        return Stored(
            field(CERT),
            field(KEY),
            field(CA),
            when(self.not_before_key),
            when(self.not_after_key),
            str(meta.get("resourceVersion") or ""),
        )

    def _secret(
        self, made: IssuedCertificate, ca: bytes, resource_version: str = ""
    ) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "name": self.name,
            "namespace": self.namespace,
            "labels": self.labels,
            "annotations": {
                self.not_before_key: made.not_before.isoformat(),
                self.not_after_key: made.not_after.isoformat(),
            },
        }
        if resource_version:
            metadata["resourceVersion"] = resource_version
        pairs = ((CERT, made.cert), (KEY, made.key), (CA, ca))
        encoded = {key: base64.b64encode(value).decode() for key, value in pairs}
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata,
            "type": TLS_TYPE,
            "data": encoded,
        }

    async def _make(self) -> IssuedCertificate:
        # a child process (≈ 0.3 s): not on the event loop
        return await asyncio.to_thread(self.make, self.names, self.validity)

    async def read(self) -> Stored:
        """The Secret as it is now (:class:`~appstack.runtime.NotFound` if there is none)."""
        return self._parse(await self.client.get(SECRET, self.name, self.namespace))

    async def obtain(self) -> Stored:
        """The shared certificate: the Secret's (renewed first if it is :func:`due`, e.g.
        a Secret without a certificate), or a new one created in it when there is none (a
        create that another replica won: the winner's)."""
        try:
            stored = await self.read()
        except NotFound:
            pass
        else:
            return stored if not due(stored, self.now()) else await self.refresh()
        made = await self._make()
        try:
            created = await self.client.create(SECRET, self._secret(made, made.cert))
        except AlreadyExists:
            log.info("webhook certificate made by another replica", secret=self.name)
            return await self.read()
        log.info("webhook certificate created", secret=self.name, not_after=str(made.not_after))
        return self._parse(created)

    async def refresh(self) -> Stored:
        """The Secret read again, and renewed first when its certificate is :func:`due`
        (the write conditioned on what was read: if another replica renewed it meanwhile,
        its certificate)."""
        stored = await self.read()
        if not due(stored, self.now()):
            return stored
        made = await self._make()
        # the old certificate stays trusted (while valid) until every replica serves the new
        still_valid = stored.not_after is not None and stored.not_after > self.now()
        ca = made.cert + (stored.cert if still_valid else b"")
        try:
            renewed = await self.client.update(
                SECRET, self._secret(made, ca, stored.resource_version)
            )
        except Conflict:
            log.info("webhook certificate renewed by another replica", secret=self.name)
            return await self.read()
        log.info("webhook certificate renewed", secret=self.name, not_after=str(made.not_after))
        return self._parse(renewed)
