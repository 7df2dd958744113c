"""Turning a generated object into Helm template text, for any operator's chart: the
object is built by the same functions as its install with *sentinel* strings (``@@NAME@@``)
where a value comes from the chart's values, dumped as YAML, and each sentinel replaced by
its template expression — so a chart cannot drift from the install it is made from. Pure;
used by the SDK's chart generator (:mod:`appstack.sdk.chart`) and, through
:class:`HelmText`, by appstack's own chart (:mod:`appstack.manifests.chart`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import yaml

from appstack.core import defaults
from appstack.sdk.install import SHARD_SCALING_BEHAVIOR, autoscaler, cpu_utilization
from appstack.sdk.names import DNS_LABEL


def sentinel(name: str) -> str:
    """The placeholder ``@@name@@`` a value of the chart takes the place of."""
    return f"@@{name}@@"


class _NoAliases(yaml.SafeDumper):
    """A template is read by Helm's text engine first: a YAML alias (``*id001``) for an
    object used twice (a selector, say) would not survive it; each is written out."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(obj: Mapping[str, Any]) -> str:
    """``obj`` as YAML, its keys in their order, no alias (each repeated value written out)."""
    return yaml.dump(dict(obj), Dumper=_NoAliases, sort_keys=False, width=100)


def literal_braces(text: str) -> str:
    """``text`` with every ``{{`` and ``}}`` written as a Helm action printing it (a
    Prometheus template in an alert's annotations, ``{{ $labels.name }}``, survives Helm's
    rendering as it was, whatever line YAML put it on). Before any action of the chart's
    own is added."""
    opening, closing = "\0OPEN\0", "\0CLOSE\0"
    text = text.replace("{{", opening).replace("}}", closing)
    return text.replace(opening, '{{ "{{" }}').replace(closing, '{{ "}}" }}')


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Replace each quoted scalar sentinel (``'@@X@@'``) by its expression, and one inside
    a longer string (e.g. a namespace in a CEL expression) by the expression in place."""
    for name, expression in values.items():
        text = text.replace(f"'{sentinel(name)}'", expression)
        text = text.replace(sentinel(name), expression)
    return text


def wrap_item(text: str, item: str, before: str, after: str) -> str:
    """Surround the list item line ``- item`` with template lines at its indentation."""

    def replace(match: re.Match[str]) -> str:
        indent = match.group(1)
        return f"{indent}{before}\n{match.group(0)}\n{indent}{after}"

    return re.sub(rf"^(\s*)- {re.escape(item)}$", replace, text, flags=re.MULTILINE)


def _control_item(text: str, name: str, item: str, control: str) -> str:
    """The list item ``- '@@name@@'`` becomes ``- item`` between ``{{- control }}`` and
    ``{{- end }}``."""

    def replace(match: re.Match[str]) -> str:
        indent = match.group(1)
        return f"{indent}{{{{- {control} }}}}\n{indent}- {item}\n{indent}{{{{- end }}}}"

    pattern = rf"^(\s*)- '{re.escape(sentinel(name))}'$"
    return re.sub(pattern, replace, text, flags=re.MULTILINE)


def range_item(text: str, name: str, item: str, values: str) -> str:
    """The list item ``- '@@name@@'`` becomes one ``item`` per element of ``values``."""
    return _control_item(text, name, item, f"range {values}")


def block(text: str, key: str, name: str, values: str) -> str:
    """``key: '@@name@@'`` becomes ``key:`` followed by ``values`` as YAML (toYaml)."""

    def replace(match: re.Match[str]) -> str:
        indent = match.group(1)
        nindent = len(indent) + 2
        return f"{indent}{key}:\n{indent}  {{{{- toYaml {values} | nindent {nindent} }}}}"

    pattern = rf"^(\s*){re.escape(key)}: '{re.escape(sentinel(name))}'$"
    return re.sub(pattern, replace, text, flags=re.MULTILINE)


def with_default(text: str, key: str, values: str) -> str:
    """The block ``key:`` (and everything under it) stays as the default, rendered only when
    ``values`` is empty; otherwise ``values`` as YAML takes its place."""

    def around(indent: str, block: list[str]) -> list[str]:
        return [
            f"{indent}{{{{- with {values} }}}}",
            f"{indent}{key}:",
            f"{indent}  {{{{- toYaml . | nindent {len(indent) + 2} }}}}",
            f"{indent}{{{{- else }}}}",
            *block,
            f"{indent}{{{{- end }}}}",
        ]

    return _each_block(text, key, around)


def if_item(text: str, name: str, item: str, condition: str) -> str:
    """The list item ``- '@@name@@'`` becomes ``- item`` only if ``condition`` holds."""
    return _control_item(text, name, item, f"if {condition}")


def with_block(text: str, key: str, name: str, values: str) -> str:
    """``key: '@@name@@'`` becomes ``key:`` and ``values`` as YAML, only when ``values`` is
    not empty (``with``)."""

    def replace(match: re.Match[str]) -> str:
        indent = match.group(1)
        nindent = len(indent) + 2
        return (
            f"{indent}{{{{- with {values} }}}}\n{indent}{key}:\n"
            f"{indent}  {{{{- toYaml . | nindent {nindent} }}}}\n{indent}{{{{- end }}}}"
        )

    pattern = rf"^(\s*){re.escape(key)}: '{re.escape(sentinel(name))}'$"
    return re.sub(pattern, replace, text, flags=re.MULTILINE)


def with_scalar(text: str, key: str, name: str, values: str) -> str:
    """``key: '@@name@@'`` becomes ``key: <values>`` only when ``values`` is not empty."""

    def replace(match: re.Match[str]) -> str:
        indent = match.group(1)
        return (
            f"{indent}{{{{- with {values} }}}}\n{indent}{key}: {{{{ . }}}}\n{indent}{{{{- end }}}}"
        )

    pattern = rf"^(\s*){re.escape(key)}: '{re.escape(sentinel(name))}'$"
    return re.sub(pattern, replace, text, flags=re.MULTILINE)


def _spliced(text: str, line: str, values: str) -> str:
    """Each line matching ``line`` (its indentation captured) becomes what ``values``
    holds (toYaml) at that indentation; nothing when ``values`` is empty."""

    def replace(match: re.Match[str]) -> str:
        indent = match.group(1)
        return (
            f"{indent}{{{{- with {values} }}}}\n"
            f"{indent}{{{{- toYaml . | nindent {len(indent)} }}}}\n{indent}{{{{- end }}}}"
        )

    return re.sub(line, replace, text, flags=re.MULTILINE)


def items(text: str, name: str, values: str) -> str:
    """The list item ``- '@@name@@'`` becomes the items of the list ``values`` (toYaml), at
    its indentation; nothing when ``values`` is empty."""
    return _spliced(text, rf"^(\s*)- '{re.escape(sentinel(name))}'$", values)


def merged_keys(text: str, name: str, values: str) -> str:
    """The mapping entry ``'@@name@@': ''`` becomes the entries of ``values`` (toYaml), at
    its indentation; nothing when ``values`` is empty."""
    return _spliced(text, rf"^(\s*)'{re.escape(sentinel(name))}': ''$", values)


def set_scalar(text: str, key: str, name: str, values: str) -> str:
    """``key: '@@name@@'`` becomes ``key: <values>`` only when ``values`` is set (not null:
    unlike :func:`with_scalar`, 0 and false are rendered)."""

    def replace(match: re.Match[str]) -> str:
        indent = match.group(1)
        return (
            f'{indent}{{{{- if not (kindIs "invalid" {values}) }}}}\n'
            f"{indent}{key}: {{{{ {values} }}}}\n{indent}{{{{- end }}}}"
        )

    pattern = rf"^(\s*){re.escape(key)}: '{re.escape(sentinel(name))}'$"
    return re.sub(pattern, replace, text, flags=re.MULTILINE)


def wrap_list_item(text: str, first: str, before: str, after: str) -> str:
    """Surround each list item whose first line is ``- first`` (and the lines under it)
    with template lines at its indentation."""

    def replace(match: re.Match[str]) -> str:
        indent = match.group(1)
        return f"{indent}{before}\n{match.group(0)}{indent}{after}\n"

    pattern = rf"^(\s*)- {re.escape(first)}\n(?:\1  .*\n)*"
    return re.sub(pattern, replace, text, flags=re.MULTILINE)


def wrap_key(text: str, key: str, before: str, after: str) -> str:
    """Surround the mapping entry ``key:`` and everything under it with template lines at
    its indentation."""
    return _each_block(
        text, key, lambda indent, block: [f"{indent}{before}", *block, f"{indent}{after}"]
    )


def _each_block(text: str, key: str, around: Callable[[str, list[str]], list[str]]) -> str:
    """Every mapping entry ``key:`` with everything under it (deeper lines, and a list's
    ``- `` items at its own indentation) replaced by ``around(indent, its lines)``."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = re.match(rf"^(\s*){re.escape(key)}:", lines[i])
        if match is None:
            out.append(lines[i])
            i += 1
            continue
        indent = match.group(1)
        end = i + 1
        while end < len(lines) and (
            lines[end].startswith(indent + " ") or lines[end].startswith(indent + "- ")
        ):
            end += 1
        out += around(indent, lines[i:end])
        i = end
    return "\n".join(out)


