"""A Helm chart for an operator built on the SDK, derived from its install — the objects
``config/default`` builds (kustomize's output, the user's edits in ``config/`` included),
as kubebuilder's helm/v2-alpha plugin derives ``dist/chart`` from ``dist/install.yaml``:
:func:`chart_files`, what ``appstack generate chart`` (``make helm`` of a scaffolded
project) writes.

Each object is templated, not copied: its name's ``<project>-`` prefix becomes the chart's
fullname (``fullnameOverride``; else the release name if it contains the chart's name, else
``<release>-<chart>``), its namespace the release's, every reference to a renamed object
(role bindings, the policies' bindings, the webhook Service in the webhook configurations
and the CRDs' conversion, the leader-election Lease, the ServiceAccount) follows it, and the
operator's pods are selected — by their Deployment, Services, ServiceMonitor and default
anti-affinity — by the release (``app.kubernetes.io/instance``), not a fixed name: two
releases in one namespace select only their own pods. Release ``<project>`` keeps every name
of the kustomize install. The webhook configurations keep their names: the operator writes
their CA bundles by name (one release of a project that serves webhooks per cluster, as its
CRDs).

The values are what a platform team expects (image repository/tag/digest/pullPolicy,
imagePullSecrets, replicas, resources, nodeSelector, tolerations, topology spread,
priority class, affinity, podSecurityContext, securityContext, pod annotations and labels,
the ServiceAccount (created, or one that exists), the watched namespaces of a cluster-wide
operator (a Role in each: :func:`_watched_text`), leader election, the pods'
terminationGracePeriodSeconds and the operator's ``--graceful-shutdown-timeout`` below it
(checked at render), its flags — log level, concurrency, sync period, every namespace or
only those labelled enabled (the admission policies and webhooks following:
:func:`_enabled_sentinels`) and its own (:class:`ChartFlag`) —, extra arguments,
environment, volumes and mounts, the probes' timing, the metrics Service and a
ServiceMonitor with its labels and its reader binding, the PrometheusRule of the alerts the
kinds declare with its labels — its Prometheus templates kept as they are —, the CRDs kept
on uninstall), their defaults those of the install. Template text comes from the objects
with sentinels
(:mod:`appstack.sdk.helmtext`, what appstack's own chart is made with). Pure: the same
objects always give the same files.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from appstack.core import defaults
from appstack.core.duration import DEFAULT_SYNC_PERIOD
from appstack.sdk.guards.expressions import labelled
from appstack.sdk.helmtext import (
    AUTOSCALING_RANGE,
    DURATION,
    ENABLE_ALL,
    GRACE_PERIOD,
    IMAGE,
    METRICS_CERT_SECRET,
    METRICS_CERT_VALUES,
    METRICS_INSECURE_ARG,
    METRICS_SCHEME,
    ONE_LEADER,
    POD_LABELS,
    SHARDED,
    SHARDING_NEEDS,
    SHUTDOWN_ARG,
    SHUTDOWN_IN_GRACE,
    SHUTDOWN_TIMEOUT,
    WATCH_ARG,
    WITH_METRICS_CERT,
    autoscaler_text,
    autoscaling_values,
    dump,
    either,
    enabled_choice,
    file_entries,
    files_text,
    if_item,
    items,
    literal_braces,
    merged_keys,
    metrics_ca_text,
    metrics_scheme,
    metrics_test_pod,
    pod_extras,
    pod_settings,
    pod_settings_text,
    pull_policy,
    range_item,
    sentinel,
    set_scalar,
    sharding_schema_rules,
    substitute,
    unless_autoscaled,
    watch_namespaces_schema,
    watching,
    with_block,
    with_scalar,
    wrap_item,
    wrap_key,
    wrap_list_item,
)
from appstack.sdk.helmtext import CONTROL_LINES as _CONTROL_LINES
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.install import (
    METRICS_CERT_DIR,
    METRICS_READ_RULE,
    metrics_tls,
    spread_affinity,
)
from appstack.sdk.kit.dashboards import SIDECAR_LABEL
from appstack.sdk.kit.webhooks import namespace_selector
from appstack.sdk.names import DNS_LABEL, DNS_SUBDOMAIN
from appstack.sdk.options import METRICS_ADDRESS
from appstack.sdk.rbac import binding, marker_rule, process_rules, within_namespaces

Obj = dict[str, Any]
HEADER = (
    "# Generated from the operator's install (config/): change config/ or the code and\n"
    "# regenerate the chart.\n"
)
#: Kinds without a namespace (kustomize's ``namespace:`` may have given one anyway).
CLUSTER_SCOPED = frozenset(
    {
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "FlowSchema",
        "MutatingWebhookConfiguration",
        "Namespace",
        "PriorityClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
    }
)
#: Objects the operator finds by their generated name: never renamed.
FIXED_NAMES = frozenset(
    {"CustomResourceDefinition", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
)
#: Where each kind's template goes under ``templates/`` (kubebuilder's config/ layout).
DIRECTORIES = {
    "CustomResourceDefinition": "crd",
    "ServiceAccount": "rbac",
    "Role": "rbac",
    "ClusterRole": "rbac",
    "RoleBinding": "rbac",
    "ClusterRoleBinding": "rbac",
    "FlowSchema": "rbac",
    "ValidatingAdmissionPolicy": "admission",
    "ValidatingAdmissionPolicyBinding": "admission",
    "ValidatingWebhookConfiguration": "webhook",
    "MutatingWebhookConfiguration": "webhook",
    "Deployment": "manager",
    "ServiceMonitor": "prometheus",
    "PrometheusRule": "prometheus",
}
#: A pod's terminationGracePeriodSeconds when its spec gives none (Kubernetes' default).
KUBERNETES_GRACE_PERIOD = 30
#: Where the chart keeps the dashboards' JSON files (read at render: :func:`files_text`).
DASHBOARDS_DIR = "dashboards"
#: The operator's flag ``gracefulShutdownTimeout`` sets (:func:`_taken`).
SHUTDOWN_FLAG = "--graceful-shutdown-timeout"
#: The operator's flags that ``metrics.secure`` and ``metrics.certSecret`` decide.
METRICS_FLAGS = ("--metrics-secure", "--no-metrics-secure", "--metrics-cert-dir")
#: Where ``metrics.certSecret`` is mounted (``--metrics-cert-dir``; kubebuilder's path) and
#: the volume's name.
METRICS_CERTS = "metrics-certs"
FULLNAME = sentinel("FULLNAME")
LABELS = sentinel("LABELS")
#: ``helm test``'s Pod's labels: the chart's, named ``<name>-test`` so that no selector of
#: the operator's pods (its ReplicaSet's would adopt it) takes it.
TEST_LABELS = sentinel("TEST_LABELS")
SELECTOR = sentinel("SELECTOR")
#: The operator's pods' labels: the selector's and Helm's recommended ones.
POD_LABELS_OF_CHART = sentinel("POD_LABELS_OF_CHART")
_DNS_LABEL_MAX = 63


class ChartError(ValueError):
    """The install cannot be made a chart (no operator Deployment in it, say)."""


def _helpers(
    chart: str, selector_extra: Mapping[str, str], fullname_max: int, account: str = ""
) -> str:
    extra = "".join(f"\n{key}: {value}" for key, value in selector_extra.items())
    return f"""\
{{{{/* Generated from the operator's install (appstack.sdk.chart). */}}}}

{{{{/* The chart's name, or nameOverride. */}}}}
{{{{- define "{chart}.name" -}}}}
{{{{- default .Chart.Name .Values.nameOverride | trunc {fullname_max} | trimSuffix "-" }}}}
{{{{- end }}}}

{{{{/*
What every object's name starts with: fullnameOverride; else the release name if it contains
the chart's name; else <release>-<name>. At most {fullname_max} characters, so that the longest
Service name stays a DNS label.
*/}}}}
{{{{- define "{chart}.fullname" -}}}}
{{{{- if .Values.fullnameOverride }}}}
{{{{- .Values.fullnameOverride | trunc {fullname_max} | trimSuffix "-" }}}}
{{{{- else }}}}
{{{{- $name := default .Chart.Name .Values.nameOverride }}}}
{{{{- if contains $name .Release.Name }}}}
{{{{- .Release.Name | trunc {fullname_max} | trimSuffix "-" }}}}
{{{{- else }}}}
{{{{- printf "%s-%s" .Release.Name $name | trunc {fullname_max} | trimSuffix "-" }}}}
{{{{- end }}}}
{{{{- end }}}}
{{{{- end }}}}

{{{{/* What selects this release's operator pods (never another release's). */}}}}
{{{{- define "{chart}.selectorLabels" -}}}}
app.kubernetes.io/name: {{{{ include "{chart}.name" . }}}}
app.kubernetes.io/instance: {{{{ .Release.Name }}}}{extra}
{{{{- end }}}}

{{{{/* Kubernetes' recommended labels beside the name and the instance. */}}}}
{{{{- define "{chart}.releaseLabels" -}}}}
app.kubernetes.io/version: {{{{ .Chart.AppVersion | quote }}}}
app.kubernetes.io/managed-by: {{{{ .Release.Service }}}}
app.kubernetes.io/part-of: {chart}
helm.sh/chart: {{{{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 \
| trimSuffix "-" }}}}
{{{{- end }}}}

{{{{/* The labels of every object: Kubernetes' recommended ones, then commonLabels. */}}}}
{{{{- define "{chart}.labels" -}}}}
app.kubernetes.io/name: {{{{ include "{chart}.name" . }}}}
app.kubernetes.io/instance: {{{{ .Release.Name }}}}
{{{{ include "{chart}.releaseLabels" . }}}}
{{{{- with .Values.commonLabels }}}}
{{{{ toYaml . }}}}
{{{{- end }}}}
{{{{- end }}}}

