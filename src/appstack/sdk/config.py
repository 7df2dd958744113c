"""An operator's install in kubebuilder's kustomize layout (``config/``), generated from its
code: :func:`config_files` — what ``appstack generate manifests`` (``make manifests`` of a
scaffolded project) writes, controller-gen's job in Go projects. kustomize (``kubectl
kustomize``, ``kubectl apply -k``) makes one bundle of it (``make deploy``, ``make
build-installer``: :mod:`appstack.scaffold.manifests`), as in a kubebuilder project.

Generated from the code, rewritten by every ``make manifests``:

* ``crd/`` — each kind's CRD in ``bases/<group>_<plural>.yaml`` (:func:`appstack.sdk.crds.crd`);
* ``rbac/`` — the ServiceAccount ``controller-manager``; ``role.yaml`` (``manager-role``:
  every controller's rules, derived from what it declares, and what the operator process
  needs: :func:`appstack.sdk.rbac.process_rules`, and the admission guards' marker:
  :func:`appstack.sdk.rbac.marker_rule`) and its binding — a ClusterRole, or a Role in the
  operator's namespace for a ``--namespaced`` project; the leader-election Role (its Lease
  by name, and the marker); the reviews behind ``/metrics``; the metrics reader; the
  namespace enabler (who may opt a namespace in); per kind an admin, editor and viewer role
  (the last two aggregated into ``edit`` and ``view``); the FlowSchema of the operator's
  Lease requests (:func:`appstack.sdk.lease_flow_schema`, with a ``kustomizeconfig.yaml``
  that makes config/default's prefix and namespace follow its ServiceAccount subject);
* ``certmanager/`` — when the operator serves webhooks: a kustomize Component that lets
  cert-manager issue the webhook certificate instead of the operator (kubebuilder's
  ``config/certmanager``): a self-signed Issuer, a Certificate for the webhook Service's
  DNS names, its Secret mounted into the manager at :data:`CERT_DIR` with
  ``--webhook-cert-dir``, and ``cert-manager.io/inject-ca-from`` on the webhook
  configurations and on the CRDs that convert (cert-manager's CA injector writes their
  ``caBundle``); off until ``config/default/kustomization.yaml``'s one commented line
  (:data:`CERT_MANAGER_LINE`) is uncommented (:func:`certmanager_objects`);
* ``admission/`` — the operator's admission guards (:mod:`appstack.sdk.guards`): one file
  per ValidatingAdmissionPolicy and its binding (its token writes only in enabled
  namespaces, never in ``kube-*``, only what its kinds control; its kinds' status and
  finalizers only; Events about its kinds; its Lease; who may set the opt-in labels), the
  ValidatingAdmissionPolicies the registrations declare (:mod:`appstack.sdk.kit.policies`:
  ``<plural>[_<name>]_policy.yaml``, bound to the enabled namespaces), and a
  ``kustomizeconfig.yaml`` that renames a binding's policy with its policy.

Scaffolded once, then the user's (:data:`SCAFFOLDED`, written only where missing: the
Deployment's resources, env and patches are edited there, as in kubebuilder):

* ``manager/`` — the Namespace and the Deployment ``controller-manager``: the operator's own
  ``python -m <package>``, non-root, read-only root filesystem, no capabilities, probes,
  leader election, ``/metrics`` on :8443 over HTTPS with token authentication; acting only
  in namespaces labelled ``<domain>/enabled=true`` unless the project enables them all
  (``appstack edit`` changes only the flags its settings decide: :func:`with_args`); its
  ``kustomization.yaml`` names the image (``appstack edit --image``: :func:`with_image`);
* ``default/`` — namespace ``<project>-system``, name prefix ``<project>-``, the metrics
  Service (kustomize orders what it applies by kind: the Namespace and CRDs first; the
  admission policies, kinds its table does not know, come last, with the Deployment in the
  same apply: guarded before the operator's process has started); ``prometheus/`` — a
  ServiceMonitor.

Generated beside them: ``grafana/`` — the operator's Grafana dashboards
(:func:`grafana_files`) and the kustomization that makes them a ConfigMap for Grafana's
sidecar; ``prometheus/alerts.yaml``, the PrometheusRule of the operator's
alerts — those every SDK operator gets (:func:`appstack.sdk.operator_alerts`) and those its
kinds declare (their registrations' ``alerts``) —, listed in
``prometheus/kustomization.yaml`` (by ``make manifests`` in a project scaffolded before:
:func:`with_alerts`).

Every object of a kind appstack's own install has too (ServiceAccount, RBAC, Namespace,
Deployment, metrics Service, ServiceMonitor) is built by :mod:`appstack.sdk.install`, the
builders appstack's ``deploy/`` and Helm chart use: one generator, two layouts.

Samples (``config/samples``) are the user's too, written once by the scaffolder. Pure: the
same code always gives the same bytes (``make manifests`` twice changes nothing).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from appstack.sdk import guards
from appstack.sdk.crds import crd
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.install import (
    LEASE_FLOW_REFERENCE,
    USER_ROLES,
    WEBHOOK_PORT,
    WEBHOOK_PORT_NAME,
    leader_election_role,
    lease_flow_schema,
    manager_args,
    manager_deployment,
    manager_grants,
    metrics_auth_role,
    metrics_endpoint,
    metrics_reader_role,
    namespace_object,
    prometheus_rule,
    service_account,
    user_role,
    webhook_cert_role,
    webhook_role,
    webhook_service,
)
from appstack.sdk.install import metrics_service as metrics_service_object
from appstack.sdk.install import service_monitor as service_monitor_object
from appstack.sdk.kind import CustomKind
from appstack.sdk.kit.conversion import service_client
from appstack.sdk.kit.dashboards import SIDECAR_LABEL, operator_dashboards
from appstack.sdk.kit.kind_metrics import alerting_rules
from appstack.sdk.kit.policies import PolicyError, policy_objects
from appstack.sdk.kit.registration import Registration
from appstack.sdk.kit.webhooks import (
    MUTATING,
    VALIDATING,
    ClientConfig,
    KindWebhook,
    configuration_names,
    configurations,
    namespace_selector,
    secret_name,
)
from appstack.sdk.rbac import binding, manager_rules, sharding_rules
from appstack.sdk.versions import spokes_differ

HEADER = (
    "# Generated by `appstack generate manifests`. Do not edit: change the code and regenerate.\n"
)
#: The header of a file scaffolded once (:data:`SCAFFOLDED`).
SCAFFOLDED_HEADER = (
    "# Scaffolded once: yours to edit. `make manifests` writes it only if it is missing.\n"
)
#: The files of ``config/`` written once, then the user's.
SCAFFOLDED = (
    "default/kustomization.yaml",
    "default/metrics_service.yaml",
    "manager/kustomization.yaml",
    "manager/manager.yaml",
    "prometheus/kustomization.yaml",
    "prometheus/monitor.yaml",
)
MANAGER = "controller-manager"
SYSTEM = "system"  # config/default sets the namespace: <project>-system
METRICS_PORT = 8443
HEALTH_PORT = 8081
IMAGE_NAME = "controller"  # kustomize's images: entry (config/manager/kustomization.yaml)
Obj = dict[str, Any]
ADMISSION_API = "admissionregistration.k8s.io"
#: kustomize before v5.4 does not know that a ValidatingAdmissionPolicyBinding names its
#: policy: config/default's namePrefix would rename the policy and leave the binding
#: pointing at the old name — the guard silently off. This teaches it.
NAME_REFERENCES = {
    "nameReference": [
        {
            "kind": "ValidatingAdmissionPolicy",
            "group": ADMISSION_API,
            "fieldSpecs": [
                {
                    "kind": "ValidatingAdmissionPolicyBinding",
                    "group": ADMISSION_API,
                    "path": "spec/policyName",
                }
            ],
        }
    ]
}


#: kustomize does not know a FlowSchema's ServiceAccount subject: config/default's
#: namePrefix and namespace follow it there too (:data:`~appstack.sdk.LEASE_FLOW_REFERENCE`).
FLOW_SCHEMA_REFERENCES = {
    "nameReference": [LEASE_FLOW_REFERENCE],
    "namespace": [
        {
            "kind": "FlowSchema",
            "group": "flowcontrol.apiserver.k8s.io",
            "path": "spec/rules/subjects/serviceAccount/namespace",
            "create": False,
        }
    ],
}


@dataclass(frozen=True)
class Project:
    """What the install is generated from: the operator's identity and package, its
    controllers and kinds (a kind may have no controller), whether it watches only its own
    namespace, the image, and whether it acts in every namespace (by default only in
    those labelled ``<domain>/enabled=true``). ``sharded``: the install as the
    ``config/sharding`` Component makes it (:func:`sharding_objects`) — what its RBAC and
    guards are then. ``guards``: what it adds to its admission guards
    (:class:`~appstack.sdk.guards.GuardExtensions`; a scaffolded project's ``GUARDS``)."""

    identity: OperatorIdentity
    package: str
    controllers: Sequence[Registration]
    kinds: Sequence[CustomKind]
    namespaced: bool = False
    image: str = "controller:latest"
    enable_all_namespaces: bool = False
    sharded: bool = False
    guards: guards.GuardExtensions = dataclasses.field(default_factory=guards.GuardExtensions)


def conversion_client(project: Project, kind: CustomKind) -> dict[str, Any] | None:
    """The ``clientConfig`` of ``kind``'s conversion webhook when its versions convert
    (:mod:`appstack.sdk.versions`): the operator's webhook Service, final names (the CRD
    is neither prefixed nor moved by config/default); None otherwise."""
    if not spokes_differ(kind):
        return None
    name = f"{project.identity.project}-{WEBHOOK_SERVICE}"
    return service_client(name, project.identity.namespace)


def crd_file(kind: CustomKind) -> str:
    """``crd/bases/<group>_<plural>.yaml`` (kubebuilder's name for it)."""
    return f"crd/bases/{kind.group}_{kind.plural}.yaml"


def _dump(*objects: Obj, header: str = HEADER) -> str:
    return header + "---\n".join(yaml.safe_dump(o, sort_keys=False) for o in objects)


def _kustomization(resources: Sequence[str], header: str = HEADER, **extra: Any) -> str:
    body = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", **extra}
    body["resources"] = list(resources)
    return header + yaml.safe_dump(body, sort_keys=False)


def _labels(project: Project) -> dict[str, str]:
    return {"app.kubernetes.io/name": project.identity.project, **project.identity.managed_by}


def operator_rules(project: Project) -> list[Obj]:
    """The manager role's rules: every controller's, then the process's, then the admission
    guards' marker (:func:`appstack.sdk.rbac.marker_rule`); sharded, with the label patches
    of its primaries (:func:`appstack.sdk.rbac.sharding_rules`)."""
    rules = [r for controller in project.controllers for r in controller.rules]
    if project.sharded:
        rules += sharding_rules(controller.primary for controller in project.controllers)
    return manager_rules(rules, project.identity.domain, cluster_wide=not project.namespaced)


def guarded(project: Project) -> guards.GuardedOperator:
    """The project's operator as its admission guards see it (final names: the install's
    prefix ``<project>-`` included)."""
    writes = project.guards.writes
    if serves_webhooks(project):
        own_secret = (project.identity.namespace, secret_name(project.identity))
        writes = dataclasses.replace(writes, own_secret=own_secret)
    return guards.GuardedOperator.of(
        project.identity,
        project.controllers,
        rules=operator_rules(project),
        kinds=project.kinds,
        enable_all=project.enable_all_namespaces,
        labels=_labels(project),
        sharded=project.sharded,
        writes=writes,
    )


def _prefix(project: Project) -> str:
    return f"{project.identity.project}-"


def admission_objects(project: Project) -> dict[str, list[Obj]]:
    """config/admission's files: each policy with its binding, named as before
    config/default's prefix — the guards (the project's own among them:
    :attr:`Project.guards`), then the policies the registrations declare
    (:mod:`appstack.sdk.kit.policies`)."""
    prefix = _prefix(project)
    files: dict[str, list[Obj]] = {}
    operator = guarded(project)
    try:
        own = project.guards.policies(operator)
    except ValueError as error:
        raise PolicyError(str(error)) from None
    every = guards.policies(operator, own=own)
    declared = [d for controller in project.controllers for d in controller.declared_policies]
    every += policy_objects(
        declared,
        project.identity,
        enable_all=project.enable_all_namespaces,
        labels=_labels(project),
    )
    for policy, bound in zip(every[::2], every[1::2], strict=True):
        name = policy["metadata"]["name"].removeprefix(prefix)
        for obj in (policy, bound):
            obj["metadata"]["name"] = name
        bound["spec"]["policyName"] = name
        path = f"admission/{name.replace('-', '_')}_policy.yaml"
        if path in files:
            raise PolicyError(f"admission policy {prefix}{name}: a guard has that name: rename it")
        files[path] = [policy, bound]
    return files


def _split(image: str) -> tuple[str, str]:
    """``name[:tag]`` → (name, tag); a digest stays with the name."""
    if "@" in image:
        return image, ""
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag:
        return image, "latest"
    return name, tag


def manager_container(
    name: str,
    image: str,
    args: Sequence[str],
    *,
    resources: Obj,
    command: Sequence[str] | None = None,
    metrics_port: int = METRICS_PORT,
    health_port: int = HEALTH_PORT,
    webhook_port: int | None = None,
    env: Sequence[Obj] = (),
    image_pull_policy: str | None = None,
    volume_mounts: Sequence[Obj] = (),
) -> Obj:
    """An operator's container, as every install of an operator built on the SDK runs it:
    its pod's namespace and name in ``POD_NAMESPACE``/``POD_NAME`` (the Lease's holder and
    namespace), then ``env`` as given, the metrics and health ports (and ``webhook_port``,
    named ``webhook-server``, when it serves admission webhooks), liveness on ``/healthz``
    and readiness on ``/readyz``, no privilege escalation, a read-only root filesystem,
    non-root, no capabilities and the runtime's default seccomp profile; its image pulled
    as ``image_pull_policy`` says (None: Kubernetes' default), with ``volume_mounts`` of the
    pod's volumes (:func:`~appstack.sdk.manager_deployment`'s ``volumes``)."""
    return {
        "name": name,
        "image": image,
        **({"command": list(command)} if command else {}),
        "args": list(args),
        "env": [
            {
                "name": "POD_NAMESPACE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
            },
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            *env,
        ],
        "ports": [
            {"name": "metrics", "containerPort": metrics_port, "protocol": "TCP"},
            {"name": "health", "containerPort": health_port, "protocol": "TCP"},
            *(
                [{"name": WEBHOOK_PORT_NAME, "containerPort": webhook_port, "protocol": "TCP"}]
                if webhook_port is not None
                else []
            ),
        ],
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "health"},
            "initialDelaySeconds": 5,
            "periodSeconds": 10,
        },
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": "health"},
            "initialDelaySeconds": 2,
            "periodSeconds": 5,
        },
        "resources": resources,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        **({"imagePullPolicy": image_pull_policy} if image_pull_policy else {}),
        **({"volumeMounts": list(volume_mounts)} if volume_mounts else {}),
    }


