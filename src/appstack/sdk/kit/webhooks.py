"""Admission webhooks declared beside a controller: ``Registration(...,
webhooks=(Validator(check), Mutator(default)))`` — a validating or mutating handler in
Python for the registration's kind (the project's own, its objects parsed with the kind's
model, or any other kind), served by the operator itself
(:class:`appstack.runtime.WebhookServer`, started by :func:`appstack.sdk.operator.assemble`).

From the declarations come the runtime's :class:`~appstack.runtime.Webhook` objects
(:func:`served`, one path each) and the ``ValidatingWebhookConfiguration`` and
``MutatingWebhookConfiguration`` that send the API server there
(:func:`configurations`): the kind's group, version and resource and the declared
operations, ``admissionReviewVersions: [v1]``, ``sideEffects: None``, the declared
``failurePolicy`` (``Fail`` by default), the handler's timeout, only in the namespaces the
operator serves (never its own nor ``kube-system``), pointing at a Service (in-cluster) or
at a URL (developer mode: an operator run from a terminal against a local cluster), with
the CA bundle that verifies the operator's serving certificate.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import structlog
from pydantic import BaseModel, ValidationError

from appstack.core.resource import Resource
from appstack.runtime.certdata import load_cert_chain
from appstack.runtime.client import Client
from appstack.runtime.errors import ApiError, Conflict, NotFound, TransportError
from appstack.runtime.metrics import Metrics
from appstack.runtime.servingcert import CertFiles, self_signed, tls_server_context
from appstack.runtime.webhook import AdmissionRequest, Answer, Webhook, WebhookServer, deny
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kind import CustomKind
from appstack.sdk.kit.conversion import (
    conversion_webhook,
    point_crds,
    restore_crds,
    service_client,
)
from appstack.sdk.kit.webhookcert import SharedCertificate, Stored

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
#: cert-manager's CA injector writes the caBundle of a configuration annotated so.
INJECT_CA_FROM = "cert-manager.io/inject-ca-from"

log = structlog.get_logger(__name__)
Obj = dict[str, Any]


class WebhookReader:
    """What a webhook handler reads other objects with (:attr:`WebhookReview.client`): the
    operator's client, for ``get`` and ``list`` only — a webhook has no side effects (its
    configuration says ``sideEffects: None``, and a dry run is asked too), so it cannot
    write. Under the operator's RBAC: it reads what the operator may read."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        """One object; :class:`~appstack.runtime.NotFound` if it does not exist."""
        return await self._client.get(resource, name, namespace)

    async def list(
        self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None
    ) -> list[Obj]:
        """Every object of ``resource`` (in ``namespace``; those ``label_selector`` selects)."""
        items, _ = await self._client.list(resource, namespace, label_selector=label_selector)
        return items


@dataclass(frozen=True)
class WebhookReview:
    """What a declared handler is asked: the runtime's ``request`` (operation, objects as
    dicts, user info, ``dry_run``), and for the project's own kinds ``object`` and
    ``old_object`` parsed with the kind's model (None for other kinds, or absent); and
    ``client``, a :class:`WebhookReader` of other objects (the operator's; None where no client
    is at hand, as in a unit test that gives none): what a check no CEL rule can make
    reads — another object of the namespace, a referenced Secret. Reading needs a coroutine
    handler (``async def``)."""

    request: AdmissionRequest
    object: BaseModel | None = None
    old_object: BaseModel | None = None
    client: WebhookReader | None = None

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
    (``timeoutSeconds``, 1 to 30: the operator answers with a timeout error a little
    before, see :func:`handler_timeout`); ``failure_policy`` what the API server does when
    the operator cannot be called (down, unreachable, too slow): ``Fail`` refuses the
    request, ``Ignore`` admits it unchecked."""

    handler: ReviewHandler
    operations: tuple[str, ...] = ("CREATE", "UPDATE")
    name: str = "validate"
    timeout: int = 10
    failure_policy: str = "Fail"
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
    failure_policy: str = "Fail"
    mutating = True


Declaration = Validator | Mutator
#: The API server's choices when a webhook cannot be called.
FAILURE_POLICIES = ("Fail", "Ignore")


def handler_timeout(declaration: Declaration) -> float:
    """Seconds the operator gives the handler: a little less than the ``timeoutSeconds``
    the API server waits (a quarter of it, at most one second, kept for the network), so
    that a slow handler is answered with the operator's own message ("did not answer
    within ...") rather than the API server's "context deadline exceeded"."""
    return declaration.timeout - min(1.0, declaration.timeout / 4)


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