#: The release's namespace where the generated objects have ``NS`` (see :data:`NAMESPACES`).
NS = sentinel("NS")
RELEASE_NS = "{{ .Release.Namespace }}"
NAMESPACES = {"NS": RELEASE_NS, "WATCHED": "{{ . }}", "RELEASE_NS": "{{ $.Release.Namespace }}"}
#: The operator's image: ``<repository>@<digest>`` when ``image.digest`` is set (the tag
#: ignored), else ``<repository>:<tag>`` (default: the chart's appVersion).
IMAGE = (
    '"{{ .Values.image.repository }}{{ with .Values.image.digest }}@{{ . }}{{ else }}:'
    '{{ .Values.image.tag | default .Chart.AppVersion }}{{ end }}"'
)

#: The Deployment template's guard: two replicas without leader election would both
#: reconcile every object, so such values fail the render, saying why.
ONE_LEADER = (
    "{{- if and (not .Values.leaderElection.enabled) (gt (int .Values.replicas) 1) }}\n"
    '{{- fail "leaderElection.enabled=false with replicas > 1: every replica would reconcile '
    'the same objects at once. Set replicas=1, or keep leader election on" }}\n'
    "{{- end }}\n"
)

#: ``gracefulShutdownTimeout``'s default: the operator's own ``--graceful-shutdown-timeout``
#: (:data:`SHUTDOWN_ARG` passes the flag only for another value).
SHUTDOWN_TIMEOUT = defaults.SHUTDOWN_TIMEOUT
#: A duration as ``--graceful-shutdown-timeout`` takes it in a chart (Go's, as
#: ``90s``, ``1m30s``, ``500ms``; a bare number of seconds, which the flag also takes, not).
DURATION = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
#: The operator's ``--graceful-shutdown-timeout`` list item (:func:`if_item`'s item and
#: condition): only when ``gracefulShutdownTimeout`` is not the flag's own default, so a
#: chart's default render stays the install's.
SHUTDOWN_ARG = (
    "--graceful-shutdown-timeout={{ .Values.gracefulShutdownTimeout }}",
    f'ne (toString .Values.gracefulShutdownTimeout) "{SHUTDOWN_TIMEOUT}"',
)
#: The Deployment template's guard of the pods' ``terminationGracePeriodSeconds`` (their
#: ``{{ int64 .Values.terminationGracePeriodSeconds }}``): the operator's graceful stop
#: (``gracefulShutdownTimeout``, a Go duration parsed by Sprig's ``dateModify``, which adds
#: it to a date; whole seconds compared, so ``29.9s`` is below 30 and ``30.5s`` is not) must
#: end before Kubernetes kills it, else a sharded replica's hand-back is cut short by the
#: kill, its remaining objects left to its Lease's expiry. Values that say otherwise fail
#: the render, saying why (a timeout that is no duration too, when the schema was skipped).
SHUTDOWN_IN_GRACE = (
    "{{- $shutdown := toString .Values.gracefulShutdownTimeout }}\n"
    f"{{{{- if not (regexMatch `{DURATION}` $shutdown) }}}}\n"
    '{{- fail (printf "gracefulShutdownTimeout=%s is not a duration such as 20s, 1m30s or '
    '500ms" $shutdown) }}\n'
    "{{- end }}\n"
    '{{- $epoch := toDate "2006-01-02" "2000-01-01" }}\n'
    "{{- $seconds := sub (unixEpoch (dateModify $shutdown $epoch) | int64) "
    "(unixEpoch $epoch | int64) }}\n"
    "{{- if ge $seconds (int64 .Values.terminationGracePeriodSeconds) }}\n"
    '{{- fail (printf "gracefulShutdownTimeout=%s is not below '
    "terminationGracePeriodSeconds=%d: Kubernetes would kill the operator before its "
    "graceful stop (a shard's hand-back) ends. Raise terminationGracePeriodSeconds above "
    'it" $shutdown (int64 .Values.terminationGracePeriodSeconds)) }}\n'
    "{{- end }}\n"
)
#: The pods' ``terminationGracePeriodSeconds`` from the values (an integer: Helm reads a
#: number of values.yaml as a float, printed 1e+06 when large).
GRACE_PERIOD = "{{ int64 .Values.terminationGracePeriodSeconds }}"


