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
(``tests/unit/runtime/test_sharding_model.py``).

The second half is the runtime's wiring, the :class:`~appstack.runtime.manager.Manager`'s
sharded mode (``sharding=ShardingConfig(...)``; the SDK's ``--sharding`` derives it):

* :class:`Shard` — this replica's shard Lease (a :class:`LeaderElector`: the same
  acquire, renew, fence and release), its primaries' informers restricted to the objects
  labelled to it — and its children's (``ShardingConfig.children``): a child written in a
  reconcile carries its root's shard and uid (:func:`shard_child_labels`, which the SDK's
  children writer adds), and a shard that comes to hold a key first relabels the key's
  children to itself (:meth:`Shard.adopt`: one LIST per child kind of its primary kind,
  selected by the root's uid) —, the client's write guard (the Lease's fence, and inside a
  reconcile the key's: :data:`CURRENT_KEY`, :class:`KeyFenced`), the reconciler wrapper
  running :func:`shard_step`, and the graceful stop's steps (leaving mark, each key handed to its
  new owner at its turn while the workers go on with the others);
* :class:`Coordinator` — on the replica holding the leader-election Lease: the shard
  Leases at every look, a watch of the unassigned objects (assigned as they come), a
  paginated metadata-only sweep on every change, label patches on the version read, the
  metrics (:class:`ShardMetrics`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import hashlib
import time
from collections.abc import (
    AsyncIterator,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

import structlog
from prometheus_client import Counter, Gauge

from appstack.runtime import errors
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client, TransportError
from appstack.runtime.clock import Clock, within
from appstack.runtime.controller import Reconciler, Request, Result
from appstack.runtime.informer import FuncHandler, Informer
from appstack.runtime.leaderelection import LeaderElectionConfig, LeaderElector, NotLeader
from appstack.runtime.metrics import Metrics
from appstack.runtime.resources import LEASE, Obj, Resource

log = structlog.get_logger(__name__)


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
    assigned at once). A leaving shard's keys are left to it: it hands each to its owner
    among the staying shards itself (:meth:`Shard.hand_back`) before it releases its Lease,
    or they are assigned once its Lease has expired. A drain
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


# ---------------------------------------------------------------------------- the wiring
# What a running operator does with the decisions above: the Manager's sharded mode.

#: The root key of the reconcile running in this task (None outside one): what the write
#: fence checks a write against.
CURRENT_KEY: ContextVar[str | None] = ContextVar("shard_key", default=None)
#: The fence that replaces the shard's in this task: the coordinator's and the leader-only
#: tasks' writes are fenced by the leader-election Lease instead.
_FENCE: ContextVar[Callable[[], float] | None] = ContextVar("shard_fence", default=None)


#: The labels a child written in this task's reconcile carries (its root's shard and uid;
#: None outside a sharded reconcile, or when no child kind is split).
_CHILD_LABELS: ContextVar[Mapping[str, str] | None] = ContextVar("shard_children", default=None)


def shard_child_labels() -> Mapping[str, str]:
    """The labels a child written now must carry so that its shard keeps it in its cache:
    inside a sharded operator's reconcile of a root, the root's shard and uid; else none.
    The SDK's children writer adds them to every child it writes (and to an existing child
    it finds without them)."""
    return _CHILD_LABELS.get() or {}


class KeyFenced(NotLeader):
    """A write for a key this shard no longer holds (its drain acknowledged, or its label
    gone from the shard's cache) was refused locally."""


#: The objects per page of the coordinator's sweeps. A page of 500 AppServices' metadata
#: (1.8 KB each as JSON, managedFields included) took 8.1 MB of RSS to decode, 100 took
#: 2.2 MB: the coordinating replica peaked 1.15x a non-coordinating one's with pages of 500
#: (docs/performance.md); 12 LISTs per sweep of 1,200 objects instead of 3.
SWEEP_PAGE = 100


@dataclass(frozen=True)
class ShardingConfig:
    """How a :class:`~appstack.runtime.manager.Manager` shards: the label keys on the
    primary objects (``labels``) and on the shard Leases (``lease_label``, whose value is
    the operator's leader-election Lease name; ``leaving_label`` on a stopping shard's),
    the primary kinds with the label selector that chooses the operator's objects among them
    (None: all), at most ``max_drains`` drains in flight per kind and namespace (None: by
    the number of objects, :func:`auto_drains`), and the coordinator's pace: a look at the
    Leases every ``interval`` seconds (the unassigned objects are watched: assigned as
    they come), a full sweep on every change of the shards and at least every
    ``sweep_interval`` seconds, in pages of ``page_size`` objects (metadata only, nothing
    kept between pages: the page decoded is what the coordinating replica holds beyond the
    others, :data:`SWEEP_PAGE`)."""

    labels: ShardLabels
    lease_label: str
    leaving_label: str
    primaries: tuple[tuple[Resource, str | None], ...]
    max_drains: int | None = None
    interval: float = 1.0
    sweep_interval: float = 30.0
    page_size: int = SWEEP_PAGE
    #: Per primary kind, the kinds of its children whose caches are split too: a shard
    #: keeps only the children labelled to it (``labels.shard``), each also labelled with
    #: its root's uid under ``root_label`` (how a shard that comes to hold a key finds its
    #: children). Only kinds that no controller watches or reads otherwise (Pods a
    #: Deployment makes carry no label of ours).
    children: tuple[tuple[Resource, tuple[Resource, ...]], ...] = ()
    root_label: str = ""

    @property
    def child_kinds(self) -> tuple[Resource, ...]:
        """Every split child kind, once."""
        return tuple(dict.fromkeys(r for _, kinds in self.children for r in kinds))

    def __post_init__(self) -> None:
        if not self.primaries:
            raise ValueError("sharding needs at least one primary kind")
        if self.children and not self.root_label:
            raise ValueError("sharded children need the root label key (root_label)")
        drains = 1 if self.max_drains is None else self.max_drains
        if drains < 1 or self.interval <= 0 or self.sweep_interval <= 0:
            raise ValueError(
                "sharding needs max_drains >= 1 and positive intervals, got "
                f"{self.max_drains}, {self.interval}s, {self.sweep_interval}s"
            )


#: The drains in flight per kind of a coordinator left to choose (``max_drains=None``):
#: at least this many, and :data:`DRAINS_PER_OBJECT` of the kind's objects.
MIN_DRAINS = 10
DRAINS_PER_OBJECT = 0.01


def auto_drains(objects: int) -> int:
    """The drains in flight a coordinator allows for a kind of ``objects`` objects (as its
    last full sweep counted them) when none is set: 1 % of them, at least
    :data:`MIN_DRAINS` — a scale-out moves keys in about the same number of coordinator
    looks at 1,000 objects as at 10,000, and at most 1 % of them wait for their new owner
    at a time."""
    return max(MIN_DRAINS, int(objects * DRAINS_PER_OBJECT))


def _key(resource: Resource, namespace: str | None, name: str) -> str:
    return root_key(resource.group, resource.kind, namespace or "", name)


def _cache_key(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


class ShardMetrics:
    """The sharding metrics, in the manager's registry under its prefix:
    ``<prefix>_shard_key_writes_refused_total`` (a shard's writes for keys it no longer
    holds), ``<prefix>_shard_unassigned_keys{resource}``,
    ``<prefix>_shard_oldest_unassigned_seconds{resource}`` (how long the key unassigned
    longest has been; 0 with none) and ``<prefix>_shard_drains_in_flight{resource}``
    (drains asked and not yet acknowledged), as the coordinator's last look left them,
    ``<prefix>_shard_keys{resource,shard}`` (as its last full sweep left them),
    ``<prefix>_shard_handovers_total{resource,reason}`` (keys the coordinator moved from
    one shard to another: ``drain`` asked, ``expired`` shard's key reassigned)."""

    def __init__(self, metrics: Metrics) -> None:
        registry, prefix = metrics.registry, metrics.prefix
        self.refused = Counter(
            "shard_key_writes_refused",
            "Writes refused locally: for a key this shard acknowledged a drain of or no "
            "longer holds.",
            namespace=prefix,
            registry=registry,
        )
        self.unassigned = Gauge(
            "shard_unassigned_keys",
            "Primary objects labelled to no Ready shard at the coordinator's last look.",
            ["resource"],
            namespace=prefix,
            registry=registry,
        )
        self.oldest_unassigned = Gauge(
            "shard_oldest_unassigned_seconds",
            "Seconds the primary object unassigned longest (labelled to no Ready shard) has "
            "been so, on the coordinator's clock; 0 when every object is assigned.",
            ["resource"],
            namespace=prefix,
            registry=registry,
        )
        self.drains = Gauge(
            "shard_drains_in_flight",
            "Drains the coordinator asked that their shard has not acknowledged yet.",
            ["resource"],
            namespace=prefix,
            registry=registry,
        )
        self.keys = Gauge(
            "shard_keys",
            "Primary objects labelled to each shard at the coordinator's last full sweep.",
            ["resource", "shard"],
            namespace=prefix,
            registry=registry,
        )
        self.handovers = Counter(
            "shard_handovers",
            "Keys the coordinator moved between shards: drains asked, keys of expired "
            "shards reassigned.",
            ["resource", "reason"],
            namespace=prefix,
            registry=registry,
        )


class Shard:
    """This replica as a shard: its Lease (through :class:`LeaderElector`: the same
    acquire, renew, fence and release), the write fence per key (the client's
    ``write_guard``), the reconciler wrapper that skips, acknowledges or reconciles a key
    (:func:`shard_step`), and the graceful stop's steps (mark leaving, hand each key to its
    new owner: :meth:`hand_back`).
    Made by the manager from its :class:`ShardingConfig` and leader-election settings."""

    def __init__(
        self,
        client: Client,
        election_client: Client,
        cache: Cache,
        *,
        config: ShardingConfig,
        election: LeaderElectionConfig,
        metrics: Metrics,
    ) -> None:
        self.config = config
        self.cache = cache
        self.client = election_client  # the Lease's calls
        self.writer = client  # the label patches: fenced by this shard's Lease
        self.name = shard_name(election.name, election.identity)
        self.lease_value = election.name[:63].rstrip("-._")
        own = replace(election, name=self.name, labels=((config.lease_label, self.lease_value),))
        self.elector = LeaderElector(election_client, own, metrics=metrics)
        self.metrics = ShardMetrics(metrics)
        self.primaries = {(r.group, r.kind): r for r, _ in config.primaries}
        self.released: set[str] = set()  # keys whose drain this shard acknowledged
        #: keys this stopping shard has handed back or is handing back (never acted on again)
        self.handing: set[str] = set()
        # key -> (reconciles of it in flight here, set once there are none)
        self._reconciling: dict[str, tuple[int, asyncio.Event]] = {}
        for resource, _ in config.primaries:
            cache.restrict(
                resource,
                f"{config.labels.shard}={self.name}",
                keep=(config.labels.shard, config.labels.drain),
            )
        for resource in config.child_kinds:
            cache.restrict(
                resource,
                f"{config.labels.shard}={self.name}",
                keep=(config.labels.shard, config.root_label),
            )
        self._child_kinds = dict(config.children)
        #: keys whose children this shard has relabelled to itself since it came to hold
        #: them (:meth:`adopt`); a key let go of leaves it
        self.adopted: set[str] = set()

    # --------------------------------------------------------------------- the fence
    def holds(self, key: str) -> bool:
        """Whether this shard may write for ``key``: labelled to it in its cache, and no
        drain of it acknowledged since."""
        if key in self.released or key in self.handing:
            return False
        group, kind, namespace, name = key.split("/", 3)
        resource = self.primaries.get((group, kind))
        if resource is None:
            return True  # not a sharded kind's key
        obj = self.cache.get(resource, _cache_key(namespace or None, name))
        labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
        return bool(labels.get(self.config.labels.shard) == self.name)

    def guard(self) -> float:
        """The client's write guard: the leader-election Lease's fence in the coordinator's
        and leader-only tasks; else this shard's Lease fence and, inside a reconcile, the
        key's (:class:`KeyFenced`)."""
        override = _FENCE.get()
        if override is not None:
            return override()
        remaining = self.elector.fence()
        key = CURRENT_KEY.get()
        if key is not None and not self.holds(key):
            self.metrics.refused.inc()
            raise KeyFenced(f"shard {self.name} no longer holds {key}; write refused")
        return remaining

    # ------------------------------------------------------------------ the reconciles
    def wrap(self, reconciler: Reconciler, primary: Resource) -> Reconciler:
        """``reconciler`` as this shard runs it, when ``primary`` is a sharded kind."""
        if (primary.group, primary.kind) not in self.primaries:
            return reconciler
        return _ShardedReconciler(self, reconciler, self.primaries[(primary.group, primary.kind)])

    async def acknowledge(self, resource: Resource, obj: Mapping[str, Any], key: str) -> None:
        """Let go of a drained key: from now on its writes are refused; both labels
        removed in one patch on the version the drain was seen at (409: the object changed,
        the key is held again and the next reconcile acknowledges again)."""
        meta = obj["metadata"]
        self.released.add(key)
        self.adopted.discard(key)
        token = CURRENT_KEY.set(None)  # the acknowledgement itself passes the key's fence
        try:
            await self.writer.patch(
                resource,
                meta["name"],
                acknowledge_patch(self.config.labels, meta["resourceVersion"]),
                namespace=meta.get("namespace"),
            )
        except errors.Conflict:
            self.released.discard(key)
            raise
        except errors.NotFound:
            return
        finally:
            CURRENT_KEY.reset(token)
        log.info("drain acknowledged", shard=self.name, key=key, at=time.time())

    # --------------------------------------------------------------------- children
    def labels_for_children(self, root: Mapping[str, Any]) -> dict[str, str]:
        """What each child of ``root`` carries: this shard's name and the root's uid."""
        uid = (root.get("metadata") or {}).get("uid") or ""
        return {self.config.labels.shard: self.name, self.config.root_label: uid}

    async def adopt(self, primary: Resource, root: Mapping[str, Any]) -> int:
        """Relabel to this shard the children of ``root`` still labelled to another (its
        previous owner's, a gone shard's): they enter this shard's caches, so what it
        prunes or reads of them is there. One LIST per child kind, selected server-side by
        the root's uid and a shard not this one; only the children the root controls are
        patched (a label anyone could forge moves nothing else). Inside the root's
        reconcile: fenced by its key. How many were relabelled."""
        meta = root.get("metadata") or {}
        uid, namespace = meta.get("uid"), meta.get("namespace")
        kinds = self._child_kinds.get(primary, ())
        if not uid or not kinds:
            return 0
        shard, moved = self.config.labels.shard, 0
        # only those not yet this shard's: a shard started again lists nothing to patch
        selector = f"{self.config.root_label}={uid},{shard}!={self.name}"
        for resource in kinds:
            children, _ = await self.writer.list(
                resource, namespace if resource.namespaced else None, label_selector=selector
            )
            for child in children:
                cmeta = child.get("metadata") or {}
                controlled = any(
                    ref.get("controller") and ref.get("uid") == uid
                    for ref in cmeta.get("ownerReferences") or []
                )
                if not controlled:  # this shard's already: not listed (the selector)
                    continue
                patch = {"metadata": {"labels": {shard: self.name}}}
                try:
                    await self.writer.patch(
                        resource, cmeta["name"], patch, namespace=cmeta.get("namespace")
                    )
                except errors.NotFound:
                    continue
                moved += 1
        if moved:
            log.info("children adopted", shard=self.name, root=meta.get("name"), moved=moved)
        return moved

    # --------------------------------------------------------------------- stopping
    async def mark_leaving(self) -> None:
        """Label this shard's Lease as leaving: the coordinator assigns it nothing more."""
        try:
            await self.elector.label({self.config.leaving_label: "true"})
            log.info("shard leaving", shard=self.name)
        except (errors.ApiError, TransportError) as error:
            log.warning("could not mark the shard leaving", shard=self.name, error=str(error))

    async def hand_back(self, stayers: Callable[[], Collection[str]] = lambda: ()) -> int:
        """Hand every key this stopping shard holds to its owner among ``stayers()`` (the
        Ready shards that stay, as this replica's roster sees them at the key's turn; with
        none, the key is left unlabelled for the coordinator). A roster can be a look
        behind: a key handed to a shard that has just stopped is assigned by the
        coordinator once it sees that shard gone, as a gone shard's keys are. Keys go
        :data:`PATCHES_AT_ONCE` at a time, while its workers go on reconciling the keys not
        yet handed: a key stops being this shard's only at its turn (:attr:`handing`: no
        reconcile of it starts here again, and one in flight ends first), so no key waits
        unreconciled for the others to be handed — at thousands of keys the hand-back takes
        tens of seconds, each key about one patch.
        Each patch carries the version in the cache (on a conflict the object is read again,
        and handed if still this shard's); keys assigned to it meanwhile are handed after.
        Returns how many keys were handed. Failures are left to the Lease's release: the
        coordinator then assigns what is still labelled to this shard."""
        gate = asyncio.Semaphore(PATCHES_AT_ONCE)
        names = self.config.labels

        async def hand(resource: Resource, key: str, meta: Mapping[str, Any]) -> bool:
            async with gate:
                self.handing.add(key)  # from here on the key is never acted on here
                self.adopted.discard(key)
                await self._idle(key)  # a reconcile of it in flight ends first
                let_go = time.time()  # no reconcile of it here since: the log's "at"
                target = owner(key, sorted(set(stayers()) - {self.name}))
                for _ in range(3):
                    version = meta["resourceVersion"]
                    patch = (
                        action_patch(Assign(key, target), names, version)
                        if target is not None
                        else release_patch(names, version)
                    )
                    try:
                        await self.writer.patch(
                            resource, meta["name"], patch, namespace=meta.get("namespace")
                        )
                    except errors.Conflict:  # changed since the cache saw it: read it again
                        try:
                            fresh = await self.writer.get(
                                resource, meta["name"], meta.get("namespace")
                            )
                        except (errors.ApiError, TransportError) as error:
                            log.info("key not handed back", key=key, error=str(error))
                            return False
                        meta = fresh.get("metadata") or {}
                        if (meta.get("labels") or {}).get(names.shard) != self.name:
                            return False  # no longer this shard's
                        continue
                    except errors.NotFound:
                        return False
                    except (errors.ApiError, TransportError, NotLeader) as error:
                        log.info("key not handed back", key=key, error=str(error))
                        return False
                    log.info("key handed back", shard=self.name, key=key, to=target, at=let_go)
                    return True
                return False

        handed = 0
        for _ in range(3):  # then the keys assigned to it while it handed the others
            handing = []
            for resource, _ in self.config.primaries:
                for obj in self.cache.objects(resource):
                    meta = obj.get("metadata") or {}
                    if (meta.get("labels") or {}).get(names.shard) != self.name:
                        continue
                    key = _key(resource, meta.get("namespace"), meta["name"])
                    if key not in self.handing:
                        handing.append(hand(resource, key, meta))
            if not handing:
                break
            handed += sum(await asyncio.gather(*handing))
        log.info("keys handed back", shard=self.name, keys=handed)
        return handed

    # ------------------------------------------------------- a key's reconciles here
    @contextlib.contextmanager
    def _busy(self, key: str) -> Iterator[None]:
        """Around a reconcile (or acknowledgement) of ``key`` in this process."""
        count, idle = self._reconciling.get(key, (0, asyncio.Event()))
        self._reconciling[key] = (count + 1, idle)
        try:
            yield
        finally:
            count, idle = self._reconciling[key]
            if count == 1:
                del self._reconciling[key]
                idle.set()
            else:
                self._reconciling[key] = (count - 1, idle)

    async def _idle(self, key: str) -> None:
        """Until no reconcile of ``key`` is in flight in this process."""
        while (running := self._reconciling.get(key)) is not None:
            await running[1].wait()


class _ShardedReconciler:
    """A reconciler of a sharded kind as a shard runs it: nothing once the shard's Lease may
    have expired (a shard frozen past it and continued would otherwise start, from its
    stale cache, reconciles of keys already another's — each write refused by the fence,
    but a reconcile begun), nothing for a key a stopping shard has handed back, then
    :func:`shard_step` on the cached object; the reconcile runs with its key in
    :data:`CURRENT_KEY`, counted in flight for :meth:`Shard.hand_back`."""

    def __init__(self, shard: Shard, inner: Reconciler, primary: Resource) -> None:
        self.shard, self.inner, self.primary = shard, inner, primary

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def reconcile(self, request: Request) -> Result | None:
        shard = self.shard
        if shard.elector.remaining() <= 0:  # its Lease may have expired (a freeze): its
            return None  # cache may be stale and the key another's; the process is ending
        key = _key(self.primary, request.namespace, request.name)
        if key in shard.handing:  # handed back (or at its turn): its new owner reconciles it
            return None
        with shard._busy(key):  # a hand-back of the key waits for this to end
            return await self._step(request, key)

    async def _step(self, request: Request, key: str) -> Result | None:
        shard = self.shard
        obj = shard.cache.get(self.primary, request.key)
        if obj is None:  # not this shard's (or gone): its owner reconciles it
            shard.released.discard(key)  # the fence refuses it anyway: not in the cache
            shard.adopted.discard(key)
            return None
        labels = (obj.get("metadata") or {}).get("labels") or {}
        step = shard_step(shard.name, labels, shard.config.labels)
        if step is Step.SKIP:
            return None
        if step is Step.ACKNOWLEDGE:
            await shard.acknowledge(self.primary, obj, key)
            return None
        shard.released.discard(key)  # labelled to it again since (a cache never goes back)
        token = CURRENT_KEY.set(key)
        children = _CHILD_LABELS.set(
            shard.labels_for_children(obj) if shard.config.children else None
        )
        try:
            if shard.config.children and key not in shard.adopted:
                await shard.adopt(self.primary, obj)  # its children, wherever left
                shard.adopted.add(key)
            return await self.inner.reconcile(request)
        finally:
            _CHILD_LABELS.reset(children)
            CURRENT_KEY.reset(token)


#: The coordinator's label patches in flight at once.
PATCHES_AT_ONCE = 16


class Coordinator:
    """The coordinator, acting on the replica holding the leader-election Lease (its writes
    fenced by that Lease; the others only look, :meth:`run`): every ``interval`` it lists
    the shard Leases (:class:`ShardRoster`); it watches the objects with no shard label
    (a metadata-only informer per primary kind and namespace, selecting them server-side:
    it holds only the keys waiting, and an object created or a drain acknowledged wakes it
    at once, so assigning a key costs no LIST and no more as objects grow); on a change of
    the Ready or leaving shards, while keys wait to move or after a conflict (at most once
    per ``interval``), and every ``sweep_interval`` it sweeps every primary object, a page
    at a time, keeping nothing between pages (:func:`coordinate`); each label patch carries
    the version it read. Deletes the Leases of shards gone (released, or expired on its
    clock: their fence shut long before)."""

    def __init__(
        self,
        client: Client,
        config: ShardingConfig,
        *,
        lease_namespace: str,
        lease_value: str,
        namespaces: Sequence[str] | None,
        metrics: ShardMetrics,
        clock: Clock,
        default_duration: float,
    ) -> None:
        self.client, self.config, self.metrics, self.clock = client, config, metrics, clock
        self.lease_namespace, self.lease_value = lease_namespace, lease_value
        self.namespaces: list[str | None] = list(namespaces) if namespaces else [None]
        self.roster = ShardRoster(clock, config.leaving_label, default_duration)
        self._pending = False  # keys wait to move: sweep again at the next look
        # per resource: each key left unassigned -> (since when, on the coordinator's clock;
        # whether labelled to a shard not Ready: a look, which lists only unlabelled keys,
        # keeps those as the last full sweep left them). Only the keys waiting: empty when
        # all is well, every key only while no shard can take one.
        self._waiting: dict[str, dict[str, tuple[float, bool]]] = {}
        # per resource: the keys whose drain was asked and not yet acknowledged (at most
        # max_drains per namespace); a look drops those it sees acknowledged (unlabelled)
        self._draining: dict[str, set[str]] = {}
        # per resource: its objects at the last full sweep (what auto_drains follows)
        self._objects: dict[str, int] = {}
        # while acting: per (resource, namespace), the informer of its unassigned objects,
        # their tasks, and what wakes the loop (an object came to lack the shard label)
        self._unassigned: dict[tuple[str, str | None], Informer] = {}
        self._watching: list[asyncio.Task[None]] = []
        self._woken = asyncio.Event()
        # per key: the version an assignment patched (the informer's copy lags behind it:
        # not assigned again while it shows that version)
        self._assigned: dict[str, str] = {}

    async def run(self, leading: asyncio.Event | None = None) -> None:
        """Look and sweep until cancelled; while ``leading`` is not set, only look (every
        replica does: its roster is warm the moment it is elected, so a shard that died
        with the coordinator is judged from when it was last seen renewing, not from the
        election)."""
        last: tuple[frozenset[str], frozenset[str]] | None = None
        next_sweep = next_look = next_full = float("-inf")
        interval = self.config.interval
        try:
            while True:
                try:
                    acting = leading is None or leading.is_set()
                    now = self.clock.now()
                    if not acting or now >= next_look or last is None:
                        ready, leaving = await self.look(delete=acting)
                        next_look = now + interval
                    else:  # woken by the watch: the Leases as last looked at, judged now
                        ready, leaving = self.roster.ready(), self.roster.leaving()
                    if not acting and leading is not None:  # look again, or act once elected
                        with contextlib.suppress(asyncio.TimeoutError):
                            await within(leading.wait(), interval)
                        continue
                    self.watch_unassigned()
                    shards = (frozenset(ready), frozenset(leaving))
                    if shards != last:
                        log.info("shards", ready=sorted(ready), leaving=sorted(leaving))
                    full = shards != last or now >= next_sweep
                    if full or (self._pending and now >= next_full):
                        await self.sweep(ready, leaving)
                        next_full = now + interval
                        if full:
                            last, next_sweep = shards, now + self.config.sweep_interval
                    else:
                        await self.sweep(ready, leaving, unassigned_only=True)
                except (errors.ApiError, TransportError, NotLeader) as error:
                    log.warning("shard coordination failed; trying again", error=str(error))
                except Exception as error:  # a bug: said, and the next look tries again
                    log.error("shard coordination failed", error=str(error), exc_info=error)
                wait = min(interval, self.roster.next_expiry() or interval)
                await self._pause(max(0.05, wait))
        finally:
            await self.stop_watching()

    def watch_unassigned(self) -> None:
        """Start watching each primary kind's objects with no shard label (once): from
        then on a look at them reads the informers' copies, and a new one wakes
        :meth:`run`."""
        if self._unassigned:
            return
        wake = FuncHandler(
            add=lambda _obj: self._woken.set(),
            update=lambda _old, _new: self._woken.set(),
        )
        for resource, chosen in self.config.primaries:
            for namespace in self.namespaces:
                informer = Informer(
                    self.client,
                    resource.metadata_only(),
                    namespace=namespace,
                    label_selector=self._unassigned_selector(chosen),
                    page_size=self.config.page_size,
                    clock=self.clock,
                )
                informer.add_handler(wake)
                self._unassigned[(str(resource), namespace)] = informer
                self._watching.append(
                    asyncio.create_task(informer.run(), name=f"unassigned-{resource}")
                )

    async def stop_watching(self) -> None:
        """Stop the informers of :meth:`watch_unassigned` (a look lists again)."""
        tasks, self._watching = self._watching, []
        self._unassigned.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    async def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` on the clock, or less if the watch of unassigned objects saw
        one come (or a drain acknowledged)."""
        if not self._woken.is_set():
            sleeping = asyncio.ensure_future(self.clock.sleep(seconds))
            woken = asyncio.ensure_future(self._woken.wait())
            try:
                await asyncio.wait({sleeping, woken}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (sleeping, woken):
                    task.cancel()
                await asyncio.wait({sleeping, woken})
        self._woken.clear()

    async def look(self, *, delete: bool = True) -> tuple[set[str], set[str]]:
        """Read the shard Leases (and, ``delete``, delete those of shards gone): the Ready
        and the leaving shards."""
        selector = f"{self.config.lease_label}={self.lease_value}"
        leases, _ = await self.client.list(LEASE, self.lease_namespace, label_selector=selector)
        self.roster.observe(leases)
        ready = self.roster.ready()
        for lease in leases if delete else ():  # released, or expired on our clock: gone
            meta = lease.get("metadata") or {}
            if meta.get("name") not in ready:
                with contextlib.suppress(errors.ApiError, TransportError):
                    await self.client.delete(
                        LEASE, meta["name"], self.lease_namespace, uid=meta.get("uid")
                    )
        return ready, self.roster.leaving()

    async def sweep(
        self, ready: set[str], leaving: set[str], unassigned_only: bool = False
    ) -> None:
        """Decide every primary object (or, ``unassigned_only``, those with no shard label)
        a page at a time, and patch."""
        pending = False
        if not unassigned_only:
            self.metrics.keys.clear()
        for resource, chosen in self.config.primaries:
            counts: dict[str, int] = {}
            left: dict[str, bool] = {}  # keys left unassigned -> labelled (to a shard gone)
            seen: set[str] = set()  # a look's: the unlabelled keys listed
            drained: set[str] = set()  # a full sweep's: drains in flight and asked
            for namespace in self.namespaces:
                in_flight = 0
                if not unassigned_only:
                    asked = await self._drains_in_flight(resource, chosen, namespace, ready)
                    in_flight = len(asked)
                    drained |= asked
                async for page in self._pages(resource, chosen, namespace, unassigned_only):
                    waiting, asked_now, wait = await self._decide(
                        resource, page, ready, leaving, in_flight=in_flight, counts=counts
                    )
                    left.update(waiting)
                    drained.update(asked_now)
                    in_flight += len(asked_now)
                    pending = pending or wait
                    for obj in page if unassigned_only else ():  # a sweep keeps no keys
                        meta = obj.get("metadata") or {}
                        seen.add(_key(resource, meta.get("namespace"), meta.get("name", "")))
            self._account(str(resource), left, seen, drained, unassigned_only=unassigned_only)
            if not unassigned_only:
                self._objects[str(resource)] = sum(counts.values()) + len(left)
                for shard, count in counts.items():
                    self.metrics.keys.labels(str(resource), shard).set(count)
        if not unassigned_only:
            self._pending = pending

    async def _pages(
        self, resource: Resource, chosen: str | None, namespace: str | None, unassigned: bool
    ) -> AsyncIterator[list[Obj]]:
        """The primary objects of ``resource`` in ``namespace`` chosen by ``chosen`` (or,
        ``unassigned``, those with no shard label: the informer's copies once it has
        listed), a LIST page at a time."""
        watched = self._watched(resource, namespace) if unassigned else None
        if watched is not None:
            yield watched
            return
        selector = self._unassigned_selector(chosen) if unassigned else chosen
        token: str | None = None
        while True:
            page, _, token = await self.client.list_page(
                resource.metadata_only(),
                namespace,
                label_selector=selector,
                limit=self.config.page_size,
                token=token,
            )
            yield page
            if token is None:
                return

    def _unassigned_selector(self, chosen: str | None) -> str:
        """The label selector of the primary objects ``chosen`` selects that carry no shard
        label."""
        absent = f"!{self.config.labels.shard}"
        return f"{chosen},{absent}" if chosen else absent

    def _watched(self, resource: Resource, namespace: str | None) -> list[Obj] | None:
        """The unassigned objects of ``resource`` in ``namespace`` as the informer of
        :meth:`watch_unassigned` holds them (None until it has listed: a look lists them),
        but those an assignment patched whose newer version it has not seen yet."""
        informer = self._unassigned.get((str(resource), namespace))
        if informer is None or not informer.has_synced():
            return None
        objects, versions = [], {}
        for obj in informer.store.iter_objects():
            meta = obj.get("metadata") or {}
            key = _key(resource, meta.get("namespace"), meta.get("name", ""))
            versions[key] = version = meta.get("resourceVersion")
            if self._assigned.get(key) != version:
                objects.append(obj)
        mine = f"{resource.group}/{resource.kind}/" + (f"{namespace}/" if namespace else "")
        for key in [k for k in self._assigned if k.startswith(mine)]:
            if versions.get(key) != self._assigned[key]:  # gone from the copy, or changed
                del self._assigned[key]
        return objects

    def max_drains(self, resource: Resource) -> int:
        """The drains in flight allowed for ``resource``: the configured number, or
        :func:`auto_drains` of its objects at the last full sweep."""
        if self.config.max_drains is not None:
            return self.config.max_drains
        return auto_drains(self._objects.get(str(resource), 0))

    def _account(
        self,
        resource: str,
        left: Mapping[str, bool],
        seen: set[str],
        drained: set[str],
        *,
        unassigned_only: bool,
    ) -> None:
        """The gauges of ``resource`` after a pass that listed ``seen`` and left ``left``
        unassigned: how many wait and since when, and the drains in flight (a full sweep
        counts them afresh; a look drops those acknowledged: their key listed unlabelled)."""
        now = self.clock.now()
        before = self._waiting.get(resource, {})
        waiting = (
            {k: v for k, v in before.items() if v[1] and k not in seen} if unassigned_only else {}
        )
        for key, labelled in left.items():
            waiting[key] = (before[key][0] if key in before else now, labelled)
        self._waiting[resource] = waiting
        self.metrics.unassigned.labels(resource).set(len(waiting))
        oldest = min((since for since, _ in waiting.values()), default=now)
        self.metrics.oldest_unassigned.labels(resource).set(now - oldest)
        if unassigned_only:
            drained = self._draining.get(resource, set()) - seen
        self._draining[resource] = drained
        self.metrics.drains.labels(resource).set(len(drained))

    async def _drains_in_flight(
        self, resource: Resource, chosen: str | None, namespace: str | None, ready: set[str]
    ) -> set[str]:
        """The keys of ``namespace`` whose drain is asked of a Ready shard."""
        drain = self.config.labels.drain
        selector = f"{chosen},{drain}" if chosen else drain
        items, _ = await self.client.list(
            resource.metadata_only(), namespace, label_selector=selector
        )
        shard = self.config.labels.shard
        return {
            _key(resource, meta.get("namespace"), meta.get("name", ""))
            for meta in ((o.get("metadata") or {}) for o in items)
            if (meta.get("labels") or {}).get(shard) in ready
        }

    async def _decide(
        self,
        resource: Resource,
        page: list[Obj],
        ready: set[str],
        leaving: set[str],
        *,
        in_flight: int,
        counts: dict[str, int],
    ) -> tuple[dict[str, bool], list[str], bool]:
        """One page: (the keys left unassigned, each with whether it is labelled — to a
        shard not Ready —, the keys whose drain was asked, whether keys still wait: to move
        from a Ready shard, or their patch conflicted)."""
        names = self.config.labels
        by_key: dict[str, Obj] = {}
        states: list[KeyState] = []
        for obj in page:
            meta = obj.get("metadata") or {}
            key = _key(resource, meta.get("namespace"), meta.get("name", ""))
            by_key[key] = obj
            states.append(KeyState.of(key, meta.get("labels") or {}, names))
        # the shards marked leaving since the look that began this sweep (a shard stopping
        # on this replica looks again at once): none is assigned a key it just handed back
        leaving = leaving | self.roster.leaving()
        actions = coordinate(states, ready, leaving, self.max_drains(resource), in_flight)
        holder = {s.key: s.shard for s in states}
        for state in states:
            if state.shard in ready:
                counts[state.shard] = counts.get(state.shard, 0) + 1
        left = {s.key: s.shard is not None for s in states if s.shard not in ready}
        gate = asyncio.Semaphore(PATCHES_AT_ONCE)

        async def carry_out(action: Action) -> bool | None:
            """True once patched, False on a conflict, None when the object is gone."""
            meta = by_key[action.key]["metadata"]
            async with gate:
                try:
                    await self.client.patch(
                        resource,
                        meta["name"],
                        action_patch(action, names, meta["resourceVersion"]),
                        namespace=meta.get("namespace"),
                    )
                except errors.Conflict:
                    return False  # changed since the page was read: sweep again at once
                except errors.NotFound:
                    return None
                except errors.ApiError as error:  # refused (e.g. by admission): said, skipped
                    log.warning("label patch refused", key=action.key, error=str(error))
                    return None
            return True

        outcomes = await asyncio.gather(*(carry_out(action) for action in actions))
        conflicted = False in outcomes
        done = {a.key for a, outcome in zip(actions, outcomes, strict=True) if outcome}
        drains: list[str] = []
        for action in actions:
            if action.key not in done:
                continue
            if isinstance(action, Drain):
                drains.append(action.key)
                self.metrics.handovers.labels(str(resource), "drain").inc()
            else:
                del left[action.key]
                self._assigned[action.key] = by_key[action.key]["metadata"]["resourceVersion"]
                counts[action.shard] = counts.get(action.shard, 0) + 1  # as the sweep leaves it
                if holder[action.key] is not None:
                    self.metrics.handovers.labels(str(resource), "expired").inc()
                log.info("key assigned", key=action.key, shard=action.shard)
        targets = sorted(ready - leaving)
        pending = conflicted or any(
            s.shard in ready
            and s.shard not in leaving
            and not s.draining
            and s.key not in done
            and owner(s.key, targets) != s.shard
            for s in states
        )
        return left, drains, pending