def bind(
    declaration: Declaration,
    resource: Resource,
    kind: CustomKind | None,
    client: Callable[[], Client | None] = lambda: None,
) -> Webhook:
    """The runtime's webhook of ``declaration`` for ``resource`` (its objects parsed with
    ``kind``'s model when it is the project's own: an object the model refuses is denied,
    naming the field, before the handler is asked); ``client()``, the client its reviews
    read other objects with, if any yet."""

    async def handle(request: AdmissionRequest) -> Answer:
        current = client()
        try:
            review = WebhookReview(
                request,
                _parse(kind, request.object),
                _parse(kind, request.old_object),
                WebhookReader(current) if current is not None else None,
            )
        except ValidationError as error:
            where, message = _field(error)
            return deny(message, field=where)
        handler: Callable[[WebhookReview], Any] = declaration.handler
        if inspect.iscoroutinefunction(handler):
            answer = await handler(review)
        else:  # in a worker thread: the event loop (the reconcilers, the other requests)
            # never waits for a plain function, and its timeout holds
            answer = await asyncio.to_thread(handler, review)
            if inspect.isawaitable(answer):
                answer = await answer
        return cast(Answer, answer)

    return Webhook(
        path(declaration, resource),
        handle,
        mutating=declaration.mutating,
        name=webhook_name(declaration, resource),
        timeout=handler_timeout(declaration),
    )


@dataclass(frozen=True)
class KindWebhook:
    """One declared webhook with what it is about: its kind (``resource``; ``kind`` when
    the project declares it) and the namespaced-ness its rule's scope follows."""

    declaration: Declaration
    resource: Resource
    kind: CustomKind | None = None


def served(
    declared: Sequence[KindWebhook], client: Callable[[], Client | None] = lambda: None
) -> list[Webhook]:
    """The runtime's webhooks of every declaration (what the server routes), their reviews
    reading with ``client()``."""
    return [bind(d.declaration, d.resource, d.kind, client) for d in declared]


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
    names: Mapping[Resource, str] | None = None,
    inject_ca_from: str | None = None,
) -> list[dict[str, Any]]:
    """The ``ValidatingWebhookConfiguration`` and ``MutatingWebhookConfiguration`` of the
    declarations (only those that have webhooks), named per :func:`configuration_names`
    (or ``names``), each webhook sent where ``client`` says, in the namespaces
    ``selector`` selects (default: :func:`namespace_selector`). ``inject_ca_from``
    (``<namespace>/<Certificate>``) annotates them for cert-manager's CA injector, which
    then writes the ``caBundle`` (kubebuilder's ``cert-manager.io/inject-ca-from``)."""
    chosen = dict(selector) if selector is not None else namespace_selector(identity)
    names = names or configuration_names(identity)
    metadata_extra: dict[str, Any] = (
        {"annotations": {INJECT_CA_FROM: inject_ca_from}} if inject_ca_from else {}
    )
    made = []
    for resource, mutating in ((VALIDATING, False), (MUTATING, True)):
        metadata: dict[str, Any] = {"name": names[resource], **metadata_extra}
        metadata["labels"] = identity.install_labels
        hooks = [
            _webhook(d, client, chosen) for d in declared if d.declaration.mutating is mutating
        ]
        if hooks:
            made.append(
                {
                    "apiVersion": resource.api_version,
                    "kind": resource.kind,
                    "metadata": metadata,
                    "webhooks": hooks,
                }
            )
    return made


def _webhook(d: KindWebhook, client: ClientConfig, selector: Mapping[str, Any]) -> dict[str, Any]:
    declaration, resource = d.declaration, d.resource
    if not 1 <= declaration.timeout <= 30:
        raise ValueError(f"a webhook's timeout is 1 to 30 seconds, got {declaration.timeout}")
    if declaration.failure_policy not in FAILURE_POLICIES:
        raise ValueError(
            f"a webhook's failure_policy is Fail or Ignore, got {declaration.failure_policy!r}"
        )
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
        "failurePolicy": declaration.failure_policy,
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


def secret_name(identity: OperatorIdentity) -> str:
    """The Secret the replicas share their serving certificate in (in-cluster mode)."""
    return f"{identity.project}-webhook-server-cert"