def manager_pod_security() -> Obj:
    """The operator pod's securityContext: a fixed non-root user and group (65532, as
    distroless images use) and the runtime's default seccomp profile."""
    return {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def deployment(project: Project) -> Obj:
    """The operator's Deployment (before ``config/default``'s prefix and namespace)."""
    selector = {"control-plane": MANAGER, "app.kubernetes.io/name": project.identity.project}
    args = manager_args(
        metrics_port=METRICS_PORT,
        health_port=HEALTH_PORT,
        namespaces=["$(POD_NAMESPACE)"] if project.namespaced else [],
        enable_all_namespaces=project.enable_all_namespaces,
    )
    container = manager_container(
        "manager",
        f"{IMAGE_NAME}:latest",
        args,
        command=["python", "-m", project.package],
        resources={
            "requests": {"cpu": "10m", "memory": "64Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        },
        webhook_port=WEBHOOK_PORT if serves_webhooks(project) else None,
    )
    return manager_deployment(
        MANAGER,
        SYSTEM,
        labels=_labels(project),
        selector=selector,
        container=container,
        pod_security=manager_pod_security(),
        service_account=MANAGER,
    )


def _kind_roles(project: Project, kind: CustomKind) -> dict[str, Obj]:
    """kubebuilder's ``<kind>_{admin,editor,viewer}_role.yaml`` (``<group>_<kind>_...`` when
    another group of the project has a kind of that name, as in its multigroup layout);
    editor and viewer aggregated into the cluster's ``edit``/``admin`` and ``view``
    (:data:`~appstack.sdk.install.USER_ROLES`)."""
    group, plural = kind.group, kind.plural
    name = kind.kind.lower()
    if sum(k.kind == kind.kind for k in project.kinds) > 1:
        name = f"{group.split('.')[0]}-{name}"
    roles = {}
    for access in USER_ROLES:
        roles[f"rbac/{name.replace('-', '_')}_{access}_role.yaml"] = user_role(
            f"{name}-{access}-role", group, [plural], access, labels=_labels(project)
        )
    return roles


def rbac_objects(project: Project) -> dict[str, Obj | list[Obj]]:
    """config/rbac's files (before the prefix and namespace)."""
    labels = _labels(project)
    account = (SYSTEM, MANAGER)
    account_obj = service_account(MANAGER, SYSTEM, labels)
    manager, bound = manager_grants(
        "manager-role",
        operator_rules(project),
        account=account,
        labels=labels,
        namespace=SYSTEM if project.namespaced else None,
        binding_name="manager-rolebinding",
    )
    identity = project.identity
    election = leader_election_role(
        "leader-election-role",
        SYSTEM,
        lease=identity.lease_name,
        domain=identity.domain,
        labels=labels,
        sharded=project.sharded,
    )
    reviews = metrics_auth_role("metrics-auth-role", labels)
    reader = metrics_reader_role("metrics-reader", labels)
    files: dict[str, Obj | list[Obj]] = {
        "rbac/service_account.yaml": account_obj,
        "rbac/role.yaml": manager,
        "rbac/role_binding.yaml": bound,
        "rbac/leader_election_role.yaml": election,
        "rbac/leader_election_role_binding.yaml": binding(
            "leader-election-rolebinding", election, account, labels
        ),
        "rbac/metrics_auth_role.yaml": reviews,
        "rbac/metrics_auth_role_binding.yaml": binding(
            "metrics-auth-rolebinding", reviews, account, labels
        ),
        "rbac/metrics_reader_role.yaml": reader,
        "rbac/namespace_enabler_role.yaml": _unprefixed(
            guards.enabler_role(guarded(project)), _prefix(project)
        ),
        # not a permission: its Lease requests at the leader-election priority (APF)
        "rbac/lease_flow_schema.yaml": lease_flow_schema(
            "lease-flow-schema", account=account, labels=labels
        ),
    }
    if serves_webhooks(project):
        files.update(_webhook_roles(project, account))
    for kind in project.kinds:
        files.update(_kind_roles(project, kind))
    return files


def _webhook_roles(project: Project, account: tuple[str, str]) -> dict[str, Obj | list[Obj]]:
    """The roles of an operator that serves webhooks: its own configurations (final names,
    by name) and the Secret of its shared certificate."""
    labels = _labels(project)
    names = configuration_names(project.identity)
    made = {c["kind"] for c in webhook_configurations(project)}
    hooks = webhook_role(
        "webhook-role",
        validating=names[VALIDATING] if VALIDATING.kind in made else None,
        mutating=names[MUTATING] if MUTATING.kind in made else None,
        labels=labels,
    )
    cert = webhook_cert_role(
        "webhook-cert-role", SYSTEM, secret=secret_name(project.identity), labels=labels
    )
    configured = (
        {
            "rbac/webhook_role.yaml": hooks,
            "rbac/webhook_role_binding.yaml": binding(
                "webhook-rolebinding", hooks, account, labels
            ),
        }
        if made  # no configuration to write a CA bundle into: only conversions are served
        else {}
    )
    return {
        **configured,
        "rbac/webhook_cert_role.yaml": cert,
        "rbac/webhook_cert_role_binding.yaml": binding(
            "webhook-cert-rolebinding", cert, account, labels
        ),
    }


def _unprefixed(obj: Obj, prefix: str) -> Obj:
    """``obj`` named as before config/default's prefix."""
    obj["metadata"]["name"] = obj["metadata"]["name"].removeprefix(prefix)
    return obj


def metrics_service(project: Project) -> Obj:
    """The Service in front of the manager's ``/metrics`` (HTTPS on :data:`METRICS_PORT`)."""
    selector = {"control-plane": MANAGER, "app.kubernetes.io/name": project.identity.project}
    return metrics_service_object(
        f"{MANAGER}-metrics-service",
        SYSTEM,
        labels={**_labels(project), "control-plane": MANAGER},
        selector=selector,
        port=METRICS_PORT,
        port_name="https",
        target_port=METRICS_PORT,
    )


def declared_webhooks(project: Project) -> list[KindWebhook]:
    """Every admission webhook the project's registrations declare."""
    return [w for controller in project.controllers for w in controller.declared_webhooks]


def serves_webhooks(project: Project) -> bool:
    """Whether the operator runs its webhook server: an admission webhook declared, or a
    kind whose versions convert (its CRD calls ``/convert``) — either needs the Service,
    the container port and the shared certificate's Secret."""
    return bool(declared_webhooks(project)) or any(spokes_differ(k) for k in project.kinds)


#: The webhook Service's name before config/default's prefix (``<project>-webhook-service``
#: after it: the operator's ``--webhook-service`` default).
WEBHOOK_SERVICE = "webhook-service"


def webhook_configurations(project: Project) -> list[Obj]:
    """The project's Validating/MutatingWebhookConfiguration (``config/webhook``), named
    as before config/default's prefix, pointing at the webhook Service, with no
    ``caBundle``: the operator writes it (or cert-manager's CA injector)."""
    prefix = _prefix(project)
    names = {r: n.removeprefix(prefix) for r, n in configuration_names(project.identity).items()}
    selector = namespace_selector(project.identity, enable_all=project.enable_all_namespaces)
    client = ClientConfig(service=WEBHOOK_SERVICE, namespace=SYSTEM)
    made = configurations(
        declared_webhooks(project), project.identity, client, selector=selector, names=names
    )
    for configuration in made:
        configuration["metadata"]["labels"] = _labels(project)
    return made


def webhook_objects(project: Project) -> dict[str, Obj | list[Obj]]:
    """config/webhook's files: the configurations (when admission webhooks are declared)
    and the Service (when any webhook is served, conversions too); none otherwise."""
    if not serves_webhooks(project):
        return {}
    selector = {"control-plane": MANAGER, "app.kubernetes.io/name": project.identity.project}
    service = webhook_service(
        WEBHOOK_SERVICE,
        SYSTEM,
        labels={**_labels(project), "control-plane": MANAGER},
        selector=selector,
    )
    configured = webhook_configurations(project)
    return {
        **({"webhook/manifests.yaml": configured} if configured else {}),
        "webhook/service.yaml": service,
    }


#: Where the certmanager Component mounts cert-manager's Secret (controller-runtime's
#: default webhook certificate directory), given to the operator as ``--webhook-cert-dir``.
CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # noqa: S108 - a mount point, not a temp file
CERT_MANAGER = "cert-manager.io"
#: The line of ``config/default/kustomization.yaml`` that, uncommented, turns the
#: certmanager Component on (written commented, with what it does above it).
CERT_MANAGER_LINE = "#components: [../certmanager]"
CERT_MANAGER_NOTE = (
    "# cert-manager installed in the cluster? Let it issue the webhook certificate instead\n"
    "# of the operator (docs/webhooks.md, A certificate from cert-manager): uncomment the\n"
    "# next line.\n"
)


def serving_certificate(project: Project) -> tuple[str, str]:
    """The namespace and final name of the cert-manager Certificate of the webhook Service
    (``<project>-serving-cert``, also its Secret's name): what ``inject-ca-from`` names."""
    return project.identity.namespace, f"{project.identity.project}-serving-cert"


def certmanager_objects(project: Project) -> dict[str, Obj | list[Obj]]:
    """``config/certmanager``'s objects and patches (none if the operator serves no
    webhook): the Issuer and Certificate (named before config/default's prefix: the
    Certificate's ``issuerRef`` follows the Issuer's name through ``kustomizeconfig.yaml``),
    the Deployment's Secret volume and mount, and the injection annotation of each webhook
    configuration and converting CRD (final names: what cert-manager reads)."""
    if not serves_webhooks(project):
        return {}
    namespace, certificate = serving_certificate(project)
    service = f"{project.identity.project}-{WEBHOOK_SERVICE}"
    labels = _labels(project)
    issuer = {
        "apiVersion": f"{CERT_MANAGER}/v1",
        "kind": "Issuer",
        "metadata": {"name": "selfsigned-issuer", "namespace": SYSTEM, "labels": labels},
        "spec": {"selfSigned": {}},
    }
    cert = {
        "apiVersion": f"{CERT_MANAGER}/v1",
        "kind": "Certificate",
        "metadata": {"name": "serving-cert", "namespace": SYSTEM, "labels": labels},
        "spec": {
            "dnsNames": [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"],
            "issuerRef": {"kind": "Issuer", "name": "selfsigned-issuer"},
            "secretName": certificate,
        },
    }
    volume = "webhook-cert"
    mounted = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": MANAGER, "namespace": SYSTEM},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "manager",
                            "volumeMounts": [
                                {"name": volume, "mountPath": CERT_DIR, "readOnly": True}
                            ],
                        }
                    ],
                    "volumes": [{"name": volume, "secret": {"secretName": certificate}}],
                }
            }
        },
    }
    annotations = {f"{CERT_MANAGER}/inject-ca-from": f"{namespace}/{certificate}"}
    # one patch per file: kustomize before v5.1 (kubectl 1.30's) reads one object from a
    # patch file, and refuses a file of several
    injected: dict[str, Obj | list[Obj]] = {
        f"certmanager/inject_ca_{c['kind'].lower()}.yaml": {
            "apiVersion": c["apiVersion"],
            "kind": c["kind"],
            "metadata": {"name": c["metadata"]["name"], "annotations": annotations},
        }
        for c in webhook_configurations(project)
    }
    injected.update(
        {
            f"certmanager/inject_ca_{kind.crd_name}.yaml": {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": kind.crd_name, "annotations": annotations},
            }
            for kind in project.kinds
            if spokes_differ(kind)
        }
    )
    return {
        "certmanager/issuer.yaml": issuer,
        "certmanager/certificate.yaml": cert,
        "certmanager/manager_webhook_patch.yaml": mounted,
        **injected,
    }


