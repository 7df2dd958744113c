"""Pod fields for real workloads, in Kubernetes' own shapes and names: volumes and their
mounts, scheduling (``nodeSelector``, ``tolerations``, ``affinity``,
``topologySpreadConstraints``). Used by AppService and AppStack components
(:mod:`appstack.api.appservice`, :mod:`appstack.api.appstack_component`). Types only, no I/O.

A volume is one of four sources — ``configMap``, ``secret``, ``persistentVolumeClaim``,
``emptyDir`` — of the object's own namespace: there is no field for ``hostPath`` or any other
source, so none can be asked for (an unknown field is refused by ``kubectl``'s strict
validation and pruned by the API server), and nothing here goes beyond the Pod Security
baseline (:mod:`appstack.sdk.guards.pods`).

What a rule can decide from the object alone is written once, in CEL, and checked at
admission and by the models client-side (:mod:`appstack.sdk.cel`): schema bounds and
patterns; :class:`Volume`'s rule, :data:`TOLERATION_RULES`, :func:`mount_rules`.
``nodeSelector`` keys are checked by the models only (a schema cannot bound a map's keys,
so a CEL rule matching each key risks the API server's cost estimate); what remains (an
affinity term's values for its operator) is the API server's, when the Deployment is
applied: ``Ready=False`` with its message.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field

from appstack.sdk import DNS_LABEL, KubeModel, LocalObjectReference, ObjectName, Quantity

#: A label key: an optional DNS-subdomain prefix and '/', then a name of at most 63.
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
# A relative path without '..' elements (a key's file, a subPath).
_SEGMENT = r"(\.?[-_a-zA-Z0-9][-._a-zA-Z0-9]*|\.\.[-._a-zA-Z0-9]+)"
RELATIVE_PATH = rf"^{_SEGMENT}(/{_SEGMENT})*$"

LabelKey = Annotated[str, Field(min_length=1, max_length=317, pattern=LABEL_KEY)]
LabelValue = Annotated[str, Field(max_length=63, pattern=LABEL_VALUE)]
MountPath = Annotated[str, Field(min_length=1, max_length=1024, pattern=r"^/")]
RelativePath = Annotated[str, Field(min_length=1, max_length=1024, pattern=RELATIVE_PATH)]
FileMode = Annotated[int, Field(ge=0, le=0o777)]

MAX_VOLUMES = 16  # volumes and volumeMounts each: the CEL rules compare every pair


class KeyToPath(KubeModel):
    """One key of the ConfigMap or Secret, as a file."""

    key: str = Field(min_length=1, max_length=253, description="The key.")
    path: RelativePath = Field(description="The file, relative to the mount path.")
    mode: FileMode | None = Field(default=None, description="The file's mode bits (0-0777).")


class ConfigMapVolumeSource(KubeModel):
    """A ConfigMap of the namespace, its keys as files."""

    name: ObjectName = Field(description="The ConfigMap.")
    items: list[KeyToPath] | None = Field(
        default=None, max_length=64, description="Only these keys (default: every key)."
    )
    default_mode: FileMode | None = Field(default=None, description="Mode bits of the files.")
    optional: bool | None = Field(default=None, description="Start even if it is missing.")


class SecretVolumeSource(KubeModel):
    """A Secret of the namespace, its keys as files."""

    secret_name: ObjectName = Field(description="The Secret.")
    items: list[KeyToPath] | None = Field(
        default=None, max_length=64, description="Only these keys (default: every key)."
    )
    default_mode: FileMode | None = Field(default=None, description="Mode bits of the files.")
    optional: bool | None = Field(default=None, description="Start even if it is missing.")


class PersistentVolumeClaimVolumeSource(KubeModel):
    """A PersistentVolumeClaim of the namespace."""

    claim_name: ObjectName = Field(description="The claim.")
    read_only: bool | None = Field(default=None, description="Mount it read-only.")


class EmptyDirVolumeSource(KubeModel):
    """A directory that lives as long as the pod."""

    medium: Literal["", "Memory"] | None = Field(
        default=None, description="Memory for a tmpfs (default: the node's disk)."
    )
    size_limit: Quantity | None = Field(default=None, description="At most this much, e.g. 1Gi.")


_SOURCES = ("configMap", "secret", "persistentVolumeClaim", "emptyDir")
_ONE_SOURCE = "a volume needs exactly one of configMap, secret, persistentVolumeClaim, emptyDir"


class Volume(KubeModel):
    """A volume of the pod: a ConfigMap, Secret, PersistentVolumeClaim or emptyDir only."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "["
                    + ", ".join(f"has(self.{s})" for s in _SOURCES)
                    + "].filter(x, x).size() == 1",
                    "message": _ONE_SOURCE,
                }
            ]
        }
    )

    name: str = Field(max_length=63, pattern=DNS_LABEL, description="Named by volumeMounts.")
    config_map: ConfigMapVolumeSource | None = None
    secret: SecretVolumeSource | None = None
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    empty_dir: EmptyDirVolumeSource | None = None


