"""A custom kind, declared once next to its model (as kube-derive's ``#[kube(...)]``): the
SDK's way to declare a kind of any group, for appstack's kinds and anyone's.

:func:`custom_kind` decorates the top-level model of a custom resource with what the API
server needs to serve it — group, version, kind, plural, singular, short names,
categories, scope, subresources, printer columns — as a :class:`CustomKind`, reachable as
``Model.KIND``. The CRD (:func:`appstack.sdk.crds.crd`), the controllers'
:class:`~appstack.core.resource.Resource`, their RBAC rules are all derived from it, so a
kind's names are typed in one place. Printer columns every kind can use: :data:`AGE`,
:data:`READY_REASON`, :data:`READY_MESSAGE`, :data:`WIDE_READY`. Pure, no I/O; used by
appstack's own kinds (:mod:`appstack.api`, with its group) and by operators built on the SDK.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    field_validator,
    model_validator,
)

from appstack.core.resource import Resource
from appstack.sdk import cel
from appstack.sdk.model import KubeModel
from appstack.sdk.names import NameRule

VERSION = "v1"
AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
_READY = '.status.conditions[?(@.type=="Ready")]'
READY_REASON = {"name": "Reason", "type": "string", "jsonPath": f"{_READY}.reason"}
READY_MESSAGE = {
    "name": "Message",
    "type": "string",
    "jsonPath": f"{_READY}.message",
    "priority": 1,
}
# The Ready condition's reason and message, shown by ``kubectl get -o wide``.
WIDE_READY = ({**READY_REASON, "priority": 1}, READY_MESSAGE)


@dataclass(frozen=True)
class CustomKind:
    """Everything about one custom kind: how it is routed, named, printed and validated."""

    kind: str
    plural: str
    model: type[CustomObject]
    spec: type[BaseModel]
    status: type[BaseModel]
    short_names: tuple[str, ...] = ()
    printer_columns: tuple[Mapping[str, Any], ...] = ()
    subresources: Mapping[str, Any] = field(default_factory=lambda: {"status": {}})
    categories: tuple[str, ...] = ()
    namespaced: bool = True
    group: str = ""
    version: str = VERSION
    # every version its CRD serves (:class:`appstack.sdk.versions.Version` each, set by
    # :func:`~appstack.sdk.versions.versioned_kind`), the storage one (this kind's
    # ``version``, its model the hub) included; empty: only ``version``
    versions: tuple[Any, ...] = ()

    @property
    def singular(self) -> str:
        """The CRD's singular name: the kind in lower case."""
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        """``group/version``, as objects of the kind say it."""
        return f"{self.group}/{self.version}"

    @property
    def resource(self) -> Resource:
        """The kind as the runtime addresses it (group, version, kind, plural, scope)."""
        return Resource(self.group, self.version, self.kind, self.plural, self.namespaced)

    @property
    def crd_name(self) -> str:
        """The CRD's name: ``<plural>.<group>``."""
        return f"{self.plural}.{self.group}"


class CustomObject(KubeModel):
    """Base of a custom resource's top-level model: ``apiVersion`` and ``kind`` default to
    the declared ones and must equal them; ``KIND`` is set by :func:`custom_kind`;
    ``NAME_RULES`` keep ``metadata.name`` fit for every child derived from it.

    Validating a whole object checks what admission checks, client-side: the kind's CEL
    rules (its models' ``x-kubernetes-validations`` and the name rules written in CEL) are
    evaluated as the API server evaluates them (:mod:`appstack.sdk.cel`, where its engine is
    installed), then the name rules no CEL can afford (``check``). Each error names its
    field (``spec.ports``) with the rule's message."""

    KIND: ClassVar[CustomKind]
    NAME_RULES: ClassVar[tuple[NameRule, ...]] = ()

    api_version: str = Field("", validate_default=True)
    kind: str = Field("", validate_default=True)
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: Any  # each kind's model narrows this to its spec model

    @field_validator("api_version")
    @classmethod
    def _declared_api_version(cls, value: str) -> str:
        return _declared(value, cls.KIND.api_version)

    @field_validator("kind")
    @classmethod
    def _declared_kind(cls, value: str) -> str:
        return _declared(value, cls.KIND.kind)

    @model_validator(mode="wrap")
    @classmethod
    def _admission_rules(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        try:
            obj = handler(data)
        except ValidationError as error:
            # A check beyond CEL failed in a nested model (a dependency cycle, say): if
            # admission would refuse the object, say that instead, as the API server would
            # before any reconcile. Type errors say it all.
            beyond_cel = all(e["type"] == "value_error" for e in error.errors())
            if not (beyond_cel and isinstance(data, Mapping) and cel.available()):
                raise
            found = [v for v in cel.rules_of(cls.KIND).violations(data) if not v.error]
            if not found:
                raise
            raise cel.refusal(cls.__name__, found) from None
        if cel.available():
            written = obj.model_dump(mode="json", by_alias=True, exclude_unset=True)
            found = cel.rules_of(cls.KIND).violations(written)
            if found:
                raise cel.refusal(cls.__name__, found)
        name = obj.metadata.get("name")
        for rule in cls.NAME_RULES if isinstance(name, str) else ():
            if rule.check is not None and not rule.check(str(name), obj.spec):
                raise ValueError(rule.message)
        return obj


def _declared(value: str, want: str) -> str:
    if value and value != want:
        raise ValueError(f"Input should be {want!r}")
    return want


def _model_of(model: type[BaseModel], name: str) -> type[BaseModel]:
    """The model class of field ``name`` (``X | None`` → ``X``); TypeError naming the field
    when the model has none."""
    if name not in model.model_fields:
        raise TypeError(
            f"{model.__name__} has no {name!r} field: a custom kind's model declares its "
            f"{name} model (`{name}: {model.__name__}{name.capitalize()}"
            f"{' | None = None' if name == 'status' else ''}`)"
        )
    annotation = model.model_fields[name].annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    raise TypeError(f"{model.__name__}.{name} is not a model")


ModelT = TypeVar("ModelT", bound=type[CustomObject])


def custom_kind(
    *,
    group: str,
    plural: str,
    version: str = VERSION,
    short_names: tuple[str, ...] = (),
    printer_columns: tuple[Mapping[str, Any], ...] = (),
    subresources: Mapping[str, Any] | None = None,
    namespaced: bool = True,
    categories: tuple[str, ...] = (),
    kind: str | None = None,
) -> Callable[[ModelT], ModelT]:
    """Declare the decorated model (named like its kind, with ``spec`` and ``status``
    fields) as a custom kind of API ``group`` (e.g. ``webapp.example.com``) and ``version``
    (default ``v1``); ``subresources`` default to ``status``. ``kind`` names the kind when
    the model is not named so (another version's model of the same kind, say
    ``GadgetV1alpha1``: :mod:`appstack.sdk.versions`)."""

    def declare(model: ModelT) -> ModelT:
        model.KIND = CustomKind(
            kind=kind or model.__name__,
            plural=plural,
            model=model,
            spec=_model_of(model, "spec"),
            status=_model_of(model, "status"),
            short_names=short_names,
            printer_columns=printer_columns,
            subresources=subresources if subresources is not None else {"status": {}},
            namespaced=namespaced,
            categories=categories,
            group=group,
            version=version,
        )
        return model

    return declare
