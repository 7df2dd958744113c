"""appstack's own Secrets policy (pure; part of the install bundle through
:func:`appstack.manifests.admission.policies`, the SDK's guards' ``own`` policies): what
only appstack's kinds need beyond the SDK's generic guard of Secrets
(:mod:`appstack.sdk.guards.writes`, which appstack's writes policy leaves Secrets to this).

RBAC cannot say "only Opaque Secrets of ours": with ``create`` on Secrets the operator
could mint a ``kubernetes.io/service-account-token`` Secret for any ServiceAccount
(kube-system's included) and read the token back, or rewrite a tenant's generated
credentials. :func:`secrets_policy` closes that: the operator writes Secrets only in
enabled namespaces, of type ``Opaque``, labelled ``app.kubernetes.io/managed-by=appstack``,
and controlled by one of our kinds — or, kept after their stack went (a retained volume's
credentials), ownerless but carrying the stack and member labels; it changes or deletes
only a Secret that already was such. An update never changes a Secret's data — but for a
MongoDB user's connection-string or SCRAM Secret that *already was* one (its component,
and a MongoDBCommunity its controller) and keeps that very controller (apiVersion, kind,
name and uid): made again when the user's password changes — and never its component
label, its ``appstack.dev/*`` labels or its owners, but for the one move the operator
makes: a Secret kept for a stack member given to that stack (the AppStack its stack label
names) or taken back from it, when the stack's ``retainOnDelete`` flips (issue #46: a token
that could relabel a generated credentials Secret as a MongoDB user's, under a made-up
owner, could change its data and restore the labels). Any other writer is not matched.
See docs/security.md.
"""

from __future__ import annotations

from typing import Any

from appstack.api.kind import GROUP
from appstack.controllers.appstack import APP_STACK
from appstack.controllers.appstack.labels import MEMBER_LABEL, STACK_LABEL
from appstack.controllers.mongodbcommunity import scram, users
from appstack.sdk import COMPONENT_LABEL, GuardedOperator
from appstack.sdk import cel_ownerless as ownerless
from appstack.sdk import cel_refusal as refusal
from appstack.sdk import cel_unchanged as unchanged

MONGODB = "appstack.dev/v1/MongoDBCommunity"
APP_STACK_VERSION = f"{APP_STACK.api_version}/{APP_STACK.kind}"


def _kept_for_a_stack(target: str) -> str:
    """CEL: ``target`` is ownerless and names the stack member it was generated for."""
    labels = f"{target}.metadata.labels"
    return (
        f"({ownerless(target)} && has({labels}) && '{STACK_LABEL}' in {labels} && "
        f"'{MEMBER_LABEL}' in {labels})"
    )


def _rewritten_by_mongodb() -> str:
    """CEL: the Secret already was a MongoDB user's (connection string, SCRAM credentials:
    its component, a MongoDBCommunity its controller) and stays that — the same component,
    the very same controller (apiVersion, kind, name and uid): its data follows the user's
    password. Judged on the old object: what the new one says is the writer's to choose."""
    old, new = "oldObject.metadata", "object.metadata"
    components = f"['{users.COMPONENT}', '{scram.COMPONENT}']"
    same_controller = (
        f"{old}.ownerReferences.exists(o, has(o.controller) && o.controller && "
        f"(o.apiVersion + '/' + o.kind) == '{MONGODB}' && {new}.ownerReferences.exists(r, "
        "has(r.controller) && r.controller && r.apiVersion == o.apiVersion && "
        "r.kind == o.kind && r.name == o.name && r.uid == o.uid))"
    )
    return (
        f"(has({old}.labels) && '{COMPONENT_LABEL}' in {old}.labels && "
        f"{old}.labels['{COMPONENT_LABEL}'] in {components} && has({new}.labels) && "
        f"'{COMPONENT_LABEL}' in {new}.labels && "
        f"{new}.labels['{COMPONENT_LABEL}'] == {old}.labels['{COMPONENT_LABEL}'] && "
        f"has({old}.ownerReferences) && has({new}.ownerReferences) && {same_controller})"
    )


def _pinned(key: str) -> str:
    """CEL: label ``key`` is one an update keeps: the component or any ``appstack.dev/``."""
    return f"({key}.startsWith('{GROUP}/') || {key} == '{COMPONENT_LABEL}')"


