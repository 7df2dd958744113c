"""The operator's per-controller options reach a reconciler that takes them by name: a key
that is no controller's name, or an option no reconciler accepts, fails here (and, at
start-up, as a TypeError) instead of being dropped."""

from __future__ import annotations

import inspect

from appstack.controllers.registry import ALL
from appstack.operator import AppstackOptions
from appstack.sdk.kit.reconciler import KindReconciler


def test_every_option_is_a_parameter_of_its_controllers_reconciler() -> None:
    by_name = {c.name: c for c in ALL}
    options = AppstackOptions(allow_external_ips=True).controller_options()
    assert options
    for name, given in options.items():
        accepted = inspect.signature(by_name[name].reconciler.__init__).parameters
        assert set(given) <= set(accepted), (name, given)
        assert not any(p.kind is p.VAR_KEYWORD for p in accepted.values()), name


def test_no_reconciler_swallows_unknown_options() -> None:
    for controller in ALL:
        params = inspect.signature(controller.reconciler.__init__).parameters.values()
        assert not any(p.kind is p.VAR_KEYWORD for p in params), controller.name
    base = inspect.signature(KindReconciler.__init__).parameters.values()
    assert not any(p.kind is p.VAR_KEYWORD for p in base)
