"""One generator (issue #47): every object kind that both appstack's install (deploy/, the
Helm chart) and a scaffolded project's config/ contain is built by the SDK alone
(``appstack.sdk.install``, ``appstack.sdk.rbac``, ``appstack.sdk.crds``, ``appstack.sdk.guards``);
``appstack.manifests`` only parametrises those builders and adds what only appstack has. And
appstack's own role is derived from its registrations as a project's ``manager-role`` is, and
its other grants, its admission policies (a project's with appstack's ``GUARDS``), CRDs,
dashboards and alerts are what ``config_files`` writes for its registrations but for names."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import appstack
from appstack.api.flags import own_chart_command
from appstack.api.identity import IDENTITY
from appstack.controllers.registry import ALL
from appstack.manifests import admission, bundle, chart, rbac
from appstack.manifests.install import InstallOptions, install
from appstack.sdk import ConfigProject, chart_flags, config_files
from appstack.sdk.config import admission_objects

SRC = Path(appstack.__file__).parent
#: appstack's install generator: what must not build an object of a kind the SDK builds.
INSTALL = [*sorted((SRC / "manifests").rglob("*.py")), SRC / "controllers" / "rbac.py"]
#: Built by both generators before #47's first step (a scan that finds fewer in the SDK
#: has lost track of them).
SHARED = {
    "Namespace",
    "CustomResourceDefinition",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "Deployment",
    "Service",
    "ServiceMonitor",
}
#: Built by appstack's install alone until #47's second step, by an SDK builder since (what
#: any operator built on the SDK may add to its install: ``disruption_budget``,
#: ``lease_flow_schema``, ``prometheus_rule``).
ADOPTED = {"PodDisruptionBudget", "FlowSchema", "PrometheusRule"}


def _kinds(value: ast.expr) -> Iterator[str]:
    """The constant kinds a ``"kind":`` value can be (both branches of a conditional)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        yield value.value
    elif isinstance(value, ast.IfExp):
        yield from _kinds(value.body)
        yield from _kinds(value.orelse)


def built(path: Path) -> Iterator[tuple[str, int]]:
    """(kind, line) of each Kubernetes object a dict literal in ``path`` makes: one with
    ``apiVersion``, ``kind`` and ``metadata`` (a roleRef, an objref is no object)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Dict):
            continue
        keys = dict(_constant_keys(node))
        if {"apiVersion", "kind", "metadata"} <= keys.keys():
            for kind in _kinds(keys["kind"]):
                yield kind, node.lineno


def _constant_keys(node: ast.Dict) -> list[tuple[str, ast.expr]]:
    return [
        (k.value, v)
        for k, v in zip(node.keys, node.values, strict=True)
        if isinstance(k, ast.Constant) and isinstance(k.value, str)
    ]


def sdk_kinds() -> set[str]:
    return {kind for path in (SRC / "sdk").rglob("*.py") for kind, _ in built(path)}


def test_the_scan_finds_every_kind_both_installs_contain_in_the_sdk() -> None:
    assert sdk_kinds() >= SHARED | ADOPTED


def test_every_object_of_appstacks_install_is_of_a_kind_the_sdk_builds() -> None:
    """deploy/'s objects and its monitoring/, whatever the options (namespaced, sharded),
    are all of kinds the SDK builds: what appstack adds to an install is declared through
    the SDK's builders."""
    options = [
        InstallOptions(),
        InstallOptions(namespace="ops", watch_namespaces=("a", "b"), shards=2),
    ]
    kinds = {obj["kind"] for each in options for obj in install(each).objects()}
    for path in ("monitoring/service-monitor.yaml", "monitoring/prometheus-rule.yaml"):
        kinds |= {obj["kind"] for obj in yaml.safe_load_all(bundle.render()[path]) if obj}
    assert kinds >= ADOPTED
    assert kinds <= sdk_kinds()


def test_appstacks_install_builds_no_object_of_a_kind_the_sdk_builds() -> None:
    """appstack's manifests call the SDK's builder for these (one builder per kind): a new
    literal object of such a kind there is a second generator growing back."""
    kinds = sdk_kinds()
    found = [
        f"{path.relative_to(SRC)}:{line} builds a {kind}"
        for path in INSTALL
        for kind, line in built(path)
        if kind in kinds
    ]
    assert not found, "use the SDK's builder (appstack.sdk.install):\n" + "\n".join(found)


def _appstack_project(**options: Any) -> ConfigProject:
    """A scaffolded project with appstack's identity, registrations and kinds."""
    return ConfigProject(IDENTITY, "appstack", ALL, [c.kind for c in ALL], **options)


def _manager_role(namespaced: bool) -> dict[str, object]:
    project = _appstack_project(namespaced=namespaced)
    role: dict[str, object] = yaml.safe_load(config_files(project)["rbac/role.yaml"])
    return role


def test_appstacks_roles_are_derived_as_a_projects_manager_role() -> None:
    """A project with appstack's registrations would get appstack's very rules."""
    assert rbac.cluster_role()["rules"] == _manager_role(namespaced=False)["rules"]
    assert rbac.role("ops")["rules"] == _manager_role(namespaced=True)["rules"]