def certmanager_kustomization(files: Sequence[str]) -> str:
    """The certmanager Component: its Issuer and Certificate, the Deployment's volume and
    ``--webhook-cert-dir`` (appended to the manager container's args: the first
    container's, as the manager is in the scaffolded Deployment), the annotations."""
    names = [f.removeprefix("certmanager/") for f in files]
    patches: list[Obj] = [
        {"path": "manager_webhook_patch.yaml"},
        {
            "path": "manager_cert_dir_patch.yaml",
            "target": {"group": "apps", "kind": "Deployment", "name": MANAGER},
        },
    ]
    patches += [{"path": n} for n in names if n.startswith("inject_ca_")]
    body = {
        "apiVersion": "kustomize.config.k8s.io/v1alpha1",
        "kind": "Component",
        "resources": [n for n in names if n in ("issuer.yaml", "certificate.yaml")],
        "configurations": ["kustomizeconfig.yaml"],
        "patches": patches,
    }
    return HEADER + yaml.safe_dump(body, sort_keys=False)


#: The JSON patch (RFC 6902) that appends ``--webhook-cert-dir`` to the manager's args.
CERT_DIR_ARG = {
    "op": "add",
    "path": "/spec/template/spec/containers/0/args/-",
    "value": f"--webhook-cert-dir={CERT_DIR}",
}
#: kustomize's name reference of the Certificate's issuer (renamed with the Issuer).
ISSUER_REFERENCES = {
    "nameReference": [
        {
            "kind": "Issuer",
            "group": CERT_MANAGER,
            "fieldSpecs": [
                {"kind": "Certificate", "group": CERT_MANAGER, "path": "spec/issuerRef/name"}
            ],
        }
    ]
}


