"""Several versions of one custom kind, and the conversion between them (kubebuilder's hub
and spokes, in Python on typed models): what lets an operator grow ``v1alpha1`` into ``v1``
without hand-editing its CRD.

Each version is a model declared with :func:`~appstack.sdk.kind.custom_kind` (same group,
plural and kind; ``kind=`` names it when the class is named ``GadgetV1alpha1``), listed in
a :class:`Version`: ``served``, ``storage`` (exactly one: the *hub*, what is stored and what
controllers reconcile), ``deprecated`` with its ``warning``, and for every other version
(a *spoke*) its two functions, ``to_hub(spoke) -> hub`` and ``from_hub(hub) -> spoke``.
:func:`versioned_kind` checks the declaration (refusing it with one clear sentence) and
makes the hub model's ``KIND`` carry every version: its CRD (:func:`appstack.sdk.crds.crd`)
then serves them all, with ``spec.conversion`` a webhook when their schemas differ.

What a spoke cannot express is kept in an annotation by its functions (:func:`stash` in
``from_hub``, :func:`unstash` in ``to_hub``), so that hub → spoke → hub loses nothing.
:func:`copy_to_hub` and :func:`copy_from_hub` are such functions for versions whose fields
of the same name mean the same (what ``appstack create api`` scaffolds for a new version):
spec and status copied field by field, what either side lacks kept in an annotation of the
other, so that a round trip either way is lossless.
:func:`convert_object` is the conversion the operator serves at ``/convert``
(:func:`appstack.sdk.kit.conversion.conversion_webhook`), pure and unit-tested. Used by
operators built on the SDK (and :mod:`appstack.sdk.kit`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from appstack.sdk.kind import CustomKind, CustomObject
from appstack.sdk.schema import root_schema

#: Where the API server sends ConversionReviews (controller-runtime's path).
CONVERT_PATH = "/convert"


class VersionError(ValueError):
    """A kind's versions declared wrong (said in one sentence)."""


class ConversionRefused(ValueError):
    """An object that cannot be converted, said in one sentence the client is shown (a
    conversion function may raise it; so does :func:`convert_object`)."""


@dataclass(frozen=True)
class Version:
    """One version of a kind: its ``model`` (declared with
    :func:`~appstack.sdk.kind.custom_kind` at that version), whether it is ``served``, the
    ``storage`` version (the hub), ``deprecated`` with the ``warning`` clients are shown,
    and — a spoke — ``to_hub`` and ``from_hub``, its conversions to and from the hub's
    model (each gets a typed object and returns one)."""

    model: type[CustomObject]
    storage: bool = False
    served: bool = True
    deprecated: bool = False
    warning: str | None = None
    to_hub: Callable[[Any], Any] | None = None
    from_hub: Callable[[Any], Any] | None = None

    @property
    def kind(self) -> CustomKind:
        """The kind as its model declares it (this version only)."""
        return self.model.KIND

    @property
    def name(self) -> str:
        """The version's name (``v1alpha1``)."""
        return self.model.KIND.version

    @property
    def schema(self) -> dict[str, Any]:
        """Its ``openAPIV3Schema``."""
        kind = self.kind
        return root_schema(kind.model, kind.spec, kind.status)


def _refuse(kind: str, why: str) -> VersionError:
    return VersionError(f"kind {kind}: {why}")


def versioned_kind(*versions: Version) -> CustomKind:
    """The kind of several ``versions`` (refused with a :class:`VersionError` when they
    are not one kind with exactly one served storage version, each spoke whose schema
    differs from the hub's converting both ways). The hub model's ``KIND`` becomes the
    returned kind (its CRD serves every version; controllers reconcile the hub)."""
    if not versions:
        raise VersionError("a kind needs at least one version")
    for version in versions:
        if not isinstance(getattr(version.model, "KIND", None), CustomKind):
            raise VersionError(
                f"{version.model.__name__} is not a declared kind: decorate it with custom_kind"
            )
    _one_kind(versions)
    hub = _hub(versions)
    name = hub.kind.kind
    hub_schema = hub.schema
    for version in versions:
        if version.warning and not version.deprecated:
            raise _refuse(name, f"version {version.name} has a warning but is not deprecated")
        if version is hub:
            continue
        missing = [f for f in ("to_hub", "from_hub") if getattr(version, f) is None]
        if missing and (version.to_hub or version.from_hub or version.schema != hub_schema):
            raise _refuse(
                name,
                f"version {version.name} differs from the storage version {hub.name} but "
                f"has no {' nor '.join(missing)}: give it both conversion functions",
            )
    kind = dataclasses.replace(hub.kind, versions=tuple(versions))
    hub.model.KIND = kind
    return kind


def _one_kind(versions: Sequence[Version]) -> None:
    first = versions[0].kind
    name = first.kind
    for version in versions[1:]:
        other = version.kind
        if (other.kind, other.group, other.plural, other.namespaced) != (
            first.kind,
            first.group,
            first.plural,
            first.namespaced,
        ):
            raise _refuse(
                name,
                f"{version.model.__name__} declares {other.plural}.{other.group} "
                f"({other.kind}), not {first.plural}.{first.group}: every version has the "
                "same kind, group, plural and scope (custom_kind(kind=...) names the kind)",
            )
    names = [v.name for v in versions]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise _refuse(name, f"version {twice[0]} is declared twice")


