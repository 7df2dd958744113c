"""Kubernetes core types once (issue #47): every kind's spec uses the SDK's one model of each
core type (:mod:`appstack.sdk.model`), so a field is validated the same way in every kind —
no second ``Toleration`` in an api module, no pod field taken as a plain ``dict``, no wire
TypedDict (:mod:`appstack.sdk.kit.parts`) named like the model a user writes. It fails when
someone re-adds a duplicate, or a kind declares a scheduling field (``nodeSelector``,
``tolerations``, ``affinity``, ``topologySpreadConstraints``) itself instead of inheriting
the SDK's ``PodScheduling``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
import typing
from collections.abc import Iterator
from typing import Any, get_args, get_origin

import pytest
from pydantic import BaseModel, ValidationError

import appstack.api
import appstack.sdk
from appstack.api.appservice import AppServiceSpec
from appstack.api.appstack_component import Component
from appstack.api.etcdcluster import EtcdClusterSpec
from appstack.controllers.registry import ALL
from appstack.sdk import model as sdk_model
from appstack.sdk.kit import parts

#: The SDK's core types: every model class defined in appstack.sdk.model.
CORE: dict[str, type[BaseModel]] = {
    name: cls
    for name, cls in vars(sdk_model).items()
    if inspect.isclass(cls)
    and issubclass(cls, BaseModel)
    and cls.__module__ == sdk_model.__name__
    and cls is not sdk_model.KubeModel
}

#: Pod and container fields (wire names) and the SDK model their items must be, in any kind.
POD_FIELDS: dict[str, type[BaseModel]] = {
    "tolerations": sdk_model.Toleration,
    "affinity": sdk_model.Affinity,
    "topologySpreadConstraints": sdk_model.TopologySpreadConstraint,
    "volumes": sdk_model.Volume,
    "volumeMounts": sdk_model.VolumeMount,
    "securityContext": sdk_model.SecurityContext,
    "imagePullSecrets": sdk_model.LocalObjectReference,
    "resources": sdk_model.ResourceRequirements,
    "readinessProbe": sdk_model.Probe,
    "livenessProbe": sdk_model.Probe,
    "envs": sdk_model.EnvVar,
    "envFrom": sdk_model.EnvFromSource,
}


def _leaves(annotation: Any) -> Iterator[Any]:
    """The types an annotation is made of: through Annotated, unions, lists and dicts."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        yield from _leaves(get_args(annotation)[0])
    elif origin in (typing.Union, types.UnionType, list, dict, tuple, set):
        for arg in get_args(annotation):
            yield from _leaves(arg)
    else:
        yield annotation


def _models(root: type[BaseModel]) -> dict[type[BaseModel], None]:
    """``root`` and every model class nested in its fields, in order of discovery."""
    seen: dict[type[BaseModel], None] = {}
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen[cls] = None
        cls.model_rebuild()
        for field in cls.model_fields.values():
            todo += [t for t in _leaves(field.annotation) if inspect.isclass(t)]
            todo = [t for t in todo if issubclass(t, BaseModel)]
    return seen


def _kind_models() -> dict[type[BaseModel], str]:
    """Every model class reachable from a registered kind's spec, with the first kind."""
    found: dict[type[BaseModel], str] = {}
    for registration in ALL:
        for cls in _models(registration.kind.spec):
            found.setdefault(cls, registration.kind.kind)
    return found


def _defined_in(package: types.ModuleType) -> list[tuple[str, str]]:
    """(class name, module) of every model class defined in the package's modules."""
    out = []
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        for name, cls in vars(module).items():
            if inspect.isclass(cls) and issubclass(cls, BaseModel) and cls.__module__ == info.name:
                out.append((name, info.name))
    return out


def test_the_core_types_are_the_sdks_and_exported_from_its_door() -> None:
    assert {"Toleration", "Affinity", "Volume", "Probe", "SecurityContext"} <= set(CORE)
    for name, cls in CORE.items():
        assert name in appstack.sdk.__all__, f"appstack.sdk does not export {name}"
        assert getattr(appstack.sdk, name) is cls


def test_no_api_module_defines_a_model_of_a_core_type() -> None:
    again = [f"{module}.{name}" for name, module in _defined_in(appstack.api) if name in CORE]
    assert again == [], f"use the SDK's model (appstack.sdk) instead of {again}"


def test_no_sdk_class_shares_a_core_types_name() -> None:
    """One class per name in the SDK: the wire TypedDicts are named ``...Dict``."""
    twice = [
        f"{m}.{n}" for n, m in _defined_in(appstack.sdk) if n in CORE and m != "appstack.sdk.model"
    ]
    typed_dicts = [n for n, v in vars(parts).items() if n in CORE and v is not CORE[n]]
    assert twice == []
    assert typed_dicts == []


