"""Reconcile one EtcdCluster: Services and PodDisruptionBudget, then one step of the plan.

Each reconcile observes (pods and volumes from the cache, members from etcd, bounded by
the client's timeout), asks :func:`~appstack.controllers.etcdcluster.plan.next_step` for
one step, carries it out, writes status and requeues — soon after a change, a little
later while waiting (a learner catching up, a pod starting), every 30 s when idle to
keep member health current, or sooner at the moment the next snapshot is due. No
reconcile ever waits for etcd to converge. A lost quorum, and a disaster recovery under
way (opt-in), are :mod:`.recover`'s; member volumes follow ``retainOnDelete``
(:mod:`.volumes`). With ``spec.tls``, its Secrets are checked
first (:mod:`.tlsclient`): one missing or malformed stops the reconcile there
(``Available=False``, reason ``TLSSecretNotFound`` or ``TLSSecretInvalid``, one Warning
Event) and it looks again every few seconds; so does a cluster none of whose members
accepts the operator's TLS connection (``TLSHandshakeFailed``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
from typing import Any, ClassVar

import structlog

from appstack import __version__
from appstack.api.etcdcluster import (
    BackupRecord,
    BackupSpec,
    EtcdCluster,
    EtcdClusterSpec,
    EtcdClusterStatus,
)
from appstack.controllers.etcdcluster import (
    backup,
    backup_schedule,
    desired,
    maintenance,
    recover,
    status,
    tls,
)
from appstack.controllers.etcdcluster import volumes as volumes_
from appstack.controllers.etcdcluster.etcdapi import EtcdClient, EtcdError
from appstack.controllers.etcdcluster.observe import Observation, observe
from appstack.controllers.etcdcluster.plan import Step, next_step
from appstack.controllers.etcdcluster.resources import PDB
from appstack.controllers.etcdcluster.tlsclient import TLSSecrets
from appstack.controllers.util.meta import child_labels
from appstack.runtime import (
    JOB,
    POD,
    PVC,
    SERVICE,
    AlreadyExists,
    Cache,
    Client,
    EventRecorder,
    IndexFunc,
    NotFound,
    Resource,
    Result,
)
from appstack.sdk import (
    POD_INDEXERS,
    KindReconciler,
    KubeObject,
    Manifest,
    Problem,
    label_indexers,
    labelled,
    now_rfc3339,
    pods_of,
)
from appstack.sdk import to_wire as wire

log = structlog.get_logger("appstack.etcdcluster")

AFTER = {"Wait": 0.5, "Degraded": 5.0, "Done": 30.0}
ETCD_TIMEOUT = 2.0  # seconds per call to a member


class EtcdClusterReconciler(KindReconciler[EtcdClusterSpec]):
    """EtcdCluster → Services, PDB, member pods and volumes, through etcd's own API."""

    kind = EtcdCluster.KIND
    owns = (SERVICE, PDB, POD, PVC, JOB)
    indexers: ClassVar[dict[Resource, dict[str, IndexFunc]]] = {
        **POD_INDEXERS,
        **label_indexers(PVC),
    }

    def __init__(
        self,
        client: Client,
        cache: Cache,
        recorder: EventRecorder,
        backup_image: str = f"appstack:{__version__}",
    ) -> None:
        super().__init__(client, cache, recorder)
        self.backup_image = backup_image  # the operator's image: S3 uploads and downloads
        self.tls_secrets = TLSSecrets(client)
        self.recoverer = recover.Recoverer(client, cache, self.writer)

    def invalid_status(self, obj: KubeObject, problem: Problem) -> EtcdClusterStatus:
        return status.invalid(obj, problem, now_rfc3339())

    async def apply(self, obj: KubeObject, spec: EtcdClusterSpec) -> Result | None:
        _, problems = await self.writer.sync_all(obj, desired.children(obj, spec))
        for problem in problems:
            await self.writer.report(obj, problem)
        meta = obj["metadata"]
        mine = desired.selector(meta["name"])
        pods = [p for p in pods_of(self.cache, meta["namespace"], mine) if _owned(p, obj)]
        volumes = [v for v in labelled(self.cache, PVC, meta["namespace"], mine) if _owned(v, obj)]
        await volumes_.sync_owners(self.client, obj, spec, volumes)
        checked = await self.tls_secrets.check(meta["namespace"], spec.tls)
        if checked.problem is not None:  # members cannot start, or cannot be reached
            return await self._blocked(obj, checked.problem)
        guard = self.client.write_guard  # membership changes pass the leader fence too
        async with EtcdClient(timeout=ETCD_TIMEOUT, tls=checked.context, guard=guard) as etcd:
            seen = await observe(etcd, obj, spec, pods, volumes)
            refused = tls.handshake_problem(seen.errors, answered=len(seen.statuses))
            if refused is not None:
                return await self._blocked(obj, refused)
            spec, seen, quota = self._quota_held(spec, seen)
            step = next_step(seen.seen)
            conflict: Problem | None = None
            # quorum lost: a disaster recovery, or why not (hopeless: it is impossible)
            obj, step, hopeless = await self.recoverer.step(obj, spec, seen, step)
            log.info("etcd step", cluster=meta["name"], step=step.kind, reason=step.reason)
            try:
                await self._label_voters(seen)
                await self.execute(etcd, obj, spec, seen, step)
            except EtcdError as error:  # not now (e.g. "unhealthy cluster" after a start)
                step = Step("Wait", f"{step.kind} {step.pod}: {error}")
            except ChildConflict as taken:  # a name taken by someone else's object
                conflict = taken.problem
                step = Step("Wait", conflict.message)
        observed = status.from_observation(obj, seen, step, now_rfc3339())
        observed = recover.with_recovery(obj, observed, seen, step, now_rfc3339())
        await self.recoverer.announce(obj, observed)
        if hopeless is not None:
            observed = recover.impossible(obj, observed, hopeless, now_rfc3339())
        after = AFTER.get(step.kind, 0.2)
        if conflict is None and step.kind == "Done":  # defragmentation, NOSPACE
            async with EtcdClient(timeout=ETCD_TIMEOUT, tls=checked.context, guard=guard) as etcd:
                observed, conflict, upkeep = await self._maintain(etcd, obj, spec, seen, observed)
            after = min(after, upkeep)
        conflict = conflict or quota
        if conflict is not None:  # the cluster may well serve: only Degraded says it
            if status.last_said(obj, "Degraded", "True") != (conflict.reason, conflict.message):
                await self.writer.report(obj, conflict)
            observed = status.with_problem(obj, observed, conflict, now_rfc3339())
            after = AFTER["Degraded"]
        if spec.backup is not None:
            observed, wait = await self._backups(
                obj, spec, spec.backup, seen, step, observed=observed
            )
            after = min(after, wait)
        await self.writer.write_status(obj, observed)
        return Result(requeue_after=after)

    async def _backups(
        self,
        obj: KubeObject,
        spec: EtcdClusterSpec,
        plan: BackupSpec,
        seen: Observation,
        step: Step,
        *,
        observed: EtcdClusterStatus,
    ) -> tuple[EtcdClusterStatus, float]:
        """The status with the snapshots taken, and the seconds until the next one is due
        (requeued for exactly that moment: no polling for it)."""
        snapshots = await self._backup(obj, spec, plan, seen, step)
        observed = status.with_backups(observed, snapshots)
        last, now = observed.last_backup_time, datetime.datetime.now(datetime.timezone.utc)
        wait = backup_schedule.wait(plan, last, obj["metadata"]["creationTimestamp"], now)
        retry = backup.retry_after(
            observed.last_backup_error, observed.last_backup_failure_time, now
        )
        if retry > 0:  # a failed snapshot is tried again after a pause, not at once
            wait = max(wait or 0.0, retry)
        if observed.last_backup_error:  # said by its Event when it failed
            failed = Problem("BackupFailed", observed.last_backup_error)
            observed = status.with_problem(obj, observed, failed, now_rfc3339())
        return observed, float("inf") if wait is None else wait

    def _quota_held(
        self, spec: EtcdClusterSpec, seen: Observation
    ) -> tuple[EtcdClusterSpec, Observation, Problem | None]:
        """A ``quotaBackendBytes`` the database already exceeds is not applied: members
        keep (and new members get) the quota the members run with, reported."""
        why = maintenance.quota_problem(spec, seen.statuses)
        if not why:
            return spec, seen, None
        running = [desired.pod_quota(p) for p in seen.pods.values()]
        kept = max((q for q in running if q), default=None)
        spec = spec.model_copy(update={"quota_backend_bytes": kept})
        wanted = dataclasses.replace(seen.seen, config=desired.config_digest(spec))
        return spec, dataclasses.replace(seen, seen=wanted), Problem("QuotaBelowDatabaseSize", why)

    async def _maintain(
        self,
        etcd: EtcdClient,
        obj: KubeObject,
        spec: EtcdClusterSpec,
        seen: Observation,
        observed: EtcdClusterStatus,
    ) -> tuple[EtcdClusterStatus, Problem | None, float]:
        """A healthy cluster's upkeep: the NOSPACE alarm (reported, or recovered when the
        user opted in), else a due defragmentation. The status, a problem to report, and
        the seconds until the next scheduled defragmentation."""
        now = datetime.datetime.now(datetime.timezone.utc)
        old = observed.defragmentation
        last = old.last_time if old else None
        wait = maintenance.due(spec, last, obj["metadata"]["creationTimestamp"], now)
        endpoints = {p: seen.endpoint(p) for p in seen.statuses}
        if maintenance.NOSPACE in (observed.alarms or []):
            holds = max((s.db_size for s in seen.statuses.values()), default=0)
            said = (
                f"etcd raised the NOSPACE alarm: the database ({maintenance.mib(holds)}) "
                f"reached quotaBackendBytes ({maintenance.mib(spec.quota)}) and every write "
                "is refused"
            )
            if not spec.recover_from_no_space:
                advice = (
                    "; set recoverFromNoSpace: true to compact, defragment and disarm it, or "
                    "raise quotaBackendBytes"
                )
                return observed, Problem("NoSpace", said + advice), AFTER["Degraded"]
            await self.writer.event(obj, "Warning", "NoSpace", said + "; recovering")
            recovery = await maintenance.recover_no_space(etcd, endpoints, spec.quota)
            observed.defragmentation = maintenance.run_status(recovery.run, now_rfc3339(), old)
            if not recovery.disarmed:
                return observed, Problem("NoSpace", f"{said}; {recovery.why}"), AFTER["Degraded"]
            observed.alarms = []
            done = maintenance.summary(recovery.run)
            note = f"Compacted, defragmented ({done}) and disarmed NOSPACE: writes resume"
            await self.writer.event(obj, "Normal", "NoSpaceRecovered", note)
            return observed, None, AFTER["Wait"]
        if spec.defragmentation is None or wait > 0:
            return observed, None, min(wait, maintenance.check_after(spec, seen.statuses))
        run = await maintenance.defragment(etcd, endpoints, spec.defragmentation.free_space_percent)
        observed.defragmentation = maintenance.run_status(run, now_rfc3339(), old)
        if run.stopped:
            note = f"defragmentation {run.stopped}; {maintenance.summary(run)}"
            await self.writer.event(obj, "Warning", "DefragmentationStopped", note)
            return observed, None, AFTER["Degraded"]
        await self.writer.event(obj, "Normal", "Defragmented", maintenance.summary(run))
        next_wait = maintenance.due(spec, now_rfc3339(), obj["metadata"]["creationTimestamp"], now)
        return observed, None, next_wait

    async def _blocked(self, obj: KubeObject, problem: Problem) -> Result:
        """Stop here: the user must fix ``problem`` (said once, then looked at again)."""
        if status.last_said(obj, status.UP, "False") != (problem.reason, problem.message):
            await self.writer.report(obj, problem)
        await self.writer.write_status(obj, status.blocked(obj, problem, now_rfc3339()))
        return Result(requeue_after=AFTER["Degraded"])

    async def _label_voters(self, seen: Observation) -> None:
        """Voting members' pods carry ``etcd-voter=true`` (the client Service's selector)."""
        for member in seen.seen.members or []:
            pod = seen.pods.get(member.pod)
            want = "false" if member.learner else "true"
            if pod is None or (pod["metadata"].get("labels") or {}).get(desired.VOTER) == want:
                continue
            patch = {"metadata": {"labels": {desired.VOTER: want}}}
            await self.client.patch(POD, member.pod, patch, namespace=pod["metadata"]["namespace"])

    async def execute(
        self,
        etcd: EtcdClient,
        obj: KubeObject,
        spec: EtcdClusterSpec,
        seen: Observation,
        step: Step,
    ) -> None:
        leader = seen.leader_endpoint() or ""
        if step.kind == "Bootstrap":
            names = seen.seen.bootstrap_names or step.pods
            initial = {n: desired.peer_url(obj, n) for n in names}
            for pod in step.pods:
                await self._create_member(obj, spec, pod, initial, new=True, voter=True)
        elif step.kind == "CreatePod":
            member = next(
                (
                    m
                    for m in seen.members or []
                    if m.peer_urls and desired.pod_of_peer_url(obj, m.peer_urls[0]) == step.pod
                ),
                None,
            )
            voter = member is not None and not member.is_learner
            await self._create_member(
                obj, spec, step.pod, _initial(obj, seen, step.pod), new=False, voter=voter
            )
        elif step.kind == "AddMember":
            await self._names_free(obj, step.pod)  # before etcd learns of the member
            added = await etcd.add_member(leader, desired.peer_url(obj, step.pod))
            await self.writer.event(
                obj, "Normal", "MemberAdded", f"Added learner {step.pod} ({added.id:x})"
            )
            await self._create_member(
                obj, spec, step.pod, _initial(obj, seen, step.pod), new=False, voter=False
            )
        elif step.kind == "PromoteMember":
            await etcd.promote_member(leader, step.member)
            await self.writer.event(obj, "Normal", "MemberPromoted", f"Promoted {step.pod}")
        elif step.kind == "RemoveMember":
            await etcd.remove_member(leader, step.member)
            await self.writer.event(
                obj,
                "Normal",
                "MemberRemoved",
                f"Removed member {step.pod} ({step.member:x}): {step.reason}",
            )
        elif step.kind == "MoveLeader":
            await etcd.move_leader(leader, step.member)
            await self.writer.event(obj, "Normal", "LeaderMoved", step.reason)
        elif step.kind == "DeletePod":
            await self._delete(obj, POD, seen.pods[step.pod], step.reason)
        elif step.kind == "DeleteVolume":
            volume = self.cache.get(PVC, f"{obj['metadata']['namespace']}/data-{step.pod}")
            if volume is not None:
                await self._delete(obj, PVC, volume, step.reason)
        elif step.kind == "Degraded":
            await self.writer.report_new(obj, Problem("QuorumLost", step.reason))
        elif step.kind == "TearDown":  # a disaster recovery (recover.py): the lost cluster
            await self.recoverer.tear_down(obj, seen, step)

    async def _create_member(
        self,
        obj: KubeObject,
        spec: EtcdClusterSpec,
        pod: str,
        initial: dict[str, str],
        *,
        new: bool,
        voter: bool,
    ) -> None:
        await self._names_free(obj, pod)
        await self._create(obj, PVC, desired.volume(obj, spec, pod))
        want = desired.member_pod(obj, spec, pod, initial, new_cluster=new, voter=voter)
        source = recover.restore_source(obj, spec)  # spec.restore, or a recovery's snapshot
        if new and source is not None:  # a bootstrap member starts from the snapshot
            want = backup.with_restore(want, obj, spec, source, self.backup_image)
        await self._create(obj, POD, want)

    async def _backup(
        self,
        obj: KubeObject,
        spec: EtcdClusterSpec,
        plan: BackupSpec,
        seen: Observation,
        step: Step,
    ) -> EtcdClusterStatus:
        """Start a snapshot Job when one is due or asked for (the annotation
        :data:`~.backup.REQUEST`), or record the outcome of the running one (the snapshot
        fields of the status: none while nothing new happened)."""
        old = obj.get("status") or {}
        meta = obj["metadata"]
        n = int(old.get("backupsTaken") or 0)
        job = self.cache.get(JOB, f"{meta['namespace']}/{backup.job_name(meta['name'], n)}")
        now = datetime.datetime.now(datetime.timezone.utc)
        leader = next((m.pod for m in seen.seen.members or [] if m.id == seen.seen.leader), "")
        request = backup.pending_request(obj)
        if job is None:
            failed = old.get("lastBackupError"), old.get("lastBackupFailureTime")
            paused = not request and backup.retry_after(*failed, now) > 0  # asked: at once
            if step.kind != "Done" or not leader or paused:
                return EtcdClusterStatus()
            created = meta["creationTimestamp"]
            if request or backup_schedule.due(plan, old.get("lastBackupTime"), created, now):
                want = backup.backup_job(
                    obj, spec, plan, n, leader, image=self.backup_image, at=now
                )
                if request:
                    want["metadata"]["annotations"][backup.REQUEST] = request
                await self._create(obj, JOB, want)
            return EtcdClusterStatus()
        result = backup.outcome(job)
        if result == "Running":
            return EtcdClusterStatus()
        annotations = job["metadata"].get("annotations") or {}
        name = annotations.get(backup.SNAPSHOT) or backup.file_name(meta["name"], n, plan.retention)
        asked = annotations.get(backup.REQUEST)
        why = backup.failure(self._job_pods(obj, job)) if result == "Failed" else ""
        await self._delete(obj, JOB, job, f"snapshot {n} {result.lower()}")
        handled = EtcdClusterStatus(backup_request=asked) if asked else EtcdClusterStatus()
        if result == "Failed":
            note = f"snapshot {n} to {backup.location(plan, name)} failed: {why}"
            await self.writer.event(obj, "Warning", "BackupFailed", note)
            handled.last_backup_error = note
            handled.last_backup_failure_time = now_rfc3339()
            return handled
        done = (job.get("status") or {}).get("completionTime") or now_rfc3339()
        await self.writer.event(
            obj, "Normal", "BackupTaken", f"Saved snapshot {backup.location(plan, name)}"
        )
        record = BackupRecord(
            name=name, location=backup.location(plan, name), time=done, requested=bool(asked)
        )
        listed = [record, *(BackupRecord.model_validate(b) for b in old.get("backups") or [])]
        handled.backups_taken = n + 1
        handled.last_backup, handled.last_backup_time = name, done
        handled.backups = listed[: backup.LISTED]
        handled.last_backup_error = ""  # cleared
        return handled

    def _job_pods(self, obj: KubeObject, job: dict[str, Any]) -> list[dict[str, Any]]:
        """The cached pods the snapshot Job controls (by its UID, not only its labels)."""
        uid = job["metadata"].get("uid")
        mine = child_labels(obj["metadata"]["name"], "etcd-backup")
        return [
            p
            for p in pods_of(self.cache, obj["metadata"]["namespace"], mine)
            if any(o.get("uid") == uid for o in p["metadata"].get("ownerReferences") or [])
        ]

    async def _names_free(self, obj: KubeObject, pod: str) -> None:
        """:class:`ChildConflict` if member ``pod``'s Pod or volume exists and is not ours
        (another stack's, a tenant's): never adopted, never mounted (issue #28 P1.4)."""
        namespace = obj["metadata"]["namespace"]
        for resource, name in ((PVC, f"data-{pod}"), (POD, pod)):
            try:
                found = await self.client.get(resource, name, namespace)
            except NotFound:
                continue
            if not _owned(found, obj):
                raise ChildConflict(self.writer.conflict(resource, name))

    async def _create(self, obj: KubeObject, resource: Any, want: Manifest) -> None:
        try:
            await self.client.create(resource, wire(want))
        except AlreadyExists:
            name = want["metadata"]["name"]
            found = await self.client.get(resource, name, want["metadata"]["namespace"])
            if not _owned(found, obj):  # taken meanwhile
                raise ChildConflict(self.writer.conflict(resource, name)) from None
            await self.writer.claim(resource, found)  # sharded: in this shard's cache
            return
        name = want["metadata"]["name"]
        await self.writer.event(obj, "Normal", "Created", f"Created {resource.kind} {name}")

    async def _delete(
        self, obj: KubeObject, resource: Any, child: dict[str, Any], why: str
    ) -> None:
        if resource == PVC:  # a retained volume is made ours again first
            await volumes_.delete(self.client, self.writer, obj, child, why)
            return
        with contextlib.suppress(NotFound):
            await self.writer.prune(obj, resource, child, why)


def _initial(obj: KubeObject, seen: Observation, pod: str) -> dict[str, str]:
    """``--initial-cluster`` of a member joining a running cluster: the started members
    and itself."""
    initial = {m.name: m.peer_urls[0] for m in seen.members or [] if m.name and m.peer_urls}
    return {**initial, pod: desired.peer_url(obj, pod)}


def _owned(child: dict[str, Any], obj: KubeObject) -> bool:
    return desired.owns_volume(obj, child)


class ChildConflict(Exception):
    """A member's Pod or volume name is taken by an object this cluster does not control."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem
