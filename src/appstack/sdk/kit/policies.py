"""Admission policies declared beside a controller, for checks CEL can say without a webhook:
``Registration(..., policies=(AdmissionPolicy(...),))`` — one ``ValidatingAdmissionPolicy``
and its ``ValidatingAdmissionPolicyBinding`` per declaration (``admissionregistration.k8s.io/v1``,
GA since Kubernetes 1.30), evaluated by the API server itself: nothing of the operator runs.

What a policy says that a CRD's ``x-kubernetes-validations`` cannot: who asks
(``request.userInfo``), the operation (``request.operation``; ``DELETE``, with
``oldObject``), the namespace's labels (``namespaceObject``), a parameter object
(``params``: :attr:`AdmissionPolicy.param_kind`), the authorizer — and it works on any kind a
registration reconciles or watches, built-in ones too.

Who uses it: :class:`~appstack.sdk.kit.registration.Registration` checks its declarations
when it is made (:func:`check`: a mistake is one sentence naming the kind and the field);
the SDK's generated install (:mod:`appstack.sdk.config`, ``config/admission/``) writes
:func:`policy_objects`; an operator author's unit tests evaluate a declaration against an
object without a cluster (:func:`evaluate`, on the SDK's CEL engine, :mod:`appstack.sdk.cel`;
an expression that calls the authorizer or another Kubernetes library the engine lacks
cannot be evaluated here and says so). The binding selects the namespaces enabled for the
operator, never its own nor ``kube-system`` — the admission webhooks' selector
(:func:`~appstack.sdk.kit.webhooks.namespace_selector`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from appstack.core.resource import Resource
from appstack.sdk import cel
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kit.webhooks import NAME_LABEL, namespace_selector

API_VERSION = "admissionregistration.k8s.io/v1"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
ACTIONS = ("Deny", "Warn", "Audit")
REASONS = ("Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge")
FAILURE_POLICIES = ("Fail", "Ignore")
#: What a policy's expressions may name (``variables`` only in validations, messages and
#: audit annotations; ``authorizer`` is the API server's alone).
POLICY_VARIABLES = ("object", "oldObject", "request", "namespaceObject", "params", "variables")
#: Kubernetes' CEL libraries the SDK's engine does not have: an expression calling them is
#: checked by the API server only.
SERVER_ONLY = frozenset(
    {
        "authorizer",
        "quantity",
        "isQuantity",
        "url",
        "isURL",
        "ip",
        "isIP",
        "cidr",
        "isCIDR",
        "semver",
        "isSemver",
        "format",
        "named",
        "indexOf",
        "lastIndexOf",
        "sum",
        "min",
        "max",
        "sign",
        "isLessThan",
        "isGreaterThan",
        "compareTo",
        "getScheme",
        "getHost",
        "getHostname",
        "getPort",
        "getEscapedPath",
        "getQuery",
        "serviceAccount",
        "group",
        "resource",
        "subresource",
        "namespace",
        "name",
        "check",
        "allowed",
        "reason",
        "errored",
        "error",
        "path",
        "requestResource",
    }
)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$")
_UNDECLARED = re.compile(r"undeclared reference to '([^']+)'")
_ERROR = re.compile(r"ERROR: <input>:\d+:\d+: ([^\n]*)")
_VARIABLE_USE = re.compile(r"\bvariables\.([A-Za-z_][A-Za-z0-9_]*)")
Obj = dict[str, Any]
#: The API server's refusal when a binding's parameter object is missing.
NO_PARAMS = (
    "failed to configure binding: no params found for policy binding with `Deny` "
    "parameterNotFoundAction"
)


@dataclass(frozen=True)
class PolicyValidation:
    """One check of an :class:`AdmissionPolicy`: ``expression`` (CEL, a boolean) must hold;
    else the request is refused (or warned about, audited: the policy's
    ``validation_actions``) with ``message`` — or ``message_expression``, CEL of a string
    (``'size ' + string(object.spec.size) + ' is too large'``) — the HTTP ``reason``
    (``Invalid`` by default, 422; ``Forbidden`` 403...). A policy's validation names no
    field (``admissionregistration.k8s.io/v1`` has no ``fieldPath``): say it in the
    message."""

    expression: str
    message: str = ""
    message_expression: str = ""
    reason: str = ""

    def manifest(self) -> Obj:
        """This validation as a policy's ``validations`` entry."""
        out: Obj = {"expression": self.expression}
        for key, value in (
            ("message", self.message),
            ("messageExpression", self.message_expression),
            ("reason", self.reason),
        ):
            if value:
                out[key] = value
        return out