#: ``autoscaling`` in a chart's values: a sharded operator's replicas set by a
#: HorizontalPodAutoscaler (:func:`autoscaler_text`) instead of ``replicas``.
AUTOSCALING = ".Values.autoscaling"


def autoscaling_values(cpu_percent: int = 80) -> dict[str, Any]:
    """A chart's ``autoscaling`` values, off: between 2 and 4 replicas (shards) at
    ``cpu_percent`` % of the pods' CPU requests (``metrics``, if given, instead: the
    HorizontalPodAutoscaler's own list, e.g. a queue's depth through a metrics adapter), at
    the pace of :data:`~appstack.sdk.install.SHARD_SCALING_BEHAVIOR` (``behavior``)."""
    return {
        "enabled": False,
        "minReplicas": 2,
        "maxReplicas": 4,
        "targetCPUUtilizationPercentage": cpu_percent,
        "metrics": [],
        "behavior": dict(SHARD_SCALING_BEHAVIOR),
    }


#: A chart's check of ``autoscaling`` (its values' schema checks each number alone).
AUTOSCALING_RANGE = (
    f"{{{{- if and {AUTOSCALING}.enabled (lt (int {AUTOSCALING}.maxReplicas) "
    f"(int {AUTOSCALING}.minReplicas)) }}}}\n"
    '{{- fail "autoscaling.maxReplicas is below autoscaling.minReplicas" }}\n'
    "{{- end }}\n"
)


