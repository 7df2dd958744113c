"""Day-2 maintenance of a running EtcdCluster: defragmentation on a schedule, the NOSPACE
alarm reported and (opt-in, ``recoverFromNoSpace``) recovered, and a quota below what the
database holds refused. Used by the reconciler once the plan has nothing else to do (step
``Done``: every member healthy, the cluster at its wanted size), so it never runs during a
scale, restart or upgrade.

Defragmentation goes one member at a time, followers first (by name) and the leader last;
before each member every member is asked again and the run stops, saying why, as soon as
one does not answer, reports a failure or disagrees on the leader. A member is skipped
when less than ``freeSpacePercent`` of its file is free. A NOSPACE recovery compacts the
key space to the current revision, defragments every member, and disarms the alarm only
when the live data fits well within the quota (otherwise it says to raise it): writes
resume. A cluster whose database nears its quota is looked at every few seconds
(:func:`check_after`), so the alarm is reported soon after etcd raises it. The pure parts
(:func:`order`, :func:`worth`, :func:`check_after`, :func:`quota_problem`, :func:`summary`)
are unit-tested; the rest runs against real etcd members.
"""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass, field

from appstack.api.cron_times import next_time
from appstack.api.etcdcluster import DefragmentationStatus, DefragmentedMember, EtcdClusterSpec
from appstack.controllers.etcdcluster.backup_schedule import parse_time
from appstack.controllers.etcdcluster.etcdapi import EndpointStatus, EtcdClient, EtcdError

DEFRAG_TIMEOUT = 300.0  # seconds one member may take (it serves nothing meanwhile)
NOSPACE = "NOSPACE"
#: A recovery disarms only when the live data leaves this share of the quota free.
HEADROOM = 0.2
#: A member's database file this share of the quota or more: the cluster is looked at every
#: NEAR_QUOTA_CHECK seconds instead of the idle 30, so NOSPACE is reported within seconds.
NEAR_QUOTA = 0.8
NEAR_QUOTA_CHECK = 5.0


@dataclass(frozen=True)
class Run:
    """A defragmentation run: the members done, in order, and why it stopped early."""

    members: list[DefragmentedMember] = field(default_factory=list)
    stopped: str = ""

    @property
    def reclaimed(self) -> int:
        return sum(max(0, m.before_bytes - m.after_bytes) for m in self.members)


def order(statuses: dict[str, EndpointStatus], leader: int) -> list[str]:
    """Member pods in defragmentation order: followers by name, then the leader."""
    followers = sorted(p for p, s in statuses.items() if s.member_id != leader)
    return followers + sorted(p for p, s in statuses.items() if s.member_id == leader)


def worth(status: EndpointStatus, percent: int) -> bool:
    """Whether at least ``percent`` % of the member's database file is free."""
    size = status.db_size
    return size > 0 and (size - status.db_size_in_use) * 100 >= percent * size


def mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


def summary(run: Run) -> str:
    """``etcd-1 30.0 → 2.1 MiB, ...; reclaimed 27.9 MiB`` (an Event's message)."""
    each = ", ".join(f"{m.name} {mib(m.before_bytes)} → {mib(m.after_bytes)}" for m in run.members)
    return f"{each or 'no member needed it'}; reclaimed {mib(run.reclaimed)}"


def due(spec: EtcdClusterSpec, last: str | None, created: str, now: datetime.datetime) -> float:
    """Seconds until the next scheduled defragmentation (<= 0: due; inf: never)."""
    if spec.defragmentation is None:
        return float("inf")
    at = next_time(spec.defragmentation.schedule, parse_time(last or created))
    return float("inf") if at is None else (at - now).total_seconds()


def check_after(spec: EtcdClusterSpec, statuses: dict[str, EndpointStatus]) -> float:
    """Seconds until a healthy cluster should be looked at again for its quota: soon when a
    member's database file (what etcd compares with the quota) holds ``NEAR_QUOTA`` of it or
    more, otherwise never on this account (inf)."""
    size = max((s.db_size for s in statuses.values()), default=0)
    return NEAR_QUOTA_CHECK if size >= NEAR_QUOTA * spec.quota else float("inf")