@dataclass(frozen=True)
class AdmissionPolicy:
    """A ValidatingAdmissionPolicy of a registration's kind (see the module docstring).

    ``validations`` (at least one) are asked on ``operations`` (default ``CREATE``,
    ``UPDATE``) of ``resource`` (default: the registration's primary; else a kind it owns,
    watches or refers to), for requests every ``match_conditions`` expression holds for
    (name → CEL); ``variables`` (name → CEL, ``variables.<name>`` in the validations,
    later ones may use earlier ones); ``validation_actions``: ``Deny`` (the default),
    ``Warn`` (admitted, the client warned: ``kubectl`` prints it), ``Audit`` (an audit
    annotation), ``Deny`` and ``Warn`` never together; ``audit_annotations`` (key → CEL of
    a string, or null for none); ``param_kind`` and ``param_name``: a parameter object
    (``params`` in the expressions) — by default looked up in the request's namespace for a
    namespaced kind (``param_namespace`` to name one); where it is missing
    (``param_not_found``) every request the binding selects is refused (``Deny``, the
    default: the match conditions are not even asked) or the policy skipped (``Allow``);
    ``failure_policy`` (``Fail``: an expression that cannot be evaluated refuses).
    Named ``<project>-<plural>`` (``-<name>`` when given: a kind's several policies)."""

    validations: tuple[PolicyValidation, ...]
    name: str = ""
    resource: Resource | None = None
    operations: tuple[str, ...] = ("CREATE", "UPDATE")
    match_conditions: Mapping[str, str] = field(default_factory=dict, hash=False)
    variables: Mapping[str, str] = field(default_factory=dict, hash=False)
    validation_actions: tuple[str, ...] = ("Deny",)
    audit_annotations: Mapping[str, str] = field(default_factory=dict, hash=False)
    param_kind: Resource | None = None
    param_name: str = ""
    param_namespace: str | None = None
    param_not_found: str = "Deny"
    failure_policy: str = "Fail"


@dataclass(frozen=True)
class KindPolicy:
    """One declared policy with the kind it is about."""

    declaration: AdmissionPolicy
    resource: Resource


class PolicyError(ValueError):
    """A declaration the API server would refuse, or that cannot do what it says."""


# ---------------------------------------------------------------------------- checking
def _expressions(policy: AdmissionPolicy) -> list[tuple[str, str, bool]]:
    """``(field, expression, may use variables)`` of every CEL expression of ``policy``."""
    found = [(f"match_conditions[{n!r}]", e, False) for n, e in policy.match_conditions.items()]
    found += [(f"variables[{n!r}]", e, True) for n, e in policy.variables.items()]
    for i, v in enumerate(policy.validations):
        found.append((f"validations[{i}].expression", v.expression, True))
        if v.message_expression:
            found.append((f"validations[{i}].message_expression", v.message_expression, True))
    found += [(f"audit_annotations[{k!r}]", e, True) for k, e in policy.audit_annotations.items()]
    return found


def _compile_error(expression: str) -> str | None:
    """Why the engine refuses ``expression`` (None: it compiles, or only calls what the API
    server alone has: :data:`SERVER_ONLY`); nothing is compiled without the engine (the
    ``cel`` extra): the API server still refuses the policy then."""
    if not cel.available():
        return None
    try:
        cel.environment(POLICY_VARIABLES).compile(expression)
    except RuntimeError as error:
        said = _ERROR.findall(str(error)) or [str(error).splitlines()[0]]
        wrong = [m for m in said if not _server_only(m, expression)]
        return wrong[0] if wrong else None
    return None