#: ``sharding`` in a chart's values: every replica a shard of the objects (``--sharding``,
#: docs/sharding.md), on or off at install time.
SHARDING = ".Values.sharding"
#: The fewest replicas of a sharded install (one shard is an unsharded install, slower).
SHARDS_MIN = 2
#: The line opening what only a sharded install has (``$``: also inside a range).
SHARDED = "{{- if $.Values.sharding.enabled }}"
#: A chart's checks of ``sharding`` with ``autoscaling``: its coordinator is elected and it
#: has two shards or more; only a sharded operator autoscales (the values' schema refuses
#: each first, naming the value: :func:`sharding_schema_rules`; this says why).
SHARDING_NEEDS = (
    "{{- if and .Values.sharding.enabled (or (not .Values.leaderElection.enabled) "
    f"(and (not .Values.autoscaling.enabled) (lt (int .Values.replicas) {SHARDS_MIN}))) }}}}\n"
    '{{- fail "sharding.enabled=true needs leaderElection.enabled=true (its Lease elects '
    f'the coordinator) and replicas >= {SHARDS_MIN} (the shards)" }}}}\n'
    "{{- end }}\n"
    "{{- if and .Values.autoscaling.enabled (not .Values.sharding.enabled) }}\n"
    '{{- fail "autoscaling.enabled=true needs sharding.enabled=true: only a sharded '
    "operator's replicas share the work (the others of an unsharded one wait as standbys)\" }}\n"
    "{{- end }}\n"
)


def sharding_schema_rules() -> list[dict[str, Any]]:
    """The values schema's ``allOf`` rules of ``sharding`` (:data:`SHARDING_NEEDS`, checked
    before rendering): sharded, leader election on (its Lease elects the coordinator) and
    two shards or more (``replicas``, or ``autoscaling.minReplicas``, whose own minimum is
    :data:`SHARDS_MIN`); autoscaled, sharded."""
    on = {"properties": {"enabled": {"const": True}}, "required": ["enabled"]}
    return [
        {
            "if": {"properties": {"sharding": on}, "required": ["sharding"]},
            "then": {"properties": {"leaderElection": on}},
        },
        {
            "if": {
                "properties": {"sharding": on, "autoscaling": {"not": on}},
                "required": ["sharding"],
            },
            "then": {"properties": {"replicas": {"minimum": SHARDS_MIN}}},
        },
        {
            "if": {"properties": {"autoscaling": on}, "required": ["autoscaling"]},
            "then": {"properties": {"sharding": on}, "required": ["sharding"]},
        },
    ]


def either(
    opening: str,
    plain: Sequence[tuple[Any, str]],
    varied: Sequence[tuple[Any, str]],
) -> list[str]:
    """Template parts of two installs that differ by one value (sharded or not, say):
    ``plain`` and ``varied`` as (key, template text) pairs in install order, ``opening`` the
    line that opens what holds while the value is set (:data:`SHARDED`). A part both have
    alike comes once; one that differs is in an if/else; one only ``varied`` has is in an
    if. Unset, exactly ``plain``'s parts in their order. ``ValueError`` unless ``varied``
    has every key of ``plain`` in its order (the varied install may only add objects and
    change them: a kustomize Component, ``--shards``)."""
    before = dict(plain)
    if [key for key, _ in varied if key in before] != [key for key, _ in plain]:
        raise ValueError("the varied install must have every object of the plain one, in its order")
    parts: list[str] = []
    for key, text in varied:
        was = before.get(key)
        if was == text:
            parts.append(text)
        elif was is None:
            parts += [opening, text, "{{- end }}"]
        else:
            parts += [opening, text, "{{- else }}", was, "{{- end }}"]
    return parts