{{{{/*
The operator's pods' labels: their selector's and Kubernetes' recommended ones (podLabels and
commonLabels are added by the Deployment).
*/}}}}
{{{{- define "{chart}.podLabels" -}}}}
{{{{ include "{chart}.selectorLabels" . }}}}
{{{{ include "{chart}.releaseLabels" . }}}}
{{{{- end }}}}

{{{{/* helm test's Pod's labels: the labels, the name <name>-test (no pod selector takes it). */}}}}
{{{{- define "{chart}.testLabels" -}}}}
{{{{- $name := printf "app.kubernetes.io/name: %s\\n" (include "{chart}.name" .) }}}}
{{{{- $test := printf "app.kubernetes.io/name: %s-test\\n" (include "{chart}.name" .) }}}}
{{{{- include "{chart}.labels" . | replace $name $test }}}}
{{{{- end }}}}

{{{{/*
The operator's ServiceAccount: serviceAccount.name; else, when the chart creates it,
<fullname>-{account}.
*/}}}}
{{{{- define "{chart}.serviceAccountName" -}}}}
{{{{- if .Values.serviceAccount.name }}}}
{{{{- .Values.serviceAccount.name }}}}
{{{{- else if .Values.serviceAccount.create }}}}
{{{{- include "{chart}.fullname" . }}}}-{account}
{{{{- else }}}}
{{{{- fail "serviceAccount.create=false needs serviceAccount.name (the one to run as)" }}}}
{{{{- end }}}}
{{{{- end }}}}
"""


def _split_image(image: str) -> tuple[str, str, str]:
    """``repo[:tag][@digest]`` → (repository, tag, digest)."""
    name, _, digest = image.partition("@")
    repository, tag = name, ""
    if ":" in name.rsplit("/", 1)[-1]:
        repository, _, tag = name.rpartition(":")
    return repository, tag, digest


def _walk_replace(node: Any, match: Mapping[str, str], by: Obj) -> Any:
    """``node`` with every mapping equal to ``match`` replaced by ``by``."""
    if isinstance(node, dict):
        if node == dict(match):
            return dict(by)
        return {key: _walk_replace(value, match, by) for key, value in node.items()}
    if isinstance(node, list):
        return [_walk_replace(item, match, by) for item in node]
    return node


def _relabel(meta: Obj, install_labels: Mapping[str, str]) -> None:
    """``meta``'s labels: the chart's (``LABELS``) and those of its own the install's
    labels do not cover (``control-plane``, an aggregation label...) nor the chart's
    (:data:`STANDARD_LABELS`: an install's own ``app.kubernetes.io/name`` would be a key
    twice)."""
    own = {
        key: value
        for key, value in (meta.get("labels") or {}).items()
        if install_labels.get(key) != value and key not in STANDARD_LABELS  # the chart's
    }
    meta["labels"] = {LABELS: "", **own}


def _manager(objects: list[Obj]) -> tuple[Obj, Obj]:
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    if len(deployments) != 1:
        raise ChartError(f"the install has {len(deployments)} Deployments, not the operator's one")
    (deployment,) = deployments
    containers = deployment["spec"]["template"]["spec"]["containers"]
    named = [c for c in containers if c.get("name") == "manager"]
    return deployment, (named or containers)[0]


def _taken_all(container: Obj, flag: str) -> list[str]:
    """Every value the install passes ``flag`` (``--flag=X`` or ``--flag X``), in order,
    taken out of ``container``'s arguments: a value of the chart sets it."""
    args = [str(arg) for arg in container.get("args") or []]
    values, kept, i = [], [], 0
    while i < len(args):
        if args[i].startswith(f"{flag}="):
            values.append(args[i].partition("=")[2])
        elif args[i] == flag and i + 1 < len(args):
            values.append(args[i + 1])
            i += 1
        else:
            kept.append(args[i])
        i += 1
    if "args" in container:
        container["args"] = kept
    return values


def _taken(container: Obj, flag: str, default: str) -> str:
    """The install's ``flag`` (its last value; ``default``, the operator's own, if it has
    none), taken out of ``container``'s arguments (:func:`_taken_all`)."""
    return (_taken_all(container, flag) or [default])[-1]


@dataclass(frozen=True)
class ChartFlag:
    """A flag of the operator's as a value of its chart: ``value`` its name in values.yaml,
    ``flag`` the operator's (``--x``), ``default`` the operator's own default. A boolean is
    passed as ``flag`` when true (and as ``off``, ``--no-x``, when false if the default is
    true); a tuple (a repeatable flag) as ``flag=ITEM`` per item; anything else as
    ``flag=VALUE`` when not the default — so a chart's default render is the install's. Its
    default in values.yaml is the install's setting (the flag taken out of the Deployment's
    arguments). ``schema``: its JSON schema; ``help``: its row in the chart's README. An
    operator's own flags become these by :func:`~appstack.sdk.chart_flags`."""

    value: str
    flag: str
    default: bool | int | str | tuple[str, ...]
    schema: Mapping[str, Any] = field(default_factory=dict)
    help: str = ""
    off: str = ""

    def taken(self, container: Obj) -> Any:
        """The install's setting of it, taken out of ``container``'s arguments."""
        args = [str(arg) for arg in container.get("args") or []]
        if isinstance(self.default, bool):
            named = [a for a in args if a in (self.flag, self.off)]
            if "args" in container:
                container["args"] = [a for a in args if a not in named]
            return named[-1] == self.flag if named else self.default
        if isinstance(self.default, tuple):
            return _taken_all(container, self.flag)
        taken = _taken(container, self.flag, str(self.default))
        return int(taken) if isinstance(self.default, int) else taken

    def item(self, text: str) -> str:
        """The Deployment's text with its list item ``'@@FLAG_<value>@@'`` templated."""
        name, values = f"FLAG_{self.value}", f".Values.{self.value}"
        if isinstance(self.default, bool):
            if self.default and self.off:
                return if_item(text, name, self.off, f"not {values}")
            return if_item(text, name, self.flag, values)
        if isinstance(self.default, tuple):
            return range_item(text, name, f"{self.flag}={{{{ . }}}}", values)
        read = f"int64 {values}" if isinstance(self.default, int) else f"toString {values}"
        shown = json.dumps(str(self.default))
        return if_item(
            text, name, f"{self.flag}={{{{ {read} }}}}", f"ne ({read} | toString) {shown}"
        )


#: The operator's flags that are values of every chart (:class:`ChartFlag`).
FLAG_VALUES = (
    ChartFlag(
        "logLevel",
        "--log-level",
        defaults.LOG_LEVEL,
        {"type": "string", "enum": ["debug", "info", "warning", "error", "critical"]},
        "The operator's --log-level (debug, info, warning, error, critical).",
    ),
    ChartFlag(
        "concurrency",
        "--concurrency",
        defaults.CONCURRENCY,
        {"type": "integer", "minimum": 1},
        "The operator's --concurrency: concurrent reconciles per controller.",
    ),
    ChartFlag(
        "syncPeriod",
        "--sync-period",
        DEFAULT_SYNC_PERIOD,
        {"type": "string", "pattern": DURATION},
        "The operator's --sync-period: every object reconciled again this often.",
    ),
    ChartFlag(
        "enableAllNamespaces",
        "--enable-all-namespaces",
        False,
        {"type": "boolean"},
        "Act in every watched namespace (--enable-all-namespaces; the admission policies "
        "follow), not only in those labelled enabled for the operator.",
        off="--no-enable-all-namespaces",
    ),
)


def _serves_metrics_tls(deployment: Obj, container: Obj) -> bool:
    """Whether the chart decides how the operator serves ``/metrics`` (``metrics.secure``,
    ``metrics.certSecret``): unless the install mounts a certificate of its own (a
    ``--metrics-cert-dir`` or a volume named as the chart's), which it then keeps."""
    args = [str(a) for a in container.get("args") or []]
    volumes = deployment["spec"]["template"]["spec"].get("volumes") or []
    return not any(a.startswith("--metrics-cert-dir") for a in args) and not any(
        v.get("name") == METRICS_CERTS for v in volumes
    )


def _spreads(deployment: Obj) -> bool:
    """Whether the install's pods have :func:`~appstack.sdk.spread_affinity` of their own
    selector (and no other affinity): what the chart renders by default for the release."""
    selector = deployment["spec"]["selector"].get("matchLabels") or {}
    affinity = deployment["spec"]["template"]["spec"].get("affinity")
    return bool(affinity == spread_affinity(selector))