def _hub(versions: Sequence[Version]) -> Version:
    name = versions[0].kind.kind
    storage = [v for v in versions if v.storage]
    if not storage:
        raise _refuse(
            name, "no version is the storage version: mark exactly one Version(storage=True)"
        )
    if len(storage) > 1:
        raise _refuse(
            name,
            f"{len(storage)} storage versions ({', '.join(v.name for v in storage)}): "
            "exactly one is stored",
        )
    hub = storage[0]
    if not hub.served:
        raise _refuse(name, f"the storage version {hub.name} must be served")
    if hub.to_hub or hub.from_hub:
        raise _refuse(name, f"the storage version {hub.name} is the hub: it converts nothing")
    return hub


def spokes_differ(kind: CustomKind) -> bool:
    """Whether the kind needs a conversion webhook: some spoke converts (its schema, or
    its functions, differ from the hub's)."""
    return any(v.to_hub is not None for v in kind.versions)


# ------------------------------------------------------------------ lossless round trips
def _annotation(obj: CustomObject, key: str) -> str:
    return f"conversion.{obj.KIND.group}/{key}"


def stash(obj: CustomObject, key: str, value: Any) -> None:
    """In ``from_hub``: keep ``value`` (what the spoke cannot express; JSON) in an
    annotation of the spoke ``obj``, for :func:`unstash` to restore in ``to_hub``. None
    keeps nothing."""
    if value is None:
        return
    annotations = obj.metadata.setdefault("annotations", {})
    annotations[_annotation(obj, key)] = json.dumps(value, sort_keys=True)


def unstash(obj: CustomObject, key: str, default: Any = None) -> Any:
    """In ``to_hub``: the value :func:`stash` kept under ``key`` in the spoke ``obj``
    (``default`` if none), removed from its annotations (the hub does not carry it)."""
    annotations = obj.metadata.get("annotations") or {}
    raw = annotations.pop(_annotation(obj, key), None)
    if not annotations:
        obj.metadata.pop("annotations", None)
    if raw is None:
        return default
    try:
        return json.loads(raw)
    except ValueError as error:
        raise ConversionRefused(
            f"annotation {_annotation(obj, key)} is not what conversion kept: {error}"
        ) from None


# ------------------------------------------------------------ field-by-field conversion
_Target = TypeVar("_Target", bound=CustomObject)

#: The key (:func:`stash`) under which a spoke keeps what the hub has and it lacks.
HUB_FIELDS = "hub-fields"


def spoke_fields_annotation(group: str, version: str) -> str:
    """The annotation of a stored (hub) object keeping what the spoke ``version`` says and
    the hub has no field for (:func:`copy_to_hub`): not under ``conversion.<group>/``,
    which the hub never carries."""
    return f"{group}/{version}-fields"


def _wire_names(model: type[BaseModel] | None) -> set[str]:
    if model is None:
        return set()
    return {info.alias or name for name, info in model.model_fields.items()}


def _kept(obj: CustomObject, annotation: str) -> dict[str, Any]:
    raw = (obj.metadata.get("annotations") or {}).pop(annotation, None)
    if not obj.metadata.get("annotations"):
        obj.metadata.pop("annotations", None)
    if raw is None:
        return {}
    try:
        kept = json.loads(raw)
    except ValueError as error:
        raise ConversionRefused(
            f"annotation {annotation} is not what conversion kept: {error}"
        ) from None
    if not isinstance(kept, dict):
        raise ConversionRefused(f"annotation {annotation} is not what conversion kept")
    return kept


def _defaults(model: type[BaseModel] | None) -> dict[str, Any]:
    """The wire names and default values (as on the wire) of ``model``'s fields that have
    one."""
    if model is None:
        return {}
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if info.is_required():
            continue
        value = info.get_default(call_default_factory=True)
        out[info.alias or name] = (
            value.model_dump(mode="json", by_alias=True, exclude_none=True)
            if isinstance(value, BaseModel)
            else value
        )
    return out


