"""EtcdCluster day 2 end to end, with real etcd members on the test bed's real node:
a small quota filled until etcd raises NOSPACE (reported, then recovered once opted in,
writes resume, no acknowledged write lost), a scheduled defragmentation that shrinks every
member's database file while a writer keeps writing, new flags and env rolled one member
at a time, and the flags appstack owns refused at admission naming the flag. Timings are
printed (``-s``) and recorded in docs/reliability.md."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest

from appstack.controllers.etcdcluster import ETCD_CLUSTER
from appstack.controllers.etcdcluster.etcdapi import EtcdClient, EtcdError
from appstack.controllers.etcdcluster.maintenance import NEAR_QUOTA
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import POD
from appstack_testbed.pytest_plugin import RealNodeHandle
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator, events_of, until
from tests.e2e.etcd_load import Writer, retry, wait_healthy
from tests.e2e.test_etcdcluster import client_endpoint, is_pod_ready, report, seed

NAME = "my-etcd-cluster"
MIB = 1 << 20


def condition(obj: dict[str, Any], kind: str) -> tuple[str, str]:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return c["status"], c["reason"]
    return "", ""


async def event_notes(client: Client, namespace: str, reason: str) -> list[str]:
    """The notes of the cluster's ``reason`` Events, once there is one."""
    return [e.get("note", "") for e in await events_of(client, namespace, reason, about=NAME)]


async def member_pods(client: Client, namespace: str) -> list[dict[str, Any]]:
    pods, _ = await client.list(POD, namespace)
    return [p for p in pods if p["metadata"]["name"].startswith(f"{NAME}-")]


def members_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return (obj.get("status") or {}).get("members") or [{}]


async def refusal(endpoint: str) -> str:
    """What etcd answers a write with (a dropped pooled connection is asked again)."""
    async with EtcdClient(timeout=5) as etcd:
        for _ in range(10):
            try:
                await etcd.put(endpoint, "still", "refused")
            except EtcdError as error:
                if "Disconnected" not in str(error) and "Timeout" not in str(error):
                    return str(error)
                continue
            return "accepted"
    return "no answer"


async def still_serving(client: Client, namespace: str, endpoint: str) -> None:
    """Reads are still served through the client Service: every member stays ready past its
    readiness probe's failure window (3 probes 2 s apart), a NOSPACE alarm and all."""
    window = time.monotonic() + 8
    while time.monotonic() < window:
        members = await member_pods(client, namespace)
        assert len(members) == 3
        assert all(is_pod_ready(p) for p in members), [p["status"] for p in members]
        await asyncio.sleep(0.5)
    async with EtcdClient(timeout=5) as etcd:
        assert await retry(lambda: etcd.get(endpoint, "before")) == "filling"


@dataclass
class Ledger:
    """The writes of a fill: acknowledged ones, and every one not acknowledged (etcd may
    still apply it, even after a later one is acknowledged)."""

    acked: dict[str, str] = field(default_factory=dict)
    unsure: dict[str, set[str]] = field(default_factory=dict)

    async def put(self, etcd: EtcdClient, endpoint: str, key: str, value: str) -> str:
        """One write, recorded; etcd's NOSPACE refusal, else ""."""
        try:
            await etcd.put(endpoint, key, value)
        except EtcdError as error:  # a slow answer is not the refusal: go on
            # may have been applied: a timed-out put, and the put that crosses the quota
            # (etcd applies it, then answers NOSPACE: quotaApplierV3.Put)
            self.unsure.setdefault(key, set()).add(value)
            return str(error) if "database space exceeded" in str(error) else ""
        self.acked[key] = value
        return ""


async def fill(
    client: Client, namespace: str, endpoint: str, ledger: Ledger, quota: int
) -> tuple[str, bool]:
    """Four keys rewritten (their old revisions fill the file) until the largest member's
    file holds 82 % of the quota; once the operator's status shows it near the quota (from
    then on it looks every 5 s), on until etcd refuses a write: (its refusal, whether the
    operator saw the file near the quota first). bbolt grows a file by megabytes at once:
    now and then a member's file leaps from below 82 % to past the quota in one write, and
    etcd refuses it before the operator could have seen it near (then False)."""
    async with EtcdClient(timeout=10) as etcd:
        await retry(lambda: etcd.put(endpoint, "before", "filling"))
        ledger.acked["before"] = "filling"
        writes = ((f"k{i % 4}", f"{i}:" + "x" * (512 << 10)) for i in range(400))
        # each member asked at its pod IP: their files differ by a MiB or more
        members = [
            f"http://{p['status']['podIP']}:2379" for p in await member_pods(client, namespace)
        ]
        for key, value in writes:
            refused = await ledger.put(etcd, endpoint, key, value)
            sizes = [(await retry(partial(etcd.status, m))).db_size for m in members]
            if refused or max(sizes) >= 0.82 * quota:
                break
        if refused:
            print(f"[etcd e2e] the file leapt past the quota in one write: {sizes}")
            return refused, False
        await until(
            client,
            ETCD_CLUSTER,
            NAME,
            namespace,
            lambda o: max(m.get("dbSize") or 0 for m in members_of(o)) >= NEAR_QUOTA * quota,
            60,
            "a member's dbSize near the quota (NEAR_QUOTA) in status",
        )
        for key, value in writes:
            refused = await ledger.put(etcd, endpoint, key, value)
            if refused:
                return refused, True
    return "", True


