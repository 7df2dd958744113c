"""Typed parts of the children the controllers' pure ``desired`` functions build: a child's
metadata and owner reference, environment variables, container and Service ports, volumes
and their mounts — so a misspelt key (``valueFrm``, ``containerport``) is a type error. They
are the wire form (camelCase keys), put as-is into the child objects.

What a user writes in a spec is the SDK's model of the Kubernetes type
(:mod:`appstack.sdk.model`: :class:`~appstack.sdk.model.EnvVar`,
:class:`~appstack.sdk.model.Probe`, :class:`~appstack.sdk.model.Volume`, ...: validated,
the one definition); the wire shape of the same type is named ``...Dict`` here
(``EnvVarDict``, ``ProbeDict``, ``VolumeDict``), as kubernetes-typed names its TypedDicts, or
after the field it fills (``Resources``, ``ContainerSecurity``). A model becomes its wire
shape in one place, the ``user_*`` functions below (:func:`user_env`, :func:`user_probe`,
:func:`user_resources`, :func:`user_security`, :func:`user_volumes`, :func:`user_mounts`).
A wanted child is sent as :func:`wire` makes it: in a sharded operator's reconcile, with its
root's shard labels (:func:`appstack.runtime.shard_child_labels`). Used by :mod:`.meta`,
every kind's ``desired`` modules and the children writer (:mod:`.children`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from typing_extensions import Required, TypedDict

from appstack.runtime.sharding import shard_child_labels
from appstack.sdk.model import (
    EnvVar,
    Probe,
    ResourceRequirements,
    SecurityContext,
    Volume,
    VolumeMount,
)


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


class VolumeMountDict(TypedDict, total=False):
    name: Required[str]
    mountPath: Required[str]
    readOnly: bool
    subPath: str


class KeyToPathDict(TypedDict):
    key: str
    path: str


class SecretVolume(TypedDict, total=False):
    secretName: Required[str]
    items: list[KeyToPathDict]
    optional: bool
    defaultMode: int


class ConfigMapVolume(TypedDict, total=False):
    name: Required[str]
    items: list[KeyToPathDict]
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


class VolumeDict(TypedDict, total=False):
    """A pod's volume: one of the sources the controllers use."""

    name: Required[str]
    secret: SecretVolume
    configMap: ConfigMapVolume
    persistentVolumeClaim: ClaimVolume
    downwardAPI: DownwardVolume
    emptyDir: EmptyDir


class CapabilitiesDict(TypedDict, total=False):
    add: list[str]
    drop: list[str]


class SeccompProfileDict(TypedDict, total=False):
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
    capabilities: CapabilitiesDict
    seccompProfile: SeccompProfileDict


class PodSecurityContext(TypedDict, total=False):
    runAsNonRoot: bool
    runAsUser: int
    runAsGroup: int
    fsGroup: int
    seccompProfile: SeccompProfileDict


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


class ExecActionDict(TypedDict):
    command: list[str]


class HTTPGetActionDict(TypedDict, total=False):
    path: str
    port: Required[int | str]
    scheme: str


class TCPSocketActionDict(TypedDict):
    port: int | str


class GRPCActionDict(TypedDict, total=False):
    port: Required[int]
    service: str


class ProbeDict(TypedDict, total=False):
    exec: ExecActionDict
    httpGet: HTTPGetActionDict
    tcpSocket: TCPSocketActionDict
    grpc: GRPCActionDict
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
    volumeMounts: list[VolumeMountDict]
    resources: Resources
    readinessProbe: ProbeDict
    livenessProbe: ProbeDict
    securityContext: ContainerSecurity


def user_resources(model: ResourceRequirements) -> Resources:
    """The resources a spec sets (:class:`~appstack.sdk.model.ResourceRequirements`), in
    wire form."""
    return cast(Resources, model.to_dict())


def user_probe(model: Probe) -> ProbeDict:
    """A probe a spec sets (:class:`~appstack.sdk.model.Probe`), in wire form."""
    return cast(ProbeDict, model.to_dict())


def user_env(env: Iterable[EnvVar]) -> list[EnvVarDict]:
    """The variables a spec lists (:class:`~appstack.sdk.model.EnvVar`), in wire form."""
    return [cast(EnvVarDict, e.to_dict()) for e in env]


def user_security(model: SecurityContext | None) -> ContainerSecurity:
    """The securityContext a spec sets (:class:`~appstack.sdk.model.SecurityContext`), in
    wire form; none: ``{}``."""
    return cast(ContainerSecurity, model.to_dict()) if model else {}


def user_volumes(volumes: Iterable[Volume] | None) -> list[VolumeDict]:
    """The volumes a spec lists (:class:`~appstack.sdk.model.Volume`), in wire form."""
    return [cast(VolumeDict, v.to_dict()) for v in volumes or []]


def user_mounts(mounts: Iterable[VolumeMount] | None) -> list[VolumeMountDict]:
    """The volumeMounts a spec lists (:class:`~appstack.sdk.model.VolumeMount`), in wire
    form."""
    return [cast(VolumeMountDict, m.to_dict()) for m in mounts or []]


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
    """``child`` as the API client sends it (a JSON object) — in a sharded operator's
    reconcile with its root's shard labels added (:func:`appstack.runtime.shard_child_labels`:
    the shard keeps in its cache only the children labelled to it), a copy then."""
    extra = shard_child_labels()
    if not extra:
        return cast(dict[str, Any], child)
    meta = child["metadata"]
    labels = {**(meta.get("labels") or {}), **extra}
    return cast(dict[str, Any], {**child, "metadata": {**meta, "labels": labels}})
