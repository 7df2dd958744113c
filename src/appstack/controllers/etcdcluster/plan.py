"""The next step towards the wanted etcd cluster, decided from what is observed (pure).

The reconciler observes the member pods, their volumes and what etcd says about its
members (:class:`Observed`), calls :func:`next_step` and carries out the one
:class:`Step` it returns, then requeues; one change at a time, each from fresh
observations. The order of the checks is the safety argument:

1. no cluster yet: create the bootstrap members (all at once, ``initial-cluster-state
   new``), then wait for them to elect a leader;
2. no leader: restart member pods whose volume is still there; otherwise ``Degraded``
   (quorum lost) — never forced;
3. a member whose pod and volume are both gone lost its data: remove it from the cluster
   (a fresh member is added in its place by 7);
4. a member whose pod is gone but whose volume is there: recreate the pod (same name,
   same data);
5. pods and volumes of no member (removed by a scale-down): delete them;
6. a learner without a pod: start it; then, while any voting member is unhealthy, wait
   (no promotion, membership change or upgrade while a member is down);
7. a learner: promote it once caught up (applied 90% of the leader's log);
8. fewer members than wanted: add one as a learner;
9. more: remove one member, never the leader (leadership is moved first if needed);
10. a member on another version, or with another configuration (flags and env:
    ``Observed.config``): restart it on the wanted one, leader last.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# A learner counts as caught up when it has applied this share of the leader's log (etcd's
# own promotion check uses the same ratio on the match index, and refuses otherwise).
CAUGHT_UP = 0.9


@dataclass(frozen=True)
class PodView:
    """A member pod as the cache shows it."""

    name: str
    ip: str | None
    ready: bool
    version: str
    deleting: bool = False
    answers: bool = False  # its etcd answered a status request
    config: str = ""  # the digest of the flags and env it runs with


@dataclass(frozen=True)
class MemberView:
    """A member as etcd lists it, with its own status when it answered."""

    id: int
    pod: str  # the pod its peer URL names ("" when the URL is not one of ours)
    started: bool
    learner: bool
    healthy: bool = False
    applied_index: int = 0
    version: str = ""


@dataclass(frozen=True)
class Observed:
    """Everything the plan depends on."""

    name: str
    replicas: int
    version: str
    pods: dict[str, PodView]
    volumes: dict[str, bool]  # PVC name -> being deleted
    members: list[MemberView] | None  # None: no member answered
    leader: int = 0
    bootstrapped: bool = False  # a cluster ID was seen before
    bootstrap_names: tuple[str, ...] = ()  # the initial members of existing bootstrap pods
    last_size: int = 0  # members in the last status written (the size before quorum loss)
    config: str = ""  # the wanted configuration's digest ("": keep each member's own)

    def volume_of(self, pod: str) -> str:
        return f"data-{pod}"

    def has_volume(self, pod: str) -> bool:
        name = self.volume_of(pod)
        return name in self.volumes and not self.volumes[name]


@dataclass(frozen=True)
class Step:
    """One action: ``kind`` is what to do, ``pod``/``member`` what to do it to."""

    kind: str  # Bootstrap CreatePod AddMember PromoteMember RemoveMember MoveLeader
    #            DeletePod DeleteVolume Wait Degraded Done
    reason: str
    pod: str = ""
    member: int = 0
    pods: tuple[str, ...] = field(default_factory=tuple)

    @property
    def changes(self) -> bool:
        return self.kind not in ("Wait", "Degraded", "Done")


def member_name(cluster: str, index: int) -> str:
    return f"{cluster}-{index}"


def index_of(cluster: str, pod: str) -> int:
    suffix = pod.removeprefix(f"{cluster}-")
    return int(suffix) if suffix.isdigit() else -1


def next_free_name(seen: Observed) -> str:
    """A member name never used by a current pod, volume or member."""
    used = {*seen.pods, *(v.removeprefix("data-") for v in seen.volumes)}
    used |= {m.pod for m in seen.members or []}
    return member_name(seen.name, max([index_of(seen.name, n) for n in used] + [-1]) + 1)


def next_step(seen: Observed) -> Step:
    """What to do next (see the module docstring for the order and why)."""
    if seen.members is None or not seen.leader:
        return _without_leader(seen)
    members = seen.members
    step = _repair(seen, members) or _hold(seen, members)
    if step is not None:
        return step
    if len(members) < seen.replicas:  # 8.
        return Step("AddMember", f"scaling up to {seen.replicas}", next_free_name(seen))
    if len(members) > seen.replicas:  # 9.
        return _remove_one(seen, members)
    return _upgrade(seen, members)


def _hold(seen: Observed, members: list[MemberView]) -> Step | None:
    """Steps 6-7: start a new learner; wait for unhealthy members; promote a learner."""
    learner = next((m for m in members if m.learner), None)
    if learner is not None and learner.pod not in seen.pods:
        return _learner(seen, learner)
    sick = [m.pod or hex(m.id) for m in members if not m.healthy and not m.learner]
    if sick:
        return Step("Wait", f"waiting for member(s) {', '.join(sorted(sick))} to be healthy")
    return None if learner is None else _learner(seen, learner)


def _repair(seen: Observed, members: list[MemberView]) -> Step | None:
    """Steps 3-5: lost members, lost pods, leftovers of removed members."""
    ours = {m.pod for m in members if m.pod}
    for m in members:  # 3. data lost
        if m.started and m.pod not in seen.pods and not seen.has_volume(m.pod):
            return Step("RemoveMember", f"member {m.pod} lost its volume", m.pod, m.id)
    for m in members:  # 4. pod lost, data kept
        if m.pod and m.pod not in seen.pods and seen.has_volume(m.pod):
            return Step("CreatePod", f"member {m.pod} restarts with its data", m.pod)
    for pod in sorted(seen.pods):  # 5. leftovers of removed members
        if pod not in ours and not seen.pods[pod].deleting:
            return Step("DeletePod", f"{pod} is no longer a member", pod)
    for volume, deleting in sorted(seen.volumes.items()):
        pod = volume.removeprefix("data-")
        if pod not in ours and pod not in seen.pods and not deleting:
            return Step("DeleteVolume", f"{pod} is no longer a member", pod)
    going = sorted(p for p in seen.pods if p not in ours)
    if going:
        return Step("Wait", f"waiting for pod(s) {', '.join(going)} to be deleted")
    return None


def _without_leader(seen: Observed) -> Step:
    if not seen.bootstrapped:
        if not seen.pods:
            names = tuple(member_name(seen.name, i) for i in range(seen.replicas))
            return Step("Bootstrap", f"creating {seen.replicas} members", pods=names)
        missing = [n for n in seen.bootstrap_names if n not in seen.pods]
        if missing:
            return Step("Bootstrap", "creating the rest of the members", pods=tuple(missing))
        return Step("Wait", "waiting for the first members to elect a leader")
    kept = sorted(v.removeprefix("data-") for v, deleting in seen.volumes.items() if not deleting)
    for pod in kept:
        if pod not in seen.pods:
            return Step("CreatePod", f"member {pod} restarts with its data", pod)
    starting = [p.name for p in seen.pods.values() if not p.answers and not p.deleting]
    if seen.members is None and starting:
        return Step("Wait", f"waiting for member(s) {', '.join(sorted(starting))} to answer")
    alive = sum(1 for p in seen.pods.values() if p.answers)
    total = len(seen.members or []) or seen.last_size or len(kept)
    need = total // 2 + 1
    lost = (
        f"quorum lost: {alive} of {total} members answer, {need} are needed; bring the "
        "missing members back with their volumes, or restore a snapshot into a new cluster "
        "(nothing is forced)"
    )
    # Enough of them answer: an election is under way (a leader just went), not a loss.
    electing = f"no leader yet: {alive} of {total} members answer, electing one"
    return Step("Wait", electing) if alive >= need else Step("Degraded", lost)


def _learner(seen: Observed, learner: MemberView) -> Step:
    if learner.pod not in seen.pods:  # not started (3. and 4. handled the others)
        return Step("CreatePod", f"starting new member {learner.pod}", learner.pod)
    leader = next((m for m in seen.members or [] if m.id == seen.leader), None)
    if not learner.healthy or leader is None:
        return Step("Wait", f"learner {learner.pod} is starting")
    if learner.applied_index < CAUGHT_UP * leader.applied_index:
        progress = f"applied {learner.applied_index} of {leader.applied_index}"
        return Step("Wait", f"learner {learner.pod} is catching up ({progress})")
    return Step("PromoteMember", f"learner {learner.pod} caught up", learner.pod, learner.id)


def _remove_one(seen: Observed, members: list[MemberView]) -> Step:
    followers = [m for m in members if m.id != seen.leader]
    victim = max(followers, key=lambda m: (index_of(seen.name, m.pod), m.id))
    why = f"scaling down to {seen.replicas}"
    return Step("RemoveMember", why, victim.pod, victim.id)


def _outdated(seen: Observed, pod: PodView) -> str:
    """Why ``pod`` must restart ("" when it runs what is wanted)."""
    if pod.version != seen.version:
        return f"upgrading {pod.name} to {seen.version}"
    if seen.config and pod.config != seen.config:
        return f"restarting {pod.name} with the new configuration"
    return ""


def _upgrade(seen: Observed, members: list[MemberView]) -> Step:
    why = {m.id: _outdated(seen, seen.pods[m.pod]) for m in members}
    old = [m for m in members if why[m.id]]
    if not old:
        return Step("Done", f"{len(members)} healthy members")
    follower = [m for m in old if m.id != seen.leader]
    if follower:
        target = min(follower, key=lambda m: index_of(seen.name, m.pod))
        return Step("DeletePod", why[target.id], target.pod)
    new = [m for m in members if m.id not in {o.id for o in old}]
    if not new:  # a one-member cluster: nobody to hand over to
        return Step("DeletePod", why[old[0].id], old[0].pod)
    heir = min(new, key=lambda m: index_of(seen.name, m.pod))
    action = "upgrading" if seen.pods[old[0].pod].version != seen.version else "restarting"
    return Step("MoveLeader", f"moving leadership to {heir.pod} before {action}", heir.pod, heir.id)