#: config/default's commented line that turns the sharding Component on.
SHARDING_LINE = "#components: [../sharding]"
SHARDING_NOTE = (
    "# Sharding (docs/sharding.md): every replica reconciles its own share of the objects.\n"
    "# Uncomment the next line and give the manager 2 replicas or more (replicas: below);\n"
    "# With cert-manager's line too, join the two into one components: list.\n"
)
#: The JSON patch (RFC 6902) that appends ``--sharding`` to the manager's args.
SHARDING_ARG = {
    "op": "add",
    "path": "/spec/template/spec/containers/0/args/-",
    "value": "--sharding",
}


def _target(obj: Obj) -> Obj:
    """A kustomize patch target naming ``obj`` (before config/default's prefix)."""
    group, _, version = obj["apiVersion"].rpartition("/")
    return {
        "group": group,
        "version": version,
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
    }


def _changes(plain: Obj, sharded: Obj) -> list[Obj]:
    """The JSON patch (RFC 6902) that makes ``plain`` into ``sharded``, a top-level field at
    a time (``rules``, ``spec``...): whole fields replaced, so nothing of the unsharded one
    survives in a changed field."""
    ops: list[Obj] = []
    for key in sorted({*plain, *sharded} - {"apiVersion", "kind", "metadata"}):
        if key not in sharded:
            ops.append({"op": "remove", "path": f"/{key}"})
        elif plain.get(key) != sharded[key]:
            ops.append(
                {
                    "op": "add" if key not in plain else "replace",
                    "path": f"/{key}",
                    "value": sharded[key],
                }
            )
    return ops


