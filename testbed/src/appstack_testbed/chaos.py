"""What a chaos run (:mod:`appstack_testbed.chaos_run`, used by bench/chaos.py and
tests/e2e/test_chaos.py) checks afterwards, from the cluster and the API server's audit log.

* :func:`convergence` — every AppService and AppStack is ``Ready=True`` with
  ``status.observedGeneration == metadata.generation``.
* :func:`check_children` — every child its controller wants (the same pure ``children``
  functions the reconcilers apply, plus the generated Secrets of managed
  middleware) exists exactly once, owned by its parent (controller ownerReference with the
  parent's uid); nothing else is owned by a parent, and no object labelled as ours is left
  without a live owner.
* :func:`unfenced_writes` — the audit log's writes of the operator replicas (user agent
  ``appstack/<version> (<identity>)``), each checked against who held the Lease when the
  API server received it: the holder is whoever made the latest successful Lease write
  (a replica writes the Lease only with itself as holder), so both sides come from the API
  server's one clock. A write by any other replica than that holder is a fencing failure.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from appstack.controllers.appstack.labels import STACK_LABEL
from appstack.controllers.appstack.middleware import generated_secrets
from appstack.controllers.registry import by_kind
from appstack.runtime import SECRET, Client
from appstack.sdk.kit.kubeobject import as_object
from appstack.sdk.kit.registration import Registration
from appstack_testbed.audit import AuditEvent
from appstack_testbed.waiting import condition_status

PARENT_KINDS = ("AppService", "AppStack")
MANAGED_BY = ("app.kubernetes.io/managed-by", "appstack")
_AGENT = re.compile(r"^appstack/\S+ \((?P<identity>[^)]+)\)$")

Key = tuple[str, str]  # (kind, name)


def _registration(kind: str) -> Registration:
    registration = by_kind(kind)
    if registration is None:
        raise LookupError(f"no controller for kind {kind}")
    return registration


def converged(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    generation = obj["metadata"].get("generation")
    return condition_status(obj, "Ready") == "True" and status.get("observedGeneration") == (
        generation
    )


async def parents(client: Client, namespace: str) -> list[dict[str, Any]]:
    """Every AppService and AppStack in ``namespace``."""
    out: list[dict[str, Any]] = []
    for kind in PARENT_KINDS:
        items, _ = await client.list(_registration(kind).kind.resource, namespace)
        out += [{**item, "kind": kind} for item in items]
    return out


async def convergence(client: Client, namespace: str) -> tuple[int, list[str]]:
    """(number of parents, names of those not converged yet)."""
    found = await parents(client, namespace)
    return len(found), [f"{o['kind']}/{o['metadata']['name']}" for o in found if not converged(o)]


def wanted(parent: dict[str, Any]) -> set[Key]:
    """The children ``parent`` should own: its controller's ``children`` (pure) and, for
    managed middleware, the Secrets the reconciler generates (credentials, mongodb's keyfile)."""
    registration = _registration(parent["kind"])
    spec = registration.kind.model.model_validate(parent).spec
    owner = as_object(parent)
    children = registration.children
    assert children is not None, f"{parent['kind']} declares no children"  # noqa: S101
    keys = {(c["kind"], c["metadata"]["name"]) for c in children(owner, spec)}
    for member in getattr(spec, "middleware", None) or []:
        if member.managed is not None:
            keys |= {("Secret", s["metadata"]["name"]) for s in generated_secrets(owner, member)}
    return keys


@dataclass
class ChildReport:
    """Children compared with what every parent wants (lists hold ``Kind/name`` strings)."""

    parents: int = 0
    expected: int = 0
    found: int = 0  # children owned by a live parent
    missing: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # owned, but not wanted by the owner
    orphans: list[str] = field(default_factory=list)  # ours or our kinds', owner gone
    per_kind: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.duplicates or self.orphans)


def _controller(obj: dict[str, Any]) -> dict[str, Any] | None:
    refs = obj["metadata"].get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