def _server_only(said: str, expression: str) -> bool:
    """Whether the engine's complaint ``said`` is only that ``expression`` calls a function
    of :data:`SERVER_ONLY` (or names the ``authorizer``): not a mistake, left to the API
    server."""
    names = _UNDECLARED.findall(said)
    if not names or not _UNDECLARED.match(said):
        return False
    return all(
        n == "authorizer" or (n in SERVER_ONLY and re.search(rf"\b{n}\s*\(", expression))
        for n in names
    )


def _problems(policy: AdmissionPolicy) -> list[str]:
    return [*_shape_problems(policy), *_names_problems(policy), *_cel_problems(policy)]


def _shape_problems(policy: AdmissionPolicy) -> list[str]:
    out: list[str] = []
    if not policy.validations:
        out.append("validations: none declared (a policy needs at least one)")
    if policy.name and not _NAME.match(policy.name):
        out.append(f"name: {policy.name!r} is not a DNS label (lower case, digits, '-')")
    if not policy.operations or set(policy.operations) - set(OPERATIONS):
        out.append(f"operations: {list(policy.operations)} — each one of {', '.join(OPERATIONS)}")
    actions = list(policy.validation_actions)
    if not actions or set(actions) - set(ACTIONS) or len(set(actions)) != len(actions):
        out.append(f"validation_actions: {actions} — one or more of Deny, Warn, Audit, once each")
    elif {"Deny", "Warn"} <= set(actions):
        out.append("validation_actions: Deny and Warn together (a denied request warns nobody)")
    if policy.failure_policy not in FAILURE_POLICIES:
        out.append(f"failure_policy: {policy.failure_policy!r} — Fail or Ignore")
    for i, v in enumerate(policy.validations):
        if v.reason and v.reason not in REASONS:
            out.append(f"validations[{i}].reason: {v.reason!r} — one of {', '.join(REASONS)}")
        if "\n" in v.message:
            out.append(f"validations[{i}].message: has a line break (the API server refuses it)")
    return out


def _names_problems(policy: AdmissionPolicy) -> list[str]:
    out: list[str] = []
    for name in policy.variables:
        if not _IDENTIFIER.match(name):
            out.append(f"variables[{name!r}]: not a CEL identifier")
    for name in policy.match_conditions:
        if not _QUALIFIED.match(name.rsplit("/", 1)[-1]):
            out.append(f"match_conditions[{name!r}]: not a qualified name")
    for key in policy.audit_annotations:
        if not _QUALIFIED.match(key):
            out.append(f"audit_annotations[{key!r}]: not a qualified name (63 characters at most)")
    if (policy.param_kind is None) != (not policy.param_name):
        out.append("param_kind, param_name: give both (a parameter object) or neither")
    if policy.param_not_found not in ("Deny", "Allow"):
        out.append(f"param_not_found: {policy.param_not_found!r} — Deny or Allow")
    return out


def _cel_problems(policy: AdmissionPolicy) -> list[str]:
    out: list[str] = []
    declared = list(policy.variables)
    for where, expression, may_use in _expressions(policy):
        if not expression.strip():
            out.append(f"{where}: empty")
            continue
        used = _VARIABLE_USE.findall(expression)
        if used and not may_use:
            out.append(f"{where}: variables are not defined in a match condition")
        if where.startswith("variables["):
            name = where[len("variables[") + 1 : -2]
            declared_before = declared[: declared.index(name)]
            unknown = [u for u in used if u not in declared_before]
        else:
            unknown = [u for u in used if u not in declared]
        if may_use and unknown:
            out.append(f"{where}: names variables.{unknown[0]}, which is not declared (before it)")
        if policy.param_kind is None and re.search(r"\bparams\b", expression):
            out.append(f"{where}: uses params, but the policy declares no param_kind")
        error = _compile_error(expression)
        if error is not None:
            out.append(f"{where}: {expression!r} does not compile: {error}")
    return out


