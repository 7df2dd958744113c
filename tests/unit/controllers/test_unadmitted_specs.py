"""A spec that breaks a CEL rule reaches the reconciler only if the API server admitted it
without that rule (a CRD older than the operator during an upgrade, or ratcheting of a field
left unchanged): the reconciler does not evaluate the CEL rules again (docs/design.md,
"Admission rules, written once"). For every case of the parity table, the spec model the
reconciler validates with either accepts the spec or refuses it with a ValidationError
(reported as InvalidSpec), and the children it would apply are built without an exception
— nothing of what CEL guarantees is relied on in a way that crashes a reconcile. And the
operator's own path never loads the CEL engine."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from appstack.controllers.registry import by_kind
from appstack.sdk.kit.kubeobject import as_object
from appstack.sdk.kit.tolerant import validate_tolerant
from tests.cel_parity import BASES, CASES
from tests.cel_parity.table import Case
from tests.support.paths import REPO_ROOT


@pytest.mark.parametrize("case", [c for c in CASES if c.refused], ids=lambda c: c.id)
def test_a_spec_admission_would_refuse_is_refused_or_reconciled_without_a_crash(
    case: Case,
) -> None:
    controller = by_kind(case.kind)
    assert controller is not None
    assert controller.children is not None
    obj = case.obj(BASES[case.kind])
    obj["metadata"] = {**obj["metadata"], "namespace": "n", "uid": "u", "generation": 1}
    try:
        spec, _ = validate_tolerant(controller.kind.spec, obj["spec"])
    except ValidationError:
        return  # Ready=False, InvalidSpec, with the model's message
    children = controller.children(as_object(obj), spec)
    assert all(child["metadata"]["name"] for child in children)


def test_the_reconcilers_path_never_loads_the_cel_engine() -> None:
    """What the operator runs — its assembly's modules and the spec models' validation —
    leaves the engine unloaded: the image does not carry it."""
    script = (
        "import sys\n"
        "import appstack.operator\n"
        "from appstack.controllers.registry import ALL\n"
        "from appstack.sdk.kit.tolerant import validate_tolerant\n"
        "from tests.cel_parity import BASES\n"
        "for c in ALL:\n"
        "    validate_tolerant(c.kind.spec, BASES[c.kind.kind]['spec'])\n"
        "assert 'cel_expr_python' not in sys.modules, 'loaded'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=REPO_ROOT, timeout=120)
