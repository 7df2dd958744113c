"""A real S3-compatible object store in a namespace of the local cluster, for e2e tests.

The e2e tests of etcd backups to S3 need a server that speaks S3 as AWS does (SigV4,
buckets, multipart uploads, S3's error codes), not a fake: :func:`deploy` runs Versity S3
Gateway (image ``versity/versitygw:<version>``, :func:`appstack_testbed.images.catalog.
versitygw`, built from Go modules by :mod:`appstack_testbed.versitygw` and pushed on demand by
:func:`push_image`) as a Deployment and a Service in the caller's namespace, with its posix
backend on an emptyDir (gone with the pod), the root access key and secret the caller
chooses, and its IAM in files (another emptyDir) so that an unknown key is refused as AWS
refuses it. It returns once the gateway answers (the kubelet's readiness probe on its health
path, then a ready endpoint), as an :class:`S3Server`: the in-cluster endpoint
(``http://<service>.<namespace>.svc:7070``, for what runs in the cluster: the operator's
backup jobs), the keys and the region.

From the host, a Service is reached through a loopback TCP proxy to its ready endpoints
(:class:`appstack_testbed.serviceproxy.ServiceAccess`, ``real_node.service_address`` in the
tests): plain TCP, so any method and header passes and SigV4 signs the address the client
uses. :func:`connect` wraps a boto3 client on that address in :class:`ObjectStore` (create
a bucket, put, list, get, delete), waiting until an S3 request is answered.

Used by the e2e fixtures ``s3_server`` and ``s3_client`` (tests/e2e/conftest.py) and
tests/e2e/test_testbed_objectstore.py; pods need a real node (the fixtures ask for one).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lightkube import Client, codecs
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Pod
from lightkube.resources.discovery_v1 import EndpointSlice

from appstack_testbed.images.catalog import VERSITYGW_PORT, VERSITYGW_USER
from appstack_testbed.versions import VERSITYGW
from appstack_testbed.waiting import eventually_sync

Printer = Callable[[str], None]

IMAGE = f"versity/versitygw:{VERSITYGW}"
PORT = VERSITYGW_PORT
HEALTH_PATH = "/health"
DATA_DIR = "/data"  # the posix backend's root: a directory per bucket
IAM_DIR = "/iam"
FIELD_MANAGER = "appstack-testbed-objectstore"
_USER, _GROUP = (int(part) for part in VERSITYGW_USER.split(":"))


@dataclass(frozen=True)
class S3Server:
    """A running gateway: ``endpoint`` is its in-cluster URL (``http://<service>.<namespace>
    .svc:<port>``); ``access_key``/``secret_key`` its root credentials; ``region`` the
    region SigV4 signs for; ``namespace``/``service``/``port`` where its Service is (what a
    host-side proxy needs)."""

    endpoint: str
    access_key: str
    secret_key: str
    region: str
    namespace: str
    service: str
    port: int = PORT


def push_image(printer: Printer, version: str = VERSITYGW) -> str:
    """Build (once, cached) and push the gateway's image into the local registry unless it
    is there; its reference. The local cluster must be up (its registry runs)."""
    from appstack_testbed.images import build as images  # noqa: PLC0415 - buildah etc.
    from appstack_testbed.images.catalog import versitygw  # noqa: PLC0415
    from appstack_testbed.registry import LocalRegistry  # noqa: PLC0415

    image = versitygw(version)
    images.ensure([image], LocalRegistry(printer), printer)
    return image.refs[0]


def manifests(
    namespace: str,
    *,
    access_key: str,
    secret_key: str,
    region: str = "us-east-1",
    name: str = "s3",
    image: str = IMAGE,
) -> list[dict[str, Any]]:
    """The Secret (the root keys), Deployment and Service of a gateway (pure)."""
    labels = {"app.kubernetes.io/name": "versitygw", "app.kubernetes.io/instance": name}
    meta = {"name": name, "namespace": namespace, "labels": labels}

    def secret_env(variable: str, key: str) -> dict[str, Any]:
        return {"name": variable, "valueFrom": {"secretKeyRef": {"name": name, "key": key}}}

    container = {
        "name": "versitygw",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        # versitygw reads --access/--secret from ROOT_ACCESS_KEY_ID/ROOT_SECRET_ACCESS_KEY
        # (kept out of the pod's arguments); the rest are flags, then the backend.
        "args": [
            f"--port=:{PORT}",
            f"--region={region}",
            f"--health={HEALTH_PATH}",
            # Accounts in files (only root here): an unknown access key is then S3's
            # InvalidAccessKeyId (403); without an IAM service versitygw v1.8.0 answers
            # its own XAdminUserNotFound (404).
            f"--iam-dir={IAM_DIR}",
            "posix",
            DATA_DIR,
        ],
        "env": [
            secret_env("ROOT_ACCESS_KEY_ID", "access-key"),
            secret_env("ROOT_SECRET_ACCESS_KEY", "secret-key"),
        ],
        "ports": [{"name": "s3", "containerPort": PORT}],
        "readinessProbe": {
            "httpGet": {"path": HEALTH_PATH, "port": PORT},
            "periodSeconds": 2,
            "failureThreshold": 3,
        },
        "volumeMounts": [
            {"name": "data", "mountPath": DATA_DIR},
            {"name": "iam", "mountPath": IAM_DIR},
        ],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    pod_spec = {
        "containers": [container],
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "iam", "emptyDir": {}}],
        "automountServiceAccountToken": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": _USER,
            "runAsGroup": _GROUP,
            "fsGroup": _GROUP,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": meta,
            "type": "Opaque",
            "stringData": {"access-key": access_key, "secret-key": secret_key},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {
                "selector": labels,
                "ports": [{"name": "s3", "port": PORT, "targetPort": "s3"}],
            },
        },
    ]


def deploy(
    kube: Client,
    namespace: str,
    *,
    access_key: str,
    secret_key: str,
    region: str = "us-east-1",
    name: str = "s3",
    image: str = IMAGE,
    timeout: float = 180.0,
) -> S3Server:
    """Run a gateway named ``name`` in ``namespace`` (its pods must be able to run on a real
    node, and ``image`` be in the registry: :func:`push_image`); return once it answers."""
    for obj in manifests(
        namespace,
        access_key=access_key,
        secret_key=secret_key,
        region=region,
        name=name,
        image=image,
    ):
        kube.apply(codecs.from_dict(obj), field_manager=FIELD_MANAGER, force=True)
    server = S3Server(
        endpoint=f"http://{name}.{namespace}.svc:{PORT}",
        access_key=access_key,
        secret_key=secret_key,
        region=region,
        namespace=namespace,
        service=name,
    )
    wait_ready(kube, server, timeout=timeout)
    return server


def wait_ready(kube: Client, server: S3Server, *, timeout: float = 180.0) -> None:
    """Until the gateway's pod passes its readiness probe (the kubelet's GET of the health
    path answered 200) and the Service has that ready endpoint; a timeout says what the
    pod was doing and the tail of its log."""

    def ready_endpoints() -> int:
        slices = kube.list(
            EndpointSlice,
            namespace=server.namespace,
            labels={"kubernetes.io/service-name": server.service},
        )
        return sum(
            1
            for endpoint_slice in slices
            for endpoint in endpoint_slice.endpoints or []
            if endpoint.conditions is not None and endpoint.conditions.ready
        )

    def available() -> bool:
        deployment = kube.get(Deployment, server.service, namespace=server.namespace)
        status = deployment.status
        return bool(status and (status.availableReplicas or 0) >= 1) and ready_endpoints() > 0

    eventually_sync(
        available,
        timeout=timeout,
        interval=0.5,
        what=f"S3 gateway {server.endpoint}",
        diagnose=lambda: describe(kube, server),
    )


def describe(kube: Client, server: S3Server) -> str:
    """The gateway's pods: phase, container states and the last lines of their logs."""
    lines = []
    pods = kube.list(
        Pod,
        namespace=server.namespace,
        labels={"app.kubernetes.io/instance": server.service},
    )
    for pod in pods:
        name = pod.metadata.name if pod.metadata and pod.metadata.name else "?"
        status = pod.status
        states = [
            f"{s.name}: ready={s.ready} restarts={s.restartCount} state={s.state}"
            for s in (status.containerStatuses or [] if status else [])
        ]
        lines.append(f"pod {name}: phase={status.phase if status else None} {states}")
        try:
            lines.extend(f"  | {line}" for line in kube.log(name, namespace=server.namespace))
        except Exception as error:
            lines.append(f"  (no log: {error})")
    return "\n".join(lines[-60:]) or "no pod"