def _copied(
    obj: CustomObject,
    model: type[_Target],
    kept: Mapping[str, Any],
    renamed: Mapping[str, str],
) -> tuple[_Target, dict[str, Any]]:
    """``obj`` as ``model`` — spec and status field by field (wire names; the spec's
    ``renamed`` ones under their new name), ``kept`` (by part) under them — and, by part,
    the fields ``model`` has none of and whose value is not their default in ``obj``'s
    model (a default needs no keeping: the way back fills it in again)."""
    target = model.KIND
    data = obj.to_dict()
    parts: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for part, part_model, source_model in (
        ("spec", target.spec, obj.KIND.spec),
        ("status", target.status, obj.KIND.status),
    ):
        values = data.get(part)
        if part == "spec" and values:
            values = {renamed.get(k, k): v for k, v in values.items()}
        names = _wire_names(part_model)
        defaults = _defaults(source_model)
        own = {k: v for k, v in (values or {}).items() if k in names}
        extra = {
            k: v
            for k, v in (values or {}).items()
            if k not in names and not (k in defaults and defaults[k] == v)
        }
        merged = {**(kept.get(part) or {}), **own}
        if values is not None or merged:
            parts[part] = merged
        if extra:
            rest[part] = extra
    try:
        made = model.model_validate({"metadata": obj.metadata, **parts})
    except ValidationError as error:
        raise ConversionRefused(
            f"not a valid {target.api_version}: {_field_error(error)} (a field whose "
            "meaning differs between versions needs its own line in the conversion)"
        ) from None
    return made, rest


def copy_to_hub(
    spoke: CustomObject, hub: type[_Target], renamed: Mapping[str, str] | None = None
) -> _Target:
    """``spoke`` as the ``hub``'s model (a ``to_hub``): spec and status copied field by
    field (same wire name, same meaning; ``renamed`` the spec's fields the hub calls
    otherwise, the spoke's wire name to the hub's: ``{"size": "replicas"}``), the hub's
    fields the spoke lacked restored from what :func:`copy_from_hub` kept, and the spoke's
    fields the hub lacks kept in an annotation of the hub object,
    ``<group>/<spoke version>-fields`` (unless they hold their default).
    :class:`ConversionRefused` when a copied value does not fit the hub's model. ``spoke``
    is left as it was."""
    source = spoke.model_copy(deep=True)
    kept = _kept(source, _annotation(source, HUB_FIELDS))
    annotation = spoke_fields_annotation(spoke.KIND.group, spoke.KIND.version)
    _kept(source, annotation)  # what a client wrote there is not the hub's to keep
    made, rest = _copied(source, hub, kept, renamed or {})
    if rest:
        annotations = made.metadata.setdefault("annotations", {})
        annotations[annotation] = json.dumps(rest, sort_keys=True)
    return made


def copy_from_hub(
    hub: CustomObject, spoke: type[_Target], renamed: Mapping[str, str] | None = None
) -> _Target:
    """``hub`` as the ``spoke``'s model (a ``from_hub``): spec and status copied field by
    field (``renamed`` as :func:`copy_to_hub`'s, the same mapping: spoke's name to the
    hub's), the spoke's fields the hub lacks restored from what :func:`copy_to_hub` kept,
    and the hub's fields the spoke lacks stashed (:func:`stash`) for the way back.
    :class:`ConversionRefused` when a copied value does not fit the spoke's model. ``hub``
    is left as it was."""
    source = hub.model_copy(deep=True)
    kept = _kept(source, spoke_fields_annotation(spoke.KIND.group, spoke.KIND.version))
    back = {hub_name: name for name, hub_name in (renamed or {}).items()}
    made, rest = _copied(source, spoke, kept, back)
    stash(made, HUB_FIELDS, rest or None)
    return made


# -------------------------------------------------------------------------- conversion
def _field_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def convert_object(kind: CustomKind, obj: Mapping[str, Any], desired: str) -> dict[str, Any]:
    """``obj`` (a dict at one of ``kind``'s versions) at the ``desired`` apiVersion: parsed
    with its version's model, converted to the hub, then to the desired version, dumped.
    Its metadata is kept as it was but for labels and annotations (the API server allows
    no other change). :class:`ConversionRefused` when it
    cannot be (unknown version, an object its model refuses, a converter's own refusal)."""
    by_version = {v.kind.api_version: v for v in kind.versions}
    source = by_version.get(str(obj.get("apiVersion")))
    target = by_version.get(desired)
    if source is None or target is None:
        unknown = desired if source is not None else obj.get("apiVersion")
        raise ConversionRefused(f"{kind.kind} has no version {unknown}")
    try:
        parsed = source.model.model_validate(dict(obj))
    except ValidationError as error:
        raise ConversionRefused(
            f"not a valid {source.kind.api_version}: {_field_error(error)}"
        ) from None
    hub = parsed if source.to_hub is None else source.to_hub(parsed)
    out = hub if target.from_hub is None else target.from_hub(hub)
    if not isinstance(out, target.model):
        raise TypeError(
            f"converting to {desired} gave a {type(out).__name__}, not a {target.model.__name__}"
        )
    converted: dict[str, Any] = out.to_dict()
    metadata = dict(obj.get("metadata") or {})
    wrote = converted.get("metadata") or {}
    if target.to_hub is None:  # the hub carries nothing a spoke kept
        prefix = f"conversion.{kind.group}/"
        annotations = wrote.get("annotations") or {}
        wrote["annotations"] = {k: v for k, v in annotations.items() if not k.startswith(prefix)}
    for key in ("labels", "annotations"):
        if wrote.get(key):
            metadata[key] = wrote[key]
        else:
            metadata.pop(key, None)
    converted["metadata"] = metadata
    converted["apiVersion"] = desired
    converted["kind"] = kind.kind
    return converted