def test_every_kind_nests_the_sdks_model_of_each_core_type() -> None:
    for cls, kind in _kind_models().items():
        if cls.__name__ in CORE:
            assert cls is CORE[cls.__name__], f"{kind} uses {cls.__module__}.{cls.__name__}"


@pytest.mark.parametrize("registration", ALL, ids=lambda r: r.kind.kind)
def test_pod_fields_are_typed_with_the_sdks_models(registration: Any) -> None:
    """A field named like a pod field (``tolerations``, ``affinity``, ...) is the SDK's model
    in every model of the kind, never a ``dict`` or ``Any``; ``nodeSelector`` is the SDK's
    :data:`~appstack.sdk.model.NodeSelectorMap` (its keys checked)."""
    checked = []
    for cls in _models(registration.kind.spec):
        for name, field in cls.model_fields.items():
            wire = field.alias or name
            leaves = list(_leaves(field.annotation))
            if wire == "nodeSelector":
                members = get_args(field.annotation) or (field.annotation,)
                assert sdk_model.NodeSelectorMap in members, f"{cls.__name__}.nodeSelector"
                checked.append(wire)
            elif wire in POD_FIELDS:
                typed = [t for t in leaves if t is not type(None)]
                assert typed == [POD_FIELDS[wire]], f"{cls.__name__}.{wire}: {field.annotation}"
                checked.append(wire)
    assert registration.kind.kind == "MongoDBCommunity" or checked  # the walk found fields


def test_a_kind_refuses_a_toleration_or_affinity_the_others_refuse() -> None:
    """EtcdCluster took ``affinity`` as any object and its own, unchecked Toleration: now the
    same refusals as AppService's (and the same ``topologySpreadConstraints``)."""
    bad = (
        {"affinity": {"podAntiAffinity": {"x": 1}}},
        {"tolerations": [{"key": "bad key!", "operator": "Exists"}]},
        {"nodeSelector": {"not a key": "v"}},
        {"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "zone"}]},
    )
    for fields in bad:
        for spec, base in (
            (AppServiceSpec, {"image": "nginx"}),
            (EtcdClusterSpec, {"storage": "1Gi"}),
        ):
            with pytest.raises(ValidationError):
                spec.model_validate({**base, **fields})


#: PodScheduling's fields: Python name by wire name.
SCHEDULING: dict[str, str] = {
    f.alias or n: n for n, f in sdk_model.PodScheduling.model_fields.items()
}


def _declared_by(cls: type[BaseModel], name: str) -> type:
    """The class of ``cls``'s MRO whose body declares field ``name``."""
    return next(c for c in cls.__mro__ if name in vars(c).get("__annotations__", {}))


@pytest.mark.parametrize("registration", ALL, ids=lambda r: r.kind.kind)
def test_scheduling_fields_are_pod_schedulings_never_declared_again(registration: Any) -> None:
    """Any model of a kind with one of the scheduling fields inherits ``PodScheduling`` and
    takes all four from it, unchanged: no kind has its own bound, rule or type."""
    for cls in _models(registration.kind.spec):
        wires = {f.alias or n for n, f in cls.model_fields.items()}
        if not wires & set(SCHEDULING):
            continue
        assert issubclass(cls, sdk_model.PodScheduling), f"{cls.__name__}: not PodScheduling"
        for name in SCHEDULING.values():
            assert _declared_by(cls, name) is sdk_model.PodScheduling, f"{cls.__name__}.{name}"
            mine, shared = cls.model_fields[name], sdk_model.PodScheduling.model_fields[name]
            assert (mine.annotation, mine.metadata) == (shared.annotation, shared.metadata)


def test_etcdclusters_scheduling_fields_are_pod_schedulings() -> None:
    assert issubclass(EtcdClusterSpec, sdk_model.PodScheduling)
    assert {f.alias or n for n, f in EtcdClusterSpec.model_fields.items()} >= set(SCHEDULING)
    spec = EtcdClusterSpec.model_validate(
        {
            "storage": "1Gi",
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
            ],
        }
    )
    assert list(spec.pod_scheduling()) == ["topologySpreadConstraints"]


@pytest.mark.parametrize(
    ("spec", "base"),
    [
        (AppServiceSpec, {"image": "nginx"}),
        (Component, {"name": "web", "image": "nginx"}),
        (EtcdClusterSpec, {"storage": "1Gi"}),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_every_kind_takes_32_tolerations_and_refuses_33(
    spec: type[BaseModel], base: dict[str, Any]
) -> None:
    """One bound for all: EtcdCluster's 32 (it took them before it used PodScheduling, so
    no object valid then is refused now); AppService's and AppStack's rose from 16."""
    toleration = {"key": "dedicated", "operator": "Exists"}
    assert len(spec.model_validate({**base, "tolerations": [toleration] * 32}).tolerations) == 32
    with pytest.raises(ValidationError, match="at most 32 items"):
        spec.model_validate({**base, "tolerations": [toleration] * 33})
