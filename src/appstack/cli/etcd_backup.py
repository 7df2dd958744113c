"""``appstack etcd-backup upload|download``: what an EtcdCluster's backup Job and restore
init container run (in the operator's image) to move a snapshot to or from an S3-compatible
object store (:mod:`appstack.controllers.etcdcluster.objectstore`). Not meant to be typed
by users; the pods get their arguments from the operator
(:mod:`appstack.controllers.etcdcluster.backup`) and the credentials from the user's
Secret as ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY``.

``upload`` puts the snapshot file, then applies retention to the cluster's snapshots
(those under ``--keep-prefix`` ending in ``.db``): the newest ``--retention`` are kept, and
of those any older than ``--retention-days``, never the one just written. A failure is one
line on stderr and in the pod's termination message (what the operator reports), exit 1.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
from pathlib import Path

import click

from appstack.controllers.etcdcluster.objectstore import ObjectStoreError, Store

TERMINATION_LOG = Path("/dev/termination-log")


def _store(endpoint: str, bucket: str, region: str, ca_file: str | None) -> Store:
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        _fail(
            "CredentialsMissing: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be keys of "
            "the credentials Secret"
        )
    return Store(endpoint, bucket, region, key or "", secret or "", ca_file)


def _say(line: str) -> None:
    click.echo(line, err=True)
    with contextlib.suppress(OSError):  # outside a pod there is none
        TERMINATION_LOG.write_text(line[:1024])


def _fail(line: str) -> None:
    _say(line)
    sys.exit(1)


def expired(
    objects: list[tuple[str, int, str]],
    keep: int,
    days: int | None,
    just_written: str,
    now: datetime.datetime,
) -> list[str]:
    """The snapshot keys retention deletes (pure): all but the newest ``keep`` (keys sort
    by time), and those older than ``days``; never ``just_written``."""
    snapshots = sorted(k for k, _, _ in objects if k.endswith(".db"))
    newest = set(snapshots[-keep:]) if keep > 0 else set()
    out = []
    for key, _, modified in objects:
        if key == just_written or not key.endswith(".db"):
            continue
        old = False
        if days is not None and modified:
            at = datetime.datetime.fromisoformat(modified.replace("Z", "+00:00"))
            old = now - at > datetime.timedelta(days=days)
        if key not in newest or old:
            out.append(key)
    return sorted(out)


@click.group("etcd-backup", hidden=True)
def etcd_backup() -> None:
    """Move an EtcdCluster snapshot to or from an S3-compatible object store (run by the
    operator's backup Jobs and restore init containers)."""


@etcd_backup.command()
@click.option("--file", "path", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--endpoint", required=True)
@click.option("--bucket", required=True)
@click.option("--key", required=True, help="The object's key.")
@click.option("--region", default="us-east-1", show_default=True)
@click.option("--ca-file", default=None)
@click.option("--keep-prefix", required=True, help="The cluster's snapshots: keys under it.")
@click.option("--retention", type=int, required=True, help="Snapshots kept.")
@click.option("--retention-days", type=int, default=None, help="Older ones are deleted.")
def upload(  # noqa: PLR0917 - click passes the options positionally
    path: Path,
    endpoint: str,
    bucket: str,
    key: str,
    region: str,
    ca_file: str | None,
    keep_prefix: str,
    retention: int,
    retention_days: int | None,
) -> None:
    """Upload a snapshot file, then delete what retention no longer keeps."""
    store = _store(endpoint, bucket, region, ca_file)
    try:
        size = store.put_file(key, path)
        listed = store.list(keep_prefix)
        if key not in {k for k, _, _ in listed}:
            _fail(f"NotListed: {key} was uploaded but the bucket does not list it")
        now = datetime.datetime.now(datetime.timezone.utc)
        gone = expired(listed, retention, retention_days, key, now)
        for old in gone:
            store.delete(old)
    except ObjectStoreError as error:
        _fail(f"{error} (s3://{bucket}/{key} at {endpoint})")
    _say(f"Uploaded s3://{bucket}/{key} ({size} bytes); deleted {len(gone)} older")


@etcd_backup.command()
@click.option("--endpoint", required=True)
@click.option("--bucket", required=True)
@click.option("--key", required=True)
@click.option("--region", default="us-east-1", show_default=True)
@click.option("--ca-file", default=None)
@click.option("--to", "target", required=True, type=click.Path(dir_okay=False, path_type=Path))
def download(  # noqa: PLR0917 - click passes the options positionally
    endpoint: str, bucket: str, key: str, region: str, ca_file: str | None, target: Path
) -> None:
    """Download a snapshot (for etcdutl snapshot restore)."""
    store = _store(endpoint, bucket, region, ca_file)
    try:
        size = store.get_file(key, target)
    except ObjectStoreError as error:
        _fail(f"{error} (s3://{bucket}/{key} at {endpoint})")
    _say(f"Downloaded s3://{bucket}/{key} ({size} bytes)")
