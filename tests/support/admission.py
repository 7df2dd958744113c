"""An install's ValidatingAdmissionPolicies (appstack's, or the SDK's guards of any
operator) evaluated client-side, as the API server evaluates them: the project's CEL
engine (cel-expr-python, which :mod:`appstack.sdk.cel` runs a CRD's rules with),
``object``, ``oldObject``, ``request`` and ``namespaceObject`` as the API server binds them
(``oldObject`` null on a create, ``object`` null on a delete), the policy's ``variables``
in order, then each validation. The ``matchConditions`` are taken as met — they ask the
authorizer who the requester is; :func:`condition` evaluates one that does not (the
namespace-labels policy's). A validation that cannot be evaluated refuses, as
``failurePolicy: Fail`` has it. What the API server itself says is the e2e tests'
(tests/e2e/test_security_writes.py and the others docs/security.md names)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

from appstack.api.namespaces import ENABLED


@functools.cache
def _environment() -> Any:
    from cel_expr_python import cel  # noqa: PLC0415 - the cel extra, like appstack.sdk.cel
    from cel_expr_python.ext.ext_strings import ExtStrings  # noqa: PLC0415

    names = ("object", "oldObject", "request", "namespaceObject", "variables")
    return cel.NewEnv(variables=dict.fromkeys(names, cel.Type.DYN), extensions=[ExtStrings()])


@functools.cache
def _program(expression: str) -> Any:
    return _environment().compile(expression)


def _evaluate(expression: str, data: dict[str, Any]) -> Any:
    return _program(expression).eval(data=data).plain_value()


def request(
    operation: str,
    namespace: str = "shop",
    *,
    sub_resource: str = "",
    kind: str = "",
) -> dict[str, Any]:
    """``request`` as the API server binds it (``subResource`` absent on the object itself)."""
    found: dict[str, Any] = {"operation": operation, "namespace": namespace, "kind": {"kind": kind}}
    if sub_resource:
        found["subResource"] = sub_resource
    return found


def namespace_object(
    name: str = "shop", *, enabled: bool = True, label: str = ENABLED, **labels: str
) -> dict[str, Any]:
    """The request's Namespace: enabled (``label``, appstack's unless told another
    operator's) unless told otherwise."""
    found = dict(labels)
    if enabled:
        found[label] = "true"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": found}}


def refusals(
    policy: Mapping[str, Any],
    operation: str,
    obj: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None = None,
    *,
    namespace: Mapping[str, Any] | None = None,
    sub_resource: str = "",
) -> list[str]:
    """The messages of every validation of ``policy`` that refuses ``operation`` (CREATE,
    UPDATE, DELETE) of ``obj`` (``old`` before it), in an enabled namespace ``shop`` unless
    ``namespace`` says otherwise; ``[]``: admitted. An evaluation error refuses too (its
    message starts with ``error:``)."""
    where = dict(namespace) if namespace is not None else namespace_object()
    target = obj if obj is not None else old
    kind = str((target or {}).get("kind", ""))
    data: dict[str, Any] = {
        "object": copy.deepcopy(dict(obj)) if obj is not None else None,
        "oldObject": copy.deepcopy(dict(old)) if old is not None else None,
        "request": request(
            operation, where["metadata"]["name"], sub_resource=sub_resource, kind=kind
        ),
        "namespaceObject": where,
    }
    spec = policy["spec"]
    variables: dict[str, Any] = {}
    for variable in spec.get("variables") or []:
        variables[variable["name"]] = _evaluate(
            variable["expression"], {**data, "variables": variables}
        )
    data["variables"] = variables
    found: list[str] = []
    for validation in spec["validations"]:
        verdict = _evaluate(validation["expression"], data)
        if verdict is True:
            continue
        if verdict is not False:
            found.append(f"error: {verdict}: {validation['expression'][:200]}")
            continue
        said = validation.get("message", "")
        if "messageExpression" in validation:
            said = str(_evaluate(validation["messageExpression"], data))
        found.append(said)
    return found


def condition(expression: str, operation: str, obj: Any, old: Any = None) -> Any:
    """A match condition that needs no authorizer, evaluated (True, False or an error)."""
    data = {
        "object": obj,
        "oldObject": old,
        "request": request(operation, ""),
        "namespaceObject": None,
        "variables": {},
    }
    return _evaluate(expression, data)
