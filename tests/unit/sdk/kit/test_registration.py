"""Registrations given the webhooks of modules (sdk/kit/registration.py ``with_webhooks``,
what a scaffolded project's ``controllers/__init__.py`` does with its ``WEBHOOK_MODULES``):
each module's declarations added to the registration of its kind, the others unchanged,
and a module that names no kind, or a kind no registration reconciles, refused by name."""

from __future__ import annotations

import sys
import types

import pytest
from pydantic import BaseModel

from appstack.runtime import CONFIG_MAP, Result, allow
from appstack.sdk import (
    CustomObject,
    KindReconciler,
    KubeObject,
    Mutator,
    Problem,
    Registration,
    Validator,
    WebhookReview,
    custom_kind,
    with_webhooks,
)


class WidgetSpec(BaseModel):
    size: int = 1


class WidgetStatus(BaseModel):
    pass


@custom_kind(group="widgets.example.com", plural="widgets")
class Widget(CustomObject):
    spec: WidgetSpec
    status: WidgetStatus | None = None


@custom_kind(group="widgets.example.com", plural="gadgets")
class Gadget(CustomObject):
    spec: WidgetSpec
    status: WidgetStatus | None = None


def _reconciler(of: type[CustomObject]) -> type[KindReconciler[WidgetSpec]]:
    class Reconciler(KindReconciler[WidgetSpec]):
        kind = of.KIND

        def invalid_status(self, obj: KubeObject, problem: Problem) -> WidgetStatus:
            return WidgetStatus()

        async def apply(self, obj: KubeObject, spec: WidgetSpec) -> Result | None:
            return None

    return Reconciler


WIDGETS = Registration(name="widgets", reconciler=_reconciler(Widget))
GADGETS = Registration(name="gadgets", reconciler=_reconciler(Gadget))


def _check(review: WebhookReview) -> None:
    return None


def _module(monkeypatch: pytest.MonkeyPatch, name: str, **attributes: object) -> str:
    module = types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)
    return name


def test_each_modules_webhooks_join_the_registration_of_its_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    validator, mutator = Validator(_check), Mutator(lambda review: allow())
    modules = [
        _module(monkeypatch, "hooks_v", KIND=Widget.KIND, WEBHOOKS=(validator,)),
        _module(monkeypatch, "hooks_m", KIND=Widget.KIND.resource, WEBHOOKS=(mutator,)),
    ]
    widgets, gadgets = with_webhooks([WIDGETS, GADGETS], modules)
    assert widgets.webhooks == (validator, mutator)
    assert gadgets is GADGETS
    assert [w.kind for w in widgets.declared_webhooks] == [Widget.KIND, Widget.KIND]
    assert with_webhooks([WIDGETS], []) == [WIDGETS]


def test_a_module_without_kind_or_controller_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bare = _module(monkeypatch, "hooks_bare", WEBHOOKS=(Validator(_check),))
    with pytest.raises(ValueError, match="hooks_bare: a webhook module names its kind as KIND"):
        with_webhooks([WIDGETS], [bare])
    other = _module(monkeypatch, "hooks_cm", KIND=CONFIG_MAP, WEBHOOKS=(Validator(_check),))
    with pytest.raises(ValueError, match="hooks_cm: no controller reconciles ConfigMap"):
        with_webhooks([WIDGETS, GADGETS], [other])