async def test_nospace_is_reported_then_recovered_once_opted_in_losing_no_write(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    quota = 16 * MIB
    await client.create(ETCD_CLUSTER, seed(namespace, quotaBackendBytes=quota))
    await wait_healthy(client, NAME, namespace, 3)
    endpoint = client_endpoint(real_node, namespace)
    ledger = Ledger()
    acked, unsure = ledger.acked, ledger.unsure
    refused, watched = await fill(client, namespace, endpoint, ledger, quota)
    assert "database space exceeded" in refused
    start = time.monotonic()
    reported = await until(
        client,
        ETCD_CLUSTER,
        NAME,
        namespace,
        lambda o: condition(o, "Degraded") == ("True", "NoSpace"),
        60,
        "Degraded NoSpace",
    )
    took = time.monotonic() - start
    report("NOSPACE reported after the first refused write", took)
    # near its quota it is looked at every 5 s; a file that leapt past the quota unseen is
    # found at the next look of an idle cluster (every 30 s)
    assert took < (12 if watched else 40), (took, watched)
    assert reported["status"]["alarms"] == ["NOSPACE"]
    assert condition(reported, "Available")[0] == "True"  # reads still served
    warned = await event_notes(client, namespace, "NoSpace")
    assert "recoverFromNoSpace" in warned[0]
    # not opted in: nothing is done about it
    assert "database space exceeded" in await refusal(endpoint)
    await still_serving(client, namespace, endpoint)
    start = time.monotonic()
    await client.patch(
        ETCD_CLUSTER, NAME, {"spec": {"recoverFromNoSpace": True}}, namespace=namespace
    )
    recovered = await until(
        client,
        ETCD_CLUSTER,
        NAME,
        namespace,
        lambda o: (
            (o.get("status") or {}).get("alarms") == [] and condition(o, "Degraded")[0] == "False"
        ),
        120,
        "NOSPACE recovered",
    )
    report("NOSPACE recovered (compact, defragment 3 members, disarm)", time.monotonic() - start)
    done = recovered["status"]["defragmentation"]
    assert [m["name"] for m in done["members"]][-1] == recovered["status"]["leader"]
    assert all(m["afterBytes"] < m["beforeBytes"] // 2 for m in done["members"]), done
    notes = await event_notes(client, namespace, "NoSpaceRecovered")
    assert "writes resume" in notes[0]
    async with EtcdClient(timeout=5) as etcd:
        await retry(lambda: etcd.put(endpoint, "after", "resumed"))
        assert await etcd.get(endpoint, "after") == "resumed"
        read = {k: await retry(lambda k=k: etcd.get(endpoint, k)) for k in acked}
    lost = [k for k, v in acked.items() if read[k] != v and read[k] not in unsure.get(k, ())]
    assert lost == [], {k: ((read[k] or "")[:8], acked[k][:8]) for k in lost}
    print(f"[etcd e2e] acknowledged writes before NOSPACE: {len(acked)} keys, none lost")


async def test_a_scheduled_defragmentation_shrinks_every_member_while_writes_go_on(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    # periodic compaction every 5 s keeps little history: rewritten keys leave free space
    spec = {"compaction": {"mode": "periodic", "retention": "5s"}}
    await client.create(ETCD_CLUSTER, seed(namespace, **spec))
    await wait_healthy(client, NAME, namespace, 3)
    endpoint = client_endpoint(real_node, namespace)
    async with EtcdClient(timeout=10) as etcd:
        await retry(lambda: etcd.put(endpoint, "start", "1"))
        for i in range(40):
            await etcd.put(endpoint, f"big{i % 2}", "y" * (256 << 10))

    def freed(obj: dict[str, Any]) -> bool:  # compaction ran: most of each file is free
        members = (obj.get("status") or {}).get("members") or []
        return len(members) == 3 and all(
            m.get("dbSizeInUse", 1 << 40) * 2 < m.get("dbSize", 0) for m in members
        )

    # bbolt hands compacted pages back at the next write: the writer's first ones
    writer = Writer(endpoint).start()
    await until(client, ETCD_CLUSTER, NAME, namespace, lambda _: writer.acked > 20, 30, "writes")
    await until(client, ETCD_CLUSTER, NAME, namespace, freed, 120, "compacted (free space)")
    start = time.monotonic()
    # the schedule's first time after the cluster's creation is past: due at once
    schedule = {"defragmentation": {"schedule": "* * * * *", "freeSpacePercent": 30}}
    await client.patch(ETCD_CLUSTER, NAME, {"spec": schedule}, namespace=namespace)
    done = await until(
        client,
        ETCD_CLUSTER,
        NAME,
        namespace,
        lambda o: (
            ((o.get("status") or {}).get("defragmentation") or {}).get("result") == "Complete"
        ),
        120,
        "a complete defragmentation",
    )
    took = time.monotonic() - start
    await until(client, ETCD_CLUSTER, NAME, namespace, lambda _: writer.acked > 60, 30, "writes")
    await writer.stop()
    run = done["status"]["defragmentation"]
    assert len(run["members"]) == 3
    assert run["members"][-1]["name"] == done["status"]["leader"]
    assert all(m["afterBytes"] < m["beforeBytes"] for m in run["members"]), run
    assert run["reclaimedBytes"] > 4 * MIB
    notes = await event_notes(client, namespace, "Defragmented")
    assert "reclaimed" in notes[0]
    assert await writer.lost() == []
    report("scheduled defragmentation of 3 members", took)
    report("longest write stall during it", writer.longest_stall)
    print(f"[etcd e2e] reclaimed {run['reclaimedBytes'] / MIB:.1f} MiB: {notes[0]}")


async def test_new_flags_and_env_roll_one_member_at_a_time_and_owned_flags_are_refused(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    owned = seed(namespace, extraArgs={"data-dir": "/var/lib/other"})
    with pytest.raises(errors.Invalid) as refused:
        await client.create(ETCD_CLUSTER, owned)
    assert "extraArgs may not set a flag appstack owns: --data-dir" in refused.value.message
    env = [{"name": "ETCD_INITIAL_CLUSTER_STATE", "value": "new"}]
    with pytest.raises(errors.Invalid) as refused:
        await client.create(ETCD_CLUSTER, seed(namespace, env=env))
    assert (
        "env may not set a variable appstack owns: ETCD_INITIAL_CLUSTER_STATE"
        in refused.value.message
    )
    await client.create(ETCD_CLUSTER, seed(namespace))
    cluster, _ = await wait_healthy(client, NAME, namespace, 3)
    leader = cluster["status"]["leader"]
    writer = Writer(client_endpoint(real_node, namespace)).start()
    await until(client, ETCD_CLUSTER, NAME, namespace, lambda _: writer.acked > 20, 30, "writes")
    start = time.monotonic()
    change = {
        "extraArgs": {"snapshot-count": "5000"},
        "env": [{"name": "GOMAXPROCS", "value": "1"}],
    }
    await client.patch(ETCD_CLUSTER, NAME, {"spec": change}, namespace=namespace)

    async def pods() -> list[dict[str, Any]]:
        return [await client.get(POD, f"{NAME}-{i}", namespace) for i in range(3)]

    def rolled(found: list[dict[str, Any]]) -> bool:
        return all(
            "--snapshot-count=5000" in p["spec"]["containers"][0]["args"]
            and {"name": "GOMAXPROCS", "value": "1"} in p["spec"]["containers"][0]["env"]
            for p in found
        )

    found = await eventually(
        pods, rolled, timeout=240, what="every member restarted", retry_on=(errors.NotFound,)
    )
    await wait_healthy(client, NAME, namespace, 3, timeout=240)
    took = time.monotonic() - start
    await writer.stop()
    assert await writer.lost() == []
    # one at a time, the leader of the moment last
    created = {p["metadata"]["name"]: p["metadata"]["creationTimestamp"] for p in found}
    assert max(created, key=lambda n: created[n]) == leader, (created, leader)
    report("3 members restarted with new flags and env", took)
    report("longest write stall during the roll", writer.longest_stall)


async def test_a_quota_below_what_the_database_holds_is_refused_and_members_keep_theirs(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    await client.create(ETCD_CLUSTER, seed(namespace, quotaBackendBytes=64 * MIB))
    await wait_healthy(client, NAME, namespace, 3)
    endpoint = client_endpoint(real_node, namespace)
    async with EtcdClient(timeout=10) as etcd:
        await retry(lambda: etcd.put(endpoint, "start", "1"))
        for i in range(40):  # 20 MiB of live data
            await etcd.put(endpoint, f"live-{i}", "z" * (512 << 10))
    await client.patch(
        ETCD_CLUSTER, NAME, {"spec": {"quotaBackendBytes": 16 * MIB}}, namespace=namespace
    )
    refused = await until(
        client,
        ETCD_CLUSTER,
        NAME,
        namespace,
        lambda o: condition(o, "Degraded") == ("True", "QuotaBelowDatabaseSize"),
        60,
        "QuotaBelowDatabaseSize",
    )
    said = next(c for c in refused["status"]["conditions"] if c["type"] == "Degraded")
    assert "quotaBackendBytes 16777216" in said["message"]
    await event_notes(client, namespace, "QuotaBelowDatabaseSize")  # a Warning said it
    for i in range(3):  # nobody restarted with the quota the data would not fit in
        pod = await client.get(POD, f"{NAME}-{i}", namespace)
        assert f"--quota-backend-bytes={64 * MIB}" in pod["spec"]["containers"][0]["args"]
    assert condition(refused, "Available")[0] == "True"