def _values(
    deployment: Obj,
    container: Obj,
    kinds: set[str],
    sharded: bool,
    sharding: bool | None,
    *,
    watchable: bool = False,
) -> Obj:
    """values.yaml: every value with the install's own setting as its default (those of the
    metrics Service, the ServiceMonitor and the CRDs when ``kinds`` has them: ``metrics``
    for the Service; ``autoscaling``, off, when the operator is ``sharded`` or may be;
    ``sharding``, when the chart may turn it on or off, ``sharding`` its default;
    ``watchNamespaces``, empty, for a cluster-wide operator: ``watchable``). The
    install's ``--graceful-shutdown-timeout``, if any, leaves ``container``'s arguments for
    ``gracefulShutdownTimeout``."""
    pod = deployment["spec"]["template"]["spec"]
    repository, tag, digest = _split_image(str(container.get("image", "")))
    values: Obj = {
        "nameOverride": "",
        "fullnameOverride": "",
        "image": {
            "repository": repository,
            "tag": tag,
            "digest": digest,
            "pullPolicy": container.get("imagePullPolicy", ""),
        },
        "imagePullSecrets": pod.get("imagePullSecrets") or [],
        "replicas": deployment["spec"].get("replicas", 1),
        **({"autoscaling": autoscaling_values()} if sharded else {}),
        "resources": container.get("resources") or {},
        "podAnnotations": {},
        "podLabels": {},
        "commonLabels": {},
        "nodeSelector": pod.get("nodeSelector") or {},
        "tolerations": pod.get("tolerations") or [],
        "topologySpreadConstraints": pod.get("topologySpreadConstraints") or [],
        "priorityClassName": pod.get("priorityClassName", ""),
        # the install's own spread of its replicas is the chart's default (empty): rendered
        # for the release's pods, not the install's selector
        "affinity": {} if _spreads(deployment) else pod.get("affinity") or {},
        "podSecurityContext": pod.get("securityContext") or {},
        "securityContext": container.get("securityContext") or {},
        "serviceAccount": {"create": True, "name": "", "annotations": {}},
        **({"watchNamespaces": []} if watchable else {}),
        "leaderElection": {"enabled": "--leader-elect" in (container.get("args") or [])},
        **({"sharding": {"enabled": sharding}} if sharding is not None else {}),
        "terminationGracePeriodSeconds": pod.get(
            "terminationGracePeriodSeconds", KUBERNETES_GRACE_PERIOD
        ),
        "gracefulShutdownTimeout": _taken(container, SHUTDOWN_FLAG, SHUTDOWN_TIMEOUT),
        "extraArgs": [],
        "extraEnv": [],
        "extraVolumes": [],
        "extraVolumeMounts": [],
        **_probe_values(container),
        "revisionHistoryLimit": deployment["spec"].get("revisionHistoryLimit"),
    }
    if "metrics" in kinds:
        values["metrics"] = {"enabled": True}
        if _serves_metrics_tls(deployment, container):
            secure = "--no-metrics-secure" not in (container.get("args") or [])
            container["args"] = [a for a in container["args"] if a not in METRICS_FLAGS]
            values["metrics"] |= {"secure": secure, "certSecret": ""}
        if "ServiceMonitor" in kinds:
            monitor = {
                "enabled": False,
                "interval": "30s",
                "labels": {},
                "prometheusServiceAccount": dict(PROMETHEUS_ACCOUNT),
            }
            values["metrics"]["serviceMonitor"] = monitor
        if "PrometheusRule" in kinds:  # the alerts the kinds declare
            values["metrics"]["prometheusRule"] = {"enabled": False, "labels": {}}
        if "dashboards" in kinds:  # config/grafana's ConfigMap, for Grafana's sidecar
            values["metrics"]["grafanaDashboard"] = {"enabled": False}
    if "CustomResourceDefinition" in kinds:
        values["crd"] = {"enable": True, "keep": True}
    return values


SHARDING_HELP = """
# sharding.enabled (docs/sharding.md): every replica reconciles its own share of the
# objects (the operator's --sharding, as config/sharding makes the install); needs
# leaderElection.enabled and 2 replicas or more."""


GRAFANA_HELP = """
# metrics.grafanaDashboard: the operator's Grafana dashboards (config/grafana) as a ConfigMap
# labelled grafana_dashboard=1, for Grafana's dashboard sidecar."""


WATCHED_HELP = """
# watchNamespaces empty: the operator watches every namespace (a ClusterRole); else only
# those (--namespace for each): a Role and RoleBinding in each, one more in the release's
# namespace for its Events unless it is listed; the CRDs and the metrics reviews stay
# cluster-wide. An operator whose controllers read cluster-scoped kinds needs them all."""


WATCHED_NOTE = """
{{ if .Values.watchNamespaces -}}
It watches only: {{ join ", " .Values.watchNamespaces }}.
{{- else -}}
It watches every namespace.
{{- end }}
"""


AUTOSCALING_HELP = """
# autoscaling (the operator is sharded: every replica a shard): enabled, a
# HorizontalPodAutoscaler sets the replicas between minReplicas and maxReplicas, at
# targetCPUUtilizationPercentage of the CPU requests (or its own metrics), at the pace of
# behavior (each step moves objects between shards); replicas is then left to it."""


VALUES_HELP = """\
# {chart}: the operator's chart, generated from its install.
#
# Names: every object's name starts with the fullname (fullnameOverride; else the release
# name if it contains "{chart}", else <release>-{chart}); the operator's pods are selected by
# the release, so releases side by side in one namespace keep to their own pods.
# image.tag empty: the chart's appVersion; image.digest (sha256:...) runs
# <repository>@<digest>. affinity empty: this release's replicas preferably on different
# nodes. leaderElection.enabled=false needs replicas: 1. gracefulShutdownTimeout
# (--graceful-shutdown-timeout, passed when not {shutdown}: on SIGTERM, how long in-flight
# reconciles, and a sharded replica's hand-back, may take; a duration such as 90s or 1m30s)
# must be below terminationGracePeriodSeconds, or the install fails: raise both together.
# extraArgs are more of the operator's flags (its --help lists them); extraEnv more of its
# environment.{watched}{sharding}{autoscaling}
# metrics.serviceMonitor needs the Prometheus Operator's CRDs; its labels are what your
# Prometheus selects it by (kube-prometheus-stack: release: <its release>).{grafana}
# crd.enable=false: the CRDs are installed some other way; crd.keep: helm uninstall leaves
# them (and every object of them).
"""


@dataclass(frozen=True)
class _Install:
    """What templating each object of one install needs to know."""

    chart: str
    prefix: str
    namespace: str
    names: Mapping[str, str]
    selector: Mapping[str, str]
    install_labels: Mapping[str, str]
    account: str
    lease: str | None
    webhook_service: str | None
    sharded: bool = False
    #: ``sharding.enabled`` chooses: the Deployment's ``--sharding`` and the objects only a
    #: sharded install has or has otherwise.
    toggled: bool = False
    #: A cluster-wide install: the names of its operator's ClusterRole and binding, which
    #: ``watchNamespaces`` turns into a Role and RoleBinding per watched namespace
    #: (:func:`_watched_text`); None for an install that watches its own namespace.
    grants: tuple[str, str] | None = None
    #: The operator's flags that are values (:data:`FLAG_VALUES` and its own).
    flags: tuple[ChartFlag, ...] = ()
    #: The operator's enabled label (``<domain>/enabled``): what ``enableAllNamespaces``
    #: turns off in the admission policies and the webhooks' namespace selectors.
    enabled_label: str = ""
    #: The namespace selectors of the operator's webhooks, (labelled enabled only, every
    #: namespace): a webhook with either is sent what ``enableAllNamespaces`` says.
    selectors: tuple[Obj, Obj] | None = None
    #: The chart decides how ``/metrics`` is served (:func:`_serves_metrics_tls`): the name
    #: a mounted certificate is for (the metrics Service's DNS name), else empty.
    metrics_server: str = ""
    #: The names of the install's metrics Services (:func:`_metrics_services`).
    metrics_services: frozenset[str] = frozenset()


#: The operator pod's fields that are blocks of the values, rendered when not empty:
#: (field, sentinel, value).
POD_BLOCKS = (
    ("nodeSelector", "NODE_SELECTOR", ".Values.nodeSelector"),
    ("tolerations", "TOLERATIONS", ".Values.tolerations"),
    ("topologySpreadConstraints", "SPREAD", ".Values.topologySpreadConstraints"),
)


def _arg_sentinels(container: Obj, install: _Install) -> None:
    """The operator's arguments, then a sentinel item for each the values add
    (:func:`_args_text`), in place."""
    args = list(container.get("args") or [])
    flags = ["LEASE"] if install.lease else []
    flags += ["WEBHOOK_SERVICE"] if install.webhook_service else []
    flags += ["SHUTDOWN", *(f"FLAG_{flag.value}" for flag in install.flags)]
    flags += ["METRICS_INSECURE", "METRICS_CERT"] if install.metrics_server else []
    flags += ["WATCH"] if install.grants else []
    container["args"] = args + [sentinel(flag) for flag in (*flags, "EXTRA_ARGS")]
    if install.toggled:  # where the sharding Component puts it: last of the install's own
        container["args"].insert(len(args), sentinel("SHARDING"))


def _args_text(text: str, install: _Install) -> str:
    """The Deployment's text with the arguments the values decide
    (:func:`_arg_sentinels`)."""
    text = wrap_item(
        text, "--leader-elect", "{{- if .Values.leaderElection.enabled }}", "{{- end }}"
    )
    if install.lease:
        text = if_item(
            text, "LEASE", f"--leader-election-id={install.lease}", ".Values.leaderElection.enabled"
        )
    if install.webhook_service:
        text = text.replace(
            f"'{sentinel('WEBHOOK_SERVICE')}'", f"--webhook-service={install.webhook_service}"
        )
    text = if_item(text, "SHARDING", "--sharding", ".Values.sharding.enabled")
    text = if_item(text, "SHUTDOWN", *SHUTDOWN_ARG)
    for flag in install.flags:
        text = flag.item(text)
    text = if_item(text, "METRICS_INSECURE", *METRICS_INSECURE_ARG)
    text = if_item(
        text, "METRICS_CERT", f"--metrics-cert-dir={METRICS_CERT_DIR}", METRICS_CERT_SECRET
    )
    if install.grants:
        text = range_item(text, *WATCH_ARG)
    return range_item(text, "EXTRA_ARGS", "{{ . | quote }}", ".Values.extraArgs")


#: The operator container's probes that are values (their timing): (probe, sentinel).
PROBES = (("livenessProbe", "LIVENESS"), ("readinessProbe", "READINESS"))
#: What of a probe is its timing (a value of the chart); the rest (its handler) is kept.
PROBE_TIMING = frozenset(
    {
        "initialDelaySeconds",
        "periodSeconds",
        "timeoutSeconds",
        "failureThreshold",
        "successThreshold",
    }
)


