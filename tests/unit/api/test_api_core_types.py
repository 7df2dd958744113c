"""Kubernetes core types once (issue #47): every kind's spec uses the SDK's one model of each
core type (:mod:`appstack.sdk.model`), so a field is validated the same way in every kind —
no second ``Toleration`` in an api module, no pod field taken as a plain ``dict``, no wire
TypedDict (:mod:`appstack.sdk.kit.parts`) named like the model a user writes. It fails when
someone re-adds a duplicate."""

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
    same refusals as AppService's."""
    bad = (
        {"affinity": {"podAntiAffinity": {"x": 1}}},
        {"tolerations": [{"key": "bad key!", "operator": "Exists"}]},
        {"nodeSelector": {"not a key": "v"}},
    )
    for fields in bad:
        for spec, base in (
            (AppServiceSpec, {"image": "nginx"}),
            (EtcdClusterSpec, {"storage": "1Gi"}),
        ):
            with pytest.raises(ValidationError):
                spec.model_validate({**base, **fields})
