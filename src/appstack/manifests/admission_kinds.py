"""ValidatingAdmissionPolicies about our own kinds and Events (pure; part of the install
bundle), issue #34:

* :func:`operator_kinds_policy` — what the operator's token may change of an object of our
  kinds: its finalizers — adding only the operator's own (a foreign one would hold the
  object, and its namespace's deletion, for ever), only removing them where the namespace
  is not enabled — and its status (where the namespace is not enabled, only to say so:
  exactly one condition, ``Ready=False``, ``NamespaceNotEnabled``, with the operator's
  message — nothing else beside it); never its spec, labels, annotations or
  ``ownerReferences`` — a stolen token cannot change a tenant's image, nor delete a
  tenant's object by giving it a made-up owner for the garbage collector (issue #46: on
  clusters without ``OwnerReferencesPermissionEnforcement``, most of them, only this
  policy stands in the way);
* :func:`events_policy` — the operator's Events: only in enabled namespaces, and only about
  an object of our kinds (exact apiVersion) in the Event's own namespace;
* :func:`tenant_baseline_policy` — for everyone who creates or changes our kinds: no
  ``securityContext`` beyond the Pod Security baseline (privileged, capabilities beyond
  baseline, an ``Unconfined`` seccomp profile) and no AppArmor-unconfined pod annotation,
  unless the namespace is labelled ``appstack.dev/allow-privileged-pods=true`` — refused at
  admission with the field named, instead of a Deployment the writes policy refuses later.
  The fields are found in the CRDs' schemas (every ``securityContext`` and
  ``podAnnotations``), so a kind that gains one is covered without touching this module.
"""

from __future__ import annotations

from typing import Any

from appstack.api.namespaces import ALLOW_PRIVILEGED, NOT_ENABLED_REASON, not_enabled_message
from appstack.controllers.registry import ALL
from appstack.manifests import crds
from appstack.manifests.admission_base import (
    EnableAll,
    cel_string,
    enabled_variable,
    finalizers_added_only,
    labelled,
    only_operator,
    our_finalizers,
    our_owner_versions,
    policy,
    unchanged,
)
from appstack.manifests.admission_pods import APPARMOR_ANNOTATION, BASELINE_CAPABILITIES
from appstack.manifests.rbac import NAME, NAMESPACE

KINDS_POLICY = f"{NAME}-kinds"
EVENTS_POLICY = f"{NAME}-events"
TENANT_POLICY = "appstack-baseline"


def _refusal(expression: str, message: str) -> dict[str, str]:
    return {"expression": expression, "message": message, "reason": "Forbidden"}


def _resources(*, status: bool) -> list[dict[str, Any]]:
    plurals = [c.kind.plural for c in ALL]
    if status:
        plurals += [f"{p}/status" for p in plurals]
    return [
        {
            "apiGroups": sorted({c.kind.group for c in ALL}),
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"] if not status else ["UPDATE"],
            "resources": plurals,
        }
    ]


def _not_enabled_message() -> str:
    """CEL: the message the operator's Ready condition has where the request's namespace is
    not enabled (:func:`appstack.api.namespaces.not_enabled_message`), built from the
    request's namespace."""
    marker = "\x00"
    parts = not_enabled_message(marker).split(marker)
    return " + request.namespace + ".join(cel_string(part) for part in parts)


def says_only_not_enabled() -> str:
    """CEL: the status has exactly one condition, ``Ready=False`` with reason
    ``NamespaceNotEnabled`` and the operator's message — what
    :meth:`~appstack.sdk.kit.reconciler.KindReconciler.not_enabled_status` writes."""
    conditions = "object.status.conditions"
    return (
        f"(has(object.status) && has({conditions}) && size({conditions}) == 1 && "
        f"{conditions}.all(c, c.type == 'Ready' && c.status == 'False' && has(c.reason) && "
        f"c.reason == '{NOT_ENABLED_REASON}' && has(c.message) && "
        f"c.message == {_not_enabled_message()}))"
    )


def operator_kinds_policy(
    namespace: str = NAMESPACE, *, enable_all: EnableAll = False
) -> dict[str, Any]:
    """The operator's updates of our kinds: finalizers and status only (see above)."""
    # request.subResource is absent (not "") on the object itself
    main = "(!has(request.subResource) || request.subResource == '')"
    status = "(has(request.subResource) && request.subResource == 'status')"
    ours = our_finalizers()
    return policy(
        f"{KINDS_POLICY}-{namespace}",
        {
            "matchConstraints": {"resourceRules": _resources(status=True)},
            "matchConditions": only_operator(),
            "variables": [enabled_variable(enable_all)],
            "validations": [
                _refusal(
                    f"!({main}) || ({unchanged('spec')} && {unchanged('metadata.labels')} && "
                    f"{unchanged('metadata.annotations')})",
                    "the appstack operator may change only the finalizers and the status of "
                    "its kinds' objects, never their spec, labels or annotations",
                ),
                _refusal(
                    f"!({main}) || {unchanged('metadata.ownerReferences')}",
                    "the appstack operator never changes the ownerReferences of its kinds' "
                    "objects (a made-up owner would have the garbage collector delete them)",
                ),
                _refusal(
                    f"!({main}) || {finalizers_added_only(ours)}",
                    "the appstack operator may add no finalizer to its kinds' objects but its "
                    f"own ({', '.join(ours)}): another one would hold the object, and its "
                    "namespace, for ever",
                ),
                _refusal(
                    f"!({main}) || variables.enabled || {finalizers_added_only([])}",
                    "the appstack operator may only remove its finalizer in a namespace not "
                    "enabled for appstack",
                ),
                _refusal(
                    f"!({status}) || variables.enabled || {says_only_not_enabled()}",
                    "in a namespace not enabled for appstack the operator may only write a "
                    f"status that says so: one condition, Ready=False, {NOT_ENABLED_REASON}, "
                    "with its message, and no other condition beside it",
                ),
            ],
        },
    )