def _probe_values(container: Obj) -> Obj:
    """``livenessProbe`` and ``readinessProbe``: the timing of the install's probes."""
    return {
        probe: {k: v for k, v in container[probe].items() if k in PROBE_TIMING}
        for probe, _ in PROBES
        if probe in container
    }


def _extended(text: str, *, mounts: bool, volumes: bool, certs: bool) -> str:
    """The Deployment's text with ``extraVolumeMounts`` and ``extraVolumes`` after the
    install's own and the metrics certificate's (``certs``: rendered with
    ``metrics.certSecret``; each key rendered only when it has an item), the probes' timing
    (``livenessProbe``, ``readinessProbe``: Helm merges a value over the install's) and
    ``revisionHistoryLimit`` (null: Kubernetes' default)."""
    for key, name, extra, own in (
        ("volumeMounts", "EXTRA_MOUNTS", ".Values.extraVolumeMounts", mounts),
        ("volumes", "EXTRA_VOLUMES", ".Values.extraVolumes", volumes),
    ):
        if not own:
            either = f"or {METRICS_CERT_SECRET} {extra}" if certs else extra
            text = wrap_key(text, key, f"{{{{- if {either} }}}}", "{{- end }}")
        text = items(text, name, extra)
    if certs:
        text = wrap_list_item(text, f"name: {METRICS_CERTS}", *WITH_METRICS_CERT)
    for probe, name in PROBES:
        text = merged_keys(text, name, f".Values.{probe}")
    return set_scalar(text, "revisionHistoryLimit", "HISTORY", ".Values.revisionHistoryLimit")


def _deployment_text(deployment: Obj, container: Obj, install: _Install) -> str:
    """The operator's Deployment with the values' sentinels, as template text."""
    spec = deployment["spec"]
    spec["replicas"] = sentinel("REPLICAS")
    template = spec["template"]
    meta = template.setdefault("metadata", {})
    pod = template["spec"]
    annotations = meta.get("annotations") or {}
    meta["annotations"] = (
        {**annotations, sentinel("POD_ANNOTATIONS"): ""}
        if annotations
        else sentinel("POD_ANNOTATIONS")
    )
    own = {
        key: value
        for key, value in (meta.get("labels") or {}).items()
        if key not in install.selector and install.install_labels.get(key) != value
    }
    meta["labels"] = {POD_LABELS_OF_CHART: "", POD_LABELS: "", **own}
    spec["selector"] = {"matchLabels": {SELECTOR: ""}}
    container.pop("imagePullPolicy", None)
    # the operator's image wherever its container names it (an image it gives its children,
    # a backup Job's, say): the image's values
    for variable in container.get("env") or []:
        if variable.get("value") and variable["value"] == container.get("image"):
            variable["value"] = sentinel("IMAGE")
    container["image"] = sentinel("IMAGE")
    _arg_sentinels(container, install)
    container["env"] = [*(container.get("env") or []), sentinel("EXTRA_ENV")]
    spec["revisionHistoryLimit"] = sentinel("HISTORY")
    for probe, name in PROBES:
        if probe in container:
            kept = {k: v for k, v in container[probe].items() if k not in PROBE_TIMING}
            container[probe] = {**kept, sentinel(name): ""}
    mounts = list(container.get("volumeMounts") or [])
    volumes = list(pod.get("volumes") or [])
    certs: tuple[list[Obj], list[Obj]] = ([], [])
    if install.metrics_server:  # metrics.certSecret's
        mount = {"name": METRICS_CERTS, "mountPath": METRICS_CERT_DIR, "readOnly": True}
        volume = {"name": METRICS_CERTS, "secret": {"secretName": sentinel("CERT_SECRET")}}
        certs = ([mount], [volume])
    container["volumeMounts"] = [*mounts, *certs[0], sentinel("EXTRA_MOUNTS")]
    pod["volumes"] = [*volumes, *certs[1], sentinel("EXTRA_VOLUMES")]
    pod_settings(pod, container)
    pod["containers"] = [pull_policy(c) if c is container else c for c in pod["containers"]]
    pod["imagePullSecrets"] = sentinel("PULL_SECRETS")
    if install.account:
        pod["serviceAccountName"] = ACCOUNT_NAME
    for key, name, _ in POD_BLOCKS:
        pod[key] = sentinel(name)
    pod["priorityClassName"] = sentinel("PRIORITY")
    pod["terminationGracePeriodSeconds"] = sentinel("GRACE")
    # the default: this release's replicas preferably on different nodes
    pod["affinity"] = spread_affinity({SELECTOR: ""})
    text = _args_text(dump(deployment), install)
    text = _extended(
        text, mounts=bool(mounts), volumes=bool(volumes), certs=bool(install.metrics_server)
    )
    text = items(text, "EXTRA_ENV", ".Values.extraEnv")
    text = pod_settings_text(text)
    for key, name, value in (
        *POD_BLOCKS,
        ("annotations", "POD_ANNOTATIONS", ".Values.podAnnotations"),
    ):
        text = with_block(text, key, name, value)
    text = with_scalar(text, "priorityClassName", "PRIORITY", ".Values.priorityClassName")
    text = merged_keys(text, "POD_ANNOTATIONS", ".Values.podAnnotations")
    text = pod_extras(text)
    if install.sharded:
        text = unless_autoscaled(text)
    values = {
        "REPLICAS": "{{ .Values.replicas }}",
        "IMAGE": IMAGE,
        "GRACE": GRACE_PERIOD,
        **METRICS_CERT_VALUES,
    }
    return substitute(text, values)


#: Each labels sentinel key and the chart helper it becomes an include of.
_LABEL_HELPERS = {
    LABELS: "labels",
    TEST_LABELS: "testLabels",
    POD_LABELS_OF_CHART: "podLabels",
    SELECTOR: "selectorLabels",
}


def _labels_text(text: str, chart: str) -> str:
    """The labels sentinel keys (:data:`_LABEL_HELPERS`) become the helpers' includes."""

    def include(helper: str) -> Any:
        def replace(match: re.Match[str]) -> str:
            indent = match.group(1)
            return f'{indent}{{{{- include "{chart}.{helper}" $ | nindent {len(indent)} }}}}'

        return replace

    for sentinel_key, helper in _LABEL_HELPERS.items():
        pattern = rf"^(\s*)'{re.escape(sentinel_key)}': ''$"
        text = re.sub(pattern, include(helper), text, flags=re.M)
    return text


def _renamed(text: str, names: Mapping[str, str]) -> str:
    """Every whole-name occurrence of a key of ``names`` (not a longer name's start or
    end) replaced by its value."""
    for old in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![\w-]){re.escape(old)}(?![\w-])", names[old], text)
    return text


#: What a cluster-scoped name's ``-<install namespace>`` becomes (:func:`_namespaced`).
RELEASE_NS_SUFFIX = "-{{ $.Release.Namespace }}"


def _namespaced(obj: Obj, prefix: str, namespace: str) -> str:
    """A renamed object's name after the chart's fullname: its name without the install's
    ``prefix``, a cluster-scoped one's ``-<namespace>`` suffix (an install that names them
    after its namespace, so that installs in two namespaces share none) following the
    release's namespace."""
    rest = str(obj["metadata"]["name"]).removeprefix(prefix)
    suffix = f"-{namespace}"
    if obj["kind"] in CLUSTER_SCOPED and rest.endswith(suffix):
        return rest.removesuffix(suffix) + RELEASE_NS_SUFFIX
    return rest


def _released(text: str, install: _Install) -> str:
    """``text`` with the install's names and namespace following the release's: each
    renamed object's fullname, the release's namespace."""
    text = _renamed(text, {**install.names, install.namespace: "{{ $.Release.Namespace }}"})
    return text.replace(FULLNAME, f'{{{{ include "{install.chart}.fullname" $ }}}}')


#: The operator's ServiceAccount's name wherever it is named (the ServiceAccount, the
#: Deployment, the role bindings): the chart's ``serviceAccountName`` helper.
ACCOUNT_NAME = sentinel("ACCOUNT_NAME")


#: Where an install has its admission policies' ``enabled`` variable and its webhooks'
#: choice of namespaces (:func:`_enabled_sentinels`): ``enableAllNamespaces`` chooses.
ENABLED, ENABLED_ONLY = sentinel("ENABLED"), sentinel("ENABLED_ONLY")


def _scrapes_self_signed(endpoint: Obj, install: _Install) -> bool:
    """Whether a ServiceMonitor endpoint scrapes the operator's ``/metrics`` as the install
    serves it (HTTPS, its self-signed certificate unchecked: the SDK's
    :func:`~appstack.sdk.metrics_tls`) where the chart decides how it is served — so
    ``metrics.secure`` and ``metrics.certSecret`` choose its scheme and TLS (an endpoint
    you changed is kept)."""
    return bool(install.metrics_server) and (
        endpoint.get("scheme") == "https" and endpoint.get("tlsConfig") == metrics_tls()
    )


def _scheme_text(text: str, install: _Install) -> str:
    """The endpoints of :func:`_scrapes_self_signed` as the values choose: https with the
    mounted certificate's CA (``ca.crt`` of ``metrics.certSecret``, as cert-manager writes
    it) for the metrics Service's name, or unchecked; or http."""
    marked = f"scheme: '{sentinel('SCHEME')}'"
    if marked not in text:
        return text
    checked = metrics_tls(sentinel("CERT_SECRET"), install.metrics_server)
    text = metrics_scheme(text.replace(marked, "scheme: https"), checked, metrics_tls())
    return substitute(text, METRICS_CERT_VALUES)


