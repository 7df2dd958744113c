"""Admission webhooks declared beside a controller: ``Registration(...,
webhooks=(Validator(check), Mutator(default)))`` — a validating or mutating handler in
Python for the registration's kind (the project's own, its objects parsed with the kind's
model, or any other kind), served by the operator itself
(:class:`appstack.runtime.WebhookServer`, started by :func:`appstack.sdk.operator.assemble`).

From the declarations come the runtime's :class:`~appstack.runtime.Webhook` objects
(:func:`served`, one path each) and the ``ValidatingWebhookConfiguration`` and
``MutatingWebhookConfiguration`` that send the API server there
(:func:`configurations`): the kind's group, version and resource and the declared
operations, ``admissionReviewVersions: [v1]``, ``sideEffects: None``, ``failurePolicy:
Fail``, the handler's timeout, only in the namespaces the operator serves (never its own
nor ``kube-system``), pointing at a Service (in-cluster) or at a URL (developer mode: an
operator run from a terminal against a local cluster), with the CA bundle that verifies the
operator's serving certificate.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import BaseModel, ValidationError

from appstack.core.resource import Resource
from appstack.runtime.certdata import load_cert_chain
from appstack.runtime.client import Client
from appstack.runtime.errors import ApiError, Conflict, NotFound, TransportError
from appstack.runtime.metrics import Metrics
from appstack.runtime.servingcert import self_signed
from appstack.runtime.webhook import AdmissionRequest, Answer, Webhook, WebhookServer, deny
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kind import CustomKind

#: The configurations' kinds.
VALIDATING = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    False,
)
MUTATING = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
    False,
)
NAME_LABEL = "kubernetes.io/metadata.name"

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class WebhookReview:
    """What a declared handler is asked: the runtime's ``request`` (operation, objects as
    dicts, user info, ``dry_run``), and for the project's own kinds ``object`` and
    ``old_object`` parsed with the kind's model (None for other kinds, or absent)."""

    request: AdmissionRequest
    object: BaseModel | None = None
    old_object: BaseModel | None = None

    @property
    def operation(self) -> str:
        """``CREATE``, ``UPDATE``, ``DELETE`` or ``CONNECT``."""
        return self.request.operation

    @property
    def dry_run(self) -> bool:
        """True when nothing will be stored (a handler with side effects must not act)."""
        return self.request.dry_run

    @property
    def raw(self) -> dict[str, Any] | None:
        """The object as sent (a mutating handler may change it and return it)."""
        return self.request.object


ReviewHandler = Callable[[WebhookReview], Answer | Awaitable[Answer]]


@dataclass(frozen=True)
class Validator:
    """A validating webhook of the registration's kind: ``handler(review)`` returns
    :func:`~appstack.runtime.allow` (warnings optional) or :func:`~appstack.runtime.deny`
    (a message, the field it is about); asked on ``operations``; ``name`` makes its path
    and webhook name unique when a kind has several; ``timeout`` seconds
    (``timeoutSeconds``, 1 to 30)."""

    handler: ReviewHandler
    operations: tuple[str, ...] = ("CREATE", "UPDATE")
    name: str = "validate"
    timeout: int = 10
    mutating = False


@dataclass(frozen=True)
class Mutator:
    """A mutating webhook of the registration's kind: ``handler(review)`` changes
    ``review.raw`` (a copy of the object) and returns it (or a verdict, or None: unchanged);
    the operator sends the API server the JSONPatch. Same options as :class:`Validator`."""

    handler: ReviewHandler
    operations: tuple[str, ...] = ("CREATE", "UPDATE")
    name: str = "default"
    timeout: int = 10
    mutating = True


Declaration = Validator | Mutator


def path(declaration: Declaration, resource: Resource) -> str:
    """Where the operator serves it: ``/<name>-<group, dots as dashes>-<version>-<kind>``
    (kubebuilder's ``/validate-example-com-v1-widget``; ``core`` for the core group)."""
    group = (resource.group or "core").replace(".", "-")
    return f"/{declaration.name}-{group}-{resource.version}-{resource.kind.lower()}"


def webhook_name(declaration: Declaration, resource: Resource) -> str:
    """Its name in a configuration (a domain name of three labels or more, unique):
    ``<name>.<plural>.<group>`` (``.k8s.io`` for the core group)."""
    return f"{declaration.name}.{resource.plural}.{resource.group or 'core.k8s.io'}"


def _parse(kind: CustomKind | None, obj: dict[str, Any] | None) -> BaseModel | None:
    if kind is None or obj is None:
        return None
    return kind.model.model_validate(obj)


def _field(error: ValidationError) -> tuple[str, str]:
    first = error.errors()[0]
    return ".".join(str(p) for p in first["loc"]), first["msg"]


