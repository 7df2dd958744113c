"""Testing an operator scaffolded with ``appstack init`` on the test bed's real control
plane: what the project's generated tests use, so they stay a few lines each.

* :class:`OperatorUnderTest` — the project's CRDs installed, its generated RBAC
  (``config/rbac/role.yaml``) bound to a ServiceAccount of the test's namespace, the
  namespace enabled for the project (its identity's ``<domain>/enabled=true``: the
  generated operator acts, as installed, only in enabled namespaces), and the operator run
  as ``python -m <package>`` with that account's token, watching that namespace: a rule the
  generated role lacks fails the test. A project whose code declares admission webhooks
  (``config/webhook/manifests.yaml`` has configurations: ``appstack create webhook``) has
  them served in developer mode (``--webhook-host=127.0.0.1``, a free port), the account
  also let apply and delete the two configurations that mode writes, so the API server
  asks them about the test's objects. Helpers create objects, wait for ``Ready`` at a
  generation, read and delete children; on leaving, SIGTERM and a clean exit are checked.
* :func:`deployed_operator` — the project's image built from its Dockerfile without a
  daemon over the wheels ``make build`` put in ``dist/`` (``make test-e2e`` runs it first;
  :func:`appstack_testbed.image.build_project_image`), pushed to the local registry, set
  in ``config/manager`` and ``config/default`` applied with kustomize as ``make deploy``
  does (its admission policies included, the user's edits too): the operator runs as a pod
  on the real node; helpers apply the samples in a namespace enabled for the project, wait
  for them, and ask ``/metrics`` with and without a bound token.

Waits poll conditions (:func:`appstack_testbed.waiting.eventually_sync`), never sleep a fixed
time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import ssl
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import httpx
import yaml

from appstack.runtime import NAMESPACE, Client, NotFound, Resource
from appstack.scaffold.project import Project, read
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kit.webhooks import configuration_names
from appstack_testbed.waiting import condition_status, eventually_sync

T = TypeVar("T")
CRD = Resource(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    namespaced=False,
)
SERVICE_ACCOUNT = Resource("", "v1", "ServiceAccount", "serviceaccounts")
CLUSTER_ROLE = Resource(
    "rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False
)
ROLE_BINDING = Resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings")
CLUSTER_ROLE_BINDING = Resource(
    "rbac.authorization.k8s.io",
    "v1",
    "ClusterRoleBinding",
    "clusterrolebindings",
    namespaced=False,
)
CORE = {"configmaps": Resource("", "v1", "ConfigMap", "configmaps")}


def _run(kubeconfig: Path, call: Callable[[Client], Awaitable[T]]) -> T:
    async def go() -> T:
        async with await Client.connect(str(kubeconfig), field_manager="operator-tests") as client:
            return await call(client)

    return asyncio.run(go())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _yaml_objects(path: Path) -> list[dict[str, Any]]:
    return [o for o in yaml.safe_load_all(path.read_text()) if o]


def _token(kubeconfig: Path, namespace: str, account: str) -> str:
    """A token of ServiceAccount ``namespace/account`` (a TokenRequest, 2 hours)."""
    from lightkube import Client as LightClient  # noqa: PLC0415
    from lightkube import KubeConfig  # noqa: PLC0415
    from lightkube.models.authentication_v1 import TokenRequestSpec  # noqa: PLC0415
    from lightkube.models.meta_v1 import ObjectMeta  # noqa: PLC0415
    from lightkube.resources.core_v1 import ServiceAccount  # noqa: PLC0415

    light = LightClient(config=KubeConfig.from_file(str(kubeconfig)))
    request = ServiceAccount.Token(
        metadata=ObjectMeta(name=account, namespace=namespace),
        spec=TokenRequestSpec(audiences=[], expirationSeconds=7200),
    )
    answer = light.create(request, name=account, namespace=namespace)
    if answer.status is None:
        raise AssertionError(f"no token for ServiceAccount {namespace}/{account}")
    return str(answer.status.token)


def token_kubeconfig(kubeconfig: Path, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig holding only a token of ServiceAccount ``namespace/account``."""
    config = yaml.safe_load(kubeconfig.read_text())
    config["users"] = [{"name": account, "user": {"token": _token(kubeconfig, namespace, account)}}]
    for context in config["contexts"]:
        context["context"]["user"] = account
    path.write_text(yaml.safe_dump(config))
    return path


def enabled_label(project: Project) -> str:
    """The namespace label (``=true``) that enables the project's operator: its identity's
    (``src/<package>/identity.py`` as ``appstack init`` writes it, from ``PROJECT``)."""
    return OperatorIdentity(project=project.project_name, domain=project.domain).enabled_label