def _enabled_sentinels(obj: Obj, install: _Install) -> None:
    """The operator's choice of namespaces in ``obj`` as sentinels, in place: an admission
    policy's ``enabled`` variable (every namespace, ``true``, or those labelled enabled:
    ``enabled_check``), a webhook's namespace selector (the operator's, with or without the
    enabled label: :func:`~appstack.sdk.kit.webhooks.namespace_selector`). What a user
    changed from the generated choice is kept as it is."""
    if not install.enabled_label:
        return
    if obj["kind"] == "ValidatingAdmissionPolicy":
        check = labelled(install.enabled_label)
        for variable in obj.get("spec", {}).get("variables") or []:
            if variable.get("name") == "enabled" and variable.get("expression") in ("true", check):
                variable["expression"] = ENABLED
    elif obj["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        for webhook in obj.get("webhooks") or []:
            chosen = webhook.get("namespaceSelector")
            if install.selectors and chosen in install.selectors:
                webhook["namespaceSelector"] = {
                    **{k: v for k, v in chosen.items() if k != "matchLabels"},
                    ENABLED_ONLY: "",
                }


def _enabled_text(text: str, install: _Install) -> str:
    """The sentinels of :func:`_enabled_sentinels` as ``enableAllNamespaces`` chooses."""
    text = substitute(text, {"ENABLED": enabled_choice(labelled(install.enabled_label))})
    label = json.dumps({install.enabled_label: "true"})
    return re.sub(
        rf"^(\s*)'{re.escape(ENABLED_ONLY)}': ''$",
        rf"\1{{{{- if not {ENABLE_ALL} }}}}\n\1matchLabels: {label}\n\1{{{{- end }}}}",
        text,
        flags=re.M,
    )


def _prepared(obj: Obj, install: _Install) -> None:
    """``obj``'s metadata and selectors with the chart's sentinels, in place."""
    kind, meta = obj["kind"], obj["metadata"]
    _enabled_sentinels(obj, install)
    if kind in CLUSTER_SCOPED:
        meta.pop("namespace", None)
    _relabel(meta, install.install_labels)
    if kind == "PrometheusRule":
        meta["labels"][sentinel("RULE_LABELS")] = ""
    if kind == "ServiceMonitor":
        meta["labels"][sentinel("MONITOR_LABELS")] = ""
        obj["spec"]["selector"] = {"matchLabels": {SELECTOR: ""}}
        for endpoint in obj["spec"].get("endpoints") or []:
            endpoint["interval"] = sentinel("INTERVAL")
            if _scrapes_self_signed(endpoint, install):
                endpoint["scheme"] = sentinel("SCHEME")
    elif kind == "CustomResourceDefinition":
        meta["annotations"] = {**(meta.get("annotations") or {}), sentinel("KEEP"): ""}
    elif kind == "ServiceAccount" and meta["name"] == install.account:
        meta["annotations"] = {
            **(meta.get("annotations") or {}),
            sentinel("ACCOUNT_ANNOTATIONS"): "",
        }
        meta["name"] = ACCOUNT_NAME
    _name_account(obj, install.account)


def _name_account(obj: Obj, account: str) -> None:
    """Where ``obj`` — a role binding, the FlowSchema of the operator's Lease requests —
    names the operator's ServiceAccount ``account``: :data:`ACCOUNT_NAME`, in place."""
    if obj["kind"] in ("RoleBinding", "ClusterRoleBinding"):
        subjects = [s for s in obj.get("subjects") or [] if s.get("kind") == "ServiceAccount"]
    elif obj["kind"] == "FlowSchema":
        subjects = [
            s["serviceAccount"]
            for each in obj["spec"].get("rules") or []
            for s in each.get("subjects") or []
            if s.get("serviceAccount")
        ]
    else:
        return
    for subject in subjects:
        if subject.get("name") == account:
            subject["name"] = ACCOUNT_NAME


def _dashboards(obj: Obj) -> bool:
    """Whether ``obj`` is the ConfigMap of the operator's Grafana dashboards
    (``config/grafana``), labelled for Grafana's sidecar."""
    labels = obj["metadata"].get("labels") or {}
    return obj["kind"] == "ConfigMap" and labels.get(SIDECAR_LABEL) == "1"


def _metrics_port(container: Obj) -> int | None:
    """The port the operator serves ``/metrics`` on (None: ``--metrics-bind-address=0``)."""
    address = next(
        (
            str(arg).partition("=")[2]
            for arg in container.get("args") or []
            if str(arg).startswith("--metrics-bind-address=")
        ),
        METRICS_ADDRESS,  # the flag's default when the arguments do not say
    )
    port = address.rpartition(":")[2]
    return int(port) if port.isdigit() and port != "0" else None


def _metrics_services(objects: Sequence[Obj], deployment: Obj, container: Obj) -> frozenset[str]:
    """The names of the install's metrics Services, by what they are rather than by name
    (a user may have renamed config/'s): a Service selecting the operator's pods with a
    port to the one ``/metrics`` is served on (its number or the container port's name)."""
    port = _metrics_port(container)
    if port is None:
        return frozenset()
    targets: set[object] = {port}
    targets |= {p["name"] for p in container.get("ports") or [] if p.get("containerPort") == port}
    pod_labels = deployment["spec"]["template"]["metadata"].get("labels") or {}
    return frozenset(
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "Service"
        and (selector := (o.get("spec") or {}).get("selector") or {})
        and selector.items() <= pod_labels.items()
        and any(p.get("targetPort", p.get("port")) in targets for p in o["spec"].get("ports") or [])
    )


def _metrics_reader(objects: Sequence[Obj]) -> Obj | None:
    """The install's metrics-reader ClusterRole: the one that grants exactly ``get`` on
    ``/metrics`` (what a scraper's account is bound to)."""
    return next(
        (
            o
            for o in objects
            if o["kind"] == "ClusterRole" and o.get("rules") == [METRICS_READ_RULE]
        ),
        None,
    )


def _condition(obj: Obj, metrics: frozenset[str] = frozenset()) -> str | None:
    """The values an object is rendered under, if any (``metrics``: the names of the
    install's metrics Services, :func:`_metrics_services`)."""
    kind = obj["kind"]
    if kind == "CustomResourceDefinition":
        return ".Values.crd.enable"
    if kind == "ServiceMonitor":
        return "and .Values.metrics.enabled .Values.metrics.serviceMonitor.enabled"
    if kind == "PrometheusRule":
        return "and .Values.metrics.enabled .Values.metrics.prometheusRule.enabled"
    if kind == "Service" and obj["metadata"]["name"] in metrics:
        return ".Values.metrics.enabled"
    if _dashboards(obj):
        return ".Values.metrics.grafanaDashboard.enabled"
    return None


def _path(obj: Obj, install: _Install) -> str:
    """``templates/<directory>/<name>.yaml``, the directory as in ``config/``, the name as
    the chart names the object after its fullname (:func:`_namespaced`) without the
    release's namespace a cluster-scoped one ends in."""
    kind = obj["kind"]
    name = _namespaced(obj, install.prefix, install.namespace).removesuffix(RELEASE_NS_SUFFIX)
    if kind == "Service":
        directory = "webhook" if name == "webhook-service" else "metrics"
    elif _dashboards(obj):
        directory = "grafana"
    else:
        directory = DIRECTORIES.get(kind, "extra")
    return f"templates/{directory}/{name}.yaml"


def _grants(
    objects: Sequence[Obj], deployment: Obj, container: Obj, domain: str
) -> tuple[str, str] | None:
    """(ClusterRole, ClusterRoleBinding) names of a cluster-wide operator's own grants: the
    ClusterRole that holds the admission guards' marker (only the operator's own role
    does: :func:`~appstack.sdk.rbac.marker_rule`), bound to its ServiceAccount; None when
    the operator is told its namespaces (``--namespace``) or has no such ClusterRole."""
    if any(str(arg).startswith("--namespace") for arg in container.get("args") or []):
        return None
    marked = {
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "ClusterRole" and marker_rule(domain) in (o.get("rules") or [])
    }
    account = deployment["spec"]["template"]["spec"].get("serviceAccountName", "default")
    for o in objects:
        ref, subjects = o.get("roleRef") or {}, o.get("subjects") or []
        if (
            o["kind"] == "ClusterRoleBinding"
            and ref.get("kind") == "ClusterRole"
            and ref.get("name") in marked
            and any(
                s.get("kind") == "ServiceAccount" and s.get("name") == account for s in subjects
            )
        ):
            return ref["name"], o["metadata"]["name"]
    return None


WATCHED = sentinel("WATCHED")


def _watched_text(obj: Obj, install: _Install) -> str:
    """The operator's ClusterRole or its binding as ``watchNamespaces`` chooses
    (:func:`~appstack.sdk.HelmText.watching`): itself while every namespace is watched;
    else a Role of its rules as a Role grants them
    (:func:`~appstack.sdk.rbac.within_namespaces`) or a RoleBinding in each watched
    namespace, and one of what the process needs there (Events:
    :func:`~appstack.sdk.rbac.process_rules`) in the release's namespace unless it is
    watched."""
    everywhere = _object_text(copy.deepcopy(obj), None, install, watched=False)

    def scoped(namespace: str, rules: list[Obj] | None) -> str:
        scoped_obj = copy.deepcopy(obj)
        scoped_obj["kind"] = "Role" if obj["kind"] == "ClusterRole" else "RoleBinding"
        scoped_obj["metadata"]["namespace"] = namespace
        if rules is not None:
            scoped_obj["rules"] = rules
        if "roleRef" in scoped_obj:
            scoped_obj["roleRef"]["kind"] = "Role"
        text = _object_text(scoped_obj, None, install, watched=False)
        return substitute(text, {"WATCHED": "{{ . }}"})

    role = obj["kind"] == "ClusterRole"
    each = scoped(WATCHED, within_namespaces(obj["rules"]) if role else None)
    own = scoped(install.namespace, list(process_rules(cluster_wide=False)) if role else None)
    return _joined(watching([everywhere], [each], [own]))


def _object_text(
    obj: Obj, container: Obj | None, install: _Install, *, watched: bool = True
) -> str:
    """One object as template text (``container``: the operator's, when ``obj`` is its
    Deployment; the operator's own grants as ``watchNamespaces`` chooses, unless not
    ``watched``)."""
    name = obj["metadata"]["name"]
    if watched and install.grants and obj["kind"].startswith("Cluster") and name in install.grants:
        return _watched_text(obj, install)
    files = sorted(obj.get("data") or {}) if _dashboards(obj) else []
    if files:  # the JSON files are the chart's (dashboards/), read at render
        obj["data"] = file_entries(files)
    _prepared(obj, install)
    if container is not None:
        checks = ONE_LEADER + SHUTDOWN_IN_GRACE + (AUTOSCALING_RANGE if install.sharded else "")
        checks += SHARDING_NEEDS if install.toggled else ""
        text = checks + _deployment_text(obj, container, install)
    else:
        text = dump(_walk_replace(obj, install.selector, {SELECTOR: ""}))
    if obj["kind"] == "PrometheusRule":  # its annotations are Prometheus templates
        text = literal_braces(text)
    text = _scheme_text(_labels_text(text, install.chart), install)
    text = merged_keys(text, "ACCOUNT_ANNOTATIONS", ".Values.serviceAccount.annotations")
    text = merged_keys(text, "MONITOR_LABELS", ".Values.metrics.serviceMonitor.labels")
    text = merged_keys(text, "RULE_LABELS", ".Values.metrics.prometheusRule.labels")
    text = re.sub(
        rf"^(\s*)'{re.escape(sentinel('KEEP'))}': ''$",
        r"\1{{- if $.Values.crd.keep }}\n\1helm.sh/resource-policy: keep\n\1{{- end }}",
        text,
        flags=re.M,
    )
    # names inside quoted strings too (a CEL literal): replaced in place, quotes kept
    text = _released(text, install)
    text = _enabled_text(text, install)
    account = f'{{{{ include "{install.chart}.serviceAccountName" $ }}}}'
    text = substitute(text, {"ACCOUNT_NAME": account})
    if obj["kind"] == "ServiceAccount" and account in text:  # the operator's: unless given
        text = f"{{{{- if .Values.serviceAccount.create }}}}\n{text}{{{{- end }}}}\n"
    text = substitute(text, {"INTERVAL": "{{ $.Values.metrics.serviceMonitor.interval }}"})
    text = files_text(text, files, DASHBOARDS_DIR)
    condition = _condition(obj, install.metrics_services)
    return f"{{{{- if {condition} }}}}\n{text}{{{{- end }}}}\n" if condition else text


def _test_pod(service: Obj, install: _Install) -> str:
    """``helm test``'s Pod (:func:`~appstack.sdk.helmtext.metrics_test_pod`): a GET of
    ``/metrics`` through the release's metrics Service ``service`` (HTTPS unless its port
    is named ``http`` or ``metrics.secure`` is false; the certificate checked against
    ``metrics.certSecret``'s CA when given), with the operator's image; rendered with the
    Service."""
    (port, *_) = service["spec"]["ports"]
    scheme = "http" if port.get("name") == "http" else "https"
    if install.metrics_server:  # as metrics.secure says
        scheme = METRICS_SCHEME
    name = service["metadata"]["name"]
    url = f"{scheme}://{name}.{install.namespace}.svc:{port['port']}/metrics"
    ca = sentinel("CERT_SECRET") if install.metrics_server else None
    pod = metrics_test_pod(
        f"{FULLNAME}-test-metrics", install.namespace, url, {TEST_LABELS: ""}, ca_secret=ca
    )
    text = pod_extras(dump(pod))
    text = metrics_ca_text(text) if ca else text
    text = _released(_labels_text(text, install.chart), install)
    text = substitute(text, {"IMAGE": IMAGE, **METRICS_CERT_VALUES})
    return f"{{{{- if .Values.metrics.enabled }}}}\n{text}{{{{- end }}}}\n"


def _autoscaler(deployment: str, install: _Install) -> str:
    """A sharded operator's HorizontalPodAutoscaler (``autoscaling.enabled``), named and
    labelled as its Deployment."""
    text = autoscaler_text(deployment, deployment, {LABELS: ""})
    return _released(_labels_text(text, install.chart), install)


#: Where the ServiceMonitor's reader binding says Prometheus runs (kube-prometheus's
#: ServiceAccount and namespace): ``metrics.serviceMonitor.prometheusServiceAccount``.
PROMETHEUS_ACCOUNT = {"name": "prometheus-k8s", "namespace": "monitoring"}
_ACCOUNT = ".Values.metrics.serviceMonitor.prometheusServiceAccount"


def _reader_binding(reader: Obj, install: _Install) -> str:
    """The ClusterRoleBinding that lets Prometheus's ServiceAccount (the values') read
    ``/metrics`` — the install's metrics-reader ClusterRole, ``reader`` — rendered with the
    ServiceMonitor when that account has a name."""
    role = install.names.get(reader["metadata"]["name"], reader["metadata"]["name"])
    # named as its role, a namespace suffix (:func:`_namespaced`) kept last
    suffix = RELEASE_NS_SUFFIX if role.endswith(RELEASE_NS_SUFFIX) else ""
    base = role.removesuffix(suffix)
    obj = binding(
        f"{base}-prometheus{suffix}",
        reader,
        (sentinel("ACCOUNT_NS"), sentinel("ACCOUNT")),
        {LABELS: ""},
    )
    text = _released(_labels_text(dump(obj), install.chart), install)
    text = substitute(
        text,
        {"ACCOUNT": f"{{{{ {_ACCOUNT}.name }}}}", "ACCOUNT_NS": f"{{{{ {_ACCOUNT}.namespace }}}}"},
    )
    condition = (
        f"and .Values.metrics.enabled .Values.metrics.serviceMonitor.enabled {_ACCOUNT}.name"
    )
    return f"{{{{- if {condition} }}}}\n{text}{{{{- end }}}}\n"


def _chart_own(objects: Sequence[Obj], deployment: Obj, install: _Install) -> dict[str, list[str]]:
    """The templates only the chart has, by path: ``helm test``'s Pod (with a metrics
    Service; labelled ``<name>-test``, so no selector of the operator's pods takes it), the
    ServiceMonitor's reader binding (with a ServiceMonitor and the metrics reader role),
    a sharded operator's autoscaler."""
    parts: dict[str, list[str]] = {}
    metrics = [o for o in objects if o["metadata"]["name"] in install.metrics_services]
    if metrics:
        parts["templates/tests/test-metrics.yaml"] = [_test_pod(metrics[0], install)]
    reader = _metrics_reader(objects)
    if reader is not None and any(o["kind"] == "ServiceMonitor" for o in objects):
        parts["templates/prometheus/metrics-reader-binding.yaml"] = [
            _reader_binding(reader, install)
        ]
    if install.sharded:
        parts["templates/manager/horizontalpodautoscaler.yaml"] = [
            _autoscaler(deployment["metadata"]["name"], install)
        ]
    return parts


def _kept(objects: Sequence[Mapping[str, Any]], identity: OperatorIdentity) -> list[Obj]:
    """Copies of the install's objects but its own Namespace (the release's is used)."""
    return [
        copy.deepcopy(dict(o))
        for o in objects
        if o and not (o.get("kind") == "Namespace" and o["metadata"]["name"] == identity.namespace)
    ]


def _is_sharded(container: Obj) -> bool:
    return "--sharding" in (container.get("args") or [])


def _sharding_pair(work: list[Obj], other: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    """(unsharded, sharded) of an install and the same install with the sharding Component
    toggled; :class:`ChartError` unless exactly one is sharded and their Deployments differ
    only by ``--sharding`` (what the Component changes in it)."""
    mine, theirs = _manager(work)[1], _manager(other)[1]
    if _is_sharded(mine) == _is_sharded(theirs):
        raise ChartError("the install with the sharding Component toggled is sharded alike")
    plain, sharded = (other, work) if _is_sharded(mine) else (work, other)
    unsharded, container = _manager(copy.deepcopy(sharded))
    container["args"].remove("--sharding")
    if not container["args"]:
        del container["args"]
    if unsharded != _manager(plain)[0]:
        raise ChartError("the sharding Component changes the Deployment beyond --sharding")
    return plain, sharded


def _joined(parts: Sequence[str]) -> str:
    """A template file of objects' texts and the control lines between them
    (:func:`~appstack.sdk.helmtext.either`'s, :func:`~appstack.sdk.helmtext.watching`'s):
    one YAML document per object."""
    out: list[str] = []
    for i, part in enumerate(parts):
        if part in _CONTROL_LINES:
            out.append(part + "\n")
        else:
            out.append(("---\n" if i else "") + part)
    return "".join(out)


def _parts(
    installs: Sequence[list[Obj]], deployment: Obj, container: Obj, install: _Install
) -> dict[str, list[str]]:
    """Each template file's parts: the objects of the one install, or of the two
    (unsharded, sharded) as ``sharding.enabled`` chooses (their Deployment, ``deployment``,
    templated once)."""
    manager_text = _object_text(deployment, container, install)
    texts: list[dict[str, list[tuple[tuple[str, str], str]]]] = []
    for objects in installs:
        files: dict[str, list[tuple[tuple[str, str], str]]] = {}
        for obj in objects:
            key = (obj["kind"], obj["metadata"]["name"])
            path = _path(obj, install)  # by its name before the chart's sentinels replace it
            is_manager = obj["kind"] == "Deployment"  # _manager: the install's only one
            text = manager_text if is_manager else _object_text(obj, None, install)
            files.setdefault(path, []).append((key, text))
        texts.append(files)
    parts: dict[str, list[str]] = {}
    for path in sorted({p for files in texts for p in files}):
        if len(texts) == 1:
            parts[path] = [text for _, text in texts[0][path]]
            continue
        try:
            parts[path] = either(SHARDED, texts[0].get(path, []), texts[1].get(path, []))
        except ValueError as error:
            raise ChartError(f"the sharding Component: {error}") from None
    return parts


def chart_files(
    objects: Sequence[Mapping[str, Any]],
    identity: OperatorIdentity,
    *,
    version: str = "0.1.0",
    app_version: str = "",
    image: str = "",
    header: str | None = None,
    toggled: Sequence[Mapping[str, Any]] | None = None,
    flags: Sequence[ChartFlag] = (),
) -> dict[str, str]:
    """The Helm chart of an operator's install: relative path (under ``dist/chart``) →
    content. ``objects`` are the install as ``kubectl kustomize config/default`` builds it
    (names prefixed ``<project>-``, namespace ``<project>-system``: ``identity``'s), with
    the ServiceMonitor of ``config/prometheus`` if wanted; ``version`` is the chart's,
    ``app_version`` the operator's (default: the image's tag, else ``version``); ``image``,
    if given, the default image instead of the install's; ``header``, the comment each YAML
    file starts with (default: :data:`HEADER`). ``toggled``, if given: the same install
    with the sharding Component (``config/sharding``) turned the other way — the chart then
    has ``sharding.enabled`` (default: as ``objects``), rendering the one or the other
    (:func:`~appstack.sdk.HelmText.either`), and ``autoscaling``. ``flags``: the operator's
    own flags as values (:class:`ChartFlag`; :func:`~appstack.sdk.chart_flags` of its run
    command), beside those every chart has (:data:`FLAG_VALUES`). :class:`ChartError` when
    the install has not exactly one Deployment (the operator's), ``toggled`` is not that
    install with sharding turned the other way, or a flag's value is named as another
    value."""
    header = HEADER if header is None else header
    chart = identity.project
    prefix = f"{chart}-"
    work = _kept(objects, identity)
    deployment, container = _manager(work)
    sharding: bool | None = None
    installs = [work]
    if toggled is not None:
        sharding = _is_sharded(container)
        installs = list(_sharding_pair(work, _kept(toggled, identity)))
        deployment, container = _manager(installs[0])  # the Deployment: --sharding a value
    if image:
        container["image"] = image
    every = [o for install in installs for o in install]
    # what the install has: a metrics Service stands for itself ("metrics")
    kinds = {o["kind"] for o in every if o["kind"] != "Service"}
    metrics_services = _metrics_services(every, deployment, container)
    kinds |= {"metrics" for o in every if o["metadata"]["name"] in metrics_services}
    kinds |= {"dashboards" for o in every if _dashboards(o)}
    dashboards = {k: str(v) for o in every if _dashboards(o) for k, v in o["data"].items()}
    sharded = toggled is not None or _is_sharded(container)
    grants = _grants(installs[0], deployment, container, identity.domain)
    every_flag = (*FLAG_VALUES, *flags)
    values = _values(deployment, container, kinds, sharded, sharding, watchable=bool(grants))
    metrics_server = ""
    if "certSecret" in values.get("metrics", {}):
        service = next(o for o in installs[0] if o["metadata"]["name"] in metrics_services)
        metrics_server = f"{service['metadata']['name']}.{identity.namespace}.svc"
    for flag in every_flag:
        if flag.value in values:
            raise ChartError(f"the flag {flag.flag}'s value {flag.value} names another value")
        values[flag.value] = flag.taken(container)
    names = {
        o["metadata"]["name"]: f"{FULLNAME}-{_namespaced(o, prefix, identity.namespace)}"
        for o in every
        if o["kind"] not in FIXED_NAMES and o["metadata"]["name"].startswith(prefix)
    }
    lease = None
    if values["leaderElection"]["enabled"] and identity.lease_name.startswith(prefix):
        lease = names[identity.lease_name] = (
            f"{FULLNAME}-{identity.lease_name.removeprefix(prefix)}"
        )
    selector = dict(deployment["spec"]["selector"]["matchLabels"])
    install = _Install(
        chart=chart,
        prefix=prefix,
        namespace=identity.namespace,
        names=names,
        selector=selector,
        install_labels={"app.kubernetes.io/name": chart, **identity.install_labels},
        account=deployment["spec"]["template"]["spec"].get("serviceAccountName", ""),
        lease=lease,
        webhook_service=names.get(f"{prefix}webhook-service"),
        sharded=sharded,
        toggled=toggled is not None,
        grants=grants,
        flags=every_flag,
        enabled_label=identity.enabled_label,
        metrics_server=metrics_server,
        metrics_services=metrics_services,
        selectors=(
            namespace_selector(identity, enable_all=False),
            namespace_selector(identity, enable_all=True),
        ),
    )
    parts = _parts(installs, deployment, container, install)
    services = {o["metadata"]["name"] for o in every if o["kind"] == "Service"}
    longest = max((len(n) - len(prefix) + 1 for n in names if n in services), default=0)
    chart_yaml = {
        "apiVersion": "v2",
        "name": chart,
        "description": f"The {chart} operator, generated from its install.",
        "type": "application",
        "version": version,
        "appVersion": app_version or values["image"]["tag"] or version,
        "kubeVersion": ">=1.30.0-0",  # ValidatingAdmissionPolicy v1 (GA in 1.30)
    }
    extra = {k: v for k, v in selector.items() if k != "app.kubernetes.io/name"}
    fullname_max = min(_DNS_LABEL_MAX - longest, 52)
    schema = _schema(values, every_flag, selector=list(extra), fullname_max=fullname_max)
    if toggled is not None:
        schema["allOf"] = sharding_schema_rules()
    out = {
        "Chart.yaml": header + dump(chart_yaml),
        "values.yaml": header
        + VALUES_HELP.format(
            chart=chart,
            shutdown=SHUTDOWN_TIMEOUT,
            sharding=SHARDING_HELP if toggled is not None else "",
            autoscaling=AUTOSCALING_HELP if sharded else "",
            grafana=GRAFANA_HELP if dashboards else "",
            watched=WATCHED_HELP if grants else "",
        )
        + yaml.safe_dump(values, sort_keys=False),
        "values.schema.json": json.dumps(schema, indent=2) + "\n",
        ".helmignore": header + "*.orig\n*.rej\n*~\n",
        "templates/_helpers.tpl": _helpers(
            chart, extra, fullname_max, install.account.removeprefix(prefix)
        ),
        "templates/NOTES.txt": NOTES.format(
            chart=chart,
            deployment=deployment["metadata"]["name"].removeprefix(prefix),
            enabled=identity.enabled_label,
            watched=WATCHED_NOTE if grants else "",
        ),
        "README.md": readme(chart, values, crds="crd" in values, flags=every_flag),
    }
    out.update({f"{DASHBOARDS_DIR}/{name}": text for name, text in sorted(dashboards.items())})
    parts.update(_chart_own(installs[0], deployment, install))
    for path, texts_ in sorted(parts.items()):
        out[path] = header + _joined(texts_)
    return out


#: What each value does, by its dotted path (a path not here has its parent's).
VALUE_HELP = {
    "nameOverride": "The chart's name in every object's name.",
    "fullnameOverride": "What every object's name starts with, instead of the release's.",
    "image": "The operator's image.",
    "image.repository": "The image's repository.",
    "image.tag": "The image's tag (empty: the chart's appVersion).",
    "image.digest": "The image's digest (`sha256:...`), run instead of the tag.",
    "image.pullPolicy": "The image's pull policy (empty: Kubernetes' default).",
    "imagePullSecrets": "Secrets to pull the image with (`[{name: ...}]`).",
    "replicas": "The operator's replicas (one leads, or each is a shard).",
    "autoscaling": "Sharded: a HorizontalPodAutoscaler sets the shards.",
    "autoscaling.enabled": "On: the replicas are the autoscaler's (needs sharding.enabled).",
    "autoscaling.minReplicas": "The fewest shards (2 or more).",
    "autoscaling.maxReplicas": "The most shards.",
    "autoscaling.targetCPUUtilizationPercentage": "The CPU target, % of the requests.",
    "autoscaling.metrics": "The autoscaler's own metrics instead of the CPU target.",
    "autoscaling.behavior": "The pace of scaling (each step moves objects between shards).",
    "resources": "The operator container's resources.",
    "podAnnotations": "More annotations of the operator's pods.",
    "podLabels": "More labels of the operator's pods (merged over commonLabels).",
    "commonLabels": "More labels of every object.",
    "nodeSelector": "Where the operator's pods may run.",
    "tolerations": "The operator pods' tolerations.",
    "topologySpreadConstraints": "How the operator's pods spread over zones and nodes.",
    "priorityClassName": "The operator pods' PriorityClass (empty: none).",
    "affinity": "The pods' affinity (empty: this release's replicas on different nodes).",
    "podSecurityContext": "The operator pods' securityContext.",
    "securityContext": "The operator container's securityContext.",
    "serviceAccount.create": "Create the operator's ServiceAccount (false: serviceAccount.name "
    "names one that exists).",
    "serviceAccount.name": "The operator's ServiceAccount (empty: <fullname>-controller-manager).",
    "serviceAccount.annotations": "Annotations of the operator's ServiceAccount.",
    "watchNamespaces": "Only these namespaces (a Role in each; empty: every namespace).",
    "leaderElection.enabled": "One replica acts, the others wait (false: replicas must be 1).",
    "sharding.enabled": "Every replica reconciles its own share of the objects "
    "(config/sharding's install; 2 replicas or more).",
    "terminationGracePeriodSeconds": "How long a stopping pod may take.",
    "gracefulShutdownTimeout": "The operator's --graceful-shutdown-timeout (below the grace "
    "period).",
    "extraArgs": "More flags of the operator (its `--help` lists them).",
    "extraEnv": "More environment of the operator.",
    "extraVolumes": "More volumes of the operator's pods.",
    "extraVolumeMounts": "More volume mounts of the operator's container.",
    "livenessProbe": "The liveness probe's timing (merged over these defaults).",
    "readinessProbe": "The readiness probe's timing (merged over these defaults).",
    "revisionHistoryLimit": "The Deployment's old ReplicaSets kept (null: Kubernetes' 10).",
    "metrics.enabled": "The Service in front of /metrics (HTTPS, the scraper's token).",
    "metrics.secure": "Serve /metrics over HTTPS (false: --no-metrics-secure, plain HTTP; the "
    "ServiceMonitor and helm test follow).",
    "metrics.certSecret": "A kubernetes.io/tls Secret whose certificate serves /metrics "
    "(mounted, --metrics-cert-dir; for <fullname>-controller-manager-metrics-service.<namespace>"
    ".svc; the ServiceMonitor checks it against its ca.crt); empty: a self-signed one.",
    "metrics.serviceMonitor": "A Prometheus Operator ServiceMonitor of it.",
    "metrics.serviceMonitor.interval": "How often it scrapes.",
    "metrics.serviceMonitor.labels": "What your Prometheus selects it by.",
    "metrics.serviceMonitor.prometheusServiceAccount": "Prometheus's ServiceAccount, bound "
    "to the metrics reader role with the ServiceMonitor (empty name: no binding).",
    "metrics.prometheusRule": "The operator's alerts as a PrometheusRule.",
    "metrics.prometheusRule.labels": "What your Prometheus selects it by.",
    "metrics.grafanaDashboard": "The dashboards as a ConfigMap for Grafana's sidecar.",
    "crd.enable": "Install the CRDs (false: installed some other way).",
    "crd.keep": "helm uninstall leaves the CRDs (and every object of them).",
}
#: The values whose keys are values of their own (the others are maps a user fills).
NESTED = frozenset(
    {
        "image",
        "leaderElection",
        "sharding",
        "serviceAccount",
        "crd",
        "autoscaling",
        "metrics",
        "metrics.serviceMonitor",
        "metrics.serviceMonitor.prometheusServiceAccount",
        "metrics.prometheusRule",
        "metrics.grafanaDashboard",
    }
)


def _value_rows(values: Obj, prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if path in NESTED and isinstance(value, dict):
            rows += _value_rows(value, f"{path}.")
        else:
            rows.append((path, value))
    return rows


def _default(value: Any) -> str:
    text = json.dumps(value, separators=(", ", ": ")).replace("|", "\\|")
    return f"`{text}`" if len(text) <= 60 else "see values.yaml"


def _help(path: str) -> str:
    while path not in VALUE_HELP and "." in path:
        path = path.rpartition(".")[0]
    return VALUE_HELP.get(path, "")


def readme(chart: str, values: Obj, *, crds: bool, flags: Sequence[ChartFlag] = ()) -> str:
    """The chart's README.md: how to install, test, upgrade and uninstall it, and every
    value of ``values`` (as values.yaml holds them) with its default and what it does (a
    flag's: its ``help``)."""
    helps = {flag.value: flag.help for flag in flags}
    rows = "".join(
        f"| `{path}` | {_default(value)} | {helps.get(path) or _help(path)} |\n"
        for path, value in _value_rows(values)
    )
    keep = (
        " The CRDs are the release's (`crd.enable`): `helm upgrade` upgrades them, and they\n"
        "stay on uninstall (`crd.keep`), and every object of them: delete those first if\n"
        "they should go. Another release in the same cluster: `--set crd.enable=false`\n"
        "(the first one's CRDs serve it)."
        if crds
        else ""
    )
    return f"""\
# {chart}

The {chart} operator's Helm chart, generated from its install.

```bash
helm install {chart} . --namespace {chart}-system --create-namespace
helm test {chart} --namespace {chart}-system      # /metrics answers through its Service
helm upgrade {chart} . --namespace {chart}-system --set replicas=3
helm uninstall {chart} --namespace {chart}-system
```

Every object's name starts with the release's fullname and follows the release's namespace;
two releases in one namespace keep to their own pods.{keep}

## Values

`values.schema.json` refuses a misspelt or mistyped value, naming it.

| value | default | what it does |
|---|---|---|
{rows}"""


NOTES = """\
{chart} {{{{ .Chart.AppVersion }}}} is installed in namespace {{{{ .Release.Namespace }}}}.

  kubectl -n {{{{ .Release.Namespace }}}} rollout status deployment/\
{{{{ include "{chart}.fullname" . }}}}-{deployment}
{watched}
{{{{ if .Values.enableAllNamespaces -}}}}
It acts in every namespace it watches (enableAllNamespaces=true).
{{{{- else -}}}}
It acts only in namespaces labelled {enabled}=true; enable one with:
  kubectl label namespace NAME {enabled}=true
{{{{- end }}}}
"""


#: The labels the chart sets on every object itself (:func:`_helpers`): what commonLabels
#: and podLabels may not set (the pods' selector's among them).
STANDARD_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/part-of",
    "helm.sh/chart",
)


def _schema(
    values: Obj,
    flags: Sequence[ChartFlag] = FLAG_VALUES,
    selector: Sequence[str] = (),
    fullname_max: int = 52,
) -> Obj:
    """values.schema.json: each value's type (a misspelt key refused), the image's digest
    and pull policy checked, no label of the chart's own or of the pods' ``selector`` set
    by commonLabels or podLabels."""

    def of(value: Any) -> Obj:
        if isinstance(value, bool):
            return {"type": "boolean"}
        if isinstance(value, int):
            return {"type": "integer", "minimum": 0}
        if isinstance(value, str):
            return {"type": "string"}
        return {"type": "array" if isinstance(value, list) else "object"}

    def structured(node: Obj, prefix: str) -> Obj:
        return {
            "type": "object",
            "additionalProperties": False,
            "properties": {key: nested(value, f"{prefix}{key}") for key, value in node.items()},
        }

    def nested(value: Any, path: str) -> Obj:
        # a value of values of its own (NESTED: the README's rows too), or a map a user fills
        if path in NESTED and isinstance(value, dict):
            return structured(value, f"{path}.")
        return of(value)

    schema = structured(values, "")
    image = schema["properties"]["image"]["properties"]
    image["repository"]["minLength"] = 1
    image["digest"]["pattern"] = r"^$|^[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$"
    image["pullPolicy"]["enum"] = ["", "Always", "IfNotPresent", "Never"]
    for key in ("nameOverride", "fullnameOverride"):
        schema["properties"][key]["pattern"] = rf"^$|{DNS_LABEL}"
        # longer would be cut short (the longest Service name a DNS label): refused instead
        schema["properties"][key]["maxLength"] = fullname_max
    properties = schema["properties"]
    # names Kubernetes would refuse only at install: refused at render, by their path
    properties["imagePullSecrets"] = {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "pattern": DNS_SUBDOMAIN}},
        },
    }
    properties["priorityClassName"]["pattern"] = rf"^$|{DNS_SUBDOMAIN}"
    # a container's env, volumes and mounts as Kubernetes requires them (not at install)
    for key, required in (
        ("extraEnv", ["name"]),
        ("extraVolumes", ["name"]),
        ("extraVolumeMounts", ["name", "mountPath"]),
    ):
        if key in properties:
            properties[key]["items"] = {"type": "object", "required": required}
    reserved = sorted({*STANDARD_LABELS, *selector})
    for key in ("commonLabels", "podLabels"):
        properties[key]["propertyNames"] = {"not": {"enum": reserved}}
    account = properties["serviceAccount"]
    account["properties"]["name"]["pattern"] = rf"^$|{DNS_SUBDOMAIN}"
    # one that exists is named: serviceAccount.create=false needs serviceAccount.name
    account["if"] = {"properties": {"create": {"const": False}}, "required": ["create"]}
    account["then"] = {"properties": {"name": {"minLength": 1}}, "required": ["name"]}
    monitor = properties.get("metrics", {}).get("properties", {}).get("serviceMonitor")
    if monitor is not None:
        monitor["properties"]["interval"]["pattern"] = DURATION
        scraper = monitor["properties"]["prometheusServiceAccount"]
        scraper["properties"]["name"]["pattern"] = rf"^$|{DNS_SUBDOMAIN}"
        scraper["properties"]["namespace"]["pattern"] = rf"^$|{DNS_LABEL}"
    # the timeout below the grace period: the Deployment template checks (SHUTDOWN_IN_GRACE)
    schema["properties"]["terminationGracePeriodSeconds"]["minimum"] = 1
    schema["properties"]["gracefulShutdownTimeout"]["pattern"] = DURATION
    schema["properties"]["revisionHistoryLimit"] = {"type": ["integer", "null"], "minimum": 0}
    for probe, _ in PROBES:
        if probe in values:
            schema["properties"][probe] = {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    key: {"type": ["integer", "null"], "minimum": 0} for key in sorted(PROBE_TIMING)
                },
            }
    for flag in flags:
        schema["properties"][flag.value] = {**schema["properties"][flag.value], **flag.schema}
    if "watchNamespaces" in values:
        schema["properties"]["watchNamespaces"] = watch_namespaces_schema()
    if "certSecret" in values.get("metrics", {}):  # a Secret's name, or none
        metrics = schema["properties"]["metrics"]["properties"]
        metrics["certSecret"]["pattern"] = rf"^$|{DNS_SUBDOMAIN}"
    if "autoscaling" in values:  # a sharded operator: two shards or more
        scaling = schema["properties"]["autoscaling"]["properties"]
        for key in ("minReplicas", "maxReplicas"):
            scaling[key]["minimum"] = 2
        scaling["targetCPUUtilizationPercentage"]["minimum"] = 1
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
