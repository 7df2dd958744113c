"""The API server agrees with the CEL rules evaluated client-side: for every case of the
parity table (tests/cel_parity, one or more per CEL rule of every CRD we serve), a
server-side dry-run create — or, for a transition rule, a dry-run update of an object
created first — is refused with that rule's message on the field the rule names, exactly as
appstack.sdk.cel refuses the same write (same field, same message); boundary cases are
accepted by both; what only the models check (tests/cel_parity/model_only.py) is accepted by
the API server. The table's coverage (every rule has a case) and the client side on its own:
tests/unit/api/test_api_cel_parity.py."""

from __future__ import annotations

from typing import Any

import pytest

from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import Resource
from tests.cel_parity import BASES, CASES
from tests.cel_parity.model_only import MODEL_ONLY, ModelOnly
from tests.cel_parity.table import (
    Case,
    client_refusal,
    crd_rules,
    model_of,
    python_refusal,
    rule_of,
    said_by,
)

pytestmark = pytest.mark.usefixtures("operator_kubeconfig")  # installs the CRDs

RULES = crd_rules()
DRY_RUN = {"dryRun": "All"}


def _placed(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}


async def _write(client: Client, case: Case, namespace: str) -> dict[str, Any]:
    """The case's write, dry-run: a create, or an update of ``case.old`` (created first)."""
    resource: Resource = model_of(case.kind).KIND.resource
    base = BASES[case.kind]
    obj = _placed(case.obj(base), namespace)
    old = case.old_obj(base)
    if old is None:
        return await client.request("POST", resource.path(namespace), params=DRY_RUN, body=obj)
    created = await client.create(resource, _placed(old, namespace))
    obj["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    path = resource.path(namespace, obj["metadata"]["name"])
    return await client.request("PUT", path, params=DRY_RUN, body=obj)


@pytest.mark.parametrize("case", [c for c in CASES if c.server is None], ids=lambda c: c.id)
async def test_the_api_server_refuses_what_the_rules_refuse_client_side(
    client: Client, namespace: str, case: Case
) -> None:
    (rule,) = rule_of(case, RULES)
    client_side = said_by(client_refusal(case, BASES[case.kind]), rule)
    if not case.refused:
        written = await _write(client, case, namespace)
        assert written["metadata"]["name"] == case.obj(BASES[case.kind])["metadata"]["name"]
        assert client_refusal(case, BASES[case.kind]) == []
        return
    with pytest.raises(errors.Invalid) as refused:
        await _write(client, case, namespace)
    causes = refused.value.causes
    said = [c for c in causes if rule.message in c.message]
    assert said, f"refused, but not by {rule}: {refused.value}"
    assert any(c.field == (case.field or "<nil>") for c in said), [str(c) for c in said]
    others = {r.message for r in RULES if r.kind == case.kind and r != rule}
    others -= {m for m in others if m in rule.message}  # a shorter message inside this one
    broken = [str(c) for c in causes if any(m in c.message for m in others)]
    assert broken == [] or case.also, f"{rule} and more: {broken}"
    # the same verdict client-side: the same field, and the server's message says ours
    assert [v.field or "<nil>" for v in client_side] == [case.field or "<nil>"]
    assert any(client_side[0].message in c.message for c in said), (client_side, said)


@pytest.mark.parametrize("one_sided", MODEL_ONLY, ids=lambda m: m.says)
async def test_what_only_the_models_refuse_the_api_server_accepts(
    client: Client, namespace: str, one_sided: ModelOnly
) -> None:
    case = Case(one_sided.kind, "", "", one_sided.edits, refused=False)
    written = await _write(client, case, namespace)
    assert written["metadata"]["uid"]
    errors = python_refusal(case.kind, case.obj(BASES[case.kind]))
    assert errors is not None
    assert any(one_sided.says in e for e in errors), errors
