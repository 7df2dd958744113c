"""What an operator's cache keeps of each kind: one table, derived once from its controllers.

controller-runtime's ``cache.Options.ByObject`` in one function, :func:`cache_policy`, which
an operator's assembly (:func:`appstack.sdk.operator.wire`) calls before any informer
exists and gives to the manager. From the registrations it derives, per watched kind:

* the **label selector**: a kind a controller owns or watches (pods) is cached only when
  labelled as the operator's (:func:`~appstack.sdk.kit.meta.child_selector`, or the
  controller's narrower ``selectors`` entry); a kind a spec refers to (a user's ConfigMap
  or Secret, :mod:`.references`) is not labelled as ours, so it has no selector;
* the **owners**: of a kind only owned (never watched nor referred to), only the children
  of the owning kinds are kept in full; any other object labelled ours is kept as
  metadata only (anyone may label their own object);
* the **transform**: what is kept of each object (only what the controllers read), from
  the operator's own table of transforms — one per kind for the whole process, as the
  cache of a kind is shared by every controller reading it (appstack's:
  :data:`appstack.controllers.registry.CACHE`; the kit's ready-made ones:
  :mod:`.applied`, :mod:`.pods`, :mod:`.references`);
* the **Namespaces** the gate watches (:mod:`.namespaces`), when the cache is cluster-wide;
* the **namespaces** a kind is kept in, when the cache is cluster-wide and only the enabled
  namespaces are (issue #46: memory bounded against every tenant, enabled or not): a kind a
  spec refers to (a user's ConfigMaps and Secrets, anyone's to fill) only in the enabled
  ones, an informer each; the operator's own kinds everywhere — it says in their status
  where it does not act — but outside the enabled namespaces only as
  :func:`~.namespaces.outside_enabled` keeps them (no spec, labels or annotations).

Two controllers asking for different selectors of one kind is a configuration error
raised here, at start-up, naming both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from appstack.core.resource import Resource
from appstack.runtime.cache import NAMESPACES, ByObject, Transform
from appstack.runtime.informer import prefixed
from appstack.runtime.resources import Obj
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kit.meta import child_selector
from appstack.sdk.kit.namespaces import (
    enabled_selector,
    namespace_cache,
    outside_enabled,
)
from appstack.sdk.kit.registration import Registration


def cache_policy(
    controllers: Sequence[Registration],
    identity: OperatorIdentity,
    *,
    transforms: Mapping[Resource, Transform] | None = None,
    cluster_wide: bool = True,
    enable_all_namespaces: bool = False,
) -> dict[Resource, ByObject]:
    """The :class:`~appstack.runtime.cache.ByObject` table of an operator running
    ``controllers`` (see the module docstring): ``transforms`` what is kept of each kind;
    ``cluster_wide`` whether the cache watches every namespace (then the namespace gate
    has its own informer of the enabled namespaces, or of all with
    ``enable_all_namespaces``)."""
    selectors: dict[Resource, tuple[str, str]] = {}  # resource -> (selector, controller)
    owners: dict[Resource, list[Resource]] = {}
    read_whole: set[Resource] = set()
    for controller in controllers:
        reconciler = controller.reconciler
        watched = [resource for resource, _ in reconciler.watches]
        referenced = set(reconciler.references)
        for resource in (*controller.owns, *watched):
            if resource in referenced:  # a user's objects are not labelled as ours
                continue
            selector = reconciler.selectors.get(resource) or child_selector(resource.kind, identity)
            before = selectors.setdefault(resource, (selector, controller.name))
            if before[0] != selector:
                raise ValueError(
                    f"controllers {before[1]} and {controller.name} cache {resource} with "
                    f"different label selectors ({before[0]!r}, {selector!r})"
                )
        for resource in controller.owns:
            owners.setdefault(resource, [])
            if controller.primary not in owners[resource]:
                owners[resource].append(controller.primary)
        read_whole.update(watched, referenced)  # read though we do not control them
    transforms = transforms or {}
    enabled = None
    if cluster_wide:
        enabled = enabled_selector(identity.enabled_label, enable_all_namespaces)
    referenced = {r for c in controllers for r in c.reconciler.references}
    primaries = {c.primary for c in controllers}
    for controller in controllers:  # a primary chosen by a label selector (any kind's)
        chosen_by: str | None = getattr(controller.reconciler, "selector", None)
        if chosen_by:
            before = selectors.setdefault(controller.primary, (chosen_by, controller.name))
            if before[0] != chosen_by:
                raise ValueError(
                    f"controllers {before[1]} and {controller.name} cache "
                    f"{controller.primary} with different label selectors "
                    f"({before[0]!r}, {chosen_by!r})"
                )
    table: dict[Resource, ByObject] = {}
    for resource in {*selectors, *owners, *read_whole, *transforms, *primaries}:
        chosen = selectors.get(resource)
        table[resource] = ByObject(
            label_selector=chosen[0] if chosen else None,
            transform=transforms.get(resource),
            owners=None if resource in read_whole else tuple(owners.get(resource, ())) or None,
            namespaces=enabled
            if resource.namespaced and (resource in referenced or resource in primaries)
            else None,
            elsewhere=outside_enabled
            if enabled and resource.namespaced and resource in primaries
            else None,
        )
    if cluster_wide:
        table[NAMESPACES] = namespace_cache(identity.enabled_label, enable_all_namespaces)
    return table


def bounded_metadata(
    label_prefixes: tuple[str, ...], annotation_prefixes: tuple[str, ...]
) -> Transform:
    """A transform keeping all of an object but its labels and annotations, of which only
    those under ``label_prefixes`` and ``annotation_prefixes`` (at most
    :data:`~appstack.runtime.informer.FOREIGN_KEPT` each): for a kind whose controllers
    read no other — whoever may create one may give it 1.3 MB of them (issue #46)."""

    def transform(obj: Obj) -> Obj:
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            for field, prefixes in (
                ("labels", label_prefixes),
                ("annotations", annotation_prefixes),
            ):
                if field in meta:
                    kept = prefixed(meta[field], prefixes)
                    if kept:
                        meta[field] = kept
                    else:
                        del meta[field]
        return obj

    return transform
