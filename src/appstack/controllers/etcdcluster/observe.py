"""What the EtcdCluster looks like now: member pods and volumes from the cache, members
and their status from etcd itself (every member asked at once, each call bounded by the
client's timeout; over TLS each member's certificate is checked against its DNS name).
Builds the :class:`~appstack.controllers.etcdcluster.plan.Observed`
the plan decides from, plus the per-member facts status reports. Used by the reconciler.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from appstack.api.etcdcluster import EtcdClusterSpec
from appstack.controllers.etcdcluster import desired, tls
from appstack.controllers.etcdcluster.etcdapi import EndpointStatus, EtcdClient, EtcdError, Member
from appstack.controllers.etcdcluster.plan import MemberView, Observed, PodView
from appstack.sdk import KubeObject


@dataclass(frozen=True)
class Observation:
    """The plan's input, and what it was made of."""

    seen: Observed
    pods: dict[str, dict[str, Any]]
    cluster_id: int
    members: list[Member] | None
    statuses: dict[str, EndpointStatus]  # pod name -> its member's own status
    errors: dict[str, str]  # pod name -> why it did not answer
    endpoints: dict[str, str] = field(default_factory=dict)  # pod -> client URL at its IP

    def endpoint(self, pod: str) -> str:
        return self.endpoints[pod]

    def leader_endpoint(self) -> str | None:
        for pod, status in self.statuses.items():
            if status.member_id == self.seen.leader:
                return self.endpoint(pod)
        return None


def image_version(pod: dict[str, Any]) -> str:
    containers = pod["spec"].get("containers") or [{}]
    image = str(containers[0].get("image", ""))
    return image.rsplit(":", 1)[-1].removeprefix("v") if ":" in image else ""


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_view(pod: dict[str, Any], *, answers: bool = False) -> PodView:
    meta = pod["metadata"]
    return PodView(
        name=meta["name"],
        ip=(pod.get("status") or {}).get("podIP"),
        ready=_ready(pod),
        version=image_version(pod),
        deleting=bool(meta.get("deletionTimestamp")),
        answers=answers,
        config=(meta.get("annotations") or {}).get(desired.CONFIG, ""),
    )


async def _ask(client: EtcdClient, endpoint: str) -> EndpointStatus | str:
    try:
        return await client.status(endpoint)
    except EtcdError as error:
        return str(error)


async def observe(
    client: EtcdClient,
    obj: KubeObject,
    spec: EtcdClusterSpec,
    pods: list[dict[str, Any]],
    volumes: list[dict[str, Any]],
) -> Observation:
    by_name = {p["metadata"]["name"]: p for p in pods}
    scheme = tls.client_scheme(obj)
    reachable = {
        name: f"{scheme}://{p['status']['podIP']}:{desired.CLIENT_PORT}"
        for name, p in by_name.items()
        if (p.get("status") or {}).get("podIP") and not p["metadata"].get("deletionTimestamp")
    }
    for name, url in reachable.items():  # reached at its IP, verified as its DNS name
        client.server_names[url] = desired.member_host(obj, name)
    answers = await asyncio.gather(*(_ask(client, url) for url in reachable.values()))
    statuses: dict[str, EndpointStatus] = {}
    errors: dict[str, str] = {}
    for name, answer in zip(reachable, answers, strict=True):
        if isinstance(answer, str):
            errors[name] = answer
        else:
            statuses[name] = answer
    votes = Counter(s.leader for s in statuses.values() if s.leader)
    leader = votes.most_common(1)[0][0] if votes else 0
    cluster_id, members = await _members(client, reachable, statuses, leader)
    known = str((obj.get("status") or {}).get("clusterID") or "")
    views = None if members is None else [_view(obj, m, statuses) for m in members]
    first = next(iter(by_name.values()), None)
    initial = ((first or {}).get("metadata", {}).get("annotations") or {}).get(desired.INITIAL)
    seen = Observed(
        name=obj["metadata"]["name"],
        replicas=spec.replicas,
        version=spec.version,
        pods={name: pod_view(p, answers=name in statuses) for name, p in by_name.items()},
        volumes={
            v["metadata"]["name"]: bool(v["metadata"].get("deletionTimestamp")) for v in volumes
        },
        members=views,
        leader=leader if views is not None and leader in {m.id for m in views} else 0,
        bootstrapped=bool(known),
        bootstrap_names=tuple(part.split("=", 1)[0] for part in (initial or "").split(",") if part),
        last_size=len((obj.get("status") or {}).get("members") or []),
        config=desired.config_digest(spec),
    )
    return Observation(seen, by_name, cluster_id, members, statuses, errors, reachable)


async def _members(
    client: EtcdClient,
    reachable: dict[str, str],
    statuses: dict[str, EndpointStatus],
    leader: int,
) -> tuple[int, list[Member] | None]:
    """The member list, from the leader if one is known, else from any member."""
    order = sorted(statuses, key=lambda pod: statuses[pod].member_id != leader)
    for pod in order:
        try:
            return await client.members(reachable[pod])
        except EtcdError:
            continue
    return 0, None


def _view(obj: KubeObject, member: Member, statuses: dict[str, EndpointStatus]) -> MemberView:
    pod = next((desired.pod_of_peer_url(obj, u) for u in member.peer_urls), "")
    own = statuses.get(pod)
    mine = own is not None and own.member_id == member.id
    return MemberView(
        id=member.id,
        pod=pod,
        started=member.started,
        learner=member.is_learner,
        # an alarm (NOSPACE) is the cluster's: the member still serves, and is healthy
        healthy=bool(mine and own and own.leader and not own.failures),
        applied_index=own.raft_applied_index if own and mine else 0,
        version=own.version if own and mine else "",
    )
