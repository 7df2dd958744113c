"""The Pod Security Standard's *baseline* as CEL (pure), for the admission guards that
bound what an operator's token writes (:mod:`.writes`: a Pod, or the pod template of a
Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob... — those of them its RBAC
lets it write) and what a tenant may ask of its kinds (:mod:`.kinds`: a
``securityContext`` or pod annotations). Used by :mod:`appstack.sdk.guards`, for appstack's
operator and scaffolded ones alike.

Baseline, as Kubernetes defines it (``pod-security.kubernetes.io/enforce=baseline``): no
privileged container, no host network/PID/IPC, no host ports, no ``hostPath`` volume, no
capability beyond :data:`BASELINE_CAPABILITIES`, no ``Unconfined`` seccomp or AppArmor
profile (field or annotation), only the :data:`SAFE_SYSCTLS`, ``procMount: Default``, only
the container SELinux types and no SELinux user or role, no Windows ``hostProcess``. The
operator's token also never names a node (``spec.nodeName``): a pod must go through the
scheduler. A namespace labelled ``<domain>/allow-privileged-pods=true`` (the identity's
:attr:`~appstack.sdk.identity.OperatorIdentity.allow_privileged_label`) lifts these.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from appstack.sdk.guards.expressions import cel_list

BASELINE_CAPABILITIES = (
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
)
SAFE_SYSCTLS = (
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ping_group_range",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_syncookies",
)
SELINUX_TYPES = ("container_t", "container_init_t", "container_kvm_t", "container_engine_t")
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def not_true(path: str, field: str) -> str:
    """CEL: the boolean ``path.field`` is absent or false."""
    return f"(!has({path}.{field}) || !{path}.{field})"


def profile_confined(context: str, profile: str) -> str:
    """``context.<profile>`` (seccompProfile, appArmorProfile) is not ``Unconfined``."""
    return f"(!has({context}.{profile}) || {context}.{profile}.type != 'Unconfined')"


def _selinux_ok(context: str) -> str:
    options = f"{context}.seLinuxOptions"
    return (
        f"(!has({options}) || ((!has({options}.type) || {options}.type == '' || "
        f"{options}.type in {cel_list(SELINUX_TYPES)}) && "
        f"(!has({options}.user) || {options}.user == '') && "
        f"(!has({options}.role) || {options}.role == '')))"
    )


def _host_process_off(context: str) -> str:
    options = f"{context}.windowsOptions"
    return f"(!has({options}) || {not_true(options, 'hostProcess')})"


def capabilities_added_ok(context: str) -> str:
    """CEL: the capabilities the securityContext at ``context`` adds are baseline's."""
    caps = f"{context}.capabilities"
    return (
        f"(!has({caps}) || !has({caps}.add) || "
        f"{caps}.add.all(a, a in {cel_list(BASELINE_CAPABILITIES)}))"
    )


def container_context_ok(context: str) -> str:
    """CEL: a container's ``securityContext`` at ``context`` is within baseline."""
    return (
        f"(!has({context}) || ("
        f"{not_true(context, 'privileged')} && {capabilities_added_ok(context)} && "
        f"{profile_confined(context, 'seccompProfile')} && "
        f"{profile_confined(context, 'appArmorProfile')} && "
        f"(!has({context}.procMount) || {context}.procMount == 'Default') && "
        f"{_selinux_ok(context)} && {_host_process_off(context)}))"
    )


def _each_container(spec: str, check: str) -> str:
    """``check`` (about ``c``) of every container of the pod spec at ``spec``."""
    return " && ".join(
        f"(!has({spec}.{field}) || {spec}.{field}.all(c, {check}))" for field in CONTAINER_LISTS
    )


def annotations_confined(annotations: str) -> str:
    """CEL: the annotations map at ``annotations`` asks no container to run
    AppArmor-unconfined."""
    return (
        f"{annotations}.all(k, "
        f"!k.startsWith('{APPARMOR_ANNOTATION}') || {annotations}[k] == 'runtime/default'"
        f" || {annotations}[k].startsWith('localhost/'))"
    )


def annotations_ok(meta: str) -> str:
    """CEL: the pod metadata at ``meta`` asks no container to run AppArmor-unconfined."""
    return f"(!has({meta}.annotations) || {annotations_confined(f'{meta}.annotations')})"