def enable_namespace(kubeconfig: Path, namespace: str, project: Project) -> None:
    """Label ``namespace`` so that the project's operator acts there (as a platform team
    would: ``kubectl label namespace NAME <domain>/enabled=true``)."""
    patch = {"metadata": {"labels": {enabled_label(project): "true"}}}
    _run(kubeconfig, lambda c: c.patch(NAMESPACE, namespace, patch))


def install_crds(kubeconfig: Path, project_dir: Path) -> None:
    """Apply the project's generated CRDs and wait until they are served."""
    crds = [
        o
        for p in sorted((project_dir / "config/crd/bases").glob("*.yaml"))
        for o in _yaml_objects(p)
    ]

    async def apply(client: Client) -> None:
        for crd in crds:
            await client.apply(CRD, crd)

    _run(kubeconfig, apply)
    for crd in crds:
        name = crd["metadata"]["name"]

        def established(name: str = name) -> bool:
            async def get(client: Client) -> dict[str, Any]:
                return await client.get(CRD, name)

            return condition_status(_run(kubeconfig, get), "Established") == "True"

        eventually_sync(established, timeout=30, what=f"CRD {name} established")


def _declares_admission_webhooks(project_dir: Path) -> bool:
    """Whether the project's code declares admission webhooks: ``make manifests`` wrote
    their configurations into ``config/webhook/manifests.yaml``."""
    manifests = project_dir / "config/webhook/manifests.yaml"
    kinds = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
    return manifests.is_file() and any(o.get("kind") in kinds for o in _yaml_objects(manifests))


