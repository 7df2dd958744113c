"""An in-memory API server for tests without a cluster: :class:`FakeApiServer`, a transport
the real :class:`~appstack.runtime.client.Client` speaks to — so the client, the informers,
the cache, the controllers and the SDK's reconcilers under test are the ones that run in
production, only the API server is not (what envtest's control plane is to
controller-runtime, in memory and in milliseconds).

What it keeps as the API server does, for the kinds it is told to serve
(:meth:`FakeApiServer.serve`; the common built-in kinds are served already):

* objects with ``uid``, ``creationTimestamp``, one ``resourceVersion`` sequence, and
  ``generation`` counted on every change outside ``metadata`` and ``status``;
* get, list (label selectors), watch (from a resourceVersion; objects entering or leaving
  a selector are ``ADDED``/``DELETED``), create (``AlreadyExists``), update with a
  ``resourceVersion`` precondition (``Conflict``), JSON merge patch, delete with a ``uid``
  precondition; a namespaced object needs its Namespace;
* server-side apply: the fields each field manager applied are its own, an apply that no
  longer sets a field it set removes it (unless another manager set it since); a field
  another manager owns is a conflict only when applied with another value (the same value
  makes the two its co-owners), and ``force`` takes it over; lists are atomic (replaced
  whole, as ``x-kubernetes-list-type: atomic``) but those the built-in kinds declare as
  maps that operators co-own (``x-kubernetes-list-type: map``: :func:`map_keys`) —
  ``metadata.ownerReferences`` by ``uid`` (every kind), and of the built-in kinds
  containers and init containers by ``name``, a container's ``env`` by ``name``, ``ports``
  by ``containerPort`` and ``protocol``, ``volumeMounts`` by ``mountPath`` and
  ``volumeDevices`` by ``devicePath``, a pod spec's ``volumes`` and ``imagePullSecrets``
  by ``name`` and ``topologySpreadConstraints`` by ``topologyKey`` and
  ``whenUnsatisfiable``, a Service's ``ports`` by ``port`` and ``protocol`` (``protocol``
  defaulting to ``TCP``), ``status.conditions`` by ``type``: each item is its applier's
  (several may co-own one), merged into the list by its keys and removed when no manager
  applies it any more;
* the status subresource of the kinds that have one: writes to the object keep its status,
  writes to ``/status`` change only the status;
* finalizers (deletion sets ``deletionTimestamp`` and waits for them) and the garbage
  collector (deleting an owner deletes its dependents, by ownerReference uid);
* discovery (``/api/v1``, ``/apis/<group>/<version>``) of what it serves, and metadata-only
  lists and watches (``PartialObjectMetadata``).

What it does not do, it refuses rather than pretends (``501 NotImplemented`` naming it):
JSON patches, strategic merge patches, field selectors, pagination tokens, dry runs. There
is no admission (no CRD schema, CEL or webhook): the models' own validation, which the SDK
runs in the reconciler, is what a unit test exercises. Used by an SDK's in-memory operator
runner and by tests.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import uuid
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import unquote

import orjson

from appstack.runtime.apirequest import ApiRequest, Response, Timeouts
from appstack.runtime.filters import parse_selector
from appstack.runtime.resources import (
    CONFIG_MAP,
    DEPLOYMENT,
    EVENT,
    JOB,
    LEASE,
    NAMESPACE,
    PDB,
    POD,
    PVC,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
    STATEFUL_SET,
    Obj,
    Resource,
)


@dataclass(frozen=True)
class _Key:
    """An item of a list of type map (managedFields' ``k:{"name":"app"}``): the values of
    its key fields."""

    fields: tuple[tuple[str, Any], ...]

    def matches(self, item: Any) -> bool:
        return isinstance(item, dict) and all(
            item.get(name, _DEFAULTS.get(name)) == value for name, value in self.fields
        )


#: A path to a field: map keys, and list items of type map (:class:`_Key`).
Path = tuple[str | _Key, ...]
#: Key fields the API server defaults before merging (a port's protocol).
_DEFAULTS = {"protocol": "TCP"}
_CONTAINERS = ("containers", "initContainers", "ephemeralContainers")
#: The lists of type map of a container (by field), and of a built-in kind (by path).
_CONTAINER_MAPS: dict[str, tuple[str, ...]] = {
    "env": ("name",),
    "ports": ("containerPort", "protocol"),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
}
#: The lists of type map of a pod spec (a Pod's ``spec``, a workload's ``template.spec``).
_POD_MAPS: dict[str, tuple[str, ...]] = {
    "volumes": ("name",),
    "imagePullSecrets": ("name",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
}
_MAPS: dict[Path, tuple[str, ...]] = {
    ("spec", "ports"): ("port", "protocol"),  # a Service's
    ("status", "conditions"): ("type",),
}

#: Built-in kinds served from the start, and whether each has a status subresource.
BUILT_IN: dict[Resource, bool] = {
    NAMESPACE: True,
    CONFIG_MAP: False,
    SECRET: False,
    SERVICE_ACCOUNT: False,
    SERVICE: True,
    POD: True,
    PVC: True,
    DEPLOYMENT: True,
    STATEFUL_SET: True,
    JOB: True,
    PDB: True,
    EVENT: False,
    LEASE: False,
}


class _Refusal(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


@dataclass
class _Stored:
    obj: Obj
    #: (field manager, "Apply" or "Update") -> the leaf paths it set, as managedFields
    owners: dict[tuple[str, str], set[Path]]


@dataclass(frozen=True)
class _Target:
    """What a request's path names: the kind, whether it has a status subresource, the
    namespace, the object's name and the subresource."""

    resource: Resource
    has_status: bool
    namespace: str | None
    name: str | None
    sub: str | None

    @property
    def object_name(self) -> str:
        if self.name is None:
            raise _Refusal(405, "MethodNotAllowed", "a write of a collection")
        return self.name


@dataclass(frozen=True)
class _Event:
    rv: int
    resource: Resource
    type: str
    obj: Obj
    old: Obj | None


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def builtin(resource: Resource) -> bool:
    """Whether ``resource`` is one of Kubernetes' own kinds (its group has no dot, or is
    ``*.k8s.io``): the kinds whose lists of type map :func:`map_keys` knows."""
    return "." not in resource.group or resource.group.endswith(".k8s.io")


def map_keys(path: Path, *, built_in: bool) -> tuple[str, ...] | None:
    """The key fields of the list at ``path`` if it is a list of type map the fake merges
    (the module docstring names them; of a custom kind only ``metadata.ownerReferences``:
    its schema, which the fake does not read, says the rest), else None (atomic)."""
    if path == ("metadata", "ownerReferences"):
        return ("uid",)
    if not built_in or not path or not isinstance(path[-1], str):
        return None
    if path[-1] in _CONTAINERS:
        return ("name",)
    if len(path) > 1 and isinstance(path[-2], _Key):  # a field of an item: a container's
        return _CONTAINER_MAPS.get(path[-1])
    if len(path) > 1 and path[-2] == "spec" and path[-1] in _POD_MAPS:  # a pod spec's
        return _POD_MAPS[path[-1]]
    return _MAPS.get(path)


def _items(value: Any, keys: tuple[str, ...] | None) -> list[tuple[_Key, Obj]] | None:
    """The items of ``value`` by their keys, or None when it is no list of type map with
    those keys (not a list, an item without a key, two items with one key: atomic)."""
    if keys is None or not isinstance(value, list):
        return None
    out: list[tuple[_Key, Obj]] = []
    for item in value:
        if not isinstance(item, dict):
            return None
        fields = tuple((name, item.get(name, _DEFAULTS.get(name))) for name in keys)
        if any(v is None or isinstance(v, (dict, list)) for _, v in fields):
            return None
        out.append((_Key(fields), item))
    return out if len({key for key, _ in out}) == len(out) else None


def _leaves(value: Any, prefix: Path = (), *, built_in: bool = False) -> set[Path]:
    """The leaf paths of ``value``: maps recursed into; a list of type map
    (:func:`map_keys`) item by item — the item itself (its keys) and its other fields —
    anything else (other lists too) a leaf."""
    if isinstance(value, dict) and value:
        return set().union(*(_leaves(v, (*prefix, k), built_in=built_in) for k, v in value.items()))
    keys = map_keys(prefix, built_in=built_in)
    items = _items(value, keys)
    if items is not None and keys is not None:
        paths: set[Path] = set()
        for key, item in items:
            paths.add((*prefix, key))
            rest = {k: v for k, v in item.items() if k not in keys}
            if rest:
                paths |= _leaves(rest, (*prefix, key), built_in=built_in)
        return paths
    return {prefix}


def _is_item(path: Path) -> bool:
    return bool(path) and isinstance(path[-1], _Key)


def _show(path: Path) -> str:
    """A path as the API server's conflicts name it: ``.spec.containers[name="app"].image``."""
    shown = ""
    for step in path:
        if isinstance(step, _Key):
            keys = ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in step.fields)
            shown += f"[{keys}]"
        else:
            shown += f".{step}"
    return shown