class VolumeMount(KubeModel):
    """Where the container sees a volume."""

    name: str = Field(max_length=63, pattern=DNS_LABEL, description="A volume of volumes.")
    mount_path: MountPath = Field(description="An absolute path in the container.")
    sub_path: RelativePath | None = Field(
        default=None,
        description="Mount only this path of the volume (its files are then not updated when "
        "the ConfigMap or Secret changes).",
    )
    read_only: bool | None = Field(default=None, description="Mount it read-only.")


def mount_rules(
    other_names: str | None = None, other_paths: str | None = None
) -> list[dict[str, str]]:
    """The CEL rules on an object with ``volumes`` and ``volumeMounts``: unique names, every
    mount naming a volume, unique mount paths. ``other_names``/``other_paths``: CEL of the
    object's own volume names and mount paths (``v``, ``m`` the volume and mount checked)
    that must not be repeated (an AppStack component's configs)."""
    rules = [
        {
            "rule": "!has(self.volumes) || "
            "self.volumes.all(v, self.volumes.exists_one(w, w.name == v.name))",
            "message": "volume names must be unique",
            "fieldPath": ".volumes",
        },
        {
            "rule": "!has(self.volumeMounts) || self.volumeMounts.all(m, "
            "has(self.volumes) && self.volumes.exists(v, v.name == m.name))",
            "message": "every volumeMount must name a volume of volumes",
            "fieldPath": ".volumeMounts",
        },
        {
            "rule": "!has(self.volumeMounts) || "
            "self.volumeMounts.all(m, self.volumeMounts.exists_one(n, n.mountPath == m.mountPath))",
            "message": "volumeMounts: mount paths must be unique",
            "fieldPath": ".volumeMounts",
        },
    ]
    if other_names:
        rules.append(
            {
                "rule": f"!has(self.volumes) || self.volumes.all(v, {other_names})",
                "message": "volumes: a volume may not have the name of a config "
                "(config, configs[].name)",
                "fieldPath": ".volumes",
            }
        )
    if other_paths:
        rules.append(
            {
                "rule": f"!has(self.volumeMounts) || self.volumeMounts.all(m, {other_paths})",
                "message": "volumeMounts: a mount path may not be one of config or configs",
                "fieldPath": ".volumeMounts",
            }
        )
    return rules


def _label_keys(selector: dict[str, str]) -> dict[str, str]:
    for key in selector:
        prefix, _, name = key.rpartition("/")
        if not re.fullmatch(LABEL_KEY, key) or len(prefix) > 253 or len(name) > 63:
            raise ValueError(
                f"nodeSelector: {key!r} is not a label key (an optional DNS subdomain prefix "
                "and '/', then at most 63 of A-Z a-z 0-9 - _ ., starting and ending with a "
                "letter or digit)"
            )
    return selector


NodeSelectorMap = Annotated[
    dict[str, LabelValue],
    Field(max_length=64),
    AfterValidator(_label_keys),
]


_TOLERATION_EXISTS = "operator must be Exists when key is empty (it then tolerates every taint)"
_TOLERATION_VALUE = "value must be empty when operator is Exists"
_TOLERATION_SECONDS = "tolerationSeconds needs effect NoExecute"
TOLERATION_RULES: list[Any] = [
    {
        "rule": "has(self.key) || (has(self.operator) && self.operator == 'Exists')",
        "message": _TOLERATION_EXISTS,
        "fieldPath": ".operator",
    },
    {
        "rule": "!has(self.operator) || self.operator != 'Exists' || !has(self.value) || "
        "self.value == ''",
        "message": _TOLERATION_VALUE,
        "fieldPath": ".value",
    },
    {
        "rule": "!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",
        "message": _TOLERATION_SECONDS,
        "fieldPath": ".tolerationSeconds",
    },
]