def bind(declaration: Declaration, resource: Resource, kind: CustomKind | None) -> Webhook:
    """The runtime's webhook of ``declaration`` for ``resource`` (its objects parsed with
    ``kind``'s model when it is the project's own: an object the model refuses is denied,
    naming the field, before the handler is asked)."""

    async def handle(request: AdmissionRequest) -> Answer:
        try:
            review = WebhookReview(
                request, _parse(kind, request.object), _parse(kind, request.old_object)
            )
        except ValidationError as error:
            where, message = _field(error)
            return deny(message, field=where)
        answer = declaration.handler(review)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    return Webhook(
        path(declaration, resource),
        handle,
        mutating=declaration.mutating,
        name=webhook_name(declaration, resource),
    )


@dataclass(frozen=True)
class KindWebhook:
    """One declared webhook with what it is about: its kind (``resource``; ``kind`` when
    the project declares it) and the namespaced-ness its rule's scope follows."""

    declaration: Declaration
    resource: Resource
    kind: CustomKind | None = None


def served(declared: Sequence[KindWebhook]) -> list[Webhook]:
    """The runtime's webhooks of every declaration (what the server routes)."""
    return [bind(d.declaration, d.resource, d.kind) for d in declared]


def namespace_selector(
    identity: OperatorIdentity, *, enable_all: bool = False, own_namespace: str | None = None
) -> dict[str, Any]:
    """Which namespaces' requests are sent to the operator: the ones enabled for it (its
    label), or all with ``enable_all``; never its own namespace nor ``kube-system`` (a
    broken operator must not lock out what would repair it)."""
    excluded = sorted({"kube-system", own_namespace or identity.namespace})
    selector: dict[str, Any] = {
        "matchExpressions": [{"key": NAME_LABEL, "operator": "NotIn", "values": excluded}]
    }
    if not enable_all:
        selector["matchLabels"] = {identity.enabled_label: "true"}
    return selector


@dataclass(frozen=True)
class ClientConfig:
    """Where the API server reaches the webhooks: a Service (``namespace``/``service``,
    ``port``) in-cluster, or a ``url`` base (``https://127.0.0.1:9443``) in developer
    mode; ``ca_bundle`` the PEM that verifies the serving certificate."""

    url: str | None = None
    service: str | None = None
    namespace: str | None = None
    port: int = 443
    ca_bundle: bytes | None = None

    def at(self, webhook_path: str) -> dict[str, Any]:
        config: dict[str, Any]
        if self.url is not None:
            config = {"url": self.url.rstrip("/") + webhook_path}
        elif self.service and self.namespace:
            config = {
                "service": {
                    "namespace": self.namespace,
                    "name": self.service,
                    "path": webhook_path,
                    "port": self.port,
                }
            }
        else:
            raise ValueError("a webhook client config needs a url or a service and namespace")
        if self.ca_bundle:
            config["caBundle"] = base64.b64encode(self.ca_bundle).decode()
        return config


def configuration_names(identity: OperatorIdentity) -> dict[Resource, str]:
    """The names of the operator's two configurations (cluster-scoped, so per project)."""
    return {
        VALIDATING: f"{identity.project}-validating-webhooks",
        MUTATING: f"{identity.project}-mutating-webhooks",
    }