def _labels_kept() -> str:
    """CEL: every pinned label (:func:`_pinned`) is on both objects, with the same value."""
    new, old = "object.metadata.labels", "oldObject.metadata.labels"
    return (
        f"((!has({new}) || {new}.all(k, !{_pinned('k')} || "
        f"(has({old}) && k in {old} && {old}[k] == {new}[k]))) && "
        f"(!has({old}) || {old}.all(k, !{_pinned('k')} || (has({new}) && k in {new}))))"
    )


def _refs(target: str) -> str:
    return f"(has({target}.metadata.ownerReferences) ? {target}.metadata.ownerReferences : [])"


def _its_stack(ref: str) -> str:
    """CEL: ``ref`` is a controller reference to the AppStack the Secret's stack label
    names (the uid cannot be checked here: admission cannot look an owner up)."""
    return (
        f"(has({ref}.controller) && {ref}.controller && "
        f"({ref}.apiVersion + '/' + {ref}.kind) == '{APP_STACK_VERSION}' && "
        f"{ref}.name == object.metadata.labels['{STACK_LABEL}'])"
    )


def _moved_with_its_volume() -> str:
    """CEL: a Secret kept for a stack member (both labels) given to that stack or taken
    back (``retainOnDelete`` flipped; a re-created stack adopting it): the owners differ
    only by a controller reference to that AppStack (:meth:`ChildWriter.ensure_once
    <appstack.sdk.kit.children.ChildWriter.ensure_once>` patches nothing else)."""
    labels = "object.metadata.labels"
    new, old = _refs("object"), _refs("oldObject")
    return (
        f"(has({labels}) && '{STACK_LABEL}' in {labels} && '{MEMBER_LABEL}' in {labels} && "
        f"{new}.all(r, r in {old} || {_its_stack('r')}) && "
        f"{old}.all(r, r in {new} || {_its_stack('r')}))"
    )


def secrets_policy(operator: GuardedOperator) -> dict[str, Any]:
    """The operator writes only its own ``Opaque`` Secrets, in enabled namespaces."""
    ((key, value),) = operator.identity.managed_by.items()
    label = f"{key}={value}"
    who = operator.who

    def ours(target: str) -> str:
        return f"({operator.controlled(target)} || {_kept_for_a_stack(target)})"

    # Named after the operator's namespace: the policy is cluster-scoped, so two installs
    # must not overwrite each other's.
    return operator.policy(
        operator.operator_name("secrets"),
        {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE", "DELETE"],
                        "resources": ["secrets"],
                    }
                ]
            },
            "matchConditions": operator.only_operator(),
            "variables": [operator.enabled_variable()],
            "validations": [
                operator.not_enabled("Secrets"),
                refusal(
                    "request.operation == 'DELETE' || (has(object.type) && object.type == "
                    "'Opaque')",
                    f"{who} may only write Secrets of type Opaque",
                ),
                refusal(
                    f"request.operation == 'DELETE' || ({operator.ours('object')} && "
                    f"{ours('object')})",
                    f"{who} may only write Secrets labelled {label} and "
                    "controlled by one of its kinds (or kept for a stack member, "
                    f"labelled {STACK_LABEL} and {MEMBER_LABEL})",
                ),
                refusal(
                    f"request.operation == 'CREATE' || ({operator.ours('oldObject')} && "
                    f"{ours('oldObject')})",
                    f"{who} may only change or delete Secrets already labelled {label} and its own",
                ),
                refusal(
                    f"request.operation != 'UPDATE' || ({unchanged('data')} && "
                    f"{unchanged('type')}) || {_rewritten_by_mongodb()}",
                    f"{who} never changes a Secret's data (but for a "
                    "MongoDB user's Secret that a MongoDBCommunity already controls, and "
                    "still the same one: apiVersion, kind, name and uid)",
                ),
                refusal(
                    f"request.operation != 'UPDATE' || {_labels_kept()}",
                    f"{who} never changes a Secret's {COMPONENT_LABEL} "
                    f"or {GROUP}/* labels: set, changed or removed, each stays as it was",
                ),
                refusal(
                    f"request.operation != 'UPDATE' || "
                    f"{unchanged('metadata.ownerReferences')} || {_moved_with_its_volume()}",
                    f"{who} never changes a Secret's ownerReferences (but "
                    "to give a Secret kept for a stack member to the AppStack its "
                    f"{STACK_LABEL} label names, or to take it back)",
                ),
            ],
        },
    )