def check(policy: AdmissionPolicy, kind: str, where: str = "policies") -> None:
    """Refuse ``policy`` of ``kind`` (a :class:`PolicyError`, one sentence naming the kind
    and the field) when the API server would, or when it cannot do what it says."""
    problems = _problems(policy)
    if problems:
        raise PolicyError(f"admission policy of {kind}: {where}.{problems[0]}")


# -------------------------------------------------------------------------- generating
def policy_name(identity: OperatorIdentity, declared: KindPolicy) -> str:
    """``<project>-<plural>`` (``-<name>`` when the declaration names itself)."""
    suffix = f"-{declared.declaration.name}" if declared.declaration.name else ""
    return f"{identity.project}-{declared.resource.plural}{suffix}"


def policy_objects(
    declared: Sequence[KindPolicy],
    identity: OperatorIdentity,
    *,
    enable_all: bool = False,
    labels: Mapping[str, str] | None = None,
) -> list[Obj]:
    """Each declaration's ValidatingAdmissionPolicy then its binding, bound to the namespaces
    enabled for the operator (all of them with ``enable_all``; never its own nor
    ``kube-system``); a :class:`PolicyError` when two have one name."""
    out: list[Obj] = []
    seen: set[str] = set()
    for each in declared:
        name = policy_name(identity, each)
        if name in seen:
            raise PolicyError(
                f"admission policies of {each.resource.kind}: two are named {name}: "
                "give each its own name"
            )
        seen.add(name)
        shared = dict(labels if labels is not None else identity.install_labels)
        out += [
            {
                "apiVersion": API_VERSION,
                "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": name, "labels": dict(shared)},
                "spec": _policy_spec(each),
            },
            {
                "apiVersion": API_VERSION,
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": name, "labels": dict(shared)},
                "spec": _binding_spec(each, name, identity, enable_all=enable_all),
            },
        ]
    return out


def _policy_spec(declared: KindPolicy) -> Obj:
    policy, resource = declared.declaration, declared.resource
    spec: Obj = {"failurePolicy": policy.failure_policy}
    if policy.param_kind is not None:
        spec["paramKind"] = {
            "apiVersion": policy.param_kind.api_version,
            "kind": policy.param_kind.kind,
        }
    spec["matchConstraints"] = {
        "resourceRules": [
            {
                "apiGroups": [resource.group],
                "apiVersions": [resource.version],
                "operations": list(policy.operations),
                "resources": [resource.plural],
                "scope": "Namespaced" if resource.namespaced else "Cluster",
            }
        ]
    }
    if policy.match_conditions:
        spec["matchConditions"] = [
            {"name": n, "expression": e} for n, e in policy.match_conditions.items()
        ]
    if policy.variables:
        spec["variables"] = [{"name": n, "expression": e} for n, e in policy.variables.items()]
    spec["validations"] = [v.manifest() for v in policy.validations]
    if policy.audit_annotations:
        spec["auditAnnotations"] = [
            {"key": k, "valueExpression": e} for k, e in policy.audit_annotations.items()
        ]
    return spec


def _binding_spec(
    declared: KindPolicy, name: str, identity: OperatorIdentity, *, enable_all: bool
) -> Obj:
    policy = declared.declaration
    spec: Obj = {"policyName": name, "validationActions": list(policy.validation_actions)}
    if policy.param_kind is not None:
        ref: Obj = {"name": policy.param_name, "parameterNotFoundAction": policy.param_not_found}
        if policy.param_namespace is not None:
            ref["namespace"] = policy.param_namespace
        spec["paramRef"] = ref
    spec["matchResources"] = {
        "namespaceSelector": namespace_selector(identity, enable_all=enable_all)
    }
    return spec