def sharding_objects(project: Project) -> dict[str, Obj | list[Obj]]:
    """``config/sharding``'s resources and patches (none for a project without
    controllers): what the install needs to run sharded (``--sharding``, docs/sharding.md)
    — computed as the difference between the project's RBAC and admission guards installed
    sharded and not, so that it is exactly what :func:`rbac_objects` and
    :func:`admission_objects` give with ``sharded``: the manager role with ``patch`` of its
    primaries (the shard labels), the leader-election Role on every Lease of the
    namespace (the shard Leases), the kinds guard letting the token change the two shard
    labels, and the ``shard-labels`` guard refusing a tenant setting them. A file only the
    sharded install has is a resource; a changed object a JSON patch of its changed fields
    (``<name>_patch.yaml``, its target in :func:`sharding_kustomization`)."""
    if not project.controllers:
        return {}
    sharded = dataclasses.replace(project, sharded=True)
    plain: dict[str, Obj | list[Obj]] = {**rbac_objects(project), **admission_objects(project)}
    wanted: dict[str, Obj | list[Obj]] = {**rbac_objects(sharded), **admission_objects(sharded)}
    gone = sorted(set(plain) - set(wanted))
    if gone:  # the sharded install only adds files: a Component cannot remove one
        raise ValueError(f"the sharded install has no {gone[0]}")
    files: dict[str, Obj | list[Obj]] = {}
    for path in sorted(wanted):
        name = path.rpartition("/")[2]
        if path not in plain:
            files[f"sharding/{name}"] = wanted[path]
            continue
        before = {_key(o): o for o in _listed(plain[path])}
        for obj in _listed(wanted[path]):
            ops = _changes(before[_key(obj)], obj)
            if ops:
                stem = obj["metadata"]["name"].replace("-", "_")
                files[f"sharding/{stem}_patch.yaml"] = [_target(obj), *ops]
    return files


