"""The names of the Helm chart's objects (pure; used by :mod:`appstack.manifests.chart`),
after Helm's own starter chart (``helm create``): ``appstack.name`` (the chart's name or
``nameOverride``), ``appstack.fullname`` (``fullnameOverride``; else the release name if it
contains the name, else ``<release>-<name>``) and ``appstack.serviceAccountName``
(``serviceAccount.name``, default ``<fullname>-operator``; required when
``serviceAccount.create`` is false).

Every name of the generated install starts with ``appstack`` — ``appstack-operator``
(the Deployment, ServiceAccount, Roles, PodDisruptionBudget, the Lease),
``appstack-operator-metrics``, ``appstack-operator-<namespace>`` (cluster-scoped objects:
ClusterRoles, bindings, the FlowSchema, the admission policies), ``appstack-editor-<namespace>``
... — and in the chart that ``appstack`` is the fullname: release ``appstack`` (the documented
one) keeps every name it had; releases ``a`` and ``b`` in one namespace get ``a-appstack-...``
and ``b-appstack-...``, cluster-scoped objects included, and each binds, names in its
FlowSchema and runs as its own ServiceAccount. :func:`follow_names` rewrites the generated
template text accordingly; its patterns are checked by the unit tests (no generated name or
ServiceAccount reference is left behind).

The admission policies recognise the operator by the marker permission its own binding grants
(:mod:`appstack.sdk.guards.subject`), so they follow ``serviceAccount.name`` through
that binding: no user name is written into CEL.

The operator's name label follows its name too (:func:`label_operator`):
``app.kubernetes.io/name: <fullname>-operator`` on its Deployment, pods, metrics Service and
PodDisruptionBudget, and in their selectors and the ServiceMonitor's, so two releases'
objects select only their own pods (a pod under two PodDisruptionBudgets cannot be evicted
at all), while release ``appstack`` keeps ``appstack-operator``: a Deployment's selector
cannot change, and an install of an earlier chart upgrades in place.
"""

from __future__ import annotations

import re

from appstack.manifests.chart_values import FULLNAME_MAX
from appstack.manifests.rbac import NAME

#: The prefix every generated name starts with; the chart's fullname replaces it.
PREFIX = "appstack"
FULLNAME = '{{ include "appstack.fullname" $ }}'
OPERATOR = '{{ include "appstack.operatorName" $ }}'
ACCOUNT = '{{ include "appstack.serviceAccountName" $ }}'

NAME_HELPERS = f"""
{{{{/*
Names, as Helm's starter chart makes them (generated: appstack.manifests.chart_names).
appstack.fullname starts every object's name; release "appstack" gives "appstack", so the
objects keep their names (appstack-operator, appstack-operator-<namespace>, ...). At most
{FULLNAME_MAX} characters: <fullname>-operator-metrics (a Service) stays a DNS label.
*/}}}}
{{{{- define "appstack.name" -}}}}
{{{{- default .Chart.Name .Values.nameOverride | trunc {FULLNAME_MAX} | trimSuffix "-" }}}}
{{{{- end }}}}

{{{{- define "appstack.fullname" -}}}}
{{{{- if .Values.fullnameOverride }}}}
{{{{- .Values.fullnameOverride | trunc {FULLNAME_MAX} | trimSuffix "-" }}}}
{{{{- else }}}}
{{{{- $name := default .Chart.Name .Values.nameOverride }}}}
{{{{- if contains $name .Release.Name }}}}
{{{{- .Release.Name | trunc {FULLNAME_MAX} | trimSuffix "-" }}}}
{{{{- else }}}}
{{{{- printf "%s-%s" .Release.Name $name | trunc {FULLNAME_MAX} | trimSuffix "-" }}}}
{{{{- end }}}}
{{{{- end }}}}
{{{{- end }}}}

{{{{/*
The operator's Deployment, Roles, PodDisruptionBudget and leader-election Lease.
*/}}}}
{{{{- define "appstack.operatorName" -}}}}
{{{{- printf "%s-operator" (include "appstack.fullname" .) }}}}
{{{{- end }}}}

{{{{/*
The ServiceAccount the operator runs as, which its bindings and FlowSchema name.
*/}}}}
{{{{- define "appstack.serviceAccountName" -}}}}
{{{{- if .Values.serviceAccount.create }}}}
{{{{- default (include "appstack.operatorName" .) .Values.serviceAccount.name }}}}
{{{{- else }}}}
{{{{- required "serviceAccount.name is required when serviceAccount.create is false" \
.Values.serviceAccount.name }}}}
{{{{- end }}}}
{{{{- end }}}}
"""

#: The release namespace, as the generated template text says it.
_NAMESPACE = r"\{\{ \$?\.Release\.Namespace \}\}"


def follow_names(text: str) -> str:
    """Template text: every reference to the ServiceAccount becomes
    ``appstack.serviceAccountName``, every cluster-scoped name
    ``appstack-<x>-{{ .Release.Namespace }}`` becomes ``<fullname>-<x>-...``, every
    namespaced name (and the Lease's) ``appstack-operator[-<x>]`` becomes
    ``<fullname>-operator[-<x>]``. The operator's label
    ``app.kubernetes.io/name: appstack-operator`` is left to :func:`label_operator`."""
    # the ServiceAccount: the object, a binding's subject, the FlowSchema's, the pod's
    account = [
        rf"(^kind: ServiceAccount\nmetadata:\n  name: ){NAME}$",
        rf"(^\s*- kind: ServiceAccount\n\s+name: ){NAME}$",
        rf"(^\s*serviceAccount:\n\s+name: ){NAME}$",
        rf"(^\s*serviceAccountName: ){NAME}$",
    ]
    for pattern in account:
        text = re.sub(pattern, rf"\g<1>{ACCOUNT}", text, flags=re.MULTILINE)
    # cluster-scoped objects: named after the release namespace
    text = re.sub(rf"\b{PREFIX}-([a-z0-9-]+-)({_NAMESPACE})", rf"{FULLNAME}-\1\2", text)
    # namespaced objects, a Role's Lease (resourceNames) and the metrics Service's DNS name
    text = re.sub(
        rf"^(\s*(?:- )?(?:name|policyName): |\s*- ){NAME}((?:-[a-z0-9]+)*)$",
        rf"\g<1>{OPERATOR}\2",
        text,
        flags=re.MULTILINE,
    )
    text = re.sub(rf"\b{NAME}(-metrics\.)", rf"{OPERATOR}\1", text)
    # the PrometheusRule's leader gauge is labelled with the Lease's name
    text = text.replace(f'{{name="{NAME}"}}', f'{{name="{OPERATOR}"}}')
    return text


def label_operator(text: str) -> str:
    """The operator's name label, ``app.kubernetes.io/name: appstack-operator``, wherever it
    stands (its objects' labels, its pods', the selectors of them), becomes the operator's
    name in the release (``appstack.operatorName``)."""
    pattern = rf"^(\s*app\.kubernetes\.io/name: ){NAME}$"
    return re.sub(pattern, rf"\g<1>{OPERATOR}", text, flags=re.MULTILINE)
