"""The SDK: build an operator of your own kinds on appstack's runtime, the way appstack's own
operator is built (issue #35) — what controller-tools and kubebuilder's scaffolding are to
controller-runtime, in Python.

Three layers, each importing only the ones below it (import-linter contracts in
``pyproject.toml``): :mod:`appstack.runtime` (client, informers, manager — no operator's
names) < this SDK (declaring kinds, CRD and RBAC generation, the controller kit, the
operator's assembly and flags, the scaffolder's templates) < an operator (appstack's:
:mod:`appstack.api`, :mod:`appstack.controllers`, :mod:`appstack.operator`; or yours). The
SDK never imports appstack's kinds, controllers, install or CLI, and names no product:
everything an operator is known by comes from its :class:`OperatorIdentity`.

What an operator author imports, all from here (``__all__``, kept exact by a test)::

    from appstack.sdk import (
        OperatorIdentity, custom_kind, CustomObject, KubeModel,   # declare
        KindReconciler, Registration, Problem, condition,          # reconcile
        crd, derived_rules, cluster_role,                          # generate
        rules_of, Violation,                   # the CRD's CEL rules, client-side
        Gauges, Sample, KindMetrics,           # your kinds' own metrics
        operator_command, run_operator,                            # run
        assemble, wire, cache_policy,                              # assemble yourself
    )

Names load on first use (importing ``appstack.sdk`` costs nothing until then: a CLI's
``--help`` stays fast, and the operator's process tuning runs before the runtime loads).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs; at run time, lazily
    from appstack.sdk.cel import Violation, rules_of
    from appstack.sdk.crds import crd
    from appstack.sdk.flags import operator_command, operator_flags
    from appstack.sdk.identity import NOT_ENABLED_REASON, OperatorIdentity
    from appstack.sdk.kind import (
        AGE,
        READY_MESSAGE,
        READY_REASON,
        WIDE_READY,
        CustomKind,
        CustomObject,
        custom_kind,
    )
    from appstack.sdk.kit.caching import cache_policy
    from appstack.sdk.kit.children import ChildWriter, Synced
    from appstack.sdk.kit.conditions import (
        Problem,
        condition,
        describe_validation,
        now_rfc3339,
        previous_conditions,
    )
    from appstack.sdk.kit.kind_metrics import KindMetrics
    from appstack.sdk.kit.kubeobject import KubeObject, as_object
    from appstack.sdk.kit.meta import (
        child_labels,
        child_metadata,
        controlled_by,
        instance_labels,
        owner_reference,
    )
    from appstack.sdk.kit.observers import Gauges, Sample
    from appstack.sdk.kit.parts import Manifest
    from appstack.sdk.kit.reconciler import KindReconciler
    from appstack.sdk.kit.registration import Registration
    from appstack.sdk.model import Condition, KubeModel
    from appstack.sdk.operator import Assembly, assemble, run_operator, serve, wire
    from appstack.sdk.options import OperatorOptions
    from appstack.sdk.rbac import (
        Rule,
        binding,
        cluster_role,
        derived_rules,
        own_rules,
        role,
        rule,
    )

#: Where each public name lives (its one home).
_HOMES = {
    "AGE": "kind",
    "READY_MESSAGE": "kind",
    "READY_REASON": "kind",
    "WIDE_READY": "kind",
    "CustomKind": "kind",
    "CustomObject": "kind",
    "custom_kind": "kind",
    "KubeModel": "model",
    "Condition": "model",
    "crd": "crds",
    "rules_of": "cel",
    "Violation": "cel",
    "Rule": "rbac",
    "rule": "rbac",
    "own_rules": "rbac",
    "derived_rules": "rbac",
    "cluster_role": "rbac",
    "role": "rbac",
    "binding": "rbac",
    "OperatorIdentity": "identity",
    "NOT_ENABLED_REASON": "identity",
    "OperatorOptions": "options",
    "operator_flags": "flags",
    "operator_command": "flags",
    "run_operator": "operator",
    "serve": "operator",
    "assemble": "operator",
    "Assembly": "operator",
    "wire": "operator",
    "cache_policy": "kit.caching",
    "KindReconciler": "kit.reconciler",
    "Registration": "kit.registration",
    "ChildWriter": "kit.children",
    "Synced": "kit.children",
    "Problem": "kit.conditions",
    "condition": "kit.conditions",
    "describe_validation": "kit.conditions",
    "now_rfc3339": "kit.conditions",
    "previous_conditions": "kit.conditions",
    "KubeObject": "kit.kubeobject",
    "as_object": "kit.kubeobject",
    "Manifest": "kit.parts",
    "Gauges": "kit.observers",
    "Sample": "kit.observers",
    "KindMetrics": "kit.kind_metrics",
    "child_labels": "kit.meta",
    "child_metadata": "kit.meta",
    "controlled_by": "kit.meta",
    "instance_labels": "kit.meta",
    "owner_reference": "kit.meta",
}

__all__ = [
    "AGE",
    "NOT_ENABLED_REASON",
    "READY_MESSAGE",
    "READY_REASON",
    "WIDE_READY",
    "Assembly",
    "ChildWriter",
    "Condition",
    "CustomKind",
    "CustomObject",
    "Gauges",
    "KindMetrics",
    "KindReconciler",
    "KubeModel",
    "KubeObject",
    "Manifest",
    "OperatorIdentity",
    "OperatorOptions",
    "Problem",
    "Registration",
    "Rule",
    "Sample",
    "Synced",
    "Violation",
    "as_object",
    "assemble",
    "binding",
    "cache_policy",
    "child_labels",
    "child_metadata",
    "cluster_role",
    "condition",
    "controlled_by",
    "crd",
    "custom_kind",
    "derived_rules",
    "describe_validation",
    "instance_labels",
    "now_rfc3339",
    "operator_command",
    "operator_flags",
    "own_rules",
    "owner_reference",
    "previous_conditions",
    "role",
    "rule",
    "rules_of",
    "run_operator",
    "serve",
    "wire",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
