"""Carrying out an EtcdCluster's disaster recovery (what :mod:`.recovery` decides), for the
reconciler: :class:`Recoverer`.

A recovery is recorded in ``status.recovery`` before anything is deleted, and each phase
is picked up again from there by the next reconcile (level-based):

1. ``TearingDown`` — a Warning Event ``DisasterRecovery`` states the snapshot and the data
   lost; every member pod and volume is deleted (the survivors' data is the lost cluster's);
2. ``Restoring`` — once none is left, the cluster ID and member list are dropped from
   status, so the plan bootstraps a new cluster whose members first restore the snapshot
   (:func:`.backup.with_restore`, the machinery of ``spec.restore``) under a new token;
3. ``Recovered`` — all members healthy: a Normal Event ``Recovered`` with the time it took.

Every write goes through the operator's client, so through the leader fence
(``Client.write_guard``): a replica that may have lost the Lease deletes nothing. The
fence is also asked once before the first deletion of a recovery.
"""

from __future__ import annotations

import contextlib
import datetime

from appstack.api.etcdcluster import EtcdClusterSpec, EtcdClusterStatus, RestoreSpec
from appstack.api.etcdcluster_recovery import RecoveryStatus
from appstack.controllers.etcdcluster import desired, recovery, status, volumes
from appstack.controllers.etcdcluster.backup_schedule import parse_time
from appstack.controllers.etcdcluster.observe import Observation
from appstack.controllers.etcdcluster.plan import Step
from appstack.runtime import POD, PVC, Cache, Client, NotFound
from appstack.sdk import ChildWriter, KubeObject, Problem, as_object

IMPOSSIBLE = "RecoveryImpossible"


def phase(obj: KubeObject) -> str:
    return str(((obj.get("status") or {}).get("recovery") or {}).get("phase") or "")


def restore_source(obj: KubeObject, spec: EtcdClusterSpec) -> RestoreSpec | None:
    """The snapshot new bootstrap members start from: the recovery's while ``Restoring``,
    else ``spec.restore``."""
    record = (obj.get("status") or {}).get("recovery") or {}
    if record.get("phase") == "Restoring" and spec.backup is not None:
        target = spec.backup.s3
        if target is not None:  # the newest object the backups put in the store
            s3 = {**target.to_dict(), "key": record["snapshot"]}
            return RestoreSpec.model_validate({"s3": s3})
        return RestoreSpec.model_validate(
            {"pvcName": spec.backup.pvc_name, "path": record["snapshot"]}
        )
    return spec.restore


