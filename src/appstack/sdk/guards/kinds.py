"""The admission guards about an operator's own kinds and its Events (pure; part of
:func:`appstack.sdk.guards.policies`, for appstack's operator and every scaffolded one):

* :func:`kinds_policy` — what the operator's token may change of an object of its kinds:
  its finalizers — adding only the operator's own (a foreign one would hold the object,
  and its namespace's deletion, for ever), only removing them where the namespace is not
  enabled — and its status (where the namespace is not enabled, only to say so: exactly
  one condition, ``Ready=False``, ``NamespaceNotEnabled``, with the operator's message);
  never its spec, labels, annotations or ``ownerReferences`` — a stolen token cannot
  change a tenant's spec, nor have the garbage collector delete a tenant's object by
  giving it a made-up owner; installed sharded, it may also change the two shard labels
  it routes its objects by (and no other label);
* :func:`shard_labels_policy` — installed sharded only: nobody else (a tenant) sets,
  changes or removes those shard labels;
* :func:`events_policy` — the operator's Events: only in enabled namespaces, and only
  about an object of its kinds (exact apiVersion) in the Event's own namespace;
* :func:`baseline_policy` — for everyone who creates or changes its kinds: no
  ``securityContext`` beyond the Pod Security baseline (privileged, capabilities beyond
  baseline, an ``Unconfined`` seccomp profile) and no AppArmor-unconfined pod annotation,
  unless the namespace is labelled ``<domain>/allow-privileged-pods=true`` — refused at
  admission with the field named, instead of a workload the writes policy refuses later.
  The fields are found in the CRDs' schemas (every ``securityContext`` and
  ``podAnnotations``), so a kind that gains one is covered without touching this module;
  a project whose kinds have none gets no such policy.
"""

from __future__ import annotations

from typing import Any

from appstack.sdk.guards.expressions import (
    Validation,
    cel_list,
    cel_string,
    finalizers_added_only,
    labelled,
    refusal,
    unchanged,
)
from appstack.sdk.guards.pods import (
    APPARMOR_ANNOTATION,
    annotations_confined,
    capabilities_added_ok,
    not_true,
    profile_confined,
)
from appstack.sdk.guards.subject import GuardedOperator, Obj
from appstack.sdk.identity import NOT_ENABLED_REASON
from appstack.sdk.schema import root_schema


def _resources(operator: GuardedOperator, *, status: bool) -> list[dict[str, Any]]:
    plurals = [k.plural for k in operator.kinds]
    if status:
        plurals += [f"{p}/status" for p in plurals]
    return [
        {
            "apiGroups": sorted({k.group for k in operator.kinds}),
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"] if not status else ["UPDATE"],
            "resources": plurals,
        }
    ]


def _not_enabled_message(operator: GuardedOperator) -> str:
    """CEL: the message the operator's Ready condition has where the request's namespace is
    not enabled (:meth:`~appstack.sdk.identity.OperatorIdentity.not_enabled_message`), built
    from the request's namespace."""
    marker = "\x00"
    parts = operator.identity.not_enabled_message(marker).split(marker)
    return " + request.namespace + ".join(cel_string(part) for part in parts)


def says_only_not_enabled(operator: GuardedOperator) -> str:
    """CEL: the status has exactly one condition, ``Ready=False`` with reason
    ``NamespaceNotEnabled`` and the operator's message — what
    :meth:`~appstack.sdk.kit.reconciler.KindReconciler.not_enabled_status` writes."""
    conditions = "object.status.conditions"
    return (
        f"(has(object.status) && has({conditions}) && size({conditions}) == 1 && "
        f"{conditions}.all(c, c.type == 'Ready' && c.status == 'False' && has(c.reason) && "
        f"c.reason == '{NOT_ENABLED_REASON}' && has(c.message) && "
        f"c.message == {_not_enabled_message(operator)}))"
    )


def _labels_kept_but(keys: tuple[str, ...]) -> str:
    """CEL: an update leaves every label but ``keys`` as it was (none added, removed or
    changed)."""
    skipped = cel_list(keys)

    def within(a: str, b: str) -> str:
        return (
            f"(!has({a}.metadata.labels) || {a}.metadata.labels.all(k, k in {skipped} || "
            f"(has({b}.metadata.labels) && k in {b}.metadata.labels && "
            f"{b}.metadata.labels[k] == {a}.metadata.labels[k])))"
        )

    return f"({within('object', 'oldObject')} && {within('oldObject', 'object')})"


def _label_kept(key: str) -> str:
    """CEL: ``key`` is on the object as it was before (absent before: absent after; a
    create: absent)."""
    new, old = "object.metadata.labels", "oldObject.metadata.labels"
    on_new = f"(has({new}) && {cel_string(key)} in {new})"
    on_old = f"(request.operation == 'UPDATE' && has({old}) && {cel_string(key)} in {old})"
    return (
        f"({on_new} == {on_old} && "
        f"(!{on_new} || {new}[{cel_string(key)}] == {old}[{cel_string(key)}]))"
    )


def kinds_policy(operator: GuardedOperator) -> Obj | None:
    """The operator's updates of its kinds: finalizers and status only (see above) — and,
    installed sharded, the shard labels (assignment, drain, acknowledgement); None for an
    operator without kinds."""
    if not operator.kinds:
        return None
    labels = (
        _labels_kept_but(operator.identity.shard_labels)
        if operator.sharded
        else unchanged("metadata.labels")
    )
    said = (
        "labels (but the shard labels "
        + " and ".join(operator.identity.shard_labels)
        + ", it routes its objects by)"
        if operator.sharded
        else "labels"
    )
    # request.subResource is absent (not "") on the object itself
    main = "(!has(request.subResource) || request.subResource == '')"
    status = "(has(request.subResource) && request.subResource == 'status')"
    finalizers = operator.finalizers
    who, project = operator.who, operator.identity.project
    return operator.policy(
        operator.operator_name("kinds"),
        {
            "matchConstraints": {"resourceRules": _resources(operator, status=True)},
            "matchConditions": operator.only_operator(),
            "variables": [operator.enabled_variable()],
            "validations": [
                refusal(
                    f"!({main}) || ({unchanged('spec')} && {labels} && "
                    f"{unchanged('metadata.annotations')})",
                    f"{who} may change only the finalizers and the status of "
                    f"its kinds' objects, never their spec, {said} or annotations",
                ),
                refusal(
                    f"!({main}) || {unchanged('metadata.ownerReferences')}",
                    f"{who} never changes the ownerReferences of its kinds' "
                    "objects (a made-up owner would have the garbage collector delete them)",
                ),
                refusal(
                    f"!({main}) || {finalizers_added_only(finalizers)}",
                    f"{who} may add no finalizer to its kinds' objects but its "
                    f"own ({', '.join(finalizers) or 'it has none'}): another one would hold "
                    "the object, and its namespace, for ever",
                ),
                refusal(
                    f"!({main}) || variables.enabled || {finalizers_added_only([])}",
                    f"{who} may only remove its finalizer in a namespace not enabled for {project}",
                ),
                refusal(
                    f"!({status}) || variables.enabled || {says_only_not_enabled(operator)}",
                    f"in a namespace not enabled for {project} the operator may only write a "
                    f"status that says so: one condition, Ready=False, {NOT_ENABLED_REASON}, "
                    "with its message, and no other condition beside it",
                ),
            ],
        },
    )


def shard_labels_policy(operator: GuardedOperator) -> Obj | None:
    """Installed sharded: nobody but the operator (and the cluster's administrators) sets,
    changes or removes the shard labels of its kinds' objects, nor of the objects its
    controllers of other kinds reconcile (:attr:`GuardedOperator.other_primaries`: a
    ConfigMap's, a Pod's) — a tenant who relabels its object to another shard, drains it or
    unassigns it would make shards hand keys over outside the protocol (two shards at once
    while caches catch up). The labels route objects and grant nothing (docs/sharding.md);
    None unless sharded, or with no primary."""
    if not operator.sharded or not (operator.kinds or operator.other_primaries):
        return None
    shard, drain = operator.identity.shard_labels
    rules = _resources(operator, status=False) if operator.kinds else []
    for group in dict.fromkeys(r.group for r in operator.other_primaries):
        rules.append(
            {
                "apiGroups": [group],
                "apiVersions": ["*"],
                "operations": ["CREATE", "UPDATE"],
                "resources": sorted(
                    {r.plural for r in operator.other_primaries if r.group == group}
                ),
            }
        )
    return operator.policy(
        operator.project_name("shard-labels"),
        {
            "matchConstraints": {"resourceRules": rules},
            "matchConditions": operator.not_operator(),
            "validations": [
                refusal(
                    f"{_label_kept(shard)} && {_label_kept(drain)}",
                    f"only the {operator.identity.project} operator sets the labels {shard} "
                    f"and {drain} (which shard reconciles the object): leave them as they "
                    "are — update with what you read, or apply/patch without them",
                )
            ],
        },
    )


def _regarded(operator: GuardedOperator) -> str:
    """CEL list of what its Events may be about: its kinds, and the kinds its controllers
    of any kind reconcile."""
    if not operator.others:
        return operator.owner_versions()
    kinds = [f"'{k.api_version}/{k.kind}'" for k in operator.kinds]
    return "[" + ", ".join([*kinds, *(f"'{o}'" for o in operator.others)]) + "]"


def events_policy(operator: GuardedOperator) -> Obj:
    """The operator's Events: about its objects, in enabled namespaces."""
    regarding = "object.regarding"
    return operator.policy(
        operator.operator_name("events"),
        {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["events.k8s.io"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["events"],
                    }
                ]
            },
            "matchConditions": operator.only_operator(),
            "variables": [operator.enabled_variable()],
            "validations": [
                operator.not_enabled("Events"),
                refusal(
                    f"has({regarding}) && has({regarding}.apiVersion) && has({regarding}.kind) "
                    f"&& ({regarding}.apiVersion + '/' + {regarding}.kind) in "
                    f"{_regarded(operator)} && has({regarding}.namespace) && "
                    f"{regarding}.namespace == request.namespace",
                    f"{operator.who} may only write Events about objects of its kinds, "
                    "in their namespace",
                ),
            ],
        },
    )


# --------------------------------------------------------------------- tenants' objects
def _fields(schema: dict[str, Any], name: str, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths (``[]`` for a list's items) of every property ``name`` in ``schema``."""
    found: list[tuple[str, ...]] = []
    for key, sub in (schema.get("properties") or {}).items():
        if key == name:
            found.append((*path, key))
        elif sub.get("type") == "array" and "items" in sub:
            found += _fields(sub["items"], name, (*path, key, "[]"))
        else:
            found += _fields(sub, name, (*path, key))
    return found


def _at(path: tuple[str, ...], check: str, root: str = "object", depth: int = 0) -> str:
    """CEL: ``check`` (``$`` standing for the field) holds for the field at
    ``path`` wherever it is set, walking lists with ``all``."""
    if "[]" not in path:
        guards = [".".join([root, *path[: i + 1]]) for i in range(len(path))]
        condition = " || ".join(f"!has({g})" for g in guards)
        return f"({condition} || {check.replace('$', '.'.join([root, *path]))})"
    cut = path.index("[]")
    items = ".".join([root, *path[:cut]])
    absent = " || ".join(f"!has({'.'.join([root, *path[: i + 1]])})" for i in range(cut))
    inner = _at(path[cut + 1 :], check, f"x{depth}", depth + 1)
    return f"({absent} || {items}.all(x{depth}, {inner}))"


def _context_ok(context: str) -> str:
    """CEL: what a tenant's kind may ask of a securityContext at ``context``."""
    return (
        f"({not_true(context, 'privileged')} && {capabilities_added_ok(context)} && "
        f"{profile_confined(context, 'seccompProfile')})"
    )


def _display(path: tuple[str, ...]) -> str:
    return ".".join(path).replace(".[]", "[*]")


def baseline_validations(operator: GuardedOperator) -> list[Validation]:
    """One validation per field of every kind of the operator that asks for pod security."""
    validations: list[Validation] = []
    privileged = operator.identity.allow_privileged_label
    for kind in operator.kinds:
        schema = root_schema(kind.model, kind.spec, kind.status)  # the stored version's
        checks = [
            (
                path,
                _context_ok("$"),
                "privileged, capabilities beyond the Pod Security "
                "baseline or an Unconfined seccomp profile",
            )
            for path in _fields(schema, "securityContext")
        ] + [
            (
                path,
                annotations_confined("$"),
                f"an AppArmor-unconfined container ({APPARMOR_ANNOTATION}<container>: unconfined)",
            )
            for path in _fields(schema, "podAnnotations")
        ]
        for path, check, what in checks:
            validation = refusal(  # the message names the field (a VAP has no fieldPath)
                f"variables.privileged || object.kind != '{kind.kind}' || {_at(path, check)}",
                f"{kind.kind} {_display(path)}: {what} is allowed only in namespaces labelled "
                f"{privileged}=true",
            )
            validations.append(validation)
    return validations


def baseline_policy(operator: GuardedOperator) -> Obj | None:
    """Everyone's creates and spec changes of the operator's kinds at the Pod Security
    baseline; None when no kind asks for pod security."""
    validations = baseline_validations(operator)
    if not validations:
        return None
    return operator.policy(
        operator.project_name("baseline"),
        {
            "matchConstraints": {"resourceRules": _resources(operator, status=False)},
            "matchConditions": [
                {
                    "name": "a-new-spec",
                    "expression": f"request.operation == 'CREATE' || !{unchanged('spec')}",
                }
            ],
            "variables": [
                {
                    "name": "privileged",
                    "expression": labelled(operator.identity.allow_privileged_label),
                }
            ],
            "validations": validations,
        },
    )