class Toleration(KubeModel):
    """The pods may run on nodes with a matching taint."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": TOLERATION_RULES})

    key: LabelKey | None = Field(default=None, description="The taint's key (empty: any).")
    operator: Literal["Exists", "Equal"] | None = Field(
        default=None, description="Equal (the default) or Exists (any value)."
    )
    value: LabelValue | None = Field(default=None, description="The taint's value, for Equal.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        default=None, description="The taint's effect (empty: any)."
    )
    toleration_seconds: int | None = Field(
        default=None,
        ge=0,
        le=2**31 - 1,
        description="With NoExecute: how long the pod stays once tainted (default: forever).",
    )


_Values = list[Annotated[str, Field(max_length=317)]]


class NodeSelectorRequirement(KubeModel):
    key: LabelKey = Field(description="A node label, or with matchFields: metadata.name.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: _Values | None = Field(
        default=None,
        max_length=64,
        description="For In/NotIn: one or more; Gt/Lt: one integer; Exists/DoesNotExist: none.",
    )


class NodeSelectorTerm(KubeModel):
    """Node requirements, all of which must hold."""

    match_expressions: list[NodeSelectorRequirement] | None = Field(default=None, max_length=16)
    match_fields: list[NodeSelectorRequirement] | None = Field(default=None, max_length=16)


class NodeSelector(KubeModel):
    """Any one of the terms."""

    node_selector_terms: list[NodeSelectorTerm] = Field(min_length=1, max_length=16)


class PreferredSchedulingTerm(KubeModel):
    weight: int = Field(ge=1, le=100)
    preference: NodeSelectorTerm


class NodeAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        Field(default=None, max_length=16)
    )


class LabelSelectorRequirement(KubeModel):
    key: LabelKey
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: _Values | None = Field(default=None, max_length=64)


class LabelSelector(KubeModel):
    """Pods (or namespaces) by label: matchLabels and matchExpressions, all of which hold."""

    match_labels: dict[str, LabelValue] | None = Field(default=None, max_length=64)
    match_expressions: list[LabelSelectorRequirement] | None = Field(default=None, max_length=16)


_LabelKeys = list[Annotated[str, Field(max_length=317, pattern=LABEL_KEY)]]


class PodAffinityTerm(KubeModel):
    """Pods matching labelSelector, in the same topology domain (e.g. node, zone)."""

    label_selector: LabelSelector | None = None
    namespaces: list[Annotated[str, Field(max_length=63, pattern=DNS_LABEL)]] | None = Field(
        default=None, max_length=16, description="Default: the pod's own namespace."
    )
    topology_key: LabelKey = Field(description="e.g. kubernetes.io/hostname.")
    namespace_selector: LabelSelector | None = None
    match_label_keys: _LabelKeys | None = Field(default=None, max_length=16)
    mismatch_label_keys: _LabelKeys | None = Field(default=None, max_length=16)


class WeightedPodAffinityTerm(KubeModel):
    weight: int = Field(ge=1, le=100)
    pod_affinity_term: PodAffinityTerm


class PodAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = Field(
        default=None, max_length=16
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = (
        Field(default=None, max_length=16)
    )


class Affinity(KubeModel):
    """Kubernetes' affinity: which nodes, and beside or away from which pods."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(KubeModel):
    """Spread the pods across topology domains (nodes, zones)."""

    max_skew: int = Field(ge=1, le=2**31 - 1, description="Most pods more in one domain.")
    topology_key: LabelKey = Field(description="e.g. topology.kubernetes.io/zone.")
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: int | None = Field(default=None, ge=1, le=2**31 - 1)
    node_affinity_policy: Literal["Honor", "Ignore"] | None = None
    node_taints_policy: Literal["Honor", "Ignore"] | None = None
    match_label_keys: _LabelKeys | None = Field(default=None, max_length=16)


# The fields' descriptions, the same for every kind.
IMAGE_PULL_SECRETS = "Secrets of the namespace for pulling the image from a private registry."
VOLUMES = (
    "Volumes of the pods: configMap, secret, persistentVolumeClaim or emptyDir (of this "
    "namespace; no other source)."
)
VOLUME_MOUNTS = "Where the container mounts volumes (each names one of volumes)."
NODE_SELECTOR = "Labels a node must have to run the pods."
TOLERATIONS = "Taints of nodes the pods tolerate."
AFFINITY = "Node affinity, pod affinity and anti-affinity of the pods."
SPREAD = "How the pods spread across nodes or zones."

PullSecrets = Annotated[list[LocalObjectReference], Field(max_length=16)]
Volumes = Annotated[list[Volume], Field(max_length=MAX_VOLUMES)]
VolumeMounts = Annotated[list[VolumeMount], Field(max_length=MAX_VOLUMES)]
Tolerations = Annotated[list[Toleration], Field(max_length=16)]
SpreadConstraints = Annotated[list[TopologySpreadConstraint], Field(max_length=8)]