# -------------------------------------------------------------------------- evaluating
@dataclass(frozen=True)
class PolicyFailure:
    """A validation that did not hold: its message (as the API server words it: the
    ``message``, the ``message_expression``'s value, or ``failed expression: ...``), its
    ``reason``; ``error``: it could not be evaluated."""

    message: str
    reason: str = "Invalid"
    error: bool = False


@dataclass(frozen=True)
class PolicyVerdict:
    """What the API server would do with one request under one policy: whether the policy
    applies to it (``matched``: its operation, its namespace, its match conditions), the
    validations that failed, the binding's actions and the audit annotations."""

    name: str
    matched: bool
    failures: tuple[PolicyFailure, ...] = ()
    actions: tuple[str, ...] = ("Deny",)
    audit_annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def denied(self) -> bool:
        """Refused (a failure, and the binding denies)."""
        return self.matched and bool(self.failures) and "Deny" in self.actions

    @property
    def allowed(self) -> bool:
        """Admitted (maybe with warnings)."""
        return not self.denied

    @property
    def warnings(self) -> list[str]:
        """The warnings the client is sent (the binding warns), as the API server words them."""
        if not self.matched or "Warn" not in self.actions:
            return []
        return [
            f"Validation failed for ValidatingAdmissionPolicy '{self.name}' with binding "
            f"'{self.name}': {f.message}"
            for f in self.failures
        ]

    @property
    def refusal(self) -> str:
        """The refusal's message as the API server words it ('' when admitted)."""
        if not self.denied:
            return ""
        return (
            f"ValidatingAdmissionPolicy '{self.name}' with binding '{self.name}' denied "
            f"request: {self.failures[0].message}"
        )


def _request(
    operation: str,
    resource: Resource,
    obj: Mapping[str, Any] | None,
    *,
    namespace: str,
    user: str,
    groups: Sequence[str],
) -> Obj:
    meta = (obj or {}).get("metadata") or {}
    return {
        "operation": operation,
        "namespace": namespace,
        "name": meta.get("name", ""),
        "kind": {"group": resource.group, "version": resource.version, "kind": resource.kind},
        "resource": {
            "group": resource.group,
            "version": resource.version,
            "resource": resource.plural,
        },
        "userInfo": {"username": user, "groups": list(groups)},
        "dryRun": False,
    }


