"""A scaffolded project is safe by default (issue #46): ``init`` + ``create api`` +
``make manifests`` give config/admission/ (the SDK's guards, included from config/default),
a Deployment acting only in namespaces labelled ``<domain>/enabled=true``, a Makefile whose
``make run`` does the same, and a README that says how to enable a namespace and what the
token may do. Everything the generated controller writes — its children (the template's
``desired()``), its status, its Events, its Lease — passes the generated policies as
written in config/admission/ (evaluated client-side, tests/support/admission.py), and
the same writes elsewhere are refused. ``appstack edit --enable-all-namespaces`` opts into
every namespace. What the API server says: tests/e2e/test_scaffold.py."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from appstack.cli import main
from appstack.scaffold import commands, manifests
from appstack.scaffold.project import read
from appstack.sdk.identity import OperatorIdentity
from tests.doc_blocks import run_by
from tests.support.admission import namespace_object, refusals
from tests.support.files import file_digests
from tests.support.paths import REPO_ROOT

IDENTITY = OperatorIdentity(project="guestbook", domain="tutorial.kubebuilder.io")
SHOP = namespace_object("shop", label=IDENTITY.enabled_label)


@pytest.fixture
def project(project: Path) -> Path:
    """The initialised project (conftest.py) with its Guestbook kind and manifests."""
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    manifests.generate(project)
    return project


def _policies(project: Path) -> dict[str, dict[str, Any]]:
    """config/admission's policies by name (before config/default's prefix)."""
    found = {}
    for path in sorted((project / "config/admission").glob("*_policy.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if obj and obj["kind"] == "ValidatingAdmissionPolicy":
                found[obj["metadata"]["name"]] = obj
    return found


def _sample(project: Path, namespace: str = "shop") -> dict[str, Any]:
    (sample,) = commands.sample_objects(project)
    meta = {**sample["metadata"], "namespace": namespace, "uid": "gb-1", "generation": 1}
    return {**sample, "metadata": meta}


def _children(project: Path, owner: dict[str, Any]) -> list[dict[str, Any]]:
    """What the scaffolded controller wants for ``owner``: its own ``desired()``."""
    manifests.load(project)  # the project's package, imported fresh from its src/
    controller = importlib.import_module("guestbook.controllers.guestbook")
    kind = importlib.import_module("guestbook.api.v1.guestbook")
    return list(controller.desired(owner, kind.GuestbookSpec.model_validate(owner["spec"])))


def test_the_scaffolded_controllers_writes_pass_its_policies_and_only_where_enabled(
    project: Path,
) -> None:
    policies = _policies(project)
    assert sorted(policies) == [
        "namespace-labels",
        "operator-events",
        "operator-kinds",
        "operator-lease-duration",
        "operator-writes",
    ]  # the template's kind asks for no pod security: no baseline policy
    writes = policies["operator-writes"]
    owner = _sample(project)
    (child,) = _children(project, owner)
    assert child["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "guestbook"
    (reference,) = child["metadata"]["ownerReferences"]
    assert reference["controller"] is True
    for operation, new, old in (("CREATE", child, None), ("UPDATE", child, child)):
        assert refusals(writes, operation, new, old, namespace=SHOP) == [], operation
    assert refusals(writes, "DELETE", None, child, namespace=SHOP) == []
    # the same child where the namespace is not enabled, or in kube-system: refused
    closed = namespace_object("closed", enabled=False)
    assert "it is not enabled for guestbook" in " ".join(
        refusals(writes, "CREATE", child, namespace=closed)
    )
    system = namespace_object("kube-system", label=IDENTITY.enabled_label)
    assert "(unless it is labelled tutorial.kubebuilder.io/operator-may-write=true)" in " ".join(
        refusals(writes, "CREATE", child, namespace=system)
    )
    unowned = {**child, "metadata": {**child["metadata"], "ownerReferences": []}}
    assert "controlled by one of its kinds" in " ".join(
        refusals(writes, "CREATE", unowned, namespace=SHOP)
    )
    # its status, an Event about the sample, its Lease
    status = {**owner, "status": {"observedGeneration": 1, "conditions": []}}
    assert (
        refusals(
            policies["operator-kinds"],
            "UPDATE",
            status,
            owner,
            namespace=SHOP,
            sub_resource="status",
        )
        == []
    )
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "guestbook-sample.1", "namespace": "shop"},
        "reason": "Created",
        "regarding": {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "namespace": "shop",
            "uid": "gb-1",
        },
    }
    assert refusals(policies["operator-events"], "CREATE", event, namespace=SHOP) == []
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": IDENTITY.lease_name, "namespace": IDENTITY.namespace},
        "spec": {"holderIdentity": "guestbook-controller-manager-0", "leaseDurationSeconds": 15},
    }
    lease_namespace = namespace_object(IDENTITY.namespace, enabled=False)
    assert (
        refusals(
            policies["operator-lease-duration"], "UPDATE", lease, lease, namespace=lease_namespace
        )
        == []
    )


def test_a_new_project_acts_only_in_enabled_namespaces_and_says_how(project: Path) -> None:
    manager = (project / "config/manager/manager.yaml").read_text()
    assert "--enable-all-namespaces" not in manager
    default = yaml.safe_load((project / "config/default/kustomization.yaml").read_text())
    assert "../admission" in default["resources"]
    assert (project / "config/rbac/namespace_enabler_role.yaml").is_file()
    makefile = (project / "Makefile").read_text()
    assert "\nRUN_ARGS ?=\n" in makefile
    readme = (project / "README.md").read_text()
    assert "kubectl label namespace NAME tutorial.kubebuilder.io/enabled=true" in readme
    assert "`guestbook-namespace-enabler`" in readme
    assert "## What the operator's token may do" in readme
    for policy in _policies(project):
        assert f"`guestbook-{policy}`" in readme, policy


def test_edit_opts_into_every_namespace_and_back(project: Path) -> None:
    commands.edit(project, enable_all_namespaces=True)
    assert read(project).enable_all_namespaces
    assert "enableAllNamespaces: true" in (project / "PROJECT").read_text()
    assert manifests.stale(project)  # make manifests has something to do
    manifests.generate(project)
    assert "--enable-all-namespaces" in (project / "config/manager/manager.yaml").read_text()
    writes = _policies(project)["operator-writes"]
    enabled = next(v for v in writes["spec"]["variables"] if v["name"] == "enabled")
    assert enabled["expression"] == "true"
    commands.edit(project, enable_all_namespaces=False)
    assert "enableAllNamespaces" not in (project / "PROJECT").read_text()
    manifests.generate(project)
    assert "--enable-all-namespaces" not in (project / "config/manager/manager.yaml").read_text()


PAGE = REPO_ROOT / "docs" / "build-your-own-operator.md"


def _guards_block() -> str:
    """The page's Python block that declares ``GUARDS``, under "Extending the guards" (its
    ``run by`` note names this test: tests/unit/test_doc_blocks.py checks it)."""
    return run_by(PAGE, "tests/unit/scaffold/test_guarded_project.py")["Extending the guards"].text


def test_a_projects_guards_extend_its_writes_policy_and_add_its_own(project: Path) -> None:
    """Issue #47: what appstack adds to its guards (``appstack.manifests.admission.GUARDS``)
    a project declares the same way, ``GUARDS`` in its controllers module: ``make
    manifests`` puts its validations in the writes policy and its own policies, bound as
    the guards are, in config/admission/ — and nothing of it before it is declared."""
    registry = project / "src/guestbook/controllers/__init__.py"
    before = _policies(project)
    registry.write_text(registry.read_text() + "\n" + _guards_block())
    manifests.generate(project)
    policies = _policies(project)
    assert sorted(set(policies) - set(before)) == ["operator-no-deletes"]
    admission = project / "config/admission/operator_no_deletes_policy.yaml"
    (bound,) = [
        obj
        for obj in yaml.safe_load_all(admission.read_text())
        if obj["kind"] == "ValidatingAdmissionPolicyBinding"
    ]
    assert bound["spec"] == {"policyName": "operator-no-deletes", "validationActions": ["Deny"]}
    owner = _sample(project)
    (child,) = _children(project, owner)
    writes = policies["operator-writes"]
    assert refusals(writes, "CREATE", child, namespace=SHOP) == []
    binary = {**child, "binaryData": {"blob": "AAEC"}}
    assert refusals(writes, "CREATE", binary, namespace=SHOP) == [
        "the guestbook operator writes ConfigMaps of text only (no binaryData)"
    ]
    assert refusals(policies["operator-no-deletes"], "DELETE", None, child, namespace=SHOP) == [
        "the guestbook operator deletes no ConfigMap"
    ]
    earlier = before["operator-writes"]["spec"]
    assert {**writes["spec"], "validations": earlier["validations"]} == earlier
    assert [v for v in writes["spec"]["validations"] if v not in earlier["validations"]] == [
        {
            "expression": "request.operation == 'DELETE' || object.kind != 'ConfigMap' "
            "|| !has(object.binaryData)",
            "message": "the guestbook operator writes ConfigMaps of text only (no binaryData)",
            "reason": "Forbidden",
        }
    ]


@pytest.mark.parametrize(
    ("declared", "said"),
    [
        (
            "GUARDS = {'writes': ()}",
            "guestbook.controllers.GUARDS is a dict, not an appstack.sdk.GuardExtensions",
        ),
        (
            "from appstack.sdk import GuardExtensions\n\n\n"
            "def forgot(operator):\n    operator.policy('x', {})\n\n\n"
            "GUARDS = GuardExtensions(own=(forgot,))",
            "GuardExtensions.own: forgot() made NoneType None, not a named "
            "ValidatingAdmissionPolicy (make it with operator.policy(name, spec))",
        ),
        (
            "from appstack.sdk import GuardExtensions\n\n\n"
            "def twin(operator):\n"
            "    return operator.policy(operator.operator_name('writes'), {})\n\n\n"
            "GUARDS = GuardExtensions(own=(twin,))",
            "admission policy guestbook-operator-writes: a guard has that name: rename it",
        ),
    ],
    ids=["not-guard-extensions", "no-policy-made", "a-guards-name"],
)
def test_guards_that_cannot_be_installed_are_refused_in_one_line(
    project: Path, declared: str, said: str
) -> None:
    """``make manifests`` (``appstack generate manifests``) says what is wrong with a
    project's ``GUARDS`` in one line, exit status 2, nothing written — never a traceback,
    and never a guard silently left out (an own function that returns no policy)."""
    registry = project / "src/guestbook/controllers/__init__.py"
    registry.write_text(registry.read_text() + "\n" + declared + "\n")
    before = file_digests(project / "config")
    result = CliRunner().invoke(main, ["generate", "manifests", "--directory", str(project)])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1] == f"Error: {said}"
    assert file_digests(project / "config") == before