def configurations(
    declared: Sequence[KindWebhook],
    identity: OperatorIdentity,
    client: ClientConfig,
    *,
    selector: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The ``ValidatingWebhookConfiguration`` and ``MutatingWebhookConfiguration`` of the
    declarations (only those that have webhooks), named per :func:`configuration_names`,
    each webhook sent where ``client`` says, in the namespaces ``selector`` selects
    (default: :func:`namespace_selector`)."""
    chosen = dict(selector) if selector is not None else namespace_selector(identity)
    names = configuration_names(identity)
    made = []
    for resource, mutating in ((VALIDATING, False), (MUTATING, True)):
        hooks = [
            _webhook(d, client, chosen) for d in declared if d.declaration.mutating is mutating
        ]
        if hooks:
            made.append(
                {
                    "apiVersion": resource.api_version,
                    "kind": resource.kind,
                    "metadata": {"name": names[resource], "labels": identity.install_labels},
                    "webhooks": hooks,
                }
            )
    return made


def _webhook(d: KindWebhook, client: ClientConfig, selector: Mapping[str, Any]) -> dict[str, Any]:
    declaration, resource = d.declaration, d.resource
    if not 1 <= declaration.timeout <= 30:
        raise ValueError(f"a webhook's timeout is 1 to 30 seconds, got {declaration.timeout}")
    rule = {
        "apiGroups": [resource.group],
        "apiVersions": [resource.version],
        "resources": [resource.plural],
        "operations": list(declaration.operations),
        "scope": "Namespaced" if resource.namespaced else "Cluster",
    }
    hook: dict[str, Any] = {
        "name": webhook_name(declaration, resource),
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": declaration.timeout,
        "matchPolicy": "Equivalent",
        "rules": [rule],
        "clientConfig": client.at(path(declaration, resource)),
    }
    if resource.namespaced:
        hook["namespaceSelector"] = dict(selector)
    if declaration.mutating:
        hook["reinvocationPolicy"] = "Never"
    return hook


class WebhookServing:
    """The operator's webhooks, served and made known to the API server: a server
    (:class:`~appstack.runtime.WebhookServer`) on ``address`` with a self-signed
    certificate made at start-up (in memory) for the names the API server uses — ``host``
    in developer mode, the Service's DNS names in-cluster — and its configurations:

    * developer mode (``host``, e.g. ``127.0.0.1``): the operator applies its
      configurations itself, pointing at ``https://<host>:<port>/<path>`` with its
      certificate as the CA bundle, and deletes them when it stops (a ``Fail`` webhook
      left pointing at nothing would refuse every request it matches);
    * in-cluster (``service``, in ``namespace``): the configurations are installed with
      the operator; it writes its certificate into their ``caBundle`` (by name) at start.

    :attr:`ready` (the manager's readiness check) is true once it listens and the CA
    bundle is written."""

    def __init__(
        self,
        declared: Sequence[KindWebhook],
        identity: OperatorIdentity,
        *,
        address: str = ":9443",
        host: str | None = None,
        service: str | None = None,
        namespace: str | None = None,
        enable_all_namespaces: bool = False,
        metrics: Metrics | None = None,
        retry: float = 5.0,
    ) -> None:
        if host is None and not service:
            raise ValueError("webhooks are reached at a host (developer mode) or a Service")
        self.declared = list(declared)
        self.identity = identity
        self.host = host
        self.service = service
        self.namespace = namespace or identity.namespace
        self.selector = namespace_selector(
            identity, enable_all=enable_all_namespaces, own_namespace=self.namespace
        )
        if host is not None:
            names = [host]
        else:
            dns = f"{service}.{self.namespace}.svc"
            names = [dns, f"{dns}.cluster.local", f"{service}.{self.namespace}"]
        self.cert, key = self_signed(names)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        load_cert_chain(context, self.cert, key)
        self.server = WebhookServer(served(declared), address=address, tls=context, metrics=metrics)
        self.injected = False
        self.retry = retry
        self._retrying: asyncio.Task[None] | None = None

    def ready(self) -> bool:
        """Listening, and the API server told where and how to trust it."""
        return self.server.listening and self.injected

    def client_config(self) -> ClientConfig:
        """Where the API server reaches this server (URL or Service), with its CA bundle."""
        if self.host is not None:
            url = f"https://{self.host}:{self.server.port}"
            return ClientConfig(url=url, ca_bundle=self.cert)
        return ClientConfig(service=self.service, namespace=self.namespace, ca_bundle=self.cert)

    def configurations(self) -> list[dict[str, Any]]:
        """Its webhook configurations as they should be (:func:`configurations`)."""
        return configurations(
            self.declared, self.identity, self.client_config(), selector=self.selector
        )

    async def start(self, client: Client) -> None:
        """Listen, then tell the API server (apply the configurations, or write their CA
        bundle); while it cannot be told (not reachable, the configurations not installed
        yet), try again every :attr:`retry` seconds in the background, not ready meanwhile."""
        await self.server.start()
        if not await self._configure(client):
            self._retrying = asyncio.create_task(self._configure_until_done(client))

    async def _configure(self, client: Client) -> bool:
        kinds = {VALIDATING.kind: VALIDATING, MUTATING.kind: MUTATING}
        try:
            for configuration in self.configurations():
                resource = kinds[configuration["kind"]]
                if self.host is not None:
                    await client.apply(resource, configuration)
                else:
                    await self._inject(client, resource, configuration)
        except NotFound as error:
            log.warning("webhook configuration not installed yet", error=str(error))
            return False
        except (ApiError, TransportError) as error:
            log.warning("cannot configure the webhooks yet", error=str(error))
            return False
        self.injected = True
        log.info("webhooks configured", mode="url" if self.host else "service")
        return True

    async def _configure_until_done(self, client: Client) -> None:
        while True:
            await asyncio.sleep(self.retry)
            if await self._configure(client):
                return

    async def _inject(
        self, client: Client, resource: Resource, configuration: dict[str, Any]
    ) -> None:
        """Write the CA bundle into each of our webhooks of the installed configuration
        (read, change, replace: a conflicting write is read again)."""
        name = configuration["metadata"]["name"]
        bundle = {w["name"]: w["clientConfig"]["caBundle"] for w in configuration["webhooks"]}
        for attempt in range(5):
            installed = await client.get(resource, name)
            hooks = [h for h in installed.get("webhooks") or [] if h.get("name") in bundle]
            if all(h.get("clientConfig", {}).get("caBundle") == bundle[h["name"]] for h in hooks):
                return
            for hook in hooks:
                hook.setdefault("clientConfig", {})["caBundle"] = bundle[hook["name"]]
            try:
                await client.update(resource, installed)
                return
            except Conflict:
                if attempt == 4:
                    raise

    async def stop(self, client: Client) -> None:
        """Stop serving; in developer mode, delete the configurations it applied."""
        if self._retrying is not None:
            self._retrying.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._retrying
        await self.server.stop()
        if self.host is None:
            return
        for resource, name in configuration_names(self.identity).items():
            try:
                await client.delete(resource, name)
            except Exception as error:  # the process is ending: say so, go on
                log.warning("cannot delete a webhook configuration", name=name, error=str(error))