def events_policy(namespace: str = NAMESPACE, *, enable_all: EnableAll = False) -> dict[str, Any]:
    """The operator's Events: about our objects, in enabled namespaces."""
    regarding = "object.regarding"
    return policy(
        f"{EVENTS_POLICY}-{namespace}",
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
            "matchConditions": only_operator(),
            "variables": [enabled_variable(enable_all)],
            "validations": [
                {
                    "expression": "variables.enabled",
                    "messageExpression": (
                        "'the appstack operator may not write Events in namespace ' + "
                        "request.namespace + ': it is not enabled for appstack'"
                    ),
                    "reason": "Forbidden",
                },
                _refusal(
                    f"has({regarding}) && has({regarding}.apiVersion) && has({regarding}.kind) "
                    f"&& ({regarding}.apiVersion + '/' + {regarding}.kind) in "
                    f"{our_owner_versions()} && has({regarding}.namespace) && "
                    f"{regarding}.namespace == request.namespace",
                    "the appstack operator may only write Events about objects of its kinds, "
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
        *parents, last = path
        expression = ".".join([root, *parents, last])
        guards = [".".join([root, *path[: i + 1]]) for i in range(len(path))]
        condition = " || ".join(f"!has({g})" for g in guards)
        return f"({condition} || {check.replace('$', expression)})"
    cut = path.index("[]")
    items = ".".join([root, *path[:cut]])
    absent = " || ".join(f"!has({'.'.join([root, *path[: i + 1]])})" for i in range(cut))
    inner = _at(path[cut + 1 :], check, f"x{depth}", depth + 1)
    return f"({absent} || {items}.all(x{depth}, {inner}))"


def _context_ok(context: str) -> str:
    caps = f"{context}.capabilities"
    baseline = "[" + ", ".join(f"'{c}'" for c in BASELINE_CAPABILITIES) + "]"
    return (
        f"((!has({context}.privileged) || !{context}.privileged) && "
        f"(!has({caps}) || !has({caps}.add) || {caps}.add.all(a, a in {baseline})) && "
        f"(!has({context}.seccompProfile) || {context}.seccompProfile.type != 'Unconfined'))"
    )


def _annotations_ok(annotations: str) -> str:
    return (
        f"{annotations}.all(k, !k.startsWith('{APPARMOR_ANNOTATION}') || "
        f"{annotations}[k] == 'runtime/default' || {annotations}[k].startsWith('localhost/'))"
    )


def _display(path: tuple[str, ...]) -> str:
    return ".".join(path).replace(".[]", "[*]")


def tenant_validations() -> list[dict[str, str]]:
    """One validation per field of every kind of ours that asks for pod security."""
    validations: list[dict[str, str]] = []
    for crd in crds.all_crds():
        kind = crd["spec"]["names"]["kind"]
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
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
                _annotations_ok("$"),
                f"an AppArmor-unconfined container ({APPARMOR_ANNOTATION}<container>: unconfined)",
            )
            for path in _fields(schema, "podAnnotations")
        ]
        for path, check, what in checks:
            validation = _refusal(  # the message names the field (a VAP has no fieldPath)
                f"variables.privileged || object.kind != '{kind}' || {_at(path, check)}",
                f"{kind} {_display(path)}: {what} is allowed only in namespaces labelled "
                f"{ALLOW_PRIVILEGED}=true",
            )
            validations.append(validation)
    return validations


def tenant_baseline_policy(namespace: str = NAMESPACE) -> dict[str, Any]:
    """Everyone's creates and spec changes of our kinds at the Pod Security baseline."""
    return policy(
        f"{TENANT_POLICY}-{namespace}",
        {
            "matchConstraints": {"resourceRules": _resources(status=False)},
            "matchConditions": [
                {
                    "name": "a-new-spec",
                    "expression": f"request.operation == 'CREATE' || !{unchanged('spec')}",
                }
            ],
            "variables": [{"name": "privileged", "expression": labelled(ALLOW_PRIVILEGED)}],
            "validations": tenant_validations(),
        },
    )


def kinds_policies(
    namespace: str = NAMESPACE, *, enable_all: EnableAll = False
) -> list[dict[str, Any]]:
    """The policies of this module, in install order."""
    return [
        operator_kinds_policy(namespace, enable_all=enable_all),
        events_policy(namespace, enable_all=enable_all),
        tenant_baseline_policy(namespace),
    ]
