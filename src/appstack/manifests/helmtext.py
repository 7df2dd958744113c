"""Turning a generated object into Helm template text for appstack's chart
(:mod:`appstack.manifests.chart`): the SDK's :class:`appstack.sdk.HelmText` — the same
sentinel method every operator's chart is made with (:func:`appstack.sdk.chart_files`) —
under the names appstack's chart modules use."""

from __future__ import annotations

from appstack.sdk import HelmText

sentinel = HelmText.sentinel
dump = HelmText.dump
substitute = HelmText.substitute
wrap_item = HelmText.wrap_item
range_item = HelmText.range_item
block = HelmText.block
with_default = HelmText.with_default
if_item = HelmText.if_item
with_block = HelmText.with_block
with_scalar = HelmText.with_scalar
items = HelmText.items
merged_keys = HelmText.merged_keys
set_scalar = HelmText.set_scalar
wrap_list_item = HelmText.wrap_list_item
wrap_key = HelmText.wrap_key
conditional_text = HelmText.conditional_text
conditional = HelmText.conditional
pull_policy = HelmText.pull_policy
pod_extras = HelmText.pod_extras
pod_settings = HelmText.pod_settings
pod_settings_text = HelmText.pod_settings_text
autoscaler_text = HelmText.autoscaler_text
unless_autoscaled = HelmText.unless_autoscaled
literal_braces = HelmText.literal_braces
enabled_choice = HelmText.enabled_choice
metrics_scheme = HelmText.metrics_scheme
metrics_ca_text = HelmText.metrics_ca_text
METRICS_SECURE = HelmText.METRICS_SECURE
METRICS_CERT_SECRET = HelmText.METRICS_CERT_SECRET
WITH_METRICS_CERT = HelmText.WITH_METRICS_CERT
METRICS_CERT_VALUES = HelmText.METRICS_CERT_VALUES
METRICS_SCHEME = HelmText.METRICS_SCHEME
METRICS_INSECURE_ARG = HelmText.METRICS_INSECURE_ARG
ENABLE_ALL = HelmText.ENABLE_ALL
NS = HelmText.NS
RELEASE_NS = HelmText.RELEASE_NS
NAMESPACES = HelmText.NAMESPACES
IMAGE = HelmText.IMAGE
POD_LABELS = HelmText.POD_LABELS
ONE_LEADER = HelmText.ONE_LEADER
SHUTDOWN_ARG = HelmText.SHUTDOWN_ARG
SHUTDOWN_IN_GRACE = HelmText.SHUTDOWN_IN_GRACE
GRACE_PERIOD = HelmText.GRACE_PERIOD
AUTOSCALING_RANGE = HelmText.AUTOSCALING_RANGE
SHARDED = HelmText.SHARDED
SHARDING_NEEDS = HelmText.SHARDING_NEEDS
either = HelmText.either
metrics_test_pod = HelmText.metrics_test_pod
file_entries = HelmText.file_entries
files_text = HelmText.files_text
watching = HelmText.watching
watch_namespaces_schema = HelmText.watch_namespaces_schema
WATCH_ARG = HelmText.WATCH_ARG