def _merge_applied(
    target: dict[str, Any], intent: Mapping[str, Any], prefix: Path, *, built_in: bool
) -> None:
    """Merge an applied intent into ``target``: maps recursively, lists of type map item
    by item (by their keys: an item applied again merged into its namesake, a new one
    appended), anything else replaced."""
    for key, value in intent.items():
        path: Path = (*prefix, key)
        current = target.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _merge_applied(current, value, path, built_in=built_in)
            continue
        keys = map_keys(path, built_in=built_in)
        mine, theirs = _items(value, keys), _items(current, keys)
        if mine is not None and theirs is not None and isinstance(current, list):
            found = dict(theirs)
            for item_key, item in mine:
                if item_key in found:
                    _merge_applied(found[item_key], item, (*path, item_key), built_in=built_in)
                else:
                    current.append(copy.deepcopy(item))
            continue
        target[key] = copy.deepcopy(value)


def _merge(target: dict[str, Any], patch: Mapping[str, Any], *, nulls_delete: bool) -> None:
    for key, value in patch.items():
        if value is None and nulls_delete:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value, nulls_delete=nulls_delete)
        else:
            target[key] = copy.deepcopy(value)


def _child(node: Any, step: str | _Key) -> Any:
    if isinstance(step, _Key):
        found = [item for item in node if step.matches(item)] if isinstance(node, list) else []
        return found[0] if found else None
    nxt = node.get(step) if isinstance(node, dict) else None
    return nxt if isinstance(nxt, (dict, list)) else None