def _unnamed(obj: dict[str, Any], names: dict[str, str] | None = None) -> str:
    """``obj`` but its name, as JSON, with the install's own naming left out of the names
    it holds: deploy/'s ``-<install namespace>`` suffix (and how messages show it), a
    project's ``appstack-`` prefix (a binding's ``policyName``); first ``names`` (JSON
    text → its replacement)."""
    text = json.dumps({k: v for k, v in obj.items() if k != "metadata"}, sort_keys=True)
    for named, unnamed in (names or {}).items():
        text = text.replace(named, unnamed)
    for named, unnamed in (
        ("-<install namespace>", ""),
        ("-appstack-system", ""),
        ('"appstack-', '"'),
    ):
        text = text.replace(named, unnamed)
    return text


#: The operator's ServiceAccount (a subject's name and namespace): deploy/'s → a project's
#: before config/default's prefix and namespace.
ACCOUNT_NAMES = {
    '"name": "appstack-operator", "namespace": "appstack-system"': (
        '"name": "controller-manager", "namespace": "system"'
    )
}


@pytest.mark.parametrize(
    ("config_path", "name"),
    [
        ("rbac/leader_election_role.yaml", rbac.LEADER_ELECTION),
        ("rbac/metrics_auth_role.yaml", "appstack-operator-metrics-auth-appstack-system"),
        ("rbac/metrics_reader_role.yaml", "appstack-metrics-reader-appstack-system"),
        ("rbac/namespace_enabler_role.yaml", "appstack-namespace-enabler-appstack-system"),
        ("rbac/lease_flow_schema.yaml", "appstack-operator-leases-appstack-system"),
    ],
)
def test_appstacks_other_grants_are_a_projects(config_path: str, name: str) -> None:
    """Beside the manager role: the leader-election Role, the /metrics reviews, the metrics
    reader, who may enable a namespace and the FlowSchema of the Lease requests — a
    project with appstack's registrations gets the same objects but for their names (its
    ServiceAccount ``controller-manager`` in ``system`` before config/default's)."""
    (twin,) = yaml.safe_load_all(config_files(_appstack_project())[config_path])
    (obj,) = [
        o for o in install().rbac if (o["kind"], o["metadata"]["name"]) == (twin["kind"], name)
    ]
    assert _unnamed(obj, ACCOUNT_NAMES) == _unnamed(twin)


def test_appstacks_own_flags_are_its_charts_values_as_the_sdk_makes_them() -> None:
    """appstack's own flags (``appstack.api.flags``) are values of its chart the way a
    scaffolded operator's are (:func:`appstack.sdk.chart_flags`, named by their
    ``ChartOption``): each a value of values.yaml with the flag's default, the Deployment
    template passing it as the SDK's ``ChartFlag`` does; the backup image is none (the chart
    sets it to the operator's own image)."""
    flags = chart_flags(own_chart_command())
    assert [flag.value for flag in flags] == [
        "allowExternalIPs",
        "externalDenyCIDRs",
        "allowExternalClusterNames",
    ]
    defaults = chart.values()
    for flag in flags:
        default = list(flag.default) if isinstance(flag.default, tuple) else flag.default
        assert defaults[flag.value] == default, flag.value
    deployment = chart.render()["templates/manager/operator.yaml"]
    for flag in flags:
        item = flag.item(f"        - '@@FLAG_{flag.value}@@'")
        assert item in deployment, item


@pytest.mark.parametrize("sharded", [False, True])
def test_appstacks_admission_is_a_projects_with_appstacks_guards(sharded: bool) -> None:
    """A project with appstack's registrations and appstack's ``GUARDS`` — what a
    scaffolded project declares in its controllers module — gets appstack's very admission
    policies and bindings (its Secrets policy, its writes policy's extensions): the same
    objects but for their names, which deploy/ ends with the install's namespace where
    config/default prefixes the project."""
    project = _appstack_project(sharded=sharded, guards=admission.GUARDS)
    generated = {
        (obj["kind"], obj["metadata"]["name"]): obj
        for objects in admission_objects(project).values()
        for obj in objects
    }
    appstacks = admission.policies(sharded=sharded)
    assert len(appstacks) == len(generated)
    for obj in appstacks:
        name = obj["metadata"]["name"].removeprefix("appstack-").removesuffix("-appstack-system")
        twin = generated[(obj["kind"], name)]
        assert _unnamed(twin) == _unnamed(obj), name


def test_appstacks_crds_dashboards_and_alerts_are_a_projects() -> None:
    """The CRDs (deploy/'s carry appstack's install labels, which ``appstack uninstall``
    finds them by), the Grafana dashboards (byte for byte) and the alerts (one group, named
    after the operator in deploy/, after the project in config/) of a project with
    appstack's registrations are appstack's."""
    files = config_files(_appstack_project())
    deploy = bundle.render()
    for crd in install().crds:
        (twin,) = yaml.safe_load_all(
            files[f"crd/bases/{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml"]
        )
        assert {**crd, "metadata": {}} == {**twin, "metadata": {}}, crd["metadata"]["name"]
        assert crd["metadata"]["name"] == twin["metadata"]["name"]
    boards = {p.removeprefix("grafana/"): t for p, t in files.items() if p.endswith(".json")}
    assert boards == {
        p.removeprefix("monitoring/dashboards/"): t
        for p, t in deploy.items()
        if p.startswith("monitoring/dashboards/")
    }
    (alerts,) = yaml.safe_load(files["prometheus/alerts.yaml"])["spec"]["groups"]
    (appstacks,) = yaml.safe_load(deploy["monitoring/prometheus-rule.yaml"])["spec"]["groups"]
    assert alerts["rules"] == appstacks["rules"]