def _listed(objects: Obj | list[Obj]) -> list[Obj]:
    return objects if isinstance(objects, list) else [objects]


def _key(obj: Obj) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def sharding_files(project: Project) -> dict[str, str]:
    """``config/sharding``'s files: :func:`sharding_objects` written out (a patch file
    holds its operations; its target goes to the Component's kustomization), the
    manager's ``--sharding`` patch, and the Component (with the policies' name reference,
    as config/admission)."""
    objects = sharding_objects(project)
    if not objects:
        return {}
    files: dict[str, str] = {}
    resources: list[str] = []
    patches: list[Obj] = [
        {
            "path": "manager_sharding_patch.yaml",
            "target": {"group": "apps", "kind": "Deployment", "name": MANAGER},
        }
    ]
    for path, obj in objects.items():
        name = path.removeprefix("sharding/")
        if path.endswith("_patch.yaml"):
            target, *ops = _listed(obj)
            files[path] = HEADER + yaml.safe_dump(ops, sort_keys=False)
            patches.append({"path": name, "target": target})
        else:
            files[path] = _dump(*_listed(obj))
            resources.append(name)
    files["sharding/manager_sharding_patch.yaml"] = HEADER + yaml.safe_dump(
        [SHARDING_ARG], sort_keys=False
    )
    files["sharding/kustomizeconfig.yaml"] = HEADER + yaml.safe_dump(
        NAME_REFERENCES, sort_keys=False
    )
    body = {
        "apiVersion": "kustomize.config.k8s.io/v1alpha1",
        "kind": "Component",
        "resources": resources,
        "configurations": ["kustomizeconfig.yaml"],
        "patches": patches,
    }
    files["sharding/kustomization.yaml"] = HEADER + yaml.safe_dump(body, sort_keys=False)
    return files