#: The value of the namespaces an operator is told to watch (empty: every namespace).
WATCH_NAMESPACES = ".Values.watchNamespaces"
#: The lines of :func:`watching`: while every namespace is watched; in each watched one
#: (``{{ . }}``, the :data:`NAMESPACES` sentinel ``WATCHED``); in the release's own
#: namespace when it is not watched.
ALL_WATCHED = f"{{{{- if not {WATCH_NAMESPACES} }}}}"
EACH_WATCHED = f"{{{{- else }}}}\n{{{{- range {WATCH_NAMESPACES} }}}}"
OWN_UNWATCHED = f"{{{{- end }}}}\n{{{{- if not (has .Release.Namespace {WATCH_NAMESPACES}) }}}}"
#: The Deployment's ``--namespace`` per watched namespace: :func:`range_item`'s arguments
#: for the list item ``'@@WATCH@@'``.
WATCH_ARG = ("WATCH", "--namespace={{ . }}", WATCH_NAMESPACES)
#: What :func:`watching` and :func:`either` put between objects' texts.
CONTROL_LINES = frozenset(
    {ALL_WATCHED, EACH_WATCHED, OWN_UNWATCHED, SHARDED, "{{- else }}", "{{- end }}"}
)


def watching(
    everywhere: Sequence[str],
    each: Sequence[str],
    own: Sequence[str] = (),
    namespaced: Sequence[str] = (),
) -> list[str]:
    """Template parts of an operator's grants as ``watchNamespaces`` chooses: while it is
    empty, ``everywhere`` (a ClusterRole and its binding, say); else ``each`` in every
    watched namespace (their namespace the sentinel ``WATCHED``: ``{{ . }}`` inside the
    range — so ``$`` for the release), ``own`` in the release's namespace unless it is
    watched, then ``namespaced`` once. Joined with a document separator before every part
    but the lines of :data:`CONTROL_LINES`."""
    return [
        ALL_WATCHED,
        *everywhere,
        EACH_WATCHED,
        *each,
        OWN_UNWATCHED,
        *own,
        "{{- end }}",
        *namespaced,
        "{{- end }}",
    ]


#: The values that choose how the operator serves ``/metrics``: over HTTPS (the default;
#: false: ``--no-metrics-secure``), with the certificate of a mounted ``kubernetes.io/tls``
#: Secret (``--metrics-cert-dir``) instead of a self-signed one.
METRICS_SECURE = ".Values.metrics.secure"
METRICS_CERT_SECRET = ".Values.metrics.certSecret"  # noqa: S105 - a value's path
#: The lines around what is there only with a mounted metrics certificate.
WITH_METRICS_CERT = f"{{{{- if {METRICS_CERT_SECRET} }}}}", "{{- end }}"
#: The sentinel ``CERT_SECRET`` (where an object names that Secret) and its expression, for
#: :func:`substitute`.
METRICS_CERT_VALUES = {"CERT_SECRET": f"{{{{ {METRICS_CERT_SECRET} }}}}"}
#: A scrape URL's scheme as :data:`METRICS_SECURE` says.
METRICS_SCHEME = f"{{{{ if {METRICS_SECURE} }}}}https{{{{ else }}}}http{{{{ end }}}}"
#: The operator's ``--no-metrics-secure`` when :data:`METRICS_SECURE` is false: :func:`if_item`'s
#: (item, condition).
METRICS_INSECURE_ARG = ("--no-metrics-secure", f"not {METRICS_SECURE}")


def metrics_scheme(text: str, checked: Mapping[str, Any], skipped: Mapping[str, Any]) -> str:
    """A ServiceMonitor's text with each endpoint's ``scheme: https`` (its ``tlsConfig``
    dropped) as :data:`METRICS_SECURE` and :data:`METRICS_CERT_SECRET` choose: https with
    the ``checked`` tlsConfig (the mounted certificate's CA, for its server name) or the
    ``skipped`` one (the operator's self-signed certificate), or http."""

    def indented(i: str, tls: Mapping[str, Any]) -> str:
        lines = dump({"tlsConfig": dict(tls)}).rstrip("\n").split("\n")
        return "\n".join(f"{i}{line}" for line in lines)

    def replace(match: re.Match[str]) -> str:
        i = match.group(1)
        return "\n".join(
            [
                f"{i}{{{{- if {METRICS_SECURE} }}}}",
                f"{i}scheme: https",
                f"{i}{{{{- if {METRICS_CERT_SECRET} }}}}",
                indented(i, checked),
                f"{i}{{{{- else }}}}",
                indented(i, skipped),
                f"{i}{{{{- end }}}}",
                f"{i}{{{{- else }}}}",
                f"{i}scheme: http",
                f"{i}{{{{- end }}}}",
            ]
        )

    text = re.sub(r"^(\s*)tlsConfig:\n(\1 .*\n)*", "", text, flags=re.MULTILINE)
    return re.sub(r"^(\s*)scheme: https$", replace, text, flags=re.MULTILINE)


