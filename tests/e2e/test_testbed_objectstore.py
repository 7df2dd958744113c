"""The test bed's S3 server (appstack_testbed.objectstore) is a real one: Versity S3 Gateway
on the real node, spoken to with boto3 from the host through a proxy to its Service.

Buckets and objects round-trip byte for byte (one PUT and a multipart upload), SigV4 is
checked (wrong keys get 403), S3's error codes come back (NoSuchBucket), and the in-cluster
endpoint the fixture returns answers from a pod. What the etcd backup tests rely on.
"""

from __future__ import annotations

import hashlib
import os
import uuid

import pytest
from botocore.exceptions import ClientError
from lightkube import ApiError, codecs
from lightkube import Client as LightClient
from lightkube.resources.core_v1 import Pod

from appstack_testbed.objectstore import ObjectStore, S3Server, error_code
from appstack_testbed.pytest_plugin import RealNodeHandle
from appstack_testbed.waiting import eventually_sync


def _bucket() -> str:
    return f"backups-{uuid.uuid4().hex[:8]}"


def test_objects_round_trip_byte_identical(s3_client: ObjectStore) -> None:
    bucket = _bucket()
    s3_client.create_bucket(bucket)
    assert bucket in s3_client.buckets()

    small = bytes(range(256)) * 3 + os.urandom(100_003)  # every byte value, odd length
    etag = s3_client.put_object(bucket, "etcd/snapshot-1.db", small)
    assert etag.strip('"') == hashlib.md5(small).hexdigest()  # noqa: S324 - S3's ETag
    large = os.urandom(11 << 20)  # three parts of 5 MiB, 5 MiB and 1 MiB
    s3_client.upload(bucket, "etcd/snapshot-2.db", large)

    assert s3_client.list_objects(bucket) == {
        "etcd/snapshot-1.db": len(small),
        "etcd/snapshot-2.db": len(large),
    }
    assert s3_client.list_objects(bucket, prefix="etcd/snapshot-2") == {
        "etcd/snapshot-2.db": len(large)
    }
    assert s3_client.get_object(bucket, "etcd/snapshot-1.db") == small
    assert s3_client.get_object(bucket, "etcd/snapshot-2.db") == large
    head = s3_client.client.head_object(Bucket=bucket, Key="etcd/snapshot-2.db")
    assert head["ETag"].strip('"').endswith("-3")  # stored as a multipart upload

    s3_client.delete_object(bucket, "etcd/snapshot-1.db")
    assert s3_client.list_objects(bucket) == {"etcd/snapshot-2.db": len(large)}
    s3_client.delete_bucket(bucket)
    assert bucket not in s3_client.buckets()


def test_wrong_keys_are_refused_and_a_missing_bucket_is_no_such_bucket(
    s3_client: ObjectStore, s3_server: S3Server
) -> None:
    bucket = _bucket()
    s3_client.create_bucket(bucket)
    s3_client.put_object(bucket, "kept", b"data")

    wrong_secret = s3_client.with_credentials(s3_server.access_key, "not-the-secret-key")
    unknown_key = s3_client.with_credentials("AKNOSUCHKEY", s3_server.secret_key)
    for client, expected in (
        (wrong_secret, "SignatureDoesNotMatch"),
        (unknown_key, "InvalidAccessKeyId"),
    ):
        for call in (
            lambda c=client: c.get_object(bucket, "kept"),
            lambda c=client: c.put_object(bucket, "written", b"x"),
            lambda c=client: c.buckets(),
        ):
            with pytest.raises(ClientError) as refused:
                call()
            assert error_code(refused.value) == (expected, 403)
    assert s3_client.list_objects(bucket) == {"kept": 4}  # nothing was written

    missing = _bucket()
    for call in (
        lambda: s3_client.get_object(missing, "kept"),
        lambda: s3_client.list_objects(missing),
        lambda: s3_client.put_object(missing, "key", b"x"),
    ):
        with pytest.raises(ClientError) as absent:
            call()
        assert error_code(absent.value) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as no_key:
        s3_client.get_object(bucket, "no-such-key")
    assert error_code(no_key.value) == ("NoSuchKey", 404)


def test_the_in_cluster_endpoint_answers_from_a_pod(
    kube: LightClient, s3_server: S3Server, real_node: RealNodeHandle
) -> None:
    """``s3_server.endpoint`` (the Service's DNS name) is what the operator's pods will use:
    a pod on the real node reaches it (unsigned: the health path; a bucket listing is
    refused)."""
    assert s3_server.endpoint == f"http://s3.{s3_server.namespace}.svc:7070"
    # A new Service's address works in a pod once the node's kube-proxy has synced it: a
    # client retries, and each try is bounded, so no try hangs on a SYN never answered
    # (`timeout`, not wget's own -T: Debian 12's busybox 1.35 wget segfaults with -T).
    script = (
        "for try in $(seq 20); do "
        f"timeout 5 wget -qO- {s3_server.endpoint}/health && break; sleep 1; done && echo && "
        f"if timeout 5 wget -qO- {s3_server.endpoint}/ 2>&1; then echo LISTED; "
        "else echo REFUSED; fi"
    )
    kube.create(
        codecs.from_dict(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "s3-probe", "namespace": s3_server.namespace},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "probe", "image": "busybox:1.36", "command": ["sh", "-c", script]}
                    ],
                },
            }
        )
    )

    def state() -> tuple[str | None, str]:
        """The pod's phase, and what it is doing (shown if the wait times out)."""
        pod = kube.get(Pod, "s3-probe", namespace=s3_server.namespace)
        status = pod.status
        phase = status.phase if status else None
        containers = [c.state for c in (status.containerStatuses or [])] if status else []
        return phase, f"phase={phase} node={pod.spec.nodeName if pod.spec else None} {containers}"

    def log() -> str:
        try:
            return "".join(kube.log("s3-probe", namespace=s3_server.namespace))
        except ApiError as error:  # the container has not started
            return f"(no log: {error.status.message})"

    phase, _ = eventually_sync(
        state,
        lambda seen: seen[0] in ("Succeeded", "Failed"),
        timeout=180,
        interval=0.5,
        what="the probe pod to finish",
        diagnose=lambda: f"log: {log()!r}",
    )
    log_text = log()
    assert phase == "Succeeded", log_text
    lines = log_text.split()
    assert lines[0] == "OK", log_text
    assert lines[-1] == "REFUSED", log_text
    assert "403" in log_text, log_text
