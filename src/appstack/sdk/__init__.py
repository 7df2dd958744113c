"""The SDK: build an operator of your own kinds on appstack's runtime, the way appstack's own
operator is built (issue #35) — what controller-tools and kubebuilder's scaffolding are to
controller-runtime, in Python.

Three layers, each importing only the ones below it (import-linter contracts in
``pyproject.toml``): :mod:`appstack.runtime` (client, informers, manager — no operator's
names) < this SDK (declaring kinds, CRD, RBAC and admission-policy generation, the
controller kit, the operator's assembly and flags) < an operator (appstack's:
:mod:`appstack.api`, :mod:`appstack.controllers`, :mod:`appstack.operator`; or yours), with
the scaffolder (:mod:`appstack.scaffold`) beside it. The SDK never imports appstack's kinds,
controllers, install or CLI, and names no product: everything an operator is known by comes
from its :class:`OperatorIdentity`.

What an operator author imports, all from here (``__all__``, kept exact by a test; every
name in ``docs/sdk-api.md``, generated from the docstrings). appstack's own operator imports
the SDK only from here too (the "One door" import-linter contract)::

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

from typing import TYPE_CHECKING, Any

from appstack.core.lazy import load as _load

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs; at run time, lazily
    from appstack.sdk.cel import (
        Violation,
        rules_of,
    )
    from appstack.sdk.cel import (
        available as cel_available,
    )
    from appstack.sdk.config import (
        SCAFFOLDED as SCAFFOLDED_CONFIG,
    )
    from appstack.sdk.config import (
        Project as ConfigProject,
    )
    from appstack.sdk.config import (
        config_files,
        manager_container,
        manager_pod_security,
    )
    from appstack.sdk.config import (
        with_args as config_with_args,
    )
    from appstack.sdk.config import (
        with_image as config_with_image,
    )
    from appstack.sdk.crds import (
        crd,
    )
    from appstack.sdk.flags import (
        CONTEXT as CONTEXT_OPTION,
    )
    from appstack.sdk.flags import (
        KUBECONFIG as KUBECONFIG_OPTION,
    )
    from appstack.sdk.flags import (
        check_duration,
        operator_command,
        operator_flags,
    )
    from appstack.sdk.guards import (
        enabler_role,
    )
    from appstack.sdk.guards import (
        policies as guard_policies,
    )
    from appstack.sdk.guards.expressions import (
        labelled as cel_labelled,
    )
    from appstack.sdk.guards.expressions import (
        ownerless as cel_ownerless,
    )
    from appstack.sdk.guards.expressions import (
        refusal as cel_refusal,
    )
    from appstack.sdk.guards.expressions import (
        unchanged as cel_unchanged,
    )
    from appstack.sdk.guards.namespaces import (
        ENABLER as ENABLER_ROLE,
    )
    from appstack.sdk.guards.subject import (
        EnableAll,
        GuardedOperator,
        WriteExtensions,
    )
    from appstack.sdk.identity import (
        NOT_ENABLED_REASON,
        OperatorIdentity,
    )
    from appstack.sdk.kind import (
        AGE,
        READY_MESSAGE,
        READY_REASON,
        WIDE_READY,
        CustomKind,
        CustomObject,
        ModelT,
        custom_kind,
    )
    from appstack.sdk.kind import (
        VERSION as DEFAULT_VERSION,
    )
    from appstack.sdk.kit.applied import (
        CHILD_TRANSFORMS,
        CLAIM_TRANSFORMS,
        job_transforms,
    )
    from appstack.sdk.kit.caching import (
        bounded_metadata,
        cache_policy,
    )
    from appstack.sdk.kit.children import (
        ChildWriter,
        Synced,
    )
    from appstack.sdk.kit.conditions import (
        Problem,
        Truth,
        condition,
        describe_validation,
        error_message,
        field_path,
        last_condition,
        now_rfc3339,
        previous_conditions,
    )
    from appstack.sdk.kit.graphs import (
        GRAPH_FORMATS,
        GraphEdge,
        GraphNode,
        StatusGraph,
        draw_graph,
    )
    from appstack.sdk.kit.kind_metrics import (
        KindMetrics,
        ready_metric,
    )
    from appstack.sdk.kit.kind_metrics import (
        families as metric_families,
    )
    from appstack.sdk.kit.kind_metrics import (
        samples as metric_samples,
    )
    from appstack.sdk.kit.kubeobject import (
        KubeObject,
        as_object,
    )
    from appstack.sdk.kit.meta import (
        COMPONENT_LABEL,
        INSTANCE_LABEL,
        SLICE_MANAGER_LABEL,
        child_labels,
        child_metadata,
        child_selector,
        controlled_by,
        instance_labels,
        label_selector,
        owner_reference,
        selector_of,
    )
    from appstack.sdk.kit.namespaces import (
        NamespaceGate,
    )
    from appstack.sdk.kit.objects import (
        ObjectReconciler,
        object_rules,
    )
    from appstack.sdk.kit.observers import (
        Gauges,
        Panel,
        Sample,
        StatusTree,
        StatusView,
    )
    from appstack.sdk.kit.parts import (
        ChildMeta,
        ClaimSpec,
        Container,
        ContainerPort,
        ContainerSecurity,
        EnvVarDict,
        KeyToPath,
        Manifest,
        PodSecurityContext,
        ProbeDict,
        Resources,
        SecretVolume,
        ServicePortSpec,
        TemplateMeta,
        Volume,
        VolumeMount,
        secret_env,
        user_env,
        user_probe,
        user_resources,
        user_security,
    )
    from appstack.sdk.kit.parts import (
        wire as to_wire,
    )
    from appstack.sdk.kit.pods import (
        POD_INDEXERS,
        label_indexers,
        labelled,
        pod_mapper,
        pod_problem,
        pod_transforms,
        pods_of,
        recheck_after,
    )
    from appstack.sdk.kit.reconciler import (
        KindReconciler,
    )
    from appstack.sdk.kit.references import (
        REFERENCES,
        metadata_only,
        reference,
        secret_metadata,
    )
    from appstack.sdk.kit.registration import (
        Registration,
    )
    from appstack.sdk.kit.timers import (
        Timer,
    )
    from appstack.sdk.model import (
        ENV_VAR_RULES,
        Condition,
        EnvFromSource,
        EnvList,
        EnvVar,
        KubeModel,
        LocalObjectReference,
        Probe,
        Quantity,
        ResourceRequirements,
        ServicePort,
        ServiceType,
        default_service_type,
        unique_env_names,
    )
    from appstack.sdk.names import (
        DNS_1035,
        DNS_LABEL,
        TAG,
        Image,
        NameRule,
        ObjectName,
        name_rules,
    )
    from appstack.sdk.operator import (
        KUBECONFIG_HINT,
        Assembly,
        MissingCRDs,
        TaskFactory,
        assemble,
        run_operator,
        serve,
        wire,
    )
    from appstack.sdk.operator import (
        check as check_options,
    )
    from appstack.sdk.options import (
        OperatorOptions,
    )
    from appstack.sdk.process import (
        import_aiohttp,
    )
    from appstack.sdk.rbac import (
        CANARY,
        GUARD_RESOURCE,
        MARKER,
        Rule,
        binding,
        cluster_role,
        derived_rules,
        enabler_grant,
        marker_rule,
        own_rules,
        process_rules,
        role,
        rule,
    )
    from appstack.sdk.testing import (
        InMemoryOperator,
    )

#: Where each public name lives (its one home): ``module`` or ``module:attribute``
#: where the public name is not the module's own (``cel_labelled`` is
#: :func:`appstack.sdk.guards.expressions.labelled`).
_HOMES = {
    "Violation": "cel",
    "cel_available": "cel:available",
    "rules_of": "cel",
    "ConfigProject": "config:Project",
    "SCAFFOLDED_CONFIG": "config:SCAFFOLDED",
    "config_files": "config",
    "config_with_args": "config:with_args",
    "config_with_image": "config:with_image",
    "manager_container": "config",
    "manager_pod_security": "config",
    "crd": "crds",
    "CONTEXT_OPTION": "flags:CONTEXT",
    "KUBECONFIG_OPTION": "flags:KUBECONFIG",
    "check_duration": "flags",
    "operator_command": "flags",
    "operator_flags": "flags",
    "guard_policies": "guards:policies",
    "enabler_role": "guards",
    "cel_labelled": "guards.expressions:labelled",
    "cel_ownerless": "guards.expressions:ownerless",
    "cel_refusal": "guards.expressions:refusal",
    "cel_unchanged": "guards.expressions:unchanged",
    "ENABLER_ROLE": "guards.namespaces:ENABLER",
    "EnableAll": "guards.subject",
    "GuardedOperator": "guards.subject",
    "WriteExtensions": "guards.subject",
    "NOT_ENABLED_REASON": "identity",
    "OperatorIdentity": "identity",
    "AGE": "kind",
    "READY_MESSAGE": "kind",
    "READY_REASON": "kind",
    "WIDE_READY": "kind",
    "CustomKind": "kind",
    "CustomObject": "kind",
    "ModelT": "kind",
    "DEFAULT_VERSION": "kind:VERSION",
    "custom_kind": "kind",
    "CHILD_TRANSFORMS": "kit.applied",
    "CLAIM_TRANSFORMS": "kit.applied",
    "job_transforms": "kit.applied",
    "bounded_metadata": "kit.caching",
    "cache_policy": "kit.caching",
    "ChildWriter": "kit.children",
    "Synced": "kit.children",
    "Problem": "kit.conditions",
    "Truth": "kit.conditions",
    "condition": "kit.conditions",
    "describe_validation": "kit.conditions",
    "error_message": "kit.conditions",
    "field_path": "kit.conditions",
    "last_condition": "kit.conditions",
    "now_rfc3339": "kit.conditions",
    "previous_conditions": "kit.conditions",
    "KindMetrics": "kit.kind_metrics",
    "metric_families": "kit.kind_metrics:families",
    "ready_metric": "kit.kind_metrics",
    "metric_samples": "kit.kind_metrics:samples",
    "KubeObject": "kit.kubeobject",
    "as_object": "kit.kubeobject",
    "COMPONENT_LABEL": "kit.meta",
    "INSTANCE_LABEL": "kit.meta",
    "SLICE_MANAGER_LABEL": "kit.meta",
    "child_labels": "kit.meta",
    "child_metadata": "kit.meta",
    "child_selector": "kit.meta",
    "controlled_by": "kit.meta",
    "instance_labels": "kit.meta",
    "label_selector": "kit.meta",
    "owner_reference": "kit.meta",
    "selector_of": "kit.meta",
    "NamespaceGate": "kit.namespaces",
    "ObjectReconciler": "kit.objects",
    "object_rules": "kit.objects",
    "Gauges": "kit.observers",
    "GRAPH_FORMATS": "kit.graphs",
    "GraphEdge": "kit.graphs",
    "GraphNode": "kit.graphs",
    "StatusGraph": "kit.graphs",
    "draw_graph": "kit.graphs",
    "Panel": "kit.observers",
    "Sample": "kit.observers",
    "StatusTree": "kit.observers",
    "StatusView": "kit.observers",
    "ChildMeta": "kit.parts",
    "ClaimSpec": "kit.parts",
    "Container": "kit.parts",
    "ContainerPort": "kit.parts",
    "ContainerSecurity": "kit.parts",
    "EnvVarDict": "kit.parts",
    "KeyToPath": "kit.parts",
    "Manifest": "kit.parts",
    "PodSecurityContext": "kit.parts",
    "ProbeDict": "kit.parts",
    "Resources": "kit.parts",
    "SecretVolume": "kit.parts",
    "ServicePortSpec": "kit.parts",
    "TemplateMeta": "kit.parts",
    "Volume": "kit.parts",
    "VolumeMount": "kit.parts",
    "secret_env": "kit.parts",
    "user_env": "kit.parts",
    "user_probe": "kit.parts",
    "user_resources": "kit.parts",
    "user_security": "kit.parts",
    "to_wire": "kit.parts:wire",
    "POD_INDEXERS": "kit.pods",
    "label_indexers": "kit.pods",
    "labelled": "kit.pods",
    "pod_mapper": "kit.pods",
    "pod_problem": "kit.pods",
    "pod_transforms": "kit.pods",
    "pods_of": "kit.pods",
    "recheck_after": "kit.pods",
    "KindReconciler": "kit.reconciler",
    "Timer": "kit.timers",
    "REFERENCES": "kit.references",
    "metadata_only": "kit.references",
    "reference": "kit.references",
    "secret_metadata": "kit.references",
    "Registration": "kit.registration",
    "ENV_VAR_RULES": "model",
    "Condition": "model",
    "EnvFromSource": "model",
    "EnvList": "model",
    "EnvVar": "model",
    "KubeModel": "model",
    "LocalObjectReference": "model",
    "Probe": "model",
    "Quantity": "model",
    "ResourceRequirements": "model",
    "ServicePort": "model",
    "ServiceType": "model",
    "default_service_type": "model",
    "unique_env_names": "model",
    "DNS_1035": "names",
    "DNS_LABEL": "names",
    "TAG": "names",
    "Image": "names",
    "NameRule": "names",
    "ObjectName": "names",
    "name_rules": "names",
    "KUBECONFIG_HINT": "operator",
    "Assembly": "operator",
    "MissingCRDs": "operator",
    "TaskFactory": "operator",
    "assemble": "operator",
    "check_options": "operator:check",
    "run_operator": "operator",
    "serve": "operator",
    "wire": "operator",
    "OperatorOptions": "options",
    "import_aiohttp": "process",
    "InMemoryOperator": "testing",
    "CANARY": "rbac",
    "GUARD_RESOURCE": "rbac",
    "MARKER": "rbac",
    "marker_rule": "rbac",
    "process_rules": "rbac",
    "Rule": "rbac",
    "binding": "rbac",
    "cluster_role": "rbac",
    "derived_rules": "rbac",
    "enabler_grant": "rbac",
    "own_rules": "rbac",
    "role": "rbac",
    "rule": "rbac",
}

__all__ = [
    "AGE",
    "CANARY",
    "CHILD_TRANSFORMS",
    "CLAIM_TRANSFORMS",
    "COMPONENT_LABEL",
    "CONTEXT_OPTION",
    "DEFAULT_VERSION",
    "DNS_1035",
    "DNS_LABEL",
    "ENABLER_ROLE",
    "ENV_VAR_RULES",
    "GRAPH_FORMATS",
    "GUARD_RESOURCE",
    "INSTANCE_LABEL",
    "KUBECONFIG_HINT",
    "KUBECONFIG_OPTION",
    "MARKER",
    "NOT_ENABLED_REASON",
    "POD_INDEXERS",
    "READY_MESSAGE",
    "READY_REASON",
    "REFERENCES",
    "SCAFFOLDED_CONFIG",
    "SLICE_MANAGER_LABEL",
    "TAG",
    "WIDE_READY",
    "Assembly",
    "ChildMeta",
    "ChildWriter",
    "ClaimSpec",
    "Condition",
    "ConfigProject",
    "Container",
    "ContainerPort",
    "ContainerSecurity",
    "CustomKind",
    "CustomObject",
    "EnableAll",
    "EnvFromSource",
    "EnvList",
    "EnvVar",
    "EnvVarDict",
    "Gauges",
    "GraphEdge",
    "GraphNode",
    "GuardedOperator",
    "Image",
    "InMemoryOperator",
    "KeyToPath",
    "KindMetrics",
    "KindReconciler",
    "KubeModel",
    "KubeObject",
    "LocalObjectReference",
    "Manifest",
    "MissingCRDs",
    "ModelT",
    "NameRule",
    "NamespaceGate",
    "ObjectName",
    "ObjectReconciler",
    "OperatorIdentity",
    "OperatorOptions",
    "Panel",
    "PodSecurityContext",
    "Probe",
    "ProbeDict",
    "Problem",
    "Quantity",
    "Registration",
    "ResourceRequirements",
    "Resources",
    "Rule",
    "Sample",
    "SecretVolume",
    "ServicePort",
    "ServicePortSpec",
    "ServiceType",
    "StatusGraph",
    "StatusTree",
    "StatusView",
    "Synced",
    "TaskFactory",
    "TemplateMeta",
    "Timer",
    "Truth",
    "Violation",
    "Volume",
    "VolumeMount",
    "WriteExtensions",
    "as_object",
    "assemble",
    "binding",
    "bounded_metadata",
    "cache_policy",
    "cel_available",
    "cel_labelled",
    "cel_ownerless",
    "cel_refusal",
    "cel_unchanged",
    "check_duration",
    "check_options",
    "child_labels",
    "child_metadata",
    "child_selector",
    "cluster_role",
    "condition",
    "config_files",
    "config_with_args",
    "config_with_image",
    "controlled_by",
    "crd",
    "custom_kind",
    "default_service_type",
    "derived_rules",
    "describe_validation",
    "draw_graph",
    "enabler_grant",
    "enabler_role",
    "error_message",
    "field_path",
    "guard_policies",
    "import_aiohttp",
    "instance_labels",
    "job_transforms",
    "label_indexers",
    "label_selector",
    "labelled",
    "last_condition",
    "manager_container",
    "manager_pod_security",
    "marker_rule",
    "metadata_only",
    "metric_families",
    "metric_samples",
    "name_rules",
    "now_rfc3339",
    "object_rules",
    "operator_command",
    "operator_flags",
    "own_rules",
    "owner_reference",
    "pod_mapper",
    "pod_problem",
    "pod_transforms",
    "pods_of",
    "previous_conditions",
    "process_rules",
    "ready_metric",
    "recheck_after",
    "reference",
    "role",
    "rule",
    "rules_of",
    "run_operator",
    "secret_env",
    "secret_metadata",
    "selector_of",
    "serve",
    "to_wire",
    "unique_env_names",
    "user_env",
    "user_probe",
    "user_resources",
    "user_security",
    "wire",
]


def __getattr__(name: str) -> Any:
    return _load(__name__, _HOMES, name, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