def quota_problem(spec: EtcdClusterSpec, statuses: dict[str, EndpointStatus]) -> str:
    """Why ``quotaBackendBytes`` cannot be applied ("" when it can): below the bytes the
    database holds, the members would raise NOSPACE at their first write."""
    holds = max((s.db_size_in_use for s in statuses.values()), default=0)
    if spec.quota_backend_bytes is None or spec.quota_backend_bytes > holds:
        return ""
    return (
        f"quotaBackendBytes {spec.quota_backend_bytes} ({mib(spec.quota_backend_bytes)}) is "
        f"not above the {holds} bytes ({mib(holds)}) the database holds: members keep their "
        "quota; compact and defragment first, or choose a larger one"
    )


async def _healthy(
    etcd: EtcdClient, endpoints: dict[str, str]
) -> tuple[dict[str, EndpointStatus], str]:
    """Every member's status, and "" when all answer with no failure and one leader."""
    answers = await asyncio.gather(
        *(etcd.status(url) for url in endpoints.values()), return_exceptions=True
    )
    statuses: dict[str, EndpointStatus] = {}
    for pod, answer in zip(endpoints, answers, strict=True):
        if isinstance(answer, BaseException):
            return statuses, f"member {pod} does not answer: {answer}"
        if answer.failures:
            return statuses, f"member {pod} reports {'; '.join(answer.failures)}"
        statuses[pod] = answer
    leaders = {s.leader for s in statuses.values()}
    if len(leaders) != 1 or 0 in leaders:
        return statuses, "the members do not agree on a leader"
    return statuses, ""


async def defragment(etcd: EtcdClient, endpoints: dict[str, str], percent: int) -> Run:
    """Defragment the members at ``endpoints`` (pod -> client URL) that are worth it, one
    at a time, followers first, while every member stays healthy."""
    statuses, problem = await _healthy(etcd, endpoints)
    if problem:
        return Run(stopped=problem)
    done: list[DefragmentedMember] = []
    for pod in order(statuses, next(iter(statuses.values())).leader):
        statuses, problem = await _healthy(etcd, endpoints)
        if problem:
            return Run(done, f"stopped before {pod}: {problem}")
        before = statuses[pod]
        if not worth(before, percent):
            continue
        try:
            await etcd.defragment(endpoints[pod], DEFRAG_TIMEOUT)
            after = await etcd.status(endpoints[pod])
        except EtcdError as error:
            return Run(done, f"stopped at {pod}: {error}")
        done.append(
            DefragmentedMember(name=pod, before_bytes=before.db_size, after_bytes=after.db_size)
        )
    return Run(done)


@dataclass(frozen=True)
class Recovery:
    """A NOSPACE recovery: the defragmentation it ran, and whether writes resumed."""

    run: Run
    disarmed: bool
    why: str = ""  # why not, when not


async def recover_no_space(etcd: EtcdClient, endpoints: dict[str, str], quota: int) -> Recovery:
    """Compact to the current revision, defragment every member, disarm NOSPACE."""
    statuses, problem = await _healthy(etcd, endpoints)
    if problem:
        return Recovery(Run(stopped=problem), disarmed=False, why=problem)
    leader = next(s.leader for s in statuses.values())
    first = next(endpoints[p] for p, s in statuses.items() if s.member_id == leader)
    revision = max(s.revision for s in statuses.values())
    await etcd.compact(first, revision)
    run = await defragment(etcd, endpoints, percent=0)
    if run.stopped:
        return Recovery(run, disarmed=False, why=run.stopped)
    statuses, problem = await _healthy(etcd, endpoints)
    if problem:
        return Recovery(run, disarmed=False, why=problem)
    holds = max(s.db_size for s in statuses.values())
    if holds > quota * (1 - HEADROOM):
        why = (
            f"after compaction and defragmentation the database still holds {mib(holds)} of "
            f"the {mib(quota)} quota: raise quotaBackendBytes (or delete keys) to resume writes"
        )
        return Recovery(run, disarmed=False, why=why)
    for member, alarm in await etcd.alarms(first):
        if alarm == NOSPACE:
            await etcd.disarm(first, member, alarm)
    return Recovery(run, disarmed=True)


def run_status(run: Run, now: str, old: DefragmentationStatus | None) -> DefragmentationStatus:
    """The status of ``run``: complete (a new ``lastTime``) or stopped (the old one kept)."""
    if run.stopped:
        return DefragmentationStatus(
            last_time=old.last_time if old else None,
            reclaimed_bytes=run.reclaimed,
            members=run.members,
            result=run.stopped,
        )
    return DefragmentationStatus(
        last_time=now, reclaimed_bytes=run.reclaimed, members=run.members, result="Complete"
    )