#: The value that has an operator act in every namespace it watches, not only in those a
#: cluster administrator labelled enabled for it (its ``--enable-all-namespaces``).
ENABLE_ALL = ".Values.enableAllNamespaces"


def enabled_choice(check: str) -> str:
    """What replaces the quoted sentinel of the admission policies' ``enabled`` variable
    (may the operator act in the request's namespace): every namespace (``'true'``) when
    :data:`ENABLE_ALL`, else ``check`` (CEL: the namespace is labelled enabled)."""
    return f"{{{{ if {ENABLE_ALL} }}}}'true'{{{{ else }}}}{json.dumps(check)}{{{{ end }}}}"


def watch_namespaces_schema() -> dict[str, Any]:
    """``watchNamespaces``' JSON schema: distinct namespace names (DNS labels)."""
    return {
        "type": "array",
        "uniqueItems": True,
        "items": {
            "type": "string",
            "maxLength": 63,
            "pattern": DNS_LABEL,
        },
    }


def autoscaler_text(name: str, deployment: str, labels: Mapping[str, str]) -> str:
    """The HorizontalPodAutoscaler (:func:`~appstack.sdk.install.autoscaler`) of the
    Deployment ``deployment`` as template text, rendered when ``autoscaling.enabled``:
    ``minReplicas``, ``maxReplicas``, ``metrics`` (default: ``targetCPUUtilizationPercentage``
    of the CPU requests) and ``behavior`` from the values; in the release's namespace."""
    obj = autoscaler(
        name,
        NS,
        labels=labels,
        deployment=deployment,
        min_replicas=sentinel("MIN_REPLICAS"),
        max_replicas=sentinel("MAX_REPLICAS"),
        metrics=cpu_utilization(sentinel("CPU_PERCENT")),
        behavior=sentinel("BEHAVIOR"),
    )
    text = with_default(dump(obj), "metrics", f"{AUTOSCALING}.metrics")
    text = block(text, "behavior", "BEHAVIOR", f"{AUTOSCALING}.behavior")
    values = {
        "MIN_REPLICAS": f"{{{{ {AUTOSCALING}.minReplicas }}}}",
        "MAX_REPLICAS": f"{{{{ {AUTOSCALING}.maxReplicas }}}}",
        "CPU_PERCENT": f"{{{{ {AUTOSCALING}.targetCPUUtilizationPercentage }}}}",
    }
    return conditional_text(f"{AUTOSCALING}.enabled", substitute(text, values))


def unless_autoscaled(text: str) -> str:
    """A Deployment's template text with its ``replicas`` rendered only while
    ``autoscaling`` is off: the autoscaler's choice is not undone by the next upgrade."""
    return wrap_key(text, "replicas", f"{{{{- if not {AUTOSCALING}.enabled }}}}", "{{- end }}")


#: ``helm test``'s check of the operator's ``/metrics`` (:func:`metrics_test_pod`): it
#: answers; 401/403 is an answer too (guarded by TokenReview + SubjectAccessReview, the
#: default); over HTTPS the connection is what is tested, not who signed the certificate.
METRICS_CHECK = (
    "import os, ssl, urllib.error, urllib.request\n"
    "ca = os.environ.get('METRICS_CA')\n"
    "if ca:\n"
    "    context = ssl.create_default_context(cafile=ca if os.path.exists(ca) else None)\n"
    "else:\n"
    "    context = ssl._create_unverified_context()\n"
    "try:\n"
    "    urllib.request.urlopen(os.environ['METRICS_URL'], timeout=10, context=context)\n"
    "except urllib.error.HTTPError as error:\n"
    "    assert error.code in (401, 403), error\n"
)


#: Where ``helm test``'s Pod reads the CA of ``metrics.certSecret`` (its ``ca.crt``).
METRICS_CA_DIR = "/etc/metrics-ca"