class WebhookServing:
    """The operator's webhooks, served and made known to the API server: a server
    (:class:`~appstack.runtime.WebhookServer`) on ``address`` and its configurations, in
    one of three modes:

    * developer mode (``host``, e.g. ``127.0.0.1``): a self-signed certificate made at
      start-up (in memory) for ``host``; the operator applies its configurations itself,
      pointing at ``https://<host>:<port>/<path>`` with its certificate as the CA bundle,
      and deletes them when it stops (a ``Fail`` webhook left pointing at nothing would
      refuse every request it matches);
    * in-cluster (``service``, in ``namespace``): the certificate every replica shares,
      in the Secret :func:`secret_name` (:class:`~.webhookcert.SharedCertificate`: made
      by the first replica, valid ``cert_validity`` seconds, default a year, renewed a
      third of its lifetime before it ends); the configurations are installed with the
      operator and each replica writes the Secret's CA bundle into their ``caBundle`` (by
      name). Every ``check`` seconds the Secret is read again; a changed one is written
      into the ``caBundle`` first (the old certificate kept in it), then, ``grace``
      seconds later, served — without a restart, no request refused meanwhile;
    * in-cluster with a mounted certificate (``cert_dir``: ``tls.crt``, ``tls.key``, e.g.
      cert-manager's Secret): served and reloaded when the files change; the ``caBundle``
      is left to whoever made it (cert-manager's CA injector).

    :attr:`ready` (the manager's readiness check) is true once it listens and the API
    server is told how to trust it."""

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
        cert_dir: str | None = None,
        cert_validity: float | None = None,
        check: float | None = None,
        grace: float = 2.0,
        conversions: Sequence[CustomKind] = (),
    ) -> None:
        if host is None and not service:
            raise ValueError("webhooks are reached at a host (developer mode) or a Service")
        if host is not None and cert_dir:
            raise ValueError(
                "a mounted webhook certificate is for in-cluster mode, not --webhook-host"
            )
        self.declared = list(declared)
        self.identity = identity
        self.host = host
        self.service = service
        self.namespace = namespace or identity.namespace
        self.selector = namespace_selector(
            identity, enable_all=enable_all_namespaces, own_namespace=self.namespace
        )
        self.cert_files = CertFiles(cert_dir, "webhook") if cert_dir else None
        context = self.cert_files.context if self.cert_files else tls_server_context()
        #: the certificate served (PEM; None with a mounted one) and the CA bundle written
        self.cert: bytes | None = None
        self.ca: bytes | None = None
        self.cert_validity = cert_validity
        if check is None:
            check = min(60.0, max(1.0, (cert_validity or 3600.0) / 20))
        self.check = check
        self.grace = grace
        self.secret = secret_name(identity)
        self.shared: SharedCertificate | None = None
        self.served_version = ""
        if host is not None:
            self.cert, key = self_signed([host])
            self.ca = self.cert
            load_cert_chain(context, self.cert, key)
        self.context = context
        #: the kinds whose CRDs send their ConversionReviews here (:mod:`.conversion`)
        self.converting = list(conversions)
        convert = conversion_webhook(self.converting)
        #: the client the handlers read with (the one :meth:`start` is given)
        self.client: Client | None = None
        self.server = WebhookServer(
            served(declared, lambda: self.client),
            address=address,
            tls=context,
            metrics=metrics,
            conversions=[convert] if convert else [],
        )
        self.injected = False
        #: the URL the CRDs' conversion webhook was pointed at (developer mode), if it was
        self.pointed: str | None = None
        self.retry = retry
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def names(self) -> list[str]:
        """The names the serving certificate is for: the host, or the Service's DNS names."""
        if self.host is not None:
            return [self.host]
        dns = f"{self.service}.{self.namespace}.svc"
        return [dns, f"{dns}.cluster.local", f"{self.service}.{self.namespace}"]

    def ready(self) -> bool:
        """Listening, and the API server told where and how to trust it."""
        return self.server.listening and self.injected

    def client_config(self) -> ClientConfig:
        """Where the API server reaches this server (URL or Service), with its CA bundle
        (none with a mounted certificate: cert-manager injects it)."""
        if self.host is not None:
            url = f"https://{self.host}:{self.server.port}"
            return ClientConfig(url=url, ca_bundle=self.ca)
        return ClientConfig(service=self.service, namespace=self.namespace, ca_bundle=self.ca)

    def configurations(self) -> list[dict[str, Any]]:
        """Its webhook configurations as they should be (:func:`configurations`)."""
        return configurations(
            self.declared, self.identity, self.client_config(), selector=self.selector
        )

    async def start(self, client: Client) -> None:
        """Have a certificate, listen, then tell the API server (apply the configurations,
        or write their CA bundle); what cannot be done yet (the API server not reachable,
        the configurations not installed yet) is tried again every :attr:`retry` seconds in
        the background, not ready meanwhile. Then, until :meth:`stop`, keep the
        certificate current (the shared Secret, or the mounted files)."""
        self.client = client
        if self.host is None and self.cert_files is None:
            self.shared = SharedCertificate(
                client,
                self.secret,
                self.namespace,
                self.names,
                domain=self.identity.domain,
                validity=self.cert_validity,
                labels=self.identity.install_labels,
            )
        configured = await self._serve(client) and await self._configure(client)
        self._tasks.append(asyncio.create_task(self._maintain(client, configured)))

    async def _serve(self, client: Client) -> bool:
        """Listen, once a certificate is loaded (the shared one obtained first)."""
        if self.shared is not None and self.cert is None:
            try:
                stored = await self.shared.obtain()
                self._load(stored)
            except (ApiError, TransportError, ssl.SSLError) as error:
                log.warning("cannot obtain the webhook certificate yet", error=str(error))
                return False
            self.ca = stored.ca or stored.cert
        await self.server.start()
        return True

    def _load(self, stored: Stored) -> None:
        load_cert_chain(self.context, stored.cert, stored.key)
        self.cert, self.served_version = stored.cert, stored.resource_version

    async def _maintain(self, client: Client, configured: bool) -> None:
        while not self.server.listening:
            await asyncio.sleep(self.retry)
            await self._serve(client)
        while not configured:
            await asyncio.sleep(self.retry)
            configured = await self._configure(client)
        if self.cert_files is not None:
            await self.cert_files.watch(self.check)
        while self.shared is not None:
            await asyncio.sleep(self.check)
            try:
                await self._rotate(client, await self.shared.refresh())
            except (ApiError, TransportError, ssl.SSLError) as error:
                log.warning("cannot check the webhook certificate", error=str(error))

    async def _rotate(self, client: Client, stored: Stored) -> None:
        """Serve ``stored`` if it is not what is served: its CA bundle (the new certificate
        and the old) written first, the new certificate served :attr:`grace` seconds later
        (what the API server needs to see the new bundle)."""
        if stored.resource_version == self.served_version or stored.cert == self.cert:
            self.served_version = stored.resource_version
            return
        self.ca = stored.ca or stored.cert
        if not await self._configure(client):
            return  # tried again at the next check; the old certificate is served meanwhile
        await asyncio.sleep(self.grace)
        self._load(stored)
        log.info("webhook certificate reloaded", secret=self.secret)

    async def _configure(self, client: Client) -> bool:
        if self.cert_files is not None:  # cert-manager's CA injector writes the caBundle
            self.injected = True
            return True
        kinds = {VALIDATING.kind: VALIDATING, MUTATING.kind: MUTATING}
        try:
            for configuration in self.configurations():
                resource = kinds[configuration["kind"]]
                if self.host is not None:
                    await client.apply(resource, configuration)
                else:
                    await self._inject(client, resource, configuration)
            if self.converting:  # the conversion webhook: in the kinds' own CRDs
                url = self.client_config().url
                await point_crds(client, self.converting, url, self.ca)
                self.pointed = url
        except NotFound as error:
            log.warning("webhook configuration not installed yet", error=str(error))
            return False
        except (ApiError, TransportError) as error:
            log.warning("cannot configure the webhooks yet", error=str(error))
            return False
        if not self.injected:
            log.info("webhooks configured", mode="url" if self.host else "service")
        self.injected = True
        return True

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
        """Stop serving; in developer mode, delete the configurations it applied and point
        the CRDs it pointed at itself back at the Service (:func:`restore_crds`)."""
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        await self.server.stop()
        if self.host is None:
            return
        for resource, name in configuration_names(self.identity).items():
            try:
                await client.delete(resource, name)
            except Exception as error:  # the process is ending: say so, go on
                log.warning("cannot delete a webhook configuration", name=name, error=str(error))
        if self.pointed and self.service:
            service = service_client(self.service, self.namespace)
            try:
                await restore_crds(client, self.converting, self.pointed, service)
            except Exception as error:  # the process is ending: say so, go on
                log.warning(
                    "cannot point the CRDs' conversion webhook back at the Service; "
                    "`kubectl replace -k config/crd` does",
                    error=str(error),
                )