def service_monitor(project: Project) -> Obj:
    """The ServiceMonitor of the manager's metrics Service (``config/prometheus``): HTTPS
    with the scraper's own token, the self-signed certificate not verified."""
    endpoint = metrics_endpoint("https")  # the scraper's token, HTTPS, not verified
    return service_monitor_object(
        f"{MANAGER}-metrics-monitor",
        SYSTEM,
        labels={**_labels(project), "control-plane": MANAGER},
        selector={"control-plane": MANAGER},
        endpoints=[endpoint],
    )


#: ``config/prometheus``'s generated file: the PrometheusRule of the alerts the kinds declare.
ALERTS_FILE = "alerts.yaml"


def alerts_rule(project: Project) -> Obj:
    """The PrometheusRule of the operator's alerts — those every SDK operator gets
    (:func:`appstack.sdk.operator_alerts`: reconcile errors, a stuck workqueue, no leader,
    an object not up, a sharded operator's unassigned keys) and those its registrations
    declare (their ``alerts``) —, one group named after the project."""
    rules = alerting_rules(project.identity, project.controllers)
    return prometheus_rule(
        f"{MANAGER}-alerts",
        SYSTEM,
        labels={**_labels(project), "control-plane": MANAGER},
        groups={project.identity.project: rules},
    )


def with_alerts(kustomization: str) -> str:
    """``config/prometheus/kustomization.yaml`` (scaffolded once, then the user's) listing
    :data:`ALERTS_FILE`: added where missing (a project scaffolded before every operator
    had its alerts), everything else in it kept."""
    body = yaml.safe_load(kustomization) or {}
    resources = list(body.get("resources") or [])
    if ALERTS_FILE in resources:
        return kustomization
    body["resources"] = [*resources, ALERTS_FILE]
    return _header_of(kustomization) + yaml.safe_dump(body, sort_keys=False)


def config_files(project: Project) -> dict[str, str]:
    """Relative path (under ``config/``) → content, every generated file."""
    files: dict[str, str] = {}
    crds = [crd_file(kind) for kind in project.kinds]
    for kind in project.kinds:
        files[crd_file(kind)] = _dump(crd(kind, conversion=conversion_client(project, kind)))
    files["crd/kustomization.yaml"] = _kustomization([c.removeprefix("crd/") for c in crds])
    rbac = rbac_objects(project)
    for path, obj in rbac.items():
        files[path] = _dump(*(obj if isinstance(obj, list) else [obj]))
    files["rbac/kustomizeconfig.yaml"] = HEADER + yaml.safe_dump(
        FLOW_SCHEMA_REFERENCES, sort_keys=False
    )
    files["rbac/kustomization.yaml"] = _kustomization(
        [p.removeprefix("rbac/") for p in rbac], configurations=["kustomizeconfig.yaml"]
    )
    admission = admission_objects(project)
    for path, objects in admission.items():
        files[path] = _dump(*objects)
    files["admission/kustomizeconfig.yaml"] = HEADER + yaml.safe_dump(
        NAME_REFERENCES, sort_keys=False
    )
    files["admission/kustomization.yaml"] = _kustomization(
        [p.removeprefix("admission/") for p in admission], configurations=["kustomizeconfig.yaml"]
    )
    webhook = webhook_objects(project)
    for path, obj in webhook.items():
        files[path] = _dump(*(obj if isinstance(obj, list) else [obj]))
    if webhook:
        files["webhook/kustomization.yaml"] = _kustomization(
            [p.removeprefix("webhook/") for p in webhook]
        )
    certmanager = certmanager_objects(project)
    for path, obj in certmanager.items():
        files[path] = _dump(*(obj if isinstance(obj, list) else [obj]))
    if certmanager:
        files["certmanager/manager_cert_dir_patch.yaml"] = HEADER + yaml.safe_dump(
            [CERT_DIR_ARG], sort_keys=False
        )
        files["certmanager/kustomizeconfig.yaml"] = HEADER + yaml.safe_dump(
            ISSUER_REFERENCES, sort_keys=False
        )
        files["certmanager/kustomization.yaml"] = certmanager_kustomization(list(certmanager))
    files.update(sharding_files(project))
    namespace = namespace_object(SYSTEM, _labels(project))
    mine = SCAFFOLDED_HEADER
    files["manager/manager.yaml"] = _dump(namespace, deployment(project), header=mine)
    name, tag = _split(project.image)
    files["manager/kustomization.yaml"] = _kustomization(
        ["manager.yaml"], mine, images=[{"name": IMAGE_NAME, "newName": name, "newTag": tag}]
    )
    files["default/metrics_service.yaml"] = _dump(metrics_service(project), header=mine)
    default = _kustomization(
        default_resources(project),
        mine,
        namespace=project.identity.namespace,
        namePrefix=f"{project.identity.project}-",
    )
    files["default/kustomization.yaml"] = _with_cert_manager_line(
        _with_sharding_line(default, project), project
    )
    files["prometheus/monitor.yaml"] = _dump(service_monitor(project), header=mine)
    files["prometheus/kustomization.yaml"] = _kustomization(["monitor.yaml", ALERTS_FILE], mine)
    files[f"prometheus/{ALERTS_FILE}"] = _dump(alerts_rule(project))
    files.update(grafana_files(project))
    return dict(sorted(files.items()))


#: ``config/grafana``'s ConfigMap of the dashboards (before config/default's prefix).
DASHBOARDS = "grafana-dashboards"


