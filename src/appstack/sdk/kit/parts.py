"""Typed parts of the children the controllers' pure ``desired`` functions build: a child's
metadata and owner reference, environment variables, container and Service ports, volume
mounts — so a misspelt key (``valueFrm``, ``containerport``) is a type error. They are
the wire form (camelCase keys), put as-is into the child objects. Where the SDK also has a
spec model of the type (:class:`~appstack.sdk.model.EnvVar`, :class:`~appstack.sdk.model.Probe`:
what a user writes, validated), the wire shape is named ``...Dict`` (``EnvVarDict``,
``ProbeDict``), as kubernetes-typed names its TypedDicts.
Used by :mod:`.meta`, :mod:`.workloads` and every kind's ``desired`` modules.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from typing_extensions import Required, TypedDict

from appstack.sdk.model import KubeModel


class OwnerReference(TypedDict):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ChildMeta(TypedDict, total=False):
    """``metadata`` of a child we apply."""

    name: Required[str]
    namespace: Required[str]
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]


class KeyRef(TypedDict):
    """A key of a Secret (``secretKeyRef``) or ConfigMap (``configMapKeyRef``)."""

    name: str
    key: str


class FieldRef(TypedDict):
    fieldPath: str


class EnvSource(TypedDict, total=False):
    secretKeyRef: KeyRef
    configMapKeyRef: KeyRef
    fieldRef: FieldRef


class EnvVarDict(TypedDict, total=False):
    """A container's environment variable: a value, or where it comes from."""

    name: Required[str]
    value: str
    valueFrom: EnvSource


class ContainerPort(TypedDict, total=False):
    containerPort: Required[int]
    name: str
    protocol: str


class VolumeMount(TypedDict, total=False):
    name: Required[str]
    mountPath: Required[str]
    readOnly: bool
    subPath: str


class KeyToPath(TypedDict):
    key: str
    path: str


class SecretVolume(TypedDict, total=False):
    secretName: Required[str]
    items: list[KeyToPath]
    optional: bool
    defaultMode: int


class ConfigMapVolume(TypedDict, total=False):
    name: Required[str]
    items: list[KeyToPath]
    optional: bool


class ClaimVolume(TypedDict, total=False):
    claimName: Required[str]
    readOnly: bool


class FieldFile(TypedDict):
    path: str
    fieldRef: FieldRef


class DownwardVolume(TypedDict):
    items: list[FieldFile]


class EmptyDir(TypedDict, total=False):
    medium: str
    sizeLimit: str


class Volume(TypedDict, total=False):
    """A pod's volume: one of the sources the controllers use."""

    name: Required[str]
    secret: SecretVolume
    configMap: ConfigMapVolume
    persistentVolumeClaim: ClaimVolume
    downwardAPI: DownwardVolume
    emptyDir: EmptyDir


class Capabilities(TypedDict, total=False):
    add: list[str]
    drop: list[str]


class SeccompProfile(TypedDict, total=False):
    type: Required[str]
    localhostProfile: str


class ContainerSecurity(TypedDict, total=False):
    """A container's securityContext (the fields the API's SecurityContext model has)."""

    runAsNonRoot: bool
    runAsUser: int
    runAsGroup: int
    allowPrivilegeEscalation: bool
    readOnlyRootFilesystem: bool
    privileged: bool
    capabilities: Capabilities
    seccompProfile: SeccompProfile


class PodSecurityContext(TypedDict, total=False):
    runAsNonRoot: bool
    runAsUser: int
    runAsGroup: int
    fsGroup: int
    seccompProfile: SeccompProfile


class ClaimSpec(TypedDict, total=False):
    """A PersistentVolumeClaim's spec (or a StatefulSet's volumeClaimTemplate's)."""

    accessModes: Required[list[str]]
    resources: Required[dict[str, dict[str, int | str]]]  # requests: storage
    storageClassName: str


class ServicePortSpec(TypedDict, total=False):
    """A port of a Service we apply."""

    port: Required[int]
    name: str
    protocol: str
    targetPort: int | str
    nodePort: int
    appProtocol: str


class TemplateMeta(TypedDict, total=False):
    """``metadata`` of a pod template."""

    labels: Required[dict[str, str]]
    annotations: dict[str, str]


class ExecAction(TypedDict):
    command: list[str]


class HTTPGetAction(TypedDict, total=False):
    path: str
    port: Required[int | str]
    scheme: str


class TCPSocketAction(TypedDict):
    port: int | str


class ProbeDict(TypedDict, total=False):
    exec: ExecAction
    httpGet: HTTPGetAction
    tcpSocket: TCPSocketAction
    initialDelaySeconds: int
    periodSeconds: int
    timeoutSeconds: int
    successThreshold: int
    failureThreshold: int


class Resources(TypedDict, total=False):
    """A container's resources: quantities by resource name."""

    requests: dict[str, int | str]
    limits: dict[str, int | str]


class Container(TypedDict, total=False):
    """A container of a pod we apply (only the fields that are set)."""

    name: Required[str]
    image: Required[str]
    command: list[str]
    args: list[str]
    env: list[EnvVarDict]
    envFrom: list[dict[str, Any]]
    ports: list[ContainerPort]
    volumeMounts: list[VolumeMount]
    resources: Resources
    readinessProbe: ProbeDict
    livenessProbe: ProbeDict
    securityContext: ContainerSecurity


def user_resources(model: KubeModel) -> Resources:
    """The resources a spec sets (the API's ResourceRequirements model), in wire form."""
    return cast(Resources, model.to_dict())


def user_probe(model: KubeModel) -> ProbeDict:
    """A probe a spec sets (the API's :class:`~appstack.sdk.model.Probe` model), in wire form."""
    return cast(ProbeDict, model.to_dict())


def user_env(env: Iterable[KubeModel]) -> list[EnvVarDict]:
    """The variables a spec lists (``envs``: the API's
    :class:`~appstack.sdk.model.EnvVar` models), in wire form."""
    return [cast(EnvVarDict, e.to_dict()) for e in env]


def user_security(model: KubeModel | None) -> ContainerSecurity:
    """The securityContext a spec sets (the API's SecurityContext model), in wire form."""
    return cast(ContainerSecurity, model.to_dict()) if model else {}


def secret_env(name: str, secret: str, key: str) -> EnvVarDict:
    """The variable ``name`` from ``key`` of Secret ``secret``."""
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


class Manifest(TypedDict, total=False):
    """A child object as a controller wants it (what it applies): kind, metadata and the
    kind's own top-level fields."""

    apiVersion: Required[str]
    kind: Required[str]
    metadata: Required[ChildMeta]
    spec: dict[str, Any]
    data: dict[str, str]
    stringData: dict[str, str]
    type: str
    immutable: bool
    addressType: str
    endpoints: list[dict[str, Any]]
    ports: list[dict[str, Any]]


def wire(child: Manifest) -> dict[str, Any]:
    """``child`` as the API client sends it (a JSON object)."""
    return cast(dict[str, Any], child)