def compare(
    parent_objects: Sequence[dict[str, Any]], children: Iterable[dict[str, Any]]
) -> ChildReport:
    """Pure: ``children`` (with ``kind``) against what ``parent_objects`` want."""
    by_uid = {p["metadata"]["uid"]: p for p in parent_objects}
    want = {uid: wanted(p) for uid, p in by_uid.items()}
    owned: dict[str, Counter[Key]] = {uid: Counter() for uid in by_uid}
    report = ChildReport(parents=len(by_uid), expected=sum(len(w) for w in want.values()))
    stacks = {
        p["metadata"]["name"]: uid for uid, p in by_uid.items() if p.get("kind") == "AppStack"
    }
    for child in children:
        key: Key = (child["kind"], child["metadata"]["name"])
        ref = _controller(child)
        labels = child["metadata"].get("labels") or {}
        ours = labels.get(MANAGED_BY[0]) == MANAGED_BY[1]
        if ref is None and ours and child["kind"] == "Secret":
            # A credentials Secret lives as long as its retained volume, without an owner:
            # its stack's when that stack lives, kept data (not an orphan) when it does not.
            stack = stacks.get(labels.get(STACK_LABEL, ""))
            if stack is not None:
                owned[stack][key] += 1
            continue
        if ref is not None and ref.get("uid") in by_uid:
            owned[ref["uid"]][key] += 1
        elif (ref is None and ours) or (ref is not None and ref.get("kind") in PARENT_KINDS):
            report.orphans.append("/".join(key))
    for uid, counts in owned.items():
        name = f"{by_uid[uid]['kind']}/{by_uid[uid]['metadata']['name']}"
        for key in want[uid] - set(counts):
            report.missing.append(f"{name}: {'/'.join(key)}")
        for key, count in counts.items():
            extra = count - (1 if key in want[uid] else 0)
            report.duplicates += [f"{name}: {'/'.join(key)}"] * extra
            report.found += count
            report.per_kind[key[0]] = report.per_kind.get(key[0], 0) + count
    return report


async def check_children(client: Client, namespace: str) -> ChildReport:
    """Compare the children in ``namespace`` with what its AppServices and AppStacks want."""
    children: list[dict[str, Any]] = []
    # What the controllers watch as their children, and the credentials Secrets they create.
    owned = [r for kind in PARENT_KINDS for r in _registration(kind).owns]
    for resource in dict.fromkeys([*owned, SECRET]):
        items, _ = await client.list(resource, namespace)
        children += [{**item, "kind": resource.kind} for item in items]
    return compare(await parents(client, namespace), children)


def replica_identity(user_agent: str) -> str | None:
    """The identity in an operator's user agent ``appstack/<version> (<identity>)``."""
    match = _AGENT.match(user_agent)
    return match["identity"] if match else None


def lease_writes(events: Iterable[AuditEvent], namespace: str, lease: str) -> list[AuditEvent]:
    """Successful writes of the Lease, by replicas, in order of receipt."""
    return [
        e
        for e in events
        if e.resource == "leases"
        and e.namespace == namespace
        and e.name == lease
        and e.verb in ("create", "update", "patch")
        and e.succeeded
        and replica_identity(e.user_agent)
    ]


@dataclass(frozen=True)
class Tenure:
    """One replica's uninterrupted run of Lease writes: from its first to its successor's."""

    identity: str
    start: Any  # datetime of the acquiring write
    end: Any  # datetime of the successor's acquiring write, or None


def tenures(events: Iterable[AuditEvent], namespace: str, lease: str) -> list[Tenure]:
    out: list[Tenure] = []
    for write in lease_writes(events, namespace, lease):
        identity = replica_identity(write.user_agent) or ""
        if out and out[-1].identity == identity:
            continue
        if out:
            out[-1] = Tenure(out[-1].identity, out[-1].start, write.received)
        out.append(Tenure(identity, write.received, None))
    return out


def holder_at(history: Sequence[Tenure], when: Any) -> str:
    """Who held the Lease when the API server received a request at ``when`` ("" if no one)."""
    index = bisect.bisect_right([t.start for t in history], when) - 1
    return history[index].identity if index >= 0 else ""


def unfenced_writes(
    events: Iterable[AuditEvent], namespace: str, lease: str
) -> tuple[list[AuditEvent], Counter[str]]:
    """(writes in ``namespace`` by a replica that did not hold the Lease when the API server
    received them — any response code: the request was sent —, writes per identity)."""
    events = list(events)
    history = tenures(events, namespace, lease)
    late: list[AuditEvent] = []
    per_identity: Counter[str] = Counter()
    for event in events:
        identity = replica_identity(event.user_agent)
        if identity is None or event.namespace != namespace or event.resource == "leases":
            continue
        per_identity[identity] += 1
        if holder_at(history, event.received) != identity:
            late.append(event)
    return late, per_identity