def grafana_files(project: Project) -> dict[str, str]:
    """``config/grafana``: the operator's Grafana dashboards
    (:func:`appstack.sdk.operator_dashboards`: the operator's, then one per kind of its own
    with its registration's panels) as JSON files, and a kustomization making them one
    ConfigMap labelled for Grafana's dashboard sidecar (``kubectl apply -k config/grafana``
    in the Grafana's namespace, or the chart's ``metrics.grafanaDashboard.enabled``)."""
    boards = operator_dashboards(project.identity, project.controllers)
    files = {
        f"grafana/{name}": json.dumps(board, indent=2) + "\n" for name, board in boards.items()
    }
    generator = {
        "name": DASHBOARDS,
        "files": list(boards),
        "options": {
            "labels": {**_labels(project), SIDECAR_LABEL: "1"},
            "disableNameSuffixHash": True,
        },
    }
    files["grafana/kustomization.yaml"] = _kustomization([], configMapGenerator=[generator])
    return files


def default_resources(project: Project) -> list[str]:
    """What ``config/default`` brings together (``../webhook`` when it declares webhooks)."""
    webhook = ["../webhook"] if serves_webhooks(project) else []
    return ["../crd", "../rbac", "../admission", *webhook, "../manager", "metrics_service.yaml"]


def _with_cert_manager_line(kustomization: str, project: Project) -> str:
    """``config/default/kustomization.yaml``'s text ending with the commented line that
    turns the certmanager Component on, when the operator serves webhooks and the text
    names no certmanager yet (kept as the user left it otherwise)."""
    if not serves_webhooks(project) or "../certmanager" in kustomization:
        return kustomization
    return kustomization + CERT_MANAGER_NOTE + CERT_MANAGER_LINE + "\n"


def _with_sharding_line(kustomization: str, project: Project) -> str:
    """``config/default/kustomization.yaml``'s text ending with the commented line that
    turns the sharding Component on (:func:`sharding_objects`), once the project has a
    controller and the text names no sharding yet (kept as the user left it otherwise)."""
    if not project.controllers or "../sharding" in kustomization:
        return kustomization
    return kustomization + SHARDING_NOTE + SHARDING_LINE + "\n"


def with_image(kustomization: str, image: str) -> str:
    """``config/manager/kustomization.yaml``'s text with its ``images:`` entry for the
    operator's container set to ``image`` (``name[:tag]`` or ``name@digest``), the rest kept
    — what ``kustomize edit set image controller=IMAGE`` does in a kubebuilder project."""
    body = yaml.safe_load(kustomization) or {}
    name, tag = _split(image)
    entry: Obj = {"name": IMAGE_NAME}
    if "@" in name:
        entry["newName"], entry["digest"] = name.split("@", 1)
    else:
        entry.update(newName=name, newTag=tag)
    images = [i for i in body.get("images") or [] if i.get("name") != IMAGE_NAME]
    body["images"] = [*images, entry]
    return _header_of(kustomization) + yaml.safe_dump(body, sort_keys=False)


#: The operator's flags that the project's settings decide (:func:`deployment`).
SETTING_ARGS = ("--namespace=$(POD_NAMESPACE)", "--enable-all-namespaces")


def with_args(manager: str, project: Project) -> str:
    """``config/manager/manager.yaml``'s text with the manager container's flags that the
    project's settings decide (``--namespaced``, ``--enable-all-namespaces``) as they now
    are, everything else in it kept (``appstack edit``)."""
    documents = [d for d in yaml.safe_load_all(manager) if d]
    (wanted,) = deployment(project)["spec"]["template"]["spec"]["containers"]
    for document in documents:
        if document.get("kind") != "Deployment":
            continue
        for container in document["spec"]["template"]["spec"]["containers"]:
            if container.get("name") != "manager":
                continue
            args = [a for a in container.get("args") or [] if a not in SETTING_ARGS]
            container["args"] = args + [a for a in wanted["args"] if a in SETTING_ARGS]
    return _dump(*documents, header=_header_of(manager))


def with_webhooks(kustomization: str, manager: str, project: Project) -> tuple[str, str]:
    """``config/default/kustomization.yaml`` and ``config/manager/manager.yaml`` (both
    scaffolded once, then the user's) made to carry what the project's webhooks need, if
    it declares any: ``../webhook`` among the resources (and the commented line that turns
    the certmanager Component on), and the manager container's ``webhook-server`` port —
    added where missing, everything else in them kept (what ``make manifests`` does once a
    project declares its first webhook). The same pass gives the default kustomization the
    commented line that turns ``config/sharding`` on once the project has a controller (a
    project is scaffolded before its first ``create api``)."""
    if not serves_webhooks(project):
        return _with_sharding_line(kustomization, project), manager
    body = yaml.safe_load(kustomization) or {}
    resources = list(body.get("resources") or [])
    if "../webhook" not in resources:
        at = resources.index("../manager") if "../manager" in resources else len(resources)
        resources.insert(at, "../webhook")
        body["resources"] = resources
        kustomization = _header_of(kustomization) + yaml.safe_dump(body, sort_keys=False)
    # the rewrite above keeps no comment: the commented lines come back, sharding's first
    kustomization = _with_cert_manager_line(_with_sharding_line(kustomization, project), project)
    documents = [d for d in yaml.safe_load_all(manager) if d]
    changed = False
    for document in documents:
        if document.get("kind") != "Deployment":
            continue
        for container in document["spec"]["template"]["spec"]["containers"]:
            ports = container.get("ports") or []
            if container.get("name") != "manager" or any(
                port.get("name") == WEBHOOK_PORT_NAME for port in ports
            ):
                continue
            port = {"name": WEBHOOK_PORT_NAME, "containerPort": WEBHOOK_PORT, "protocol": "TCP"}
            container["ports"] = [*ports, port]
            changed = True
    if changed:
        manager = _dump(*documents, header=_header_of(manager))
    return kustomization, manager


def _header_of(text: str) -> str:
    """The leading comment lines of ``text`` (kept when a file is rewritten)."""
    lines = []
    for line in text.splitlines(keepends=True):
        if not line.startswith("#"):
            break
        lines.append(line)
    return "".join(lines)
