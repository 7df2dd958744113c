"""The S3 client of EtcdCluster backups (pure parts): Signature Version 4 against AWS's own
published example, and what retention deletes. The client against a real S3 server:
tests/e2e/test_etcdcluster_s3.py."""

from __future__ import annotations

import datetime

from appstack.cli.etcd_backup import expired
from appstack.controllers.etcdcluster.objectstore import sign

NOW = datetime.datetime(2026, 11, 27, 12, 0, tzinfo=datetime.timezone.utc)


def test_the_signature_is_awss_own_example() -> None:
    # "Example: GET Object" of AWS's Signature Version 4 documentation (Amazon S3 API
    # Reference, "Signature Calculations for the Authorization Header")
    headers = sign(
        "GET",
        "examplebucket.s3.amazonaws.com",
        "/test.txt",
        {},
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "us-east-1",
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        datetime.datetime(2013, 5, 24, tzinfo=datetime.timezone.utc),
        {"Range": "bytes=0-9"},
    )
    assert headers["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    )
    assert headers["Host"] == "examplebucket.s3.amazonaws.com"
    assert headers["x-amz-date"] == "20130524T000000Z"


def test_retention_keeps_the_newest_and_drops_the_old_never_the_one_just_written() -> None:
    objects = [
        (f"etcd/e-2026112{d}T030000Z.db", 10, f"2026-11-2{d}T03:00:01Z") for d in range(1, 8)
    ]
    objects.append(("etcd/e-notes.txt", 1, "2026-01-01T00:00:00Z"))  # not a snapshot
    newest = objects[6][0]
    assert expired(objects, 3, None, newest, NOW) == [o[0] for o in objects[:4]]
    # and by age: of the newest 3 (25th, 26th, 27th), the 25th is older than 2 days
    assert expired(objects, 3, 2, newest, NOW) == [o[0] for o in objects[:5]]
    # the one just written stays even when it is older than the limit (a clock skew)
    assert newest not in expired(objects, 1, 0, newest, NOW + datetime.timedelta(days=30))
