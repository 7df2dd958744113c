"""Admission policies declared on a registration (appstack.sdk.kit.policies): a mistake is
refused when the registration is made, one sentence naming the kind and the field; each
declaration becomes a ValidatingAdmissionPolicy and its binding (bound to the enabled
namespaces, like the webhooks), written into a project's config/admission/; and a
declaration evaluated client-side answers as the API server would (what
tests/e2e/test_admission_policies.py compares with the real one)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml

from appstack.runtime.resources import CONFIG_MAP, POD
from appstack.sdk import (
    AdmissionPolicy,
    PolicyError,
    PolicyValidation,
    Registration,
    config,
    evaluate_policy,
)
from appstack.sdk.kit.policies import policy_objects
from tests.support.guestbook import IDENTITY, PROJECT, Guestbook, GuestbookReconciler

GUESTBOOK = Guestbook.KIND.resource
ENABLED = {IDENTITY.enabled_label: "true"}
SMALL = PolicyValidation("!has(object.spec.foo) || size(object.spec.foo) <= 3", message="small")


def _book(foo: str = "abc", namespace: str = "tenant", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": Guestbook.KIND.api_version,
        "kind": "Guestbook",
        "metadata": {"name": "book", "namespace": namespace, "labels": labels},
        "spec": {"foo": foo},
    }


def _registration(*policies: AdmissionPolicy) -> Registration:
    return Registration("guestbook", GuestbookReconciler, policies=policies)


# ------------------------------------------------------------------------ refused at import
@pytest.mark.parametrize(
    ("policy", "said"),
    [
        (AdmissionPolicy(validations=()), "policies[0].validations: none declared"),
        (
            AdmissionPolicy(validations=(PolicyValidation("object.spec.foo <"),)),
            "policies[0].validations[0].expression: 'object.spec.foo <' does not compile: "
            "Syntax error",
        ),
        (
            AdmissionPolicy(validations=(PolicyValidation("objekt.spec.foo == 'a'"),)),
            "undeclared reference to 'objekt.spec.foo'",
        ),
        (  # a bare name, not a call of a library only the API server has
            AdmissionPolicy(validations=(PolicyValidation("name == 'book'"),)),
            "undeclared reference to 'name'",
        ),
        (
            AdmissionPolicy(validations=(PolicyValidation("size(object.spec) + 'a' == 1"),)),
            "found no matching overload",
        ),
        (
            AdmissionPolicy(validations=(SMALL,), validation_actions=("Deny", "Warn")),
            "policies[0].validation_actions: Deny and Warn together",
        ),
        (
            AdmissionPolicy(validations=(SMALL,), validation_actions=()),
            "policies[0].validation_actions: [] — one or more of Deny, Warn, Audit",
        ),
        (
            AdmissionPolicy(validations=(SMALL,), operations=("CREATE", "PATCH")),
            "policies[0].operations: ['CREATE', 'PATCH']",
        ),
        (
            AdmissionPolicy(validations=(PolicyValidation("variables.big"),)),
            "validations[0].expression: names variables.big, which is not declared",
        ),
        (
            AdmissionPolicy(
                validations=(SMALL,), variables={"a": "variables.b", "b": "object.spec"}
            ),
            "variables['a']: names variables.b, which is not declared (before it)",
        ),
        (
            AdmissionPolicy(validations=(SMALL,), match_conditions={"m": "variables.x"}),
            "match_conditions['m']: variables are not defined in a match condition",
        ),
        (
            AdmissionPolicy(validations=(PolicyValidation("params.max > 1"),)),
            "uses params, but the policy declares no param_kind",
        ),
        (
            AdmissionPolicy(validations=(PolicyValidation("true", reason="Conflict"),)),
            "validations[0].reason: 'Conflict'",
        ),
        (
            AdmissionPolicy(validations=(PolicyValidation("true", message="two\nlines"),)),
            "validations[0].message: has a line break",
        ),
        (
            AdmissionPolicy(validations=(SMALL,), param_kind=CONFIG_MAP),
            "param_kind, param_name: give both",
        ),
        (AdmissionPolicy(validations=(SMALL,), name="Big"), "name: 'Big' is not a DNS label"),
        (
            AdmissionPolicy(validations=(SMALL,), match_conditions={"no spaces": "true"}),
            "match_conditions['no spaces']: not a qualified name",
        ),
        (
            AdmissionPolicy(validations=(SMALL,), audit_annotations={"k" * 64: "'a'"}),
            "not a qualified name (63 characters at most)",
        ),
        (
            AdmissionPolicy(validations=(SMALL,), variables={"a-b": "1"}),
            "variables['a-b']: not a CEL identifier",
        ),
        (
            AdmissionPolicy(validations=(SMALL,), resource=POD),
            "resource: the controller neither reconciles, owns, watches nor refers to pods",
        ),
    ],
)
def test_a_mistaken_declaration_is_refused_naming_the_kind_and_the_field(
    policy: AdmissionPolicy, said: str
) -> None:
    with pytest.raises(PolicyError) as refused:
        _registration(AdmissionPolicy(name="first", validations=(SMALL,)), policy)
    message = str(refused.value).replace("policies[1]", "policies[0]")
    assert message.startswith("admission policy of ")
    assert "(registration guestbook)" in message
    assert said in message, message
    assert "\n" not in message


def test_what_only_the_api_server_has_is_accepted_and_not_evaluated_here() -> None:
    authorizer = PolicyValidation(
        "authorizer.group('').resource('secrets').check('get').allowed()", message="who?"
    )
    quantity = PolicyValidation("quantity(object.data.size).isLessThan(quantity('1Gi'))")
    (declared,) = _registration(AdmissionPolicy(validations=(authorizer, quantity))).policies
    with pytest.raises(PolicyError, match="cannot be evaluated client-side"):
        evaluate_policy(declared, _book(), resource=GUESTBOOK)


def test_a_warn_only_or_audit_policy_is_a_policy_too() -> None:
    for actions in (("Warn",), ("Audit",), ("Warn", "Audit"), ("Deny", "Audit")):
        _registration(AdmissionPolicy(validations=(SMALL,), validation_actions=actions))


# ------------------------------------------------------------------------------ generated
def test_each_declaration_is_a_policy_and_its_binding_on_the_enabled_namespaces() -> None:
    policy = AdmissionPolicy(
        validations=(
            SMALL,
            PolicyValidation(
                "request.userInfo.username != 'mallory'",
                message_expression="'not you, ' + request.userInfo.username",
                reason="Forbidden",
            ),
        ),
        operations=("CREATE", "UPDATE", "DELETE"),
        match_conditions={"not-a-system-user": "!request.userInfo.username.startsWith('system:')"},
        variables={"foo": "object.spec.foo"},
        audit_annotations={"foo": "string(variables.foo)"},
    )
    registration = _registration(policy)
    vap, binding = policy_objects(registration.declared_policies, IDENTITY)
    assert vap["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert vap["metadata"]["name"] == binding["metadata"]["name"] == "guestbook-guestbooks"
    assert binding["spec"]["policyName"] == "guestbook-guestbooks"
    assert vap["metadata"]["labels"] == dict(IDENTITY.install_labels)
    spec = vap["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"]["resourceRules"] == [
        {
            "apiGroups": ["webapp.example.com"],
            "apiVersions": [GUESTBOOK.version],
            "operations": ["CREATE", "UPDATE", "DELETE"],
            "resources": ["guestbooks"],
            "scope": "Namespaced",
        }
    ]
    assert spec["matchConditions"] == [
        {
            "name": "not-a-system-user",
            "expression": "!request.userInfo.username.startsWith('system:')",
        }
    ]
    assert spec["variables"] == [{"name": "foo", "expression": "object.spec.foo"}]
    assert spec["validations"] == [
        {"expression": SMALL.expression, "message": "small"},
        {
            "expression": "request.userInfo.username != 'mallory'",
            "messageExpression": "'not you, ' + request.userInfo.username",
            "reason": "Forbidden",
        },
    ]
    assert spec["auditAnnotations"] == [{"key": "foo", "valueExpression": "string(variables.foo)"}]
    assert binding["spec"]["validationActions"] == ["Deny"]
    # the webhooks' selector: enabled namespaces, never the operator's own nor kube-system
    assert binding["spec"]["matchResources"]["namespaceSelector"] == {
        "matchLabels": {"webapp.example.com/enabled": "true"},
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["guestbook-system", "kube-system"],
            }
        ],
    }
    everywhere = policy_objects(registration.declared_policies, IDENTITY, enable_all=True)
    assert "matchLabels" not in everywhere[1]["spec"]["matchResources"]["namespaceSelector"]


def test_a_policy_of_a_built_in_kind_with_a_parameter_object() -> None:
    policy = AdmissionPolicy(
        name="sized",
        resource=CONFIG_MAP,
        param_kind=CONFIG_MAP,
        param_name="limits",
        validations=(PolicyValidation("size(object.data) <= int(params.data.most)"),),
        validation_actions=("Warn", "Audit"),
    )
    vap, binding = policy_objects(_registration(policy).declared_policies, IDENTITY)
    assert vap["metadata"]["name"] == "guestbook-configmaps-sized"
    assert vap["spec"]["paramKind"] == {"apiVersion": "v1", "kind": "ConfigMap"}
    assert vap["spec"]["matchConstraints"]["resourceRules"][0]["apiGroups"] == [""]
    assert binding["spec"]["paramRef"] == {"name": "limits", "parameterNotFoundAction": "Deny"}
    assert binding["spec"]["validationActions"] == ["Warn", "Audit"]


def test_two_policies_of_one_name_are_refused() -> None:
    twice = _registration(AdmissionPolicy(validations=(SMALL,)), AdmissionPolicy((SMALL,)))
    with pytest.raises(PolicyError, match="two are named guestbook-guestbooks"):
        policy_objects(twice.declared_policies, IDENTITY)


def test_make_manifests_writes_them_into_config_admission() -> None:
    (registration,) = PROJECT.controllers
    declared = dataclasses.replace(
        registration, policies=(AdmissionPolicy(name="small", validations=(SMALL,)),)
    )
    files = config.config_files(dataclasses.replace(PROJECT, controllers=[declared]))
    vap, binding = yaml.safe_load_all(files["admission/guestbooks_small_policy.yaml"])
    # before config/default's prefix (guestbook-): kustomize renames both, and the reference
    assert vap["metadata"]["name"] == binding["spec"]["policyName"] == "guestbooks-small"
    resources = yaml.safe_load(files["admission/kustomization.yaml"])["resources"]
    assert "guestbooks_small_policy.yaml" in resources
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] == ENABLED
    # and a project without policies gets exactly what it had
    assert "admission/guestbooks_small_policy.yaml" not in config.config_files(PROJECT)


# ------------------------------------------------------------------------------ evaluated
def _decide(policy: AdmissionPolicy, *args: Any, **options: Any) -> Any:
    return evaluate_policy(policy, *args, resource=GUESTBOOK, identity=IDENTITY, **options)


def test_a_create_is_refused_with_the_message_the_api_server_gives() -> None:
    policy = AdmissionPolicy(validations=(SMALL,))
    verdict = _decide(policy, _book("abcd"), namespace_labels=ENABLED)
    assert verdict.matched
    assert verdict.denied
    assert not verdict.allowed
    assert verdict.refusal == (
        "ValidatingAdmissionPolicy 'guestbook-guestbooks' with binding 'guestbook-guestbooks' "
        "denied request: small"
    )
    assert verdict.failures[0].reason == "Invalid"
    assert _decide(policy, _book("abc"), namespace_labels=ENABLED).allowed


def test_outside_the_enabled_namespaces_nothing_is_matched() -> None:
    policy = AdmissionPolicy(validations=(SMALL,))
    for namespace, labels in (
        ("tenant", {}),
        ("guestbook-system", ENABLED),
        ("kube-system", ENABLED),
    ):
        verdict = _decide(policy, _book("abcd", namespace), namespace_labels=labels)
        assert not verdict.matched
        assert verdict.allowed
    verdict = _decide(policy, _book("abcd"), namespace_labels={}, enable_all=True)
    assert verdict.denied


def test_what_a_crd_rule_cannot_say_user_operation_namespace_old_object_params() -> None:
    policy = AdmissionPolicy(
        operations=("CREATE", "UPDATE", "DELETE"),
        param_kind=CONFIG_MAP,
        param_name="limits",
        variables={"tier": "namespaceObject.metadata.labels['tier']"},
        validations=(
            PolicyValidation(
                "request.operation != 'DELETE' || !('keep' in oldObject.metadata.labels)",
                message="labelled keep",
                reason="Forbidden",
            ),
            PolicyValidation(
                "request.operation == 'DELETE' || variables.tier != 'gold' || "
                "'gold-writers' in request.userInfo.groups",
                message_expression="'only gold writers, not ' + request.userInfo.username",
            ),
            PolicyValidation(
                "request.operation == 'DELETE' || size(object.spec.foo) <= int(params.data.most)",
                message_expression="'at most ' + params.data.most",
            ),
        ),
    )
    gold = {**ENABLED, "tier": "gold"}
    limits = {"data": {"most": "5"}}
    kept = _book(keep="yes")
    deleted = _decide(policy, None, kept, namespace_labels=gold, params=limits)
    assert [f.message for f in deleted.failures] == ["labelled keep"]
    assert deleted.failures[0].reason == "Forbidden"
    assert _decide(policy, None, _book(), namespace_labels=gold, params=limits).allowed
    by_bob = _decide(policy, _book(), user="bob", namespace_labels=gold, params=limits)
    assert [f.message for f in by_bob.failures] == ["only gold writers, not bob"]
    writer = _decide(
        policy, _book(), groups=("gold-writers",), namespace_labels=gold, params=limits
    )
    assert writer.allowed
    silver = {**ENABLED, "tier": "silver"}
    long = _decide(policy, _book("abcdefg"), _book(), namespace_labels=silver, params=limits)
    assert [f.message for f in long.failures] == ["at most 5"]
    # a variable that cannot be evaluated (no tier label) fails the validations using it
    (unlabelled,) = _decide(policy, _book(), namespace_labels=ENABLED, params=limits).failures
    assert unlabelled.error
    assert "resulted in error" in unlabelled.message


def test_match_conditions_warnings_audits_errors_and_the_failure_policy() -> None:
    warn = AdmissionPolicy(
        validations=(SMALL, PolicyValidation("object.spec.foo != 'abcd'")),
        match_conditions={"labelled": "'check' in object.metadata.labels"},
        validation_actions=("Warn", "Audit"),
        audit_annotations={"foo": "'foo is ' + object.spec.foo"},
    )
    assert not _decide(warn, _book("abcd"), namespace_labels=ENABLED).matched
    verdict = _decide(warn, _book("abcd", check="1"), namespace_labels=ENABLED)
    assert verdict.allowed
    assert verdict.refusal == ""
    name = "guestbook-guestbooks"
    assert verdict.warnings == [
        f"Validation failed for ValidatingAdmissionPolicy '{name}' with binding '{name}': small",
        f"Validation failed for ValidatingAdmissionPolicy '{name}' with binding '{name}': "
        "failed expression: object.spec.foo != 'abcd'",
    ]
    assert verdict.audit_annotations == {f"{name}/foo": "foo is abcd"}
    # an expression that cannot be evaluated: refused under Fail, skipped under Ignore
    missing = AdmissionPolicy(validations=(PolicyValidation("object.spec.bar == 'x'"),))
    failed = _decide(missing, _book(), namespace_labels=ENABLED)
    assert failed.denied
    assert failed.failures[0].error
    assert "resulted in error" in failed.failures[0].message
    ignored = dataclasses.replace(missing, failure_policy="Ignore")
    assert _decide(ignored, _book(), namespace_labels=ENABLED).allowed
    # an operation the policy is not about
    assert not _decide(
        AdmissionPolicy((SMALL,)), None, _book("abcd"), namespace_labels=ENABLED
    ).matched


def test_without_the_cel_engine_the_api_server_is_left_to_compile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from appstack.sdk import cel  # noqa: PLC0415 - the module whose engine is hidden

    monkeypatch.setattr(cel, "available", lambda: False)
    unparsable = AdmissionPolicy(validations=(PolicyValidation("object.spec.foo <"),))
    _registration(unparsable)  # an operator's image has no engine: the API server refuses it
    with pytest.raises(PolicyError, match="no CEL engine here"):
        evaluate_policy(unparsable, _book(), resource=GUESTBOOK)
    with pytest.raises(PolicyError, match="validations: none declared"):
        _registration(AdmissionPolicy(validations=()))  # what needs no engine, still


def test_a_missing_parameter_object_refuses_whatever_the_match_conditions_or_is_allowed() -> None:
    policy = AdmissionPolicy(
        param_kind=CONFIG_MAP,
        param_name="limits",
        match_conditions={"never": "false"},
        validations=(PolicyValidation("size(object.spec.foo) <= int(params.data.most)"),),
    )
    missing = _decide(policy, _book(), namespace_labels=ENABLED)
    assert missing.refusal.endswith(
        "denied request: failed to configure binding: no params found for policy binding "
        "with `Deny` parameterNotFoundAction"
    )
    # with it, the match conditions are asked (and here say no)
    assert not _decide(policy, _book(), namespace_labels=ENABLED, params={"data": {}}).matched
    allowed = dataclasses.replace(policy, param_not_found="Allow")
    assert _decide(allowed, _book(), namespace_labels=ENABLED).allowed
    (_, binding) = policy_objects(_registration(allowed).declared_policies, IDENTITY)
    assert binding["spec"]["paramRef"]["parameterNotFoundAction"] == "Allow"
    with pytest.raises(PolicyError, match="param_not_found: 'Skip' — Deny or Allow"):
        _registration(dataclasses.replace(policy, param_not_found="Skip"))