def _in_scope(
    identity: OperatorIdentity | None,
    enable_all: bool,
    namespace: str,
    labels: Mapping[str, str],
) -> bool:
    """Whether the binding's namespace selector selects ``namespace`` (cluster-scoped
    objects: always)."""
    if identity is None or not namespace:
        return True
    selector = namespace_selector(identity, enable_all=enable_all)
    named = {**labels, NAME_LABEL: namespace}
    for expression in selector["matchExpressions"]:
        if named.get(expression["key"]) in expression["values"]:
            return False
    return all(named.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


class _Error(str):
    """An expression that could not be evaluated (CEL's error value), and why."""


def _run(expression: str, data: Mapping[str, Any]) -> Any:
    """The value of ``expression`` (an :class:`_Error` when it fails)."""
    try:
        program = cel.environment(POLICY_VARIABLES).compile(expression)
    except RuntimeError as error:
        raise PolicyError(
            f"{expression!r} cannot be evaluated client-side (only the API server has what "
            f"it calls): {str(error).splitlines()[0]}"
        ) from None
    result = program.eval(data=dict(data))
    if str(result.type()) == "ERROR":  # CEL's error value
        return _Error(result.plain_value())
    return result.plain_value()


def evaluate(
    policy: AdmissionPolicy,
    obj: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None = None,
    *,
    resource: Resource,
    operation: str | None = None,
    user: str = "someone",
    groups: Sequence[str] = ("system:authenticated",),
    namespace_labels: Mapping[str, str] | None = None,
    params: Mapping[str, Any] | None = None,
    identity: OperatorIdentity | None = None,
    enable_all: bool = False,
) -> PolicyVerdict:
    """``policy`` asked about one request, client-side, as the API server would: a create
    of ``obj``, an update of ``old`` to ``obj``, a delete of ``old`` (``obj`` None) —
    or ``operation`` — of ``resource``, by ``user`` in ``groups``, in a namespace labelled
    ``namespace_labels``, with the parameter object ``params``. With the operator's
    ``identity`` the binding's namespace selector is applied too (``enable_all`` as
    installed). Needs the SDK's CEL engine (the ``cel`` extra); an expression calling the
    authorizer (or another library only the API server has) raises :class:`PolicyError`."""
    if not cel.available():
        raise PolicyError("no CEL engine here: pip install 'cel-expr-python>=0.1.3,<0.2'")
    if operation is None:
        operation = "DELETE" if obj is None else "UPDATE" if old is not None else "CREATE"
    name = f"<{resource.plural}{'-' + policy.name if policy.name else ''}>"
    unmatched = PolicyVerdict(name, matched=False, actions=policy.validation_actions)
    meta = (obj or old or {}).get("metadata") or {}
    namespace = meta.get("namespace", "") if resource.namespaced else ""
    labels = dict(namespace_labels or {})
    if operation not in policy.operations or not _in_scope(identity, enable_all, namespace, labels):
        return unmatched
    if identity is not None:
        name = policy_name(identity, KindPolicy(policy, resource))
        unmatched = PolicyVerdict(name, matched=False, actions=policy.validation_actions)
    if policy.param_kind is not None and params is None:  # looked up before anything else
        if policy.param_not_found == "Allow":
            return unmatched
        return PolicyVerdict(
            name, True, (PolicyFailure(NO_PARAMS, error=True),), policy.validation_actions
        )
    data: dict[str, Any] = {
        "object": None if obj is None else dict(obj),
        "oldObject": None if old is None else dict(old),
        "request": _request(
            operation, resource, obj or old, namespace=namespace, user=user, groups=groups
        ),
        "namespaceObject": (
            {"metadata": {"name": namespace, "labels": labels}} if namespace else None
        ),
        "params": None if params is None else dict(params),
        "variables": {},
    }
    return _decided(policy, name, data)


def _decided(policy: AdmissionPolicy, name: str, data: dict[str, Any]) -> PolicyVerdict:
    """The match conditions, then the variables, validations and audit annotations."""
    unmatched = PolicyVerdict(name, matched=False, actions=policy.validation_actions)
    for condition in policy.match_conditions.values():
        matched = _run(condition, data)
        if matched is False:
            return unmatched
        if matched is not True:
            failure = PolicyFailure(f"failed to evaluate match condition: {matched}", error=True)
            return PolicyVerdict(name, True, (failure,), policy.validation_actions)
    for var, expression in policy.variables.items():
        value = _run(expression, data)
        if not isinstance(value, _Error):
            data["variables"] = {**data["variables"], var: value}
    failures = tuple(f for v in policy.validations if (f := _failure(v, data, policy)) is not None)
    audits: dict[str, str] = {}
    for key, expression in policy.audit_annotations.items():
        value = _run(expression, data)
        if isinstance(value, str) and not isinstance(value, _Error):
            audits[f"{name.strip('<>')}/{key}"] = value
    return PolicyVerdict(name, True, failures, policy.validation_actions, audits)


def _failure(
    validation: PolicyValidation, data: Mapping[str, Any], policy: AdmissionPolicy
) -> PolicyFailure | None:
    verdict = _run(validation.expression, data)
    if verdict is True:
        return None
    reason = validation.reason or "Invalid"
    if verdict is not False:
        if policy.failure_policy == "Ignore":
            return None
        message = f"expression '{validation.expression}' resulted in error: {verdict}"
        return PolicyFailure(message, reason, error=True)
    message = validation.message or f"failed expression: {validation.expression.strip()}"
    if validation.message_expression:
        said = _run(validation.message_expression, data)
        if isinstance(said, str) and said.strip() and not isinstance(said, _Error):
            message = said.strip()
    return PolicyFailure(message, reason)