def _drop(node: Any, step: str | _Key) -> None:
    if isinstance(step, _Key) and isinstance(node, list):
        node[:] = [item for item in node if not step.matches(item)]
    elif isinstance(step, str) and isinstance(node, dict):
        node.pop(step, None)


def _remove(target: dict[str, Any], path: Path) -> None:
    """Remove ``path`` (a field, or an item of a list of type map) and the maps and lists
    it leaves empty."""
    *parents, last = path
    chain: list[Any] = [target]
    for step in parents:
        nxt = _child(chain[-1], step)
        if nxt is None:
            return
        chain.append(nxt)
    _drop(chain[-1], last)
    for depth in range(len(parents), 0, -1):
        if chain[depth] in ({}, []):
            _drop(chain[depth - 1], parents[depth - 1])


_IDENTITY = ("apiVersion", "kind")
_SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


class FakeApiServer:
    """The in-memory API server (see the module docstring): a transport for
    ``Client(FakeApiServer())``. ``serve(resource, status=...)`` adds a kind."""

    host = "in-memory"

    def __init__(self, kinds: Iterable[Resource] = (), *, status: bool = True) -> None:
        self._kinds: dict[tuple[str, str, str], tuple[Resource, bool]] = {}
        for resource, has_status in BUILT_IN.items():
            self.serve(resource, status=has_status)
        for resource in kinds:
            self.serve(resource, status=status)
        self._objects: dict[tuple[str, str, str | None, str], _Stored] = {}
        self._events: list[_Event] = []
        self._changed = asyncio.Condition()
        self._rv = itertools.count(1)
        self.last_rv = 0
        self.requests: list[ApiRequest] = []
        self.closed = False

    # ------------------------------------------------------------------ what it serves
    def serve(self, resource: Resource, *, status: bool = True) -> None:
        """Serve ``resource`` from now on (a CRD installed), with or without a status
        subresource."""
        base = Resource(resource.group, resource.version, resource.kind, resource.plural,
                        resource.namespaced)  # fmt: skip
        self._kinds[(resource.group, resource.version, resource.plural)] = (base, status)

    def serves(self, resource: Resource) -> bool:
        """Whether ``resource`` is served."""
        return (resource.group, resource.version, resource.plural) in self._kinds

    def objects(self, resource: Resource, namespace: str | None = None) -> list[Obj]:
        """Copies of the stored objects of ``resource`` (in ``namespace``), by name."""
        found = [
            copy.deepcopy(stored.obj)
            for (group, plural, ns, _), stored in sorted(self._objects.items(), key=str)
            if (group, plural) == (resource.group, resource.plural)
            and (namespace is None or ns == namespace)
        ]
        return found

    # ---------------------------------------------------------------------- transport
    async def send(
        self, request: ApiRequest, timeouts: Timeouts, guard: Callable[[], float] | None = None
    ) -> Response:
        """Answer ``request`` as the API server would (see the module docstring)."""
        if guard is not None:
            guard()
        self.requests.append(request)
        try:
            return await self._answer(request)
        except _Refusal as refusal:
            return self._status(refusal.code, refusal.reason, refusal.message)

    async def close(self) -> None:
        """Nothing to close; watches end when their readers stop."""
        self.closed = True

    # ---------------------------------------------------------------------- routing
    def _route(self, path: str) -> _Target:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            group, version, rest = parts[1], parts[2], parts[3:]
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3 and (group, version, rest[2]) in self._kinds:
            namespace, rest = rest[1], rest[2:]  # in a namespace (else: Namespaces themselves)
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        served = self._kinds.get((group, version, plural))
        if served is None:
            raise _Refusal(404, "NotFound", f"the server could not find the resource {path}")
        resource, has_status = served
        if sub not in (None, "status"):
            raise _Refusal(501, "NotImplemented", f"subresource {sub}: not in the fake API")
        return _Target(resource, has_status, namespace, name, sub)

    async def _answer(self, request: ApiRequest) -> Response:
        for unsupported in ("fieldSelector", "continue", "dryRun"):
            if unsupported in request.params:
                raise _Refusal(501, "NotImplemented", f"{unsupported}: not in the fake API")
        parts = request.path.strip("/").split("/")
        if (parts[0] == "api" and len(parts) == 2) or (parts[0] == "apis" and len(parts) == 3):
            return self._discovery(parts)
        target = self._route(request.path)
        if request.method == "GET":
            return self._read(target, request)
        body = orjson.loads(request.body) if request.body else {}
        written = await self._write(target, request, body)
        return self._ok(written, 201 if request.method == "POST" else 200)

    def _read(self, target: _Target, request: ApiRequest) -> Response:
        if target.name is not None:
            stored = self._get(target.resource, target.namespace, target.name)
            return self._ok(self._shown(target.resource, stored.obj))
        if request.stream:
            return self._watch(target.resource, target.namespace, request)
        return self._ok(self._list(target.resource, target.namespace, request))

    async def _write(self, target: _Target, request: ApiRequest, body: Obj) -> Obj:
        method, manager = request.method, request.params.get("fieldManager", "unknown")
        if method == "POST":
            return await self._create(target, body)
        if method == "PUT":
            return await self._update(target, body)
        if method == "DELETE":
            return await self._delete(target, body)
        if method != "PATCH":
            raise _Refusal(405, "MethodNotAllowed", method)
        kind = request.content_type or ""
        if kind.startswith("application/apply-patch"):
            return await self._apply(target, body, manager, request.params.get("force") == "true")
        if kind.startswith("application/merge-patch"):
            return await self._patch(target, body, manager)
        raise _Refusal(501, "NotImplemented", f"patch type {kind}: not in the fake API")

    def _discovery(self, parts: list[str]) -> Response:
        group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        resources = [
            {"name": r.plural, "kind": r.kind, "namespaced": r.namespaced}
            for (g, v, _), (r, _s) in self._kinds.items()
            if (g, v) == (group, version)
        ]
        if not resources:
            raise _Refusal(404, "NotFound", f"the server could not find {'/'.join(parts)}")
        gv = f"{group}/{version}" if group else version
        return self._ok({"kind": "APIResourceList", "groupVersion": gv, "resources": resources})

    # ---------------------------------------------------------------------- storage
    def _key(self, resource: Resource, namespace: str | None, name: str) -> tuple[Any, ...]:
        return (resource.group, resource.plural, namespace if resource.namespaced else None, name)

    def _get(self, resource: Resource, namespace: str | None, name: str | None) -> _Stored:
        stored = self._objects.get(self._key(resource, namespace, name or ""))
        if stored is None:
            raise _Refusal(404, "NotFound", f'{resource.plural} "{name}" not found')
        return stored

    def _shown(self, resource: Resource, obj: Obj) -> Obj:
        if not resource.only_metadata:
            return copy.deepcopy(obj)
        return {
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": copy.deepcopy(obj["metadata"]),
        }

    def _list(self, resource: Resource, namespace: str | None, request: ApiRequest) -> Obj:
        matches = parse_selector(request.params.get("labelSelector", ""))
        items = [
            self._shown(resource, stored.obj)
            for key, stored in sorted(self._objects.items(), key=lambda kv: str(kv[0]))
            if key[:2] == (resource.group, resource.plural)
            and (namespace is None or key[2] == namespace)
            and matches(stored.obj["metadata"].get("labels") or {})
        ]
        return {"kind": f"{resource.kind}List", "items": items,
                "metadata": {"resourceVersion": str(self.last_rv)}}  # fmt: skip

    def _require_namespace(self, resource: Resource, namespace: str | None) -> None:
        if not resource.namespaced:
            return
        if not namespace:
            raise _Refusal(400, "BadRequest", "a namespaced object needs metadata.namespace")
        if self._key(NAMESPACE, None, namespace) not in self._objects:
            raise _Refusal(404, "NotFound", f'namespaces "{namespace}" not found')

    async def _record(self, resource: Resource, kind: str, obj: Obj, old: Obj | None) -> None:
        async with self._changed:
            self._events.append(_Event(self.last_rv, resource, kind, copy.deepcopy(obj), old))
            self._changed.notify_all()

    def _next_rv(self) -> str:
        self.last_rv = next(self._rv)
        return str(self.last_rv)

    async def _store(
        self, resource: Resource, stored: _Stored, old: Obj | None, *, new: bool = False
    ) -> Obj:
        meta = stored.obj["metadata"]
        if old is not None and _content(old) != _content(stored.obj):
            meta["generation"] = int(old["metadata"].get("generation") or 1) + 1
        if old is not None and old == stored.obj:
            return copy.deepcopy(stored.obj)  # nothing changed: no new version, no event
        meta["resourceVersion"] = self._next_rv()
        key = self._key(resource, meta.get("namespace"), meta["name"])
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._objects.pop(key, None)
            await self._record(resource, "DELETED", stored.obj, old)
            await self._collect(meta["uid"])
            return copy.deepcopy(stored.obj)
        self._objects[key] = stored
        await self._record(resource, "ADDED" if new else "MODIFIED", stored.obj, old)
        return copy.deepcopy(stored.obj)

    async def _create(self, target: _Target, body: Obj) -> Obj:
        resource, has_status, namespace = target.resource, target.has_status, target.namespace
        meta = body.setdefault("metadata", {})
        if resource.namespaced:
            meta["namespace"] = meta.get("namespace") or namespace
        name = meta.get("name")
        if not name and meta.get("generateName"):
            name = meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
        if not name:
            raise _Refusal(422, "Invalid", "metadata.name: Required value")
        self._require_namespace(resource, meta.get("namespace"))
        if self._key(resource, meta.get("namespace"), name) in self._objects:
            raise _Refusal(409, "AlreadyExists", f'{resource.plural} "{name}" already exists')
        for field in _SERVER_SET:
            meta.pop(field, None)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
        body["apiVersion"], body["kind"] = resource.api_version, resource.kind
        if has_status and resource != NAMESPACE:
            body.pop("status", None)
        stored = _Stored(body, {})
        return await self._store(resource, stored, None, new=True)

    def _check_version(self, stored: _Stored, body: Obj) -> None:
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != stored.obj["metadata"]["resourceVersion"]:
            raise _Refusal(
                409,
                "Conflict",
                "the object has been modified; please apply your changes to the latest "
                "version and try again",
            )

    def _kept(self, old: Obj, new: Obj, has_status: bool, sub: str | None) -> Obj:
        """``new`` with what the write may not change put back: the server's metadata, and
        the status (a write of the object) or everything but the status (of ``/status``)."""
        if sub == "status":
            result = copy.deepcopy(old)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            result["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            return result
        result = copy.deepcopy(new)
        meta = result.setdefault("metadata", {})
        for field in ("uid", "creationTimestamp", "generation", "namespace", "name"):
            if field in old["metadata"]:
                meta[field] = old["metadata"][field]
        if old["metadata"].get("deletionTimestamp"):
            meta["deletionTimestamp"] = old["metadata"]["deletionTimestamp"]
        result["apiVersion"], result["kind"] = old["apiVersion"], old["kind"]
        if has_status:
            if "status" in old:
                result["status"] = copy.deepcopy(old["status"])
            else:
                result.pop("status", None)
        return result

    async def _update(self, target: _Target, body: Obj) -> Obj:
        stored = self._get(target.resource, target.namespace, target.object_name)
        self._check_version(stored, body)
        old = stored.obj
        new = self._kept(old, body, target.has_status, target.sub)
        return await self._store(target.resource, _Stored(new, stored.owners), old)

    async def _patch(self, target: _Target, body: Obj, manager: str) -> Obj:
        stored = self._get(target.resource, target.namespace, target.object_name)
        self._check_version(stored, body)
        old = stored.obj
        merged = copy.deepcopy(old)
        _merge(merged, body, nulls_delete=True)
        new = self._kept(old, merged, target.has_status, target.sub)
        owners = {m: set(paths) for m, paths in stored.owners.items()}
        set_by_patch = _leaves(_owned_part(body), built_in=builtin(target.resource))
        owners.setdefault((manager, "Update"), set()).update(set_by_patch)
        return await self._store(target.resource, _Stored(new, owners), old)

    async def _apply(self, target: _Target, intent: Obj, applier: str, force: bool) -> Obj:
        """Server-side apply: as with the API server's managedFields, a manager's applied
        fields are its own apart from what it set by updates and patches."""
        resource, name = target.resource, target.object_name
        manager = (applier, "Apply")
        key = self._key(resource, target.namespace, name)
        stored = self._objects.get(key)
        built_in = builtin(resource)
        applied = _leaves(_owned_part(intent), built_in=built_in)
        if stored is None:
            body = copy.deepcopy(intent)
            body.setdefault("metadata", {}).update(name=name)
            created = await self._create(target, body)
            self._objects[key].owners = {manager: applied}
            return created
        old = stored.obj
        others = {m: paths for m, paths in stored.owners.items() if m != manager}
        # an item of a list of type map is co-owned (each manager's, no conflict); so is a
        # field applied with the value it has: only a field set to another value is taken
        fields = {
            path
            for path in applied
            if not _is_item(path) and _value_at(intent, path) != _value_at(old, path)
        }
        taken = {p for paths in others.values() for p in paths if p in fields}
        if taken and not force:
            conflicts = sorted(
                f'conflict with "{m[0]}": {_show(path)}'
                for m, paths in others.items()
                for path in paths & fields
            )
            raise _Refusal(
                409,
                "Conflict",
                f"Apply failed with {len(conflicts)} conflict(s): {'; '.join(conflicts)}",
            )
        result = copy.deepcopy(old)
        for path in stored.owners.get(manager, set()) - applied:
            if not any(_holds(p, path) for paths in others.values() for p in paths):
                _remove(result, path)
        content = {k: v for k, v in intent.items() if k not in _IDENTITY}
        _merge_applied(result, content, (), built_in=built_in)
        new = self._kept(old, result, target.has_status, target.sub)
        owners = {m: paths - fields for m, paths in others.items()}
        owners[manager] = applied
        return await self._store(resource, _Stored(new, owners), old)

    async def _delete(self, target: _Target, options: Obj) -> Obj:
        resource = target.resource
        stored = self._get(resource, target.namespace, target.object_name)
        wanted = (options.get("preconditions") or {}).get("uid")
        if wanted and wanted != stored.obj["metadata"]["uid"]:
            raise _Refusal(409, "Conflict", "Precondition failed: UID in precondition")
        old = stored.obj
        new = copy.deepcopy(old)
        new["metadata"].setdefault("deletionTimestamp", _now())
        return await self._store(resource, _Stored(new, stored.owners), old)

    async def _collect(self, uid: str) -> None:
        """The garbage collector: delete every object an ownerReference ties to ``uid``."""
        for (group, plural, namespace, name), stored in list(self._objects.items()):
            refs = stored.obj["metadata"].get("ownerReferences") or []
            if any(ref.get("uid") == uid for ref in refs):
                resource = next(
                    r for (g, _, p), (r, _s) in self._kinds.items() if (g, p) == (group, plural)
                )
                if self._key(resource, namespace, name) in self._objects:
                    await self._delete(_Target(resource, False, namespace, name, None), {})

    # ---------------------------------------------------------------------- watches
    def _watch(self, resource: Resource, namespace: str | None, request: ApiRequest) -> Response:
        since = int(request.params.get("resourceVersion") or 0)
        matches = parse_selector(request.params.get("labelSelector", ""))
        return Response(200, {}, lines=self._stream(resource, namespace, since, matches))

    async def _stream(
        self,
        resource: Resource,
        namespace: str | None,
        since: int,
        matches: Callable[[Mapping[str, str]], bool],
    ) -> AsyncGenerator[bytes, None]:
        seen = next((i for i, e in enumerate(self._events) if e.rv > since), len(self._events))
        while True:
            async with self._changed:
                while seen >= len(self._events):
                    await self._changed.wait()
                pending, seen = self._events[seen:], len(self._events)
            for event in pending:
                line = self._watch_line(resource, namespace, matches, event)
                if line is not None:
                    yield line

    def _watch_line(
        self,
        resource: Resource,
        namespace: str | None,
        matches: Callable[[Mapping[str, str]], bool],
        event: _Event,
    ) -> bytes | None:
        if (event.resource.group, event.resource.plural) != (resource.group, resource.plural):
            return None
        if namespace is not None and event.obj["metadata"].get("namespace") != namespace:
            return None
        now = matches(event.obj["metadata"].get("labels") or {})
        before = event.old is not None and matches(event.old["metadata"].get("labels") or {})
        kind = event.type
        if kind == "MODIFIED" and now != before:
            kind = "ADDED" if now else "DELETED"
        elif not now and not (kind == "DELETED" and before):
            return None
        return orjson.dumps({"type": kind, "object": self._shown(resource, event.obj)})

    # ---------------------------------------------------------------------- answers
    def _ok(self, obj: Obj, code: int = 200) -> Response:
        return Response(code, {"Content-Type": "application/json"}, orjson.dumps(obj))

    def _status(self, code: int, reason: str, message: str) -> Response:
        body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                "reason": reason, "message": message}  # fmt: skip
        return Response(code, {"Content-Type": "application/json"}, orjson.dumps(body))


_ABSENT = object()


def _value_at(obj: Any, path: Path) -> Any:
    """The value at ``path`` in ``obj`` (an item of a list of type map found by its keys),
    or a marker no value equals when it is not there."""
    node = obj
    for step in path:
        if isinstance(step, _Key):
            found = [i for i in node if step.matches(i)] if isinstance(node, list) else []
            if not found:
                return _ABSENT
            node = found[0]
        elif isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return _ABSENT
    return node


def _holds(owned: Path, path: Path) -> bool:
    """Whether owning ``owned`` keeps ``path`` in place: the same field, or — ``path`` an
    item of a list of type map — a field of that item."""
    return owned == path or (_is_item(path) and owned[: len(path)] == path)


def _content(obj: Obj) -> Obj:
    """What ``generation`` counts: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _owned_part(body: Obj) -> Obj:
    """The part of a written object whose fields its manager owns: not the identity, the
    name or the server's own metadata."""
    owned = {k: v for k, v in body.items() if k not in _IDENTITY}
    meta = {
        k: v
        for k, v in (body.get("metadata") or {}).items()
        if k not in ("name", "namespace", *_SERVER_SET)
    }
    if meta:
        owned["metadata"] = meta
    else:
        owned.pop("metadata", None)
    return owned