@dataclass(frozen=True)
class PodPaths:
    """Where a kind keeps its pod: the spec and the pod's metadata (CEL paths from the
    request's ``object``), whether that metadata may be absent, and the kind's resource
    (group, plural) as RBAC names it."""

    spec: str
    meta: str
    resource: tuple[str, str]
    meta_optional: bool = True


def _template(group: str, plural: str) -> PodPaths:
    return PodPaths("object.spec.template.spec", "object.spec.template.metadata", (group, plural))


#: Each kind that makes pods, and where its pod is (read from ``object`` directly: CEL's
#: has() does not see through a composed variable). A policy checks those its operator
#: writes (:func:`pod_kinds`), in this order.
POD_KINDS: dict[str, PodPaths] = {
    "Pod": PodPaths("object.spec", "object.metadata", ("", "pods"), meta_optional=False),
    "Deployment": _template("apps", "deployments"),
    "StatefulSet": _template("apps", "statefulsets"),
    "Job": _template("batch", "jobs"),
    "CronJob": PodPaths(
        "object.spec.jobTemplate.spec.template.spec",
        "object.spec.jobTemplate.spec.template.metadata",
        ("batch", "cronjobs"),
    ),
    "DaemonSet": _template("apps", "daemonsets"),
    "ReplicaSet": _template("apps", "replicasets"),
    "ReplicationController": _template("", "replicationcontrollers"),
}


def pod_kinds(written: Iterable[tuple[str, str]]) -> list[str]:
    """The kinds of :data:`POD_KINDS` among the ``written`` resources (group, plural)."""
    resources = set(written)
    return [kind for kind, paths in POD_KINDS.items() if paths.resource in resources]


@dataclass(frozen=True)
class Check:
    """One baseline rule: its CEL on a pod (``paths``) and the message when it fails."""

    name: str
    message: str

    def cel(self, paths: PodPaths) -> str:
        spec, pod_context = paths.spec, f"{paths.spec}.securityContext"
        if self.name == "privileged":
            ports = "(!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))"
            privileged = (
                f"(!has(c.securityContext) || {not_true('c.securityContext', 'privileged')})"
            )
            return _each_container(spec, f"{privileged} && {ports}")
        if self.name == "host":
            flags = " && ".join(
                not_true(spec, flag) for flag in ("hostNetwork", "hostPID", "hostIPC")
            )
            volumes = f"(!has({spec}.volumes) || {spec}.volumes.all(v, !has(v.hostPath)))"
            return f"{flags} && {volumes}"
        if self.name == "security":
            pod = (
                f"(!has({pod_context}) || ("
                f"{profile_confined(pod_context, 'seccompProfile')} && "
                f"{profile_confined(pod_context, 'appArmorProfile')} && "
                f"{_selinux_ok(pod_context)} && {_host_process_off(pod_context)} && "
                f"(!has({pod_context}.sysctls) || {pod_context}.sysctls.all(s, "
                f"s.name in {cel_list(SAFE_SYSCTLS)}))))"
            )
            containers = _each_container(spec, container_context_ok("c.securityContext"))
            meta = annotations_ok(paths.meta)
            if paths.meta_optional:
                meta = f"(!has({paths.meta}) || {meta})"
            return f"{pod} && {containers} && {meta}"
        raise ValueError(self.name)


CHECKS = (
    Check("privileged", "privileged containers or host ports"),
    Check("host", "pods using the host's network, PID or IPC namespaces or hostPath volumes"),
    Check(
        "security",
        "pods beyond the Pod Security baseline: capabilities other than its own, "
        "Unconfined seccomp or AppArmor profiles, unsafe sysctls, a procMount, SELinux "
        "type, user or role, or Windows hostProcess",
    ),
)


def per_kind(check: Check, kinds: Iterable[str]) -> str:
    """``check`` of the pod of whichever of ``kinds`` is written (other kinds pass)."""
    return " && ".join(
        f"(object.kind != '{kind}' || ({check.cel(POD_KINDS[kind])}))" for kind in kinds
    )


def no_node_name(kinds: Iterable[str]) -> str:
    """CEL: a pod is created without ``spec.nodeName`` and no template of ``kinds`` names a
    node (the scheduler binds pods; an update cannot change a pod's node)."""
    pod = "(object.kind != 'Pod' || request.operation != 'CREATE' || !has(object.spec.nodeName))"
    return " && ".join(
        pod
        if kind == "Pod"
        else f"(object.kind != '{kind}' || !has({POD_KINDS[kind].spec}.nodeName))"
        for kind in kinds
    )