class OperatorUnderTest:
    """The project's operator as a process, under its generated role, watching one
    namespace (see the module docstring). A context manager."""

    def __init__(self, project_dir: Path, kubeconfig: Path, namespace: str) -> None:
        self.project_dir = Path(project_dir)
        self.kubeconfig = Path(kubeconfig)
        self.namespace = namespace
        self.project = read(self.project_dir)
        self.role = f"{self.project.project_name}-manager-role-{uuid.uuid4().hex[:6]}"
        self.webhooks = _declares_admission_webhooks(self.project_dir)
        self.account = "operator-under-test"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = self.project_dir / f".operator-{namespace}.log"

    # ----------------------------------------------------------------------- lifecycle
    def __enter__(self) -> OperatorUnderTest:
        install_crds(self.kubeconfig, self.project_dir)
        (role,) = _yaml_objects(self.project_dir / "config/rbac/role.yaml")
        rules = role["rules"]
        objects = [
            (
                CLUSTER_ROLE,
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": {"name": self.role},
                    "rules": rules,
                },
            ),
            (
                SERVICE_ACCOUNT,
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": self.account, "namespace": self.namespace},
                },
            ),
            (
                ROLE_BINDING,
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "RoleBinding",
                    "metadata": {"name": self.role, "namespace": self.namespace},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": self.role,
                    },
                    "subjects": [
                        {
                            "kind": "ServiceAccount",
                            "name": self.account,
                            "namespace": self.namespace,
                        }
                    ],
                },
            ),
        ]

        async def apply(client: Client) -> None:
            for resource, obj in objects:
                await client.apply(resource, obj)

        if self.webhooks:
            objects += self._webhook_access()
        _run(self.kubeconfig, apply)
        enable_namespace(self.kubeconfig, self.namespace, self.project)
        account_config = token_kubeconfig(
            self.kubeconfig,
            self.namespace,
            self.account,
            self.project_dir / f".kubeconfig-{self.namespace}",
        )
        health = _free_port()
        env = {**os.environ, "PYTHONPATH": str(self.project_dir / "src")}
        argv = [
            sys.executable,
            "-m",
            self.project.package,
            f"--kubeconfig={account_config}",
            f"--namespace={self.namespace}",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{health}",
        ]
        if self.webhooks:  # developer mode: the API server on this machine calls them here
            argv += ["--webhook-host=127.0.0.1", f"--webhook-bind-address=127.0.0.1:{_free_port()}"]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)

        def ready() -> bool:
            if self.proc is None or self.proc.poll() is not None:
                raise AssertionError(f"the operator exited:\n{self.tail()}")
            try:
                return httpx.get(f"http://127.0.0.1:{health}/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        eventually_sync(ready, timeout=60, what="the operator ready (/readyz)")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise
            if exc[0] is None and code != 0:
                raise AssertionError(f"the operator exited with {code}:\n{self.tail()}")
        with contextlib.suppress(Exception):
            _run(self.kubeconfig, lambda c: c.delete(CLUSTER_ROLE, self.role))
        if self.webhooks:

            async def remove(client: Client) -> None:
                for resource in (CLUSTER_ROLE_BINDING, CLUSTER_ROLE):
                    with contextlib.suppress(NotFound):
                        await client.delete(resource, self._webhook_role)

            with contextlib.suppress(Exception):
                _run(self.kubeconfig, remove)

    @property
    def _webhook_role(self) -> str:
        return f"{self.role}-webhooks"

    def _webhook_access(self) -> list[tuple[Resource, dict[str, Any]]]:
        """A ClusterRole and its binding to the account: what developer mode does with the
        operator's webhook configurations (cluster-scoped: a RoleBinding cannot grant it) —
        create them, then read, patch and delete them by name."""
        identity = OperatorIdentity(project=self.project.project_name, domain=self.project.domain)
        group = "admissionregistration.k8s.io"
        plurals = ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"]
        rules = [
            {"apiGroups": [group], "resources": plurals, "verbs": ["create"]},
            {
                "apiGroups": [group],
                "resources": plurals,
                "resourceNames": sorted(configuration_names(identity).values()),
                "verbs": ["get", "patch", "update", "delete"],
            },
        ]
        name = self._webhook_role
        return [
            (
                CLUSTER_ROLE,
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": {"name": name},
                    "rules": rules,
                },
            ),
            (
                CLUSTER_ROLE_BINDING,
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": name},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": name,
                    },
                    "subjects": [
                        {
                            "kind": "ServiceAccount",
                            "name": self.account,
                            "namespace": self.namespace,
                        }
                    ],
                },
            ),
        ]

    def tail(self) -> str:
        """The end of the operator's log."""
        return self.log.read_text()[-3000:] if self.log.exists() else ""

    # ------------------------------------------------------------------------- helpers
    def create(self, resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        """Create ``obj`` in the test's namespace (as the cluster's administrator)."""
        obj = {**obj, "metadata": {**obj["metadata"], "namespace": self.namespace}}
        return _run(self.kubeconfig, lambda c: c.create(resource, obj))

    def get(self, resource: Resource, name: str) -> dict[str, Any]:
        return _run(self.kubeconfig, lambda c: c.get(resource, name, self.namespace))

    def wait_ready(
        self, resource: Resource, name: str, generation: int, timeout: float = 60
    ) -> dict[str, Any]:
        """``name`` once ``Ready=True`` for ``generation`` (``status.observedGeneration``)."""

        seen: list[dict[str, Any]] = []

        def ready() -> dict[str, Any] | None:
            obj = self.get(resource, name)
            seen[:] = [obj]
            status = obj.get("status") or {}
            ok = (
                condition_status(obj, "Ready") == "True"
                and status.get("observedGeneration") == generation
            )
            return obj if ok else None

        def diagnose() -> str:
            status = seen[0].get("status") if seen else None
            return f"its status: {status}\nthe operator's log:\n{self.tail()}"

        what = f"{resource.kind} {name} Ready at generation {generation}"
        return cast(
            dict[str, Any],
            eventually_sync(ready, timeout=timeout, what=what, diagnose=diagnose),
        )

    def wait_child(
        self, plural: str, name: str, other_than: str = "", timeout: float = 60
    ) -> dict[str, Any]:
        """The child ``plural/name`` once it exists (and is not the one of uid ``other_than``)."""
        resource = CORE[plural]

        def there() -> dict[str, Any] | None:
            try:
                obj = self.get(resource, name)
            except NotFound:
                return None
            return obj if obj["metadata"]["uid"] != other_than else None

        return cast(
            dict[str, Any], eventually_sync(there, timeout=timeout, what=f"{plural}/{name}")
        )

    def delete_child(self, plural: str, name: str) -> None:
        _run(self.kubeconfig, lambda c: c.delete(CORE[plural], name, self.namespace))


# ------------------------------------------------------------------------------ deployed
class Deployed:
    """The project's operator running as a pod; see :func:`deployed_operator`."""

    def __init__(self, kubeconfig: Path, project_dir: Path, namespace: str, prefix: str) -> None:
        self.kubeconfig = kubeconfig
        self.project_dir = project_dir
        self.namespace = namespace
        self.prefix = prefix
        self.samples: list[dict[str, Any]] = []
        self.sample_namespace = f"{prefix}samples-{uuid.uuid4().hex[:6]}"

    def apply_samples(self) -> None:
        """Every sample of config/samples, in a namespace of its own, enabled for the
        project (the installed operator acts nowhere else)."""
        from appstack.scaffold.commands import sample_objects  # noqa: PLC0415

        self.samples = sample_objects(self.project_dir)
        enabled = enabled_label(read(self.project_dir))

        async def apply(client: Client) -> None:
            namespace = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": self.sample_namespace, "labels": {enabled: "true"}},
            }
            await client.create(NAMESPACE, namespace)
            for sample in self.samples:
                group, _, version = sample["apiVersion"].rpartition("/")
                resource = _resource_of(group, version, sample["kind"], self.project_dir)
                obj = {
                    **sample,
                    "metadata": {**sample["metadata"], "namespace": self.sample_namespace},
                }
                await client.create(resource, obj)

        _run(self.kubeconfig, apply)

    def wait_samples_ready(self, timeout: float = 120) -> None:
        for sample in self.samples:
            group, _, version = sample["apiVersion"].rpartition("/")
            resource = _resource_of(group, version, sample["kind"], self.project_dir)
            name = sample["metadata"]["name"]

            def ready(resource: Resource = resource, name: str = name) -> bool:
                async def get(client: Client) -> dict[str, Any]:
                    return await client.get(resource, name, self.sample_namespace)

                return condition_status(_run(self.kubeconfig, get), "Ready") == "True"

            eventually_sync(
                ready,
                timeout=timeout,
                what=f"sample {sample['kind']} {name} Ready (reconciled by the deployed pod)",
            )

    def metrics_status(self, *, token: bool) -> int:
        """The status ``/metrics`` answers, through its Service, with a token bound to the
        metrics-reader role, or with none."""
        from lightkube import Client as LightClient  # noqa: PLC0415
        from lightkube import KubeConfig  # noqa: PLC0415

        from appstack_testbed.serviceproxy import ServiceAccess  # noqa: PLC0415

        headers = {}
        if token:
            headers["Authorization"] = f"Bearer {self._reader_token()}"
        light = LightClient(config=KubeConfig.from_file(str(self.kubeconfig)))
        access = ServiceAccess(light)
        try:
            host, port = access.address(
                self.namespace, f"{self.prefix}controller-manager-metrics-service", 8443
            )
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE  # the operator's self-signed certificate
            answer = httpx.get(
                f"https://{host}:{port}/metrics", headers=headers, verify=context, timeout=10
            )
            return answer.status_code
        finally:
            access.stop()

    def _reader_token(self) -> str:
        account = "metrics-scraper"

        async def bind(client: Client) -> None:
            await client.apply(
                SERVICE_ACCOUNT,
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": account, "namespace": self.namespace},
                },
            )
            await client.apply(
                CLUSTER_ROLE_BINDING,
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": f"{self.prefix}metrics-scraper"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": f"{self.prefix}metrics-reader",
                    },
                    "subjects": [
                        {"kind": "ServiceAccount", "name": account, "namespace": self.namespace}
                    ],
                },
            )

        _run(self.kubeconfig, bind)
        return _token(self.kubeconfig, self.namespace, account)


