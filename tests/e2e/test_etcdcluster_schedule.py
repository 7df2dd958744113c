"""EtcdCluster ``backup.schedule`` with real etcd (a one-member cluster on the process
node): a schedule of every minute takes one snapshot a minute, each started on the minute
(the reconciler requeues for that moment: its idle resync is 30 s), and ``retention``
rotates the files on the backup PVC. About two minutes: one snapshot at once
(``intervalMinutes``), then the two next minutes of the schedule."""

from __future__ import annotations

import datetime
import time
from pathlib import Path
from typing import Any

from appstack.controllers.etcdcluster import ETCD_CLUSTER
from appstack.runtime.client import Client
from appstack.runtime.resources import PVC, Resource
from appstack_testbed.pytest_plugin import RealNodeHandle
from tests.e2e.conftest import RunningOperator, events_until, until
from tests.e2e.etcd_load import snapshot_claim, wait_healthy
from tests.e2e.test_etcdcluster import report, seed

PV = Resource("", "v1", "PersistentVolume", "persistentvolumes", namespaced=False)
NAME = "sched"


def taken(count: int) -> Any:
    return lambda o: ((o.get("status") or {}).get("backupsTaken") or 0) >= count


def job_created_at(events: list[dict[str, Any]]) -> dict[str, datetime.datetime]:
    """When each snapshot Job was created, from the operator's ``Created`` Events."""
    out = {}
    for event in events:
        note = event.get("note") or ""
        if event.get("reason") == "Created" and note.startswith(f"Created Job {NAME}-backup-"):
            stamp = event.get("eventTime") or event["metadata"]["creationTimestamp"]
            out[note.rsplit(" ", 1)[-1]] = datetime.datetime.fromisoformat(
                stamp.replace("Z", "+00:00")
            )
    return out


async def test_a_schedule_every_minute_snapshots_on_the_minute_and_rotates(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    await client.create(PVC, snapshot_claim(namespace))
    backup = {"intervalMinutes": 60, "pvcName": "snapshots", "retention": 2}
    await client.create(ETCD_CLUSTER, seed(namespace, NAME, replicas=1, backup=backup))
    await wait_healthy(client, NAME, namespace, 1)
    first = await until(client, ETCD_CLUSTER, NAME, namespace, taken(1), 120, "snapshot 0")
    assert first["status"]["lastBackup"] == f"{NAME}-0.db"

    start = time.monotonic()
    every_minute = {"spec": {"backup": {"intervalMinutes": None, "schedule": "* * * * *"}}}
    await client.patch(ETCD_CLUSTER, NAME, every_minute, namespace=namespace)
    done = await until(client, ETCD_CLUSTER, NAME, namespace, taken(3), 200, "snapshots 1, 2")
    report("two snapshots on a schedule of every minute", time.monotonic() - start)
    assert done["status"]["backupsTaken"] == 3  # one a minute: no burst
    assert done["status"]["lastBackup"] == f"{NAME}-0.db"  # snapshot 2 overwrote snapshot 0

    jobs = {f"{NAME}-backup-1", f"{NAME}-backup-2"}
    events = await events_until(
        client, namespace, lambda es: jobs <= job_created_at(es).keys(), "their Created Events"
    )
    created = job_created_at(events)
    one, two = created[f"{NAME}-backup-1"], created[f"{NAME}-backup-2"]
    print(f"\n[etcd e2e] snapshot Jobs started {one.second} s and {two.second} s past the minute")
    assert (two - one).total_seconds() >= 50  # the next minute, not at once
    assert one.second <= 15
    assert two.second <= 15  # on the minute (an idle resync is every 30 s)

    volume = (await client.get(PVC, "snapshots", namespace))["spec"]["volumeName"]
    directory = Path((await client.get(PV, volume))["spec"]["hostPath"]["path"])
    files = sorted(p.name for p in directory.iterdir())
    assert files == [f"{NAME}-0.db", f"{NAME}-1.db"]  # retention 2: rotated
    assert all((directory / f).stat().st_size > 0 for f in files)
