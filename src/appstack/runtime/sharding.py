"""The pure core of sharded operators (issue #50): who owns a key, what the coordinator
does about an object, what a shard does with a key it is asked to reconcile.

Every replica of a sharded operator holds a Lease of its own (a *shard*); the primary
objects carry the name of the shard that owns them in a label (so each shard's informers
select only their objects server-side), and a second label asks that owner to let go of a
key (a *drain*). This module decides, from what the API server shows, and does no I/O:

* :func:`shard_name` — a replica's shard name (its Lease's name and its label value).
* :func:`owner` — rendezvous (highest-random-weight) hashing: a key belongs to the shard
  whose 64-bit BLAKE2b hash of ``shard + key`` is highest. Adding a shard moves only the
  keys the new shard wins (about ``1/(N+1)`` of them), removing one moves only its keys;
  docs/sharding.md has the figures measured at 10,000 keys.
* :class:`ShardRoster` — the coordinator's view of the shard Leases (Ready, leaving),
  expiry judged on its own clock as leader election judges a peer's Lease.
* :func:`coordinate` — the coordinator's sweep: an unassigned key, or one whose shard is
  not Ready (its Lease expired on the coordinator's clock, or was released), is assigned
  to its owner among the Ready shards that are not leaving; a key held by a Ready shard
  that is no longer its owner is drained, at most ``max_drains`` at a time; nothing else.
  A drained key is assigned to its new owner only once its old owner has acknowledged
  (removed both labels), so no two shards act on one key.
* :func:`shard_step` — a shard asked to reconcile a key: not labelled to it → skip;
  drain asked of it → acknowledge (:func:`acknowledge_patch`, with the object's
  resourceVersion as precondition) and do not reconcile; otherwise reconcile.

The label keys are the caller's (the runtime names no product): :class:`ShardLabels`.
The same functions drive the property-based model of the protocol
(``tests/unit/runtime/test_sharding_model.py``). Nothing outside the tests uses this
module yet: the runtime's wiring (shard Leases, selected informers, the per-key write
fence, the coordinator's sweep) and the SDK's setting are still to come (docs/sharding.md).
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from appstack.runtime.clock import Clock


def root_key(group: str, kind: str, namespace: str, name: str) -> str:
    """The key a root object is sharded by: ``group/kind/namespace/name`` (an empty group for
    the core API, an empty namespace for a cluster-scoped object)."""
    return f"{group}/{kind}/{namespace}/{name}"


def weight(shard: str, key: str) -> int:
    """The rendezvous weight of ``shard`` for ``key``: a stable 64-bit BLAKE2b hash (the same
    in every process and Python version, unlike :func:`hash`)."""
    digest = hashlib.blake2b(f"{shard}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def owner(key: str, shards: Iterable[str]) -> str | None:
    """The shard of ``shards`` with the highest weight for ``key`` (ties, which need a 64-bit
    collision, go to the greater name); ``None`` when there is no shard."""
    best: tuple[int, str] | None = None
    for shard in shards:
        candidate = (weight(shard, key), shard)
        if best is None or candidate > best:
            best = candidate
    return None if best is None else best[1]


def shard_name(lease: str, identity: str) -> str:
    """The name of the shard run by the replica ``identity`` (its pod name, say) of the
    operator whose leader-election Lease is ``lease``: ``<lease>-shard-<10 hex digits of the
    identity's BLAKE2b hash>``, the name of its own Lease and the value of the shard label
    on the keys it holds, so at most 63 characters (a long ``lease`` is cut, never the hash)
    and ending in an alphanumeric."""
    digest = hashlib.blake2b(identity.encode(), digest_size=5).hexdigest()
    suffix = f"-shard-{digest}"
    prefix = lease[: 63 - len(suffix)].rstrip("-.")
    if not prefix:
        raise ValueError(f"a shard needs the name of its operator's Lease, got {lease!r}")
    return prefix + suffix


@dataclass(frozen=True)
class ShardLabels:
    """The two label keys of one operator: ``shard`` holds the owning shard's name, ``drain``
    (present only while a drain is asked) the name of the shard asked to let go."""

    shard: str
    drain: str

    def __post_init__(self) -> None:
        if not self.shard or not self.drain or self.shard == self.drain:
            raise ValueError(
                f"sharding needs two distinct label keys, got {self.shard!r} and {self.drain!r}"
            )


@dataclass(frozen=True)
class KeyState:
    """What the coordinator sees of one object: its key, the shard its label names (``None``
    when unlabelled) and whether a drain is asked."""

    key: str
    shard: str | None
    draining: bool = False

    @classmethod
    def of(cls, key: str, labels: Mapping[str, str], names: ShardLabels) -> KeyState:
        """The state of an object with ``labels`` (an empty shard label counts as none)."""
        return cls(key, labels.get(names.shard) or None, names.drain in labels)


@dataclass(frozen=True)
class Assign:
    """Label ``key`` with ``shard`` (and remove a drain label left on it)."""

    key: str
    shard: str


@dataclass(frozen=True)
class Drain:
    """Ask ``shard``, which holds ``key`` but no longer owns it, to let go of it."""

    key: str
    shard: str


Action = Assign | Drain


def coordinate(
    objects: Iterable[KeyState],
    ready: Collection[str],
    leaving: Collection[str] = (),
    max_drains: int = 10,
    in_flight: int | None = None,
) -> list[Action]:
    """The coordinator's actions for ``objects``, given the shards whose Lease is fresh
    (``ready``, the leaving ones included) and those marked leaving.

    Unassigned keys and keys of shards that are not Ready are assigned to their owner among
    the Ready shards that are not leaving (none when there is no such shard). A key held by
    a Ready, staying shard that is not its owner is drained — never more than ``max_drains``
    drains in flight, counting those already asked (a drained key whose shard is gone is
    assigned at once). A leaving shard's keys are left to it: it hands them back itself
    before it releases its Lease, or they are assigned once its Lease has expired. A drain
    whose key's owner is its holder again is let run: the key comes back after the
    acknowledgement (a cancel would race the acknowledgement for no gain).

    ``in_flight`` is the number of drains already asked, when ``objects`` is one page of a
    sweep that keeps nothing between pages (the caller counts them first, e.g. by listing
    the objects that carry the drain label: at most ``max_drains``); by default they are
    counted in ``objects``.
    """
    if max_drains < 0:
        raise ValueError(f"max_drains must be 0 or more, got {max_drains}")
    objects = list(objects)
    alive = set(ready)
    targets = sorted(alive - set(leaving))
    if in_flight is None:
        in_flight = sum(1 for o in objects if o.draining and o.shard in alive)
    actions: list[Action] = []
    for state in objects:
        if state.shard is None or state.shard not in alive:
            target = owner(state.key, targets)
            if target is not None:
                actions.append(Assign(state.key, target))
        elif state.draining or state.shard in leaving:
            continue
        elif owner(state.key, targets) != state.shard and in_flight < max_drains:
            actions.append(Drain(state.key, state.shard))
            in_flight += 1
    return actions


class Step(enum.Enum):
    """What a shard does with a key it is asked to reconcile."""

    SKIP = "skip"  # not labelled to this shard (moved away, or not yet seen assigned)
    ACKNOWLEDGE = "acknowledge"  # a drain is asked of this shard: let go, do not reconcile
    RECONCILE = "reconcile"


def shard_step(shard: str, labels: Mapping[str, str], names: ShardLabels) -> Step:
    """What ``shard`` does with an object carrying ``labels`` (as its cache shows it)."""
    if labels.get(names.shard) != shard:
        return Step.SKIP
    if names.drain in labels:
        return Step.ACKNOWLEDGE
    return Step.RECONCILE


def _label_patch(labels: Mapping[str, str | None], resource_version: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": dict(labels)}
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    return {"metadata": metadata}


def acknowledge_patch(names: ShardLabels, resource_version: str) -> dict[str, Any]:
    """The JSON merge patch a shard sends to let go of a drained key: both labels removed in
    one write, refused with 409 if the object changed since ``resource_version``."""
    return _label_patch({names.shard: None, names.drain: None}, resource_version)


def release_patch(names: ShardLabels, resource_version: str) -> dict[str, Any]:
    """The merge patch a stopping shard sends for each of its keys (the same as an
    acknowledgement: the key is left unassigned for the coordinator)."""
    return acknowledge_patch(names, resource_version)


def action_patch(action: Action, names: ShardLabels, resource_version: str) -> dict[str, Any]:
    """The merge patch that carries out a coordinator's ``action``, refused with 409 if the
    object changed since the sweep read it at ``resource_version``."""
    if isinstance(action, Assign):
        return _label_patch({names.shard: action.shard, names.drain: None}, resource_version)
    return _label_patch({names.drain: action.shard}, resource_version)


class ShardRoster:
    """The coordinator's view of its operator's shard Leases: which shards are Ready and which
    are leaving.

    Fed every list (or watch state) of the shard Leases with :meth:`observe`, it judges
    expiry as :class:`~appstack.runtime.leaderelection.LeaderElector` judges a peer's Lease:
    on *its own* clock, from when it saw the Lease's record (holder, renewTime, duration)
    last change — so clock skew between machines does not matter, and a shard counts as
    Ready at least as long as the shard itself may write (its renew deadline is shorter than
    the lease duration). A Lease with no holder (released) or no longer listed is no shard;
    one labelled ``leaving_label`` is Ready but leaving.
    """

    def __init__(self, clock: Clock, leaving_label: str, default_duration: float = 15.0) -> None:
        self.clock = clock
        self.leaving_label = leaving_label
        self.default_duration = default_duration
        # shard -> (record, seen changing at, duration, leaving)
        self._seen: dict[str, tuple[tuple[Any, ...], float, float, bool]] = {}

    def observe(self, leases: Iterable[Mapping[str, Any]]) -> None:
        """Take in the shard Leases as now listed (all of them: one not listed is gone)."""
        now = self.clock.now()
        seen: dict[str, tuple[tuple[Any, ...], float, float, bool]] = {}
        for lease in leases:
            metadata, spec = lease.get("metadata") or {}, lease.get("spec") or {}
            name = metadata.get("name")
            if not name or not spec.get("holderIdentity"):
                continue
            record = (
                spec.get("holderIdentity"),
                spec.get("renewTime"),
                spec.get("leaseDurationSeconds"),
            )
            duration = float(spec.get("leaseDurationSeconds") or self.default_duration)
            leaving = self.leaving_label in (metadata.get("labels") or {})
            before = self._seen.get(name)
            since = before[1] if before is not None and before[0] == record else now
            seen[name] = (record, since, duration, leaving)
        self._seen = seen

    def ready(self) -> set[str]:
        """The shards whose Lease is held and changed less than its duration ago."""
        now = self.clock.now()
        return {
            name for name, (_, since, duration, _) in self._seen.items() if now < since + duration
        }

    def leaving(self) -> set[str]:
        """The Ready shards whose Lease says they are stopping."""
        ready = self.ready()
        return {name for name, (*_, leaving) in self._seen.items() if leaving and name in ready}

    def next_expiry(self) -> float | None:
        """Seconds until the first Ready shard expires unless it renews (when the
        coordinator should look again), ``None`` without Ready shards."""
        now = self.clock.now()
        left = [since + duration - now for _, since, duration, _ in self._seen.values()]
        return min((seconds for seconds in left if seconds > 0), default=None)