def _stamp(at: datetime.datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


class Recoverer:
    """Decides on a lost quorum and walks a recovery through its phases."""

    def __init__(self, client: Client, cache: Cache, writer: ChildWriter) -> None:
        self.client = client
        self.cache = cache
        self.writer = writer

    async def step(
        self, obj: KubeObject, spec: EtcdClusterSpec, seen: Observation, step: Step
    ) -> tuple[KubeObject, Step, Problem | None]:
        """The plan's ``step``, or the step of a recovery under way, or what a lost quorum
        leads to; ``obj`` as written when a recovery starts; the problem when recovery is
        impossible."""
        if phase(obj) == "TearingDown":
            return obj, tear_down_step(seen), None
        if step.kind != "Degraded":
            return obj, step, None
        now = datetime.datetime.now(datetime.timezone.utc)
        step, hopeless = await self.quorum_lost(obj, spec, step, now)
        if step.kind == "TearDown":  # started: its record was just written
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            written = self.writer.writes.get(self.writer.owner_kind, key)
            obj = obj if written is None else as_object(written)
            step = tear_down_step(seen)
        return obj, step, hopeless

    async def tear_down(self, obj: KubeObject, seen: Observation, step: Step) -> None:
        """Delete the lost cluster's member pods and volumes named by ``step``."""
        namespace = obj["metadata"]["namespace"]
        for pod in step.pods:
            found = seen.pods.get(pod)
            if found is not None and not found["metadata"].get("deletionTimestamp"):
                with contextlib.suppress(NotFound):
                    await self.writer.prune(obj, POD, found, step.reason)
            volume = self.cache.get(PVC, f"{namespace}/data-{pod}")
            if (
                volume is not None
                and desired.owns_volume(obj, volume)
                and not volume["metadata"].get("deletionTimestamp")
            ):
                await volumes.delete(self.client, self.writer, obj, volume, step.reason)

    async def quorum_lost(
        self, obj: KubeObject, spec: EtcdClusterSpec, step: Step, now: datetime.datetime
    ) -> tuple[Step, Problem | None]:
        """The step for a lost quorum, starting a recovery when :func:`.recovery.decide`
        says so; with the problem to report when recovery is impossible."""
        old = obj.get("status") or {}
        since = parse_time(old.get("quorumLostSince") or _stamp(now))
        snapshot = recovery.newest_snapshot(old)
        decision = recovery.decide(spec.disaster_recovery, since, now, snapshot)
        if decision.kind == "Impossible":
            problem = Problem(IMPOSSIBLE, f"{step.reason}; {decision.reason}")
            if status.last_said(obj, "Degraded", "True") != (problem.reason, problem.message):
                await self.writer.report(obj, problem)
            return Step("Degraded", problem.message), problem
        if decision.kind != "Recover" or decision.snapshot is None:
            return Step("Degraded", f"{step.reason}; {decision.reason}"), None
        if self.client.write_guard is not None:
            self.client.write_guard()  # raises unless still the leader
        taken = decision.snapshot
        record = RecoveryStatus(
            phase="TearingDown",
            count=int((old.get("recovery") or {}).get("count") or 0) + 1,
            snapshot=taken.name,
            snapshot_time=_stamp(taken.time),
            data_loss_seconds=int((now - taken.time).total_seconds()),
            quorum_lost_since=_stamp(since),
            started_time=_stamp(now),
        )
        # said before anything is deleted: a crash from here on resumes the recovery
        written = EtcdClusterStatus.model_validate(old)
        written.recovery = record
        await self.writer.write_status(obj, written)
        await self.writer.event(obj, "Warning", "DisasterRecovery", decision.reason)
        return Step("TearDown", decision.reason), None

    async def announce(self, obj: KubeObject, observed: EtcdClusterStatus) -> None:
        """A Normal Event ``Recovered`` when a recovery has just finished."""
        was = phase(obj)
        record = observed.recovery or RecoveryStatus()
        if was == "Restoring" and record.phase == "Recovered":
            note = (
                f"Recovered from snapshot {record.snapshot} in "
                f"{record.seconds_to_recover}s; writes in the {record.data_loss_seconds}s "
                f"before the recovery started (after {record.snapshot_time}) are lost"
            )
            await self.writer.event(obj, "Normal", "Recovered", note)


def tear_down_step(seen: Observation) -> Step:
    """``TearingDown``: delete the lost cluster's pods and volumes (a volume goes once its
    pod has), wait until none is left, then restore."""
    pods = {p for p, v in seen.seen.pods.items() if not v.deleting}
    pods |= {v.removeprefix("data-") for v, going in seen.seen.volumes.items() if not going}
    if pods:
        names = ", ".join(sorted(pods))
        return Step("TearDown", f"deleting the lost cluster's {names}", pods=tuple(sorted(pods)))
    if seen.seen.pods or seen.seen.volumes:
        return Step("Wait", "waiting for the lost members and volumes to go")
    return Step("Restore", "the lost cluster is gone; restoring the snapshot")


def with_recovery(
    obj: KubeObject, observed: EtcdClusterStatus, seen: Observation, step: Step, now: str
) -> EtcdClusterStatus:
    """``observed`` status with the recovery's fields: ``quorumLostSince``, the phase moved
    on (``Restoring`` when the lost cluster is gone, ``Recovered`` when healthy again), and
    while restoring no cluster ID or members of the lost cluster."""
    old = obj.get("status") or {}
    out = observed.model_copy()
    known = old.get("recovery")
    record = RecoveryStatus.model_validate(known) if known else None
    since = recovery.lost_since(old, step.kind == "Degraded", bool(seen.seen.leader), now)
    going = record is not None and record.phase in ("TearingDown", "Restoring")
    if since is not None and not going:
        out.quorum_lost_since = since
    elif "quorumLostSince" in old:
        out.quorum_lost_since = None  # set to None: removed (the merge patch says null)
    if step.kind == "Restore":
        record = record or RecoveryStatus()
        record.phase = "Restoring"
    elif record is not None and record.phase == "Restoring" and step.kind == "Done":
        started = parse_time(record.started_time or now)
        record.phase = "Recovered"
        record.recovered_time = now
        record.seconds_to_recover = int((parse_time(now) - started).total_seconds())
    if record is not None:
        out.recovery = record
    if record is not None and record.phase in ("TearingDown", "Restoring") and not seen.seen.leader:
        out.members, out.replicas = [], 0  # the lost cluster's, not the new one's
        out.cluster_id = None  # removed if written, else left out
    return out


def impossible(
    obj: KubeObject, observed: EtcdClusterStatus, problem: Problem, now: str
) -> EtcdClusterStatus:
    """``observed`` with ``Available=False`` and ``Degraded=True`` for ``problem`` (reason
    ``RecoveryImpossible``)."""
    out = status.with_problem(obj, observed, problem, now)
    out.conditions = [
        c.model_copy(update={"reason": problem.reason, "message": problem.message})
        if c.type == status.UP
        else c
        for c in out.conditions or []
    ]
    return out
