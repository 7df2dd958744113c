"""The Pod Security Standard's *baseline* as CEL (pure), for the admission policies that
bound what the operator's token writes (:mod:`.admission_writes`: a Pod, or the pod
template of a Deployment, StatefulSet, Job, CronJob...) and what a tenant may ask of our
kinds (:mod:`.admission_kinds`: a ``securityContext`` or pod annotations).

Baseline, as Kubernetes defines it (``pod-security.kubernetes.io/enforce=baseline``): no
privileged container, no host network/PID/IPC, no host ports, no ``hostPath`` volume, no
capability beyond :data:`BASELINE_CAPABILITIES`, no ``Unconfined`` seccomp or AppArmor
profile (field or annotation), only the :data:`SAFE_SYSCTLS`, ``procMount: Default``, only
the container SELinux types and no SELinux user or role, no Windows ``hostProcess``. The
operator's token also never names a node (``spec.nodeName``): a pod must go through the
scheduler. A namespace labelled ``appstack.dev/allow-privileged-pods=true`` lifts these
(nothing appstack generates needs it).
"""

from __future__ import annotations

from dataclasses import dataclass

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


def _cel_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def _not_true(path: str, field: str) -> str:
    return f"(!has({path}.{field}) || !{path}.{field})"


def _profile_confined(context: str, profile: str) -> str:
    """``context.<profile>`` (seccompProfile, appArmorProfile) is not ``Unconfined``."""
    return f"(!has({context}.{profile}) || {context}.{profile}.type != 'Unconfined')"


def _selinux_ok(context: str) -> str:
    options = f"{context}.seLinuxOptions"
    return (
        f"(!has({options}) || ((!has({options}.type) || {options}.type == '' || "
        f"{options}.type in {_cel_list(SELINUX_TYPES)}) && "
        f"(!has({options}.user) || {options}.user == '') && "
        f"(!has({options}.role) || {options}.role == '')))"
    )


def _host_process_off(context: str) -> str:
    options = f"{context}.windowsOptions"
    return f"(!has({options}) || {_not_true(options, 'hostProcess')})"


def container_context_ok(context: str) -> str:
    """CEL: a container's ``securityContext`` at ``context`` is within baseline."""
    caps = f"{context}.capabilities"
    return (
        f"(!has({context}) || ("
        f"{_not_true(context, 'privileged')} && "
        f"(!has({caps}) || !has({caps}.add) || "
        f"{caps}.add.all(a, a in {_cel_list(BASELINE_CAPABILITIES)})) && "
        f"{_profile_confined(context, 'seccompProfile')} && "
        f"{_profile_confined(context, 'appArmorProfile')} && "
        f"(!has({context}.procMount) || {context}.procMount == 'Default') && "
        f"{_selinux_ok(context)} && {_host_process_off(context)}))"
    )


def _each_container(spec: str, check: str) -> str:
    """``check`` (about ``c``) of every container of the pod spec at ``spec``."""
    return " && ".join(
        f"(!has({spec}.{field}) || {spec}.{field}.all(c, {check}))" for field in CONTAINER_LISTS
    )


def annotations_ok(meta: str) -> str:
    """CEL: the pod metadata at ``meta`` asks no container to run AppArmor-unconfined."""
    return (
        f"(!has({meta}.annotations) || {meta}.annotations.all(k, "
        f"!k.startsWith('{APPARMOR_ANNOTATION}') || {meta}.annotations[k] == 'runtime/default'"
        f" || {meta}.annotations[k].startsWith('localhost/')))"
    )


@dataclass(frozen=True)
class PodPaths:
    """Where a kind keeps its pod: the spec and the pod's metadata (CEL paths from the
    request's ``object``), and whether that metadata may be absent."""

    spec: str
    meta: str
    meta_optional: bool = True


#: Each kind the operator writes that makes pods (its RBAC: no ReplicaSet, no DaemonSet),
#: and where its pod is (read from ``object`` directly: CEL's has() does not see through a
#: composed variable).
POD_KINDS: dict[str, PodPaths] = {
    "Pod": PodPaths("object.spec", "object.metadata", meta_optional=False),
    "Deployment": PodPaths("object.spec.template.spec", "object.spec.template.metadata"),
    "StatefulSet": PodPaths("object.spec.template.spec", "object.spec.template.metadata"),
    "Job": PodPaths("object.spec.template.spec", "object.spec.template.metadata"),
    "CronJob": PodPaths(
        "object.spec.jobTemplate.spec.template.spec",
        "object.spec.jobTemplate.spec.template.metadata",
    ),
}


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
                f"(!has(c.securityContext) || {_not_true('c.securityContext', 'privileged')})"
            )
            return _each_container(spec, f"{privileged} && {ports}")
        if self.name == "host":
            flags = " && ".join(
                _not_true(spec, flag) for flag in ("hostNetwork", "hostPID", "hostIPC")
            )
            volumes = f"(!has({spec}.volumes) || {spec}.volumes.all(v, !has(v.hostPath)))"
            return f"{flags} && {volumes}"
        if self.name == "security":
            pod = (
                f"(!has({pod_context}) || ("
                f"{_profile_confined(pod_context, 'seccompProfile')} && "
                f"{_profile_confined(pod_context, 'appArmorProfile')} && "
                f"{_selinux_ok(pod_context)} && {_host_process_off(pod_context)} && "
                f"(!has({pod_context}.sysctls) || {pod_context}.sysctls.all(s, "
                f"s.name in {_cel_list(SAFE_SYSCTLS)}))))"
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


def per_kind(check: Check) -> str:
    """``check`` of the pod of whichever kind is written (other kinds pass)."""
    return " && ".join(
        f"(object.kind != '{kind}' || ({check.cel(paths)}))" for kind, paths in POD_KINDS.items()
    )


def no_node_name() -> str:
    """CEL: a pod is created without ``spec.nodeName`` and no template names a node (the
    scheduler binds pods; an update cannot change a pod's node)."""
    pod = "(object.kind != 'Pod' || request.operation != 'CREATE' || !has(object.spec.nodeName))"
    templates = " && ".join(
        f"(object.kind != '{kind}' || !has({paths.spec}.nodeName))"
        for kind, paths in POD_KINDS.items()
        if kind != "Pod"
    )
    return f"{pod} && {templates}"