def metrics_test_pod(
    name: str,
    namespace: str,
    url: str,
    labels: Mapping[str, str],
    *,
    ca_secret: str | None = None,
) -> dict[str, Any]:
    """The ``helm test`` Pod (hook ``test``) that GETs the operator's ``url`` (its metrics
    Service's ``/metrics``) with the operator's own image (Python is there), pulled as the
    operator's is: sentinels ``IMAGE``, ``PULL_SECRETS``, ``PULL_POLICY``
    (:func:`pod_extras`, :data:`IMAGE`). Non-root, no capabilities: runs under the
    ``restricted`` Pod Security level. With ``ca_secret`` (the Secret of the operator's
    mounted certificate), it checks the certificate for the URL's host name against that
    Secret's ``ca.crt`` (cert-manager writes one), or the image's trust store when the Secret
    has none — rendered only with ``metrics.certSecret``: :func:`metrics_ca_text`; else it
    takes any."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": {
                "helm.sh/hook": "test",
                "helm.sh/hook-delete-policy": "before-hook-creation",
            },
        },
        "spec": {
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65532},
            "imagePullSecrets": sentinel("PULL_SECRETS"),
            "containers": [
                {
                    "name": "metrics",
                    "image": sentinel("IMAGE"),
                    "imagePullPolicy": sentinel("PULL_POLICY"),
                    "command": ["python3", "-c", METRICS_CHECK],
                    "env": [{"name": "METRICS_URL", "value": url}],
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                }
            ],
        },
    }
    if ca_secret:
        (container,) = pod["spec"]["containers"]
        container["env"].append({"name": "METRICS_CA", "value": f"{METRICS_CA_DIR}/ca.crt"})
        container["volumeMounts"] = [
            {"name": "metrics-ca", "mountPath": METRICS_CA_DIR, "readOnly": True}
        ]
        pod["spec"]["volumes"] = [
            {
                "name": "metrics-ca",
                "secret": {
                    "secretName": ca_secret,
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    "optional": True,  # no ca.crt (a public CA's certificate): the trust store
                },
            }
        ]
    return pod


def metrics_ca_text(text: str) -> str:
    """The text of :func:`metrics_test_pod`'s Pod made with ``ca_secret``: what reads the
    CA rendered only with ``metrics.certSecret``."""
    text = wrap_list_item(text, "name: METRICS_CA", *WITH_METRICS_CERT)
    for key in ("volumeMounts", "volumes"):
        text = wrap_key(text, key, *WITH_METRICS_CERT)
    return text


def file_entries(names: Sequence[str]) -> dict[str, str]:
    """A ConfigMap's ``data`` standing for the chart's files ``names`` (a sentinel key per
    file, so no name in it is renamed): :func:`files_text` makes each entry read its file."""
    return {sentinel(f"FILE_{i}"): "" for i in range(len(names))}


def files_text(text: str, names: Sequence[str], directory: str) -> str:
    """The ``data`` entries :func:`file_entries` left, each ``<name>: |-`` and the chart's
    ``<directory>/<name>`` read at render (``.Files.Get``): files shipped as generated."""
    for i, name in enumerate(names):
        text = text.replace(
            f"  '{sentinel(f'FILE_{i}')}': ''\n",
            f'  {name}: |-\n    {{{{- $.Files.Get "{directory}/{name}" | nindent 4 }}}}\n',
        )
    return text


def conditional_text(condition: str, text: str) -> str:
    """``text`` (namespaces substituted) only if ``condition`` holds."""
    return f"{{{{- if {condition} }}}}\n" + substitute(text, NAMESPACES) + "{{- end }}\n"


def conditional(condition: str, obj: Mapping[str, Any], extra: Mapping[str, str]) -> str:
    """The object ``obj`` with ``extra`` sentinels substituted, only if ``condition`` holds."""
    return conditional_text(condition, substitute(dump(obj), {**NAMESPACES, **extra}))


#: A pod template's labels key replaced by ``podLabels`` (:func:`pod_extras`).
POD_LABELS = sentinel("POD_LABELS")


def pull_policy(container: Mapping[str, Any]) -> dict[str, Any]:
    """``container`` with ``imagePullPolicy`` (a sentinel for :func:`pod_extras`) after its
    image."""
    out: dict[str, Any] = {}
    for key, value in container.items():
        out[key] = value
        if key == "image":
            out["imagePullPolicy"] = sentinel("PULL_POLICY")
    return out


def pod_settings(pod: dict[str, Any], container: dict[str, Any]) -> None:
    """Sentinels where the chart's values set the operator container's ``resources`` and
    ``securityContext`` and its pod's ``securityContext`` (:func:`pod_settings_text`)."""
    container["resources"] = sentinel("RESOURCES")
    container["securityContext"] = sentinel("SECURITY_CONTEXT")
    pod["securityContext"] = sentinel("POD_SECURITY_CONTEXT")


def pod_settings_text(text: str) -> str:
    """The chart's ``resources``, ``securityContext`` and ``podSecurityContext`` (each as
    the values give it: their defaults are the install's) where :func:`pod_settings` put
    its sentinels, and ``affinity`` from the values or, when they give none, the
    Deployment's own (its replicas apart: :func:`appstack.sdk.spread_affinity`)."""
    text = block(text, "resources", "RESOURCES", ".Values.resources")
    text = block(text, "securityContext", "SECURITY_CONTEXT", ".Values.securityContext")
    text = block(text, "securityContext", "POD_SECURITY_CONTEXT", ".Values.podSecurityContext")
    return with_default(text, "affinity", ".Values.affinity")


