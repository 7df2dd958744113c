"""The conversion webhook of an operator's multi-version kinds, made known to the API server
in their CRDs (:mod:`appstack.sdk.versions` declares the versions and converts).

:func:`converting_kinds` picks the kinds whose versions convert; the
operator's webhook server (:class:`~appstack.sdk.kit.webhooks.WebhookServing`) serves their
``/convert`` (:func:`conversion_webhook`) and, once listening, calls :func:`point_crds`:
in developer mode (an operator run from a terminal, ``--webhook-host``) each CRD's
``spec.conversion.webhook.clientConfig`` is pointed at ``https://<host>:<port>/convert``
with the self-signed CA; in-cluster only its ``caBundle`` is written (the Service is the
installed CRD's). When a developer-mode operator stops, :func:`restore_crds` points the
CRDs it pointed at itself back at the operator's Service, as the generated CRD has it, so
that ``make install`` (which merges the generated CRD in: a ``url`` beside a ``service`` is
refused) and ``make deploy`` work after ``make run``. The RBAC this needs — ``get`` and
``patch`` of the operator's own CRDs, by name — is :func:`appstack.sdk.rbac.crd_conversion_rules`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from appstack.core.resource import Resource
from appstack.runtime.client import Client
from appstack.runtime.conversion import Conversion, ConversionError
from appstack.sdk.kind import CustomKind
from appstack.sdk.versions import CONVERT_PATH, ConversionRefused, convert_object, spokes_differ

log = structlog.get_logger(__name__)

CRDS = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)


def converting_kinds(kinds: Sequence[CustomKind]) -> list[CustomKind]:
    """Those of ``kinds`` whose versions convert (their CRDs send ConversionReviews to the
    operator), each once."""
    return list({k.crd_name: k for k in kinds if spokes_differ(k)}.values())


def conversion_webhook(kinds: Sequence[CustomKind]) -> Conversion | None:
    """The runtime's conversion webhook of the ``kinds`` whose versions convert (None if
    none does): one path, :data:`~appstack.sdk.versions.CONVERT_PATH`, dispatching on the
    object's group and kind to :func:`~appstack.sdk.versions.convert_object`; a
    :class:`~appstack.sdk.versions.ConversionRefused` is the client's message."""
    converting = {(k.group, k.kind): k for k in converting_kinds(kinds)}
    if not converting:
        return None

    def converter(obj: dict[str, Any], desired: str) -> dict[str, Any]:
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        kind = converting.get((group, str(obj.get("kind"))))
        if kind is None:
            raise ConversionError(f"this operator converts no {obj.get('kind')} of {group}")
        try:
            return convert_object(kind, obj, desired)
        except ConversionRefused as refused:
            raise ConversionError(str(refused)) from None

    return Conversion(CONVERT_PATH, converter, name="convert")


def _convert_url(url: str) -> str:
    """The conversion webhook's URL on a developer-mode server at ``url``."""
    return url.rstrip("/") + CONVERT_PATH


def _client_config(crd: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """An installed CRD's conversion strategy and its webhook's ``clientConfig`` ({} if none)."""
    conversion = crd.get("spec", {}).get("conversion") or {}
    return conversion.get("strategy"), (conversion.get("webhook") or {}).get("clientConfig") or {}


def crd_patch(url: str | None, ca_bundle: bytes | None) -> dict[str, Any]:
    """The merge patch of a CRD's conversion webhook: at ``url`` (developer mode: any
    Service dropped) or only its ``caBundle`` (in-cluster)."""
    config: dict[str, Any] = {}
    if url is not None:
        config = {"url": _convert_url(url), "service": None}
    if ca_bundle:
        config["caBundle"] = base64.b64encode(ca_bundle).decode()
    webhook = {"conversionReviewVersions": ["v1"], "clientConfig": config}
    return {"spec": {"conversion": {"strategy": "Webhook", "webhook": webhook}}}


async def point_crds(
    client: Client, kinds: Sequence[CustomKind], url: str | None, ca_bundle: bytes | None
) -> None:
    """Point every one of ``kinds``' CRDs at the conversion webhook (:func:`crd_patch`),
    patching only those not already so (a restart writes nothing). Raises what the API
    server says (NotFound: the CRD is not installed yet)."""
    patch = crd_patch(url, ca_bundle)
    want = patch["spec"]["conversion"]["webhook"]["clientConfig"]
    for kind in kinds:
        strategy, have = _client_config(await client.get(CRDS, kind.crd_name))
        if strategy == "Webhook" and all(
            have.get(k) == v for k, v in want.items() if v is not None
        ):
            continue
        await client.patch(CRDS, kind.crd_name, patch)
        log.info(
            "conversion webhook configured", crd=kind.crd_name, mode="url" if url else "service"
        )


def service_client(service: str, namespace: str) -> dict[str, Any]:
    """The ``clientConfig`` of a conversion webhook served behind the operator's Service
    ``namespace/service`` at ``/convert``: what a generated CRD names
    (:func:`appstack.sdk.config.conversion_client`)."""
    return {"service": {"namespace": namespace, "name": service, "path": CONVERT_PATH}}


async def restore_crds(
    client: Client, kinds: Sequence[CustomKind], url: str, service: dict[str, Any]
) -> list[str]:
    """Point back at ``service`` (:func:`service_client`) every one of ``kinds``' CRDs whose
    conversion webhook is still at ``url`` (developer mode's, as :func:`point_crds` left
    it: a CRD someone changed since is left alone), dropping the ``url`` and the
    developer's CA (the operator in the cluster writes its own). Returns the CRDs
    restored; raises what the API server says."""
    restored = []
    for kind in kinds:
        _, have = _client_config(await client.get(CRDS, kind.crd_name))
        if have.get("url") != _convert_url(url):
            continue
        config = {**service, "url": None, "caBundle": None}
        patch = {"spec": {"conversion": {"webhook": {"clientConfig": config}}}}
        await client.patch(CRDS, kind.crd_name, patch)
        restored.append(kind.crd_name)
    if restored:
        log.info("conversion webhook pointed back at the Service", crds=restored)
    return restored