def _resource_of(group: str, version: str, kind: str, project_dir: Path) -> Resource:
    for path in (project_dir / "config/crd/bases").glob("*.yaml"):
        for crd in _yaml_objects(path):
            spec = crd["spec"]
            if spec["group"] == group and spec["names"]["kind"] == kind:
                namespaced = spec["scope"] == "Namespaced"
                return Resource(group, version, kind, spec["names"]["plural"], namespaced)
    raise LookupError(f"no CRD of {group}/{version} {kind} in {project_dir}/config/crd/bases")


@contextlib.contextmanager
def deployed_operator(
    kube_cluster: Any, project_dir: Path, image: str | None = None
) -> Iterator[Deployed]:
    """Build, push and deploy the project's operator on the local cluster; its pod Ready
    on the real node; removed again on leaving (see the module docstring)."""
    from appstack.scaffold import manifests  # noqa: PLC0415
    from appstack_testbed.image import build_project_image  # noqa: PLC0415
    from appstack_testbed.images.build import push_archive  # noqa: PLC0415
    from appstack_testbed.registry import LocalRegistry  # noqa: PLC0415

    local = kube_cluster.require_local()
    project = read(project_dir)
    tag = image or f"{project.project_name}:e2e-{uuid.uuid4().hex[:6]}"
    built = build_project_image(project_dir, ref=tag)
    push_archive(built.archive, tag, LocalRegistry(print), print)
    manifests.set_image(project_dir, tag)  # then config/default, as make deploy applies it
    default = str(project_dir / "config" / "default")
    local.kubectl("apply", "--server-side", "--force-conflicts", "-k", default)
    namespace = f"{project.project_name}-system"
    prefix = f"{project.project_name}-"
    deployed = Deployed(kube_cluster.kubeconfig, project_dir, namespace, prefix)
    try:
        local.kubectl(
            "-n",
            namespace,
            "rollout",
            "status",
            f"deployment/{prefix}controller-manager",
            "--timeout=180s",
        )
        yield deployed
    finally:
        with contextlib.suppress(Exception):
            local.kubectl(
                "delete",
                "namespace",
                deployed.sample_namespace,
                "--ignore-not-found",
                "--wait=false",
            )
        local.kubectl("delete", "--ignore-not-found", "-k", default)
        with contextlib.suppress(Exception):
            local.kubectl(
                "delete", "clusterrolebinding", f"{prefix}metrics-scraper", "--ignore-not-found"
            )