def pod_extras(text: str) -> str:
    """The pod's ``imagePullPolicy`` (:func:`pull_policy`), ``imagePullSecrets:
    '@@PULL_SECRETS@@'`` and a ``POD_LABELS`` labels key become the chart's
    ``image.pullPolicy``, ``imagePullSecrets`` and ``podLabels`` (merged over
    ``commonLabels``), each only when set."""
    text = with_scalar(text, "imagePullPolicy", "PULL_POLICY", ".Values.image.pullPolicy")
    text = with_block(text, "imagePullSecrets", "PULL_SECRETS", ".Values.imagePullSecrets")

    def labels(match: re.Match[str]) -> str:
        indent = match.group(1)
        return (
            f"{indent}{{{{- with merge (dict) .Values.podLabels .Values.commonLabels }}}}\n"
            f"{indent}{{{{- toYaml . | nindent {len(indent)} }}}}\n{indent}{{{{- end }}}}"
        )

    return re.sub(rf"^(\s*)'{re.escape(POD_LABELS)}': ''$", labels, text, flags=re.MULTILINE)


class HelmText:
    """Helm template text from an object built with sentinel strings (``@@NAME@@``) where
    a value of the chart comes: dump the object (:meth:`dump`), then replace each sentinel by
    its template expression — a scalar (:meth:`substitute`), a block from the values
    (:meth:`block`, :meth:`with_block`, :meth:`with_default`, :meth:`items`,
    :meth:`merged_keys`), a list item under a condition or per value (:meth:`if_item`,
    :meth:`range_item`, :meth:`wrap_item`). What :func:`~appstack.sdk.chart_files` and
    appstack's own chart are made with; for the parts of a chart of yours that no
    generator makes."""

    sentinel = staticmethod(sentinel)
    dump = staticmethod(dump)
    substitute = staticmethod(substitute)
    wrap_item = staticmethod(wrap_item)
    range_item = staticmethod(range_item)
    block = staticmethod(block)
    with_default = staticmethod(with_default)
    if_item = staticmethod(if_item)
    with_block = staticmethod(with_block)
    with_scalar = staticmethod(with_scalar)
    items = staticmethod(items)
    merged_keys = staticmethod(merged_keys)
    set_scalar = staticmethod(set_scalar)
    wrap_list_item = staticmethod(wrap_list_item)
    wrap_key = staticmethod(wrap_key)
    conditional_text = staticmethod(conditional_text)
    conditional = staticmethod(conditional)
    pull_policy = staticmethod(pull_policy)
    pod_extras = staticmethod(pod_extras)
    pod_settings = staticmethod(pod_settings)
    pod_settings_text = staticmethod(pod_settings_text)
    autoscaler_text = staticmethod(autoscaler_text)
    autoscaling_values = staticmethod(autoscaling_values)
    unless_autoscaled = staticmethod(unless_autoscaled)
    literal_braces = staticmethod(literal_braces)
    either = staticmethod(either)
    metrics_test_pod = staticmethod(metrics_test_pod)
    file_entries = staticmethod(file_entries)
    files_text = staticmethod(files_text)
    sharding_schema_rules = staticmethod(sharding_schema_rules)
    watching = staticmethod(watching)
    watch_namespaces_schema = staticmethod(watch_namespaces_schema)
    enabled_choice = staticmethod(enabled_choice)
    metrics_scheme = staticmethod(metrics_scheme)
    metrics_ca_text = staticmethod(metrics_ca_text)
    METRICS_SECURE = METRICS_SECURE
    METRICS_CERT_SECRET = METRICS_CERT_SECRET
    WITH_METRICS_CERT = WITH_METRICS_CERT
    METRICS_CERT_VALUES = METRICS_CERT_VALUES
    METRICS_SCHEME = METRICS_SCHEME
    METRICS_INSECURE_ARG = METRICS_INSECURE_ARG
    ENABLE_ALL = ENABLE_ALL
    WATCH_NAMESPACES = WATCH_NAMESPACES
    WATCH_ARG = WATCH_ARG
    #: The release's namespace where an object has the sentinel ``NS``.
    NS = NS
    RELEASE_NS = RELEASE_NS
    NAMESPACES = NAMESPACES
    IMAGE = IMAGE
    POD_LABELS = POD_LABELS
    ONE_LEADER = ONE_LEADER
    SHUTDOWN_TIMEOUT = SHUTDOWN_TIMEOUT
    SHUTDOWN_ARG = SHUTDOWN_ARG
    SHUTDOWN_IN_GRACE = SHUTDOWN_IN_GRACE
    GRACE_PERIOD = GRACE_PERIOD
    AUTOSCALING_RANGE = AUTOSCALING_RANGE
    SHARDED = SHARDED
    SHARDS_MIN = SHARDS_MIN
    SHARDING_NEEDS = SHARDING_NEEDS