class ObjectStore:
    """The gateway from the host, through a boto3 S3 client on ``address`` (a loopback
    proxy to the Service: :func:`connect`). ``client`` is the boto3 client itself, for
    anything the helpers do not cover."""

    def __init__(
        self,
        server: S3Server,
        address: tuple[str, int],
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
    ) -> None:
        import boto3  # type: ignore[import-untyped]  # noqa: PLC0415 - slow to import
        from botocore.config import Config  # type: ignore[import-untyped]  # noqa: PLC0415

        self.server = server
        self.address = address
        self.url = f"http://{address[0]}:{address[1]}"
        self.client: Any = boto3.session.Session().client(
            "s3",
            endpoint_url=self.url,
            region_name=server.region,
            aws_access_key_id=server.access_key if access_key is None else access_key,
            aws_secret_access_key=server.secret_key if secret_key is None else secret_key,
            config=Config(
                signature_version="s3v4",
                s3={"addressing_style": "path"},
                retries={"max_attempts": 3, "mode": "standard"},
                connect_timeout=5,
                read_timeout=60,
            ),
        )

    def with_credentials(self, access_key: str, secret_key: str) -> ObjectStore:
        """The same gateway and address, signing with other keys (e.g. wrong ones)."""
        return ObjectStore(self.server, self.address, access_key=access_key, secret_key=secret_key)

    def create_bucket(self, bucket: str) -> None:
        self.client.create_bucket(Bucket=bucket)

    def buckets(self) -> list[str]:
        return [b["Name"] for b in self.client.list_buckets().get("Buckets", [])]

    def put_object(self, bucket: str, key: str, data: bytes) -> str:
        """Store ``data`` under ``key`` in one PUT; its ETag."""
        return str(self.client.put_object(Bucket=bucket, Key=key, Body=data)["ETag"])

    def upload(self, bucket: str, key: str, data: bytes, *, part_size: int = 5 << 20) -> None:
        """Store ``data`` as boto3's transfer manager does: a multipart upload of
        ``part_size`` parts (S3's smallest) once it is larger than one part."""
        from boto3.s3.transfer import TransferConfig  # type: ignore[import-untyped]  # noqa: PLC0415

        transfer = TransferConfig(multipart_threshold=part_size, multipart_chunksize=part_size)
        self.client.upload_fileobj(io.BytesIO(data), bucket, key, Config=transfer)

    def list_objects(self, bucket: str, prefix: str = "") -> dict[str, int]:
        """Every key under ``prefix`` and its size (all pages)."""
        out: dict[str, int] = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix
        ):
            out.update({o["Key"]: int(o["Size"]) for o in page.get("Contents", [])})
        return out

    def get_object(self, bucket: str, key: str) -> bytes:
        body = self.client.get_object(Bucket=bucket, Key=key)["Body"]
        try:
            return bytes(body.read())
        finally:
            body.close()

    def delete_object(self, bucket: str, key: str) -> None:
        self.client.delete_object(Bucket=bucket, Key=key)

    def delete_bucket(self, bucket: str) -> None:
        """Delete ``bucket`` with every object in it."""
        for key in self.list_objects(bucket):
            self.delete_object(bucket, key)
        self.client.delete_bucket(Bucket=bucket)


def error_code(error: BaseException) -> tuple[str, int]:
    """S3's error code and HTTP status of a botocore ``ClientError`` (``("NoSuchBucket",
    404)``); ("", 0) for anything else."""
    response = getattr(error, "response", None) or {}
    code = str((response.get("Error") or {}).get("Code", ""))
    status = int((response.get("ResponseMetadata") or {}).get("HTTPStatusCode", 0))
    return code, status


def connect(server: S3Server, address: tuple[str, int], *, timeout: float = 60.0) -> ObjectStore:
    """An :class:`ObjectStore` on ``address`` (a loopback proxy to ``server``'s Service,
    e.g. ``real_node.service_address(server.namespace, server.service, server.port)``),
    once a signed S3 request (ListBuckets) is answered through it."""
    store = ObjectStore(server, address)

    eventually_sync(
        store.client.list_buckets,
        lambda _: True,
        timeout=timeout,
        interval=0.5,
        what=f"S3 ListBuckets at {store.url}",
        retry_on=(Exception,),  # the last error is in the failure
    )
    return store
