"""The committed deploy/ files are exactly what the code generates; RBAC has no wildcards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from appstack.cli import main
from appstack.cli.uninstall import INSTALLED, removal_order
from appstack.cli.uninstall_scope import Scope, watched_namespaces
from appstack.controllers.rbac import operator_rules
from appstack.controllers.registry import ALL
from appstack.manifests import admission, bundle, chart, monitoring, rbac, workload
from appstack.manifests.install import InstallOptions, install
from appstack.sdk import process_rules
from tests.support.paths import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
CHART = DEPLOY.parent / "charts" / "appstack"


def test_the_committed_manifests_and_chart_match_the_code() -> None:
    stale = bundle.stale(DEPLOY, bundle.render())
    assert stale == [], f"run `make manifests` and commit: {stale}"
    stale = bundle.stale(CHART, chart.render())
    assert stale == [], f"run `make manifests` and commit: {stale}"
    assert bundle.leftover(CHART, chart.render()) == []  # nothing generated before is left


def test_appstack_manifests_removes_what_it_generated_before_and_no_one_elses(
    tmp_path: Path,
) -> None:
    """The chart changes shape between versions (templates renamed, crds/ gone): a file a
    former run wrote and this one does not is removed, and listed by --check; a file
    without the generated header is someone's own and stays."""
    old = tmp_path / "chart" / "templates" / "deployment.yaml"
    old.parent.mkdir(parents=True)
    old.write_text(bundle.HEADER + "kind: Deployment\n")
    mine = tmp_path / "chart" / "templates" / "mine.yaml"
    mine.write_text("kind: ConfigMap\n")
    args = ["manifests", f"--output-dir={tmp_path / 'deploy'}", f"--chart-dir={tmp_path / 'chart'}"]
    checked = CliRunner().invoke(main, [*args, "--check"])
    assert checked.exit_code == 1
    assert f"out of date: {old}" in checked.output
    assert str(mine) not in checked.output
    written = CliRunner().invoke(main, args)
    assert written.exit_code == 0, written.output
    assert f"removed {old}" in written.output
    assert not old.exists()
    assert mine.read_text() == "kind: ConfigMap\n"
    assert CliRunner().invoke(main, [*args, "--check"]).exit_code == 0


def test_rbac_names_every_verb_and_resource_explicitly() -> None:
    for rule in rbac.cluster_role()["rules"]:
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field]
    resources = {r for rule in rbac.cluster_role()["rules"] for r in rule["resources"]}
    assert {
        "appservices",
        "appservices/status",
        "deployments",
        "services",
        "events",
        "appservices/finalizers",
    } <= resources
    assert "leases" not in resources  # only in the operator's namespace: a Role


def test_the_lease_is_granted_by_name_in_the_operator_namespace_only() -> None:
    role = rbac.leader_election_role()
    assert role["kind"] == "Role"
    assert role["metadata"]["namespace"] == rbac.NAMESPACE
    named, create, marker = role["rules"]
    assert named["resources"] == ["leases"]
    assert named["resourceNames"] == ["appstack-operator"]
    assert named["verbs"] == ["get", "update"]
    assert create["verbs"] == ["create"]  # resourceNames cannot restrict create
    assert "resourceNames" not in create
    # the marker there too: the Lease policy knows the operator by it (a namespaced
    # install's other Roles are only in the watched namespaces)
    assert marker == {
        "apiGroups": ["appstack.dev"],
        "resources": ["admissionguards"],
        "verbs": ["subject-to"],
    }


def _policy_and_binding(prefix: str) -> tuple[dict[str, Any], dict[str, Any]]:
    every = admission.policies()
    (at,) = [
        n
        for n, obj in enumerate(every)
        if obj["kind"] == "ValidatingAdmissionPolicy" and obj["metadata"]["name"].startswith(prefix)
    ]
    return every[at], every[at + 1]


def test_the_secrets_policy_binds_the_operator_to_labelled_opaque_secrets() -> None:
    policy, binding = _policy_and_binding("appstack-operator-secrets-")
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    # Who the operator is comes from its binding (a marker permission only its role
    # grants), never from a user name an overlay or a release namespace could move.
    marker, canary = (c["expression"] for c in spec["matchConditions"])
    assert "check('subject-to').allowed()" in marker
    assert canary.startswith("!")
    assert "check('held-only-through-a-wildcard')" in canary
    assert "username" not in marker + canary
    assert {
        "apiGroups": ["appstack.dev"],
        "resources": ["admissionguards"],
        "verbs": ["subject-to"],
    } in rbac.cluster_role()["rules"]
    assert not [r for r in rbac.cluster_role()["rules"] if "*" in str(r)]
    rules = spec["matchConstraints"]["resourceRules"]
    assert rules[0]["resources"] == ["secrets"]
    assert rules[0]["operations"] == ["CREATE", "UPDATE", "DELETE"]
    expressions = " ".join(v["expression"] for v in spec["validations"])
    assert "object.type == 'Opaque'" in expressions
    assert "app.kubernetes.io/managed-by" in expressions
    assert "oldObject.metadata.labels['app.kubernetes.io/managed-by']" in expressions
    assert binding["spec"] == {
        "policyName": policy["metadata"]["name"],
        "validationActions": ["Deny"],
    }


def test_the_writes_policy_bounds_every_resource_the_operator_may_write() -> None:
    policy, binding = _policy_and_binding("appstack-operator-writes-")
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    spec = policy["spec"]
    secrets, _ = _policy_and_binding("appstack-operator-secrets-")
    assert spec["matchConditions"] == secrets["spec"]["matchConditions"]
    matched = {
        (r["apiGroups"][0], r["resources"][0]) for r in spec["matchConstraints"]["resourceRules"]
    }
    written = {
        (group, plural)
        for r in rbac.cluster_role()["rules"]
        if {"create", "patch", "delete"} & set(r["verbs"])
        for group in r["apiGroups"]
        for plural in r["resources"]
    }
    unbounded = written - matched
    assert unbounded == {("events.k8s.io", "events")} | {
        (g, p) for g, p in written if g == "appstack.dev" or p.endswith("reviews")
    }
    assert ("", "pods") in matched
    assert ("discovery.k8s.io", "endpointslices") in matched
    assert all("DELETE" in r["operations"] for r in spec["matchConstraints"]["resourceRules"])
    text = yaml.safe_dump(spec)
    for needle in ("kube-system", "ownerReferences", "hostPath", "privileged", "-external"):
        assert needle in text


def test_the_service_monitor_sends_prometheus_token_and_its_account_may_read() -> None:
    """/metrics answers 401 without a token and 403 to an unbound one: the shipped
    ServiceMonitor sends Prometheus' token, and the binding beside it lets that read."""
    (endpoint,) = monitoring.service_monitor()["spec"]["endpoints"]
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    docs = list(yaml.safe_load_all((DEPLOY / "monitoring/service-monitor.yaml").read_text()))
    assert [d["kind"] for d in docs] == ["ServiceMonitor", "ClusterRoleBinding"]
    (shipped,) = docs[0]["spec"]["endpoints"]  # HTTPS, the self-signed default unverified
    assert (shipped["scheme"], shipped["tlsConfig"]) == ("https", {"insecureSkipVerify": True})
    binding = docs[1]
    assert binding["roleRef"]["name"] == rbac.metrics_reader()["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}
    ]


def test_the_operator_runs_locked_down_with_leader_election() -> None:
    deployment = workload.deployment()
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--leader-elect" in container["args"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["runAsNonRoot"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_install_yaml_is_one_bundle_of_everything() -> None:
    kinds = [d["kind"] for d in yaml.safe_load_all((DEPLOY / "install.yaml").read_text())]
    assert kinds.count("CustomResourceDefinition") == len(ALL)
    assert [k for k in kinds if k != "CustomResourceDefinition"] == [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterRole",  # the reviews that guard /metrics, apart (kept when namespaced)
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ClusterRole",  # appstack-metrics-reader, for scrapers
        "ClusterRole",  # appstack-editor, aggregated into admin and edit
        "ClusterRole",  # appstack-viewer, aggregated into view
        "ClusterRole",  # appstack-namespace-enabler, for a platform team
        "FlowSchema",  # the operator's Lease requests at the leader-election priority
        "ValidatingAdmissionPolicy",  # who may label a namespace enabled
        "ValidatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy",  # the Secrets the operator may write
        "ValidatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy",  # everything else it may write
        "ValidatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy",  # how long its Lease may be held
        "ValidatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy",  # what it may change of our kinds
        "ValidatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy",  # its Events
        "ValidatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy",  # everyone's objects of our kinds at baseline
        "ValidatingAdmissionPolicyBinding",
        "Deployment",
        "PodDisruptionBudget",  # one replica evicted at a time
        "Service",
    ]


def test_a_namespaced_install_has_a_role_per_watched_namespace_and_flags_to_match() -> None:
    options = InstallOptions(namespace="ops", image="reg/op:1", watch_namespaces=("a", "b"))
    parts = install(options)
    kinds = [(o["kind"], o["metadata"].get("namespace")) for o in parts.rbac]
    assert kinds == [
        ("Role", "a"),
        ("RoleBinding", "a"),
        ("Role", "b"),
        ("RoleBinding", "b"),
        ("Role", "ops"),  # its Events only
        ("RoleBinding", "ops"),
        ("ClusterRole", None),  # only the TokenReviews/SubjectAccessReviews of /metrics auth
        ("ClusterRoleBinding", None),
        ("Role", "ops"),  # the Lease, by name
        ("RoleBinding", "ops"),
        ("ClusterRole", None),  # appstack-metrics-reader, for scrapers
        ("ClusterRole", None),  # appstack-editor, for people (aggregated into admin, edit)
        ("ClusterRole", None),  # appstack-viewer (aggregated into view)
        ("ClusterRole", None),  # appstack-namespace-enabler (a platform team)
        ("FlowSchema", None),  # Lease requests at the leader-election priority
    ]
    assert parts.rbac[4]["rules"] == process_rules(cluster_wide=False)  # Events, ...
    for binding in [o for o in parts.rbac if o["kind"].endswith("Binding")]:
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": rbac.NAME, "namespace": "ops"}
        ]
    (rule,) = parts.rbac[-1]["spec"]["rules"]
    assert rule["subjects"][0]["serviceAccount"] == {"name": rbac.NAME, "namespace": "ops"}
    assert rule["resourceRules"][0]["resources"] == ["leases"]
    (container,) = parts.deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "reg/op:1"
    assert container["args"][-2:] == ["--namespace=a", "--namespace=b"]
    assert parts.deployment["metadata"]["namespace"] == "ops"
    assert parts.namespace["metadata"]["name"] == "ops"
    bound = {b["roleRef"]["name"] for b in parts.objects() if b["kind"] == "ClusterRoleBinding"}
    cluster_rules = [
        r
        for o in parts.objects()
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] in bound
        for r in o["rules"]
    ]
    assert {res for r in cluster_rules for res in r.get("resources", [])} == {
        "tokenreviews",
        "subjectaccessreviews",
    }


def test_people_get_our_kinds_through_the_clusters_own_roles() -> None:
    editor, viewer = rbac.user_roles("ops")
    aggregate = "rbac.authorization.k8s.io/aggregate-to-"
    assert editor["metadata"]["labels"][f"{aggregate}edit"] == "true"
    assert editor["metadata"]["labels"][f"{aggregate}admin"] == "true"
    assert viewer["metadata"]["labels"][f"{aggregate}view"] == "true"
    assert f"{aggregate}edit" not in viewer["metadata"]["labels"]
    kinds, status = viewer["rules"]
    assert kinds["resources"] == [
        "appservices",
        "appstacks",
        "crontabs",
        "etcdclusters",
        "mongodbcommunity",
    ]
    assert kinds["verbs"] == ["get", "list", "watch"]
    assert status["verbs"] == ["get"]
    assert "create" in editor["rules"][0]["verbs"]
    assert "patch" not in editor["rules"][1]["verbs"]  # status is the operator's


def test_the_operator_survives_a_drain_one_replica_at_a_time() -> None:
    parts = install()
    assert parts.budget["spec"]["maxUnavailable"] == 1
    selector = parts.deployment["spec"]["selector"]["matchLabels"]
    assert parts.budget["spec"]["selector"]["matchLabels"] == selector
    affinity = parts.deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    (term,) = affinity["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"


def test_watching_the_operators_own_namespace_needs_no_extra_role() -> None:
    parts = install(InstallOptions(namespace="ops", watch_namespaces=("ops",)))
    assert [o["kind"] for o in parts.rbac][:2] == ["Role", "RoleBinding"]
    assert [o["kind"] for o in parts.rbac][2:4] == ["ClusterRole", "ClusterRoleBinding"]
    assert parts.rbac[0]["rules"] == operator_rules(cluster_wide=False)


def test_uninstall_knows_every_kind_an_install_creates_and_removes_the_crds_last() -> None:
    autoscaled = InstallOptions(shards=2, autoscale=(2, 4))
    for options in (InstallOptions(), InstallOptions(watch_namespaces=("a",)), autoscaled):
        assert {o["kind"] for o in install(options).objects()} <= set(INSTALLED)
    order = [r.kind for r in removal_order()]
    assert "HorizontalPodAutoscaler" in order
    assert order[0] == "Deployment"
    assert order[-2:] == ["CustomResourceDefinition", "Namespace"]


def _cluster_scoped(parts: object) -> set[tuple[str, str]]:
    namespaced = {
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "Deployment",
        "PodDisruptionBudget",
        "Service",
        "Namespace",
    }
    return {
        (o["kind"], o["metadata"]["name"])
        for o in parts.objects()  # type: ignore[attr-defined]
        if o["kind"] not in namespaced and o["kind"] != "CustomResourceDefinition"
    }


def test_two_installs_in_different_namespaces_share_no_cluster_scoped_object() -> None:
    for watch in ((), ("team",)):
        one = _cluster_scoped(install(InstallOptions(namespace="one", watch_namespaces=watch)))
        two = _cluster_scoped(install(InstallOptions(namespace="two", watch_namespaces=watch)))
        assert one
        assert two
        assert not one & two
        assert all(name.endswith("-one") for _, name in one)
    cluster_wide = install(InstallOptions(namespace="ops"))
    binding = next(o for o in cluster_wide.rbac if o["kind"] == "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == "appstack-operator-ops"


def test_an_uninstall_scope_keeps_the_other_installs_and_the_crds() -> None:
    parts = install(InstallOptions(namespace="ops1", watch_namespaces=("a",)))
    assert watched_namespaces(parts.deployment) == ("a",)
    assert watched_namespaces(install().deployment) == ()
    own = frozenset(
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) for o in parts.rbac
    )
    scope = Scope("ops1", ("a",), ("ops2",), own)
    assert scope.owns("ClusterRole", "appstack-operator-metrics-auth-ops1", None)
    assert not scope.owns("ClusterRole", "appstack-operator-metrics-auth-ops2", None)
    assert scope.owns("Role", "appstack-operator-ops1", "a")
    assert not scope.owns("Role", "appstack-operator-ops1", "b")
    assert scope.owns("Deployment", "appstack-operator", "ops1")
    assert scope.owns("Namespace", "ops1", None)
    assert not scope.owns("Namespace", "ops2", None)
    assert not scope.owns("CustomResourceDefinition", "appservices.appstack.dev", None)
    assert scope.removes_custom_resources_in("a")
    assert not scope.removes_custom_resources_in("b")
    last = Scope("ops1", ("a",), (), own)
    assert last.owns("CustomResourceDefinition", "appservices.appstack.dev", None)
    assert last.removes_custom_resources_in("b")
    assert Scope().owns("ClusterRole", "anything", None)
    # Only appstack's own CRDs, even labelled part-of=appstack: a tutorial user's CRD is
    # theirs (issue #35: crd() used to stamp the label on every CRD it generated).
    assert Scope().owns("CustomResourceDefinition", "appstacks.appstack.dev", None)
    assert not Scope().owns("CustomResourceDefinition", "greetings.tutorial.example.com", None)
    assert not last.owns("CustomResourceDefinition", "guestbooks.webapp.example.com", None)


def test_an_uninstall_beside_a_helm_release_in_its_namespace_removes_only_its_own() -> None:
    """A Helm release beside the install in ``ops`` (its ServiceAccount
    ``b-appstack-operator``): the uninstall of ``ops`` keeps the Namespace, the release's
    objects and the CRDs, and removes its own."""
    parts = install(InstallOptions(namespace="ops", watch_namespaces=("a",)))
    own = frozenset(
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
        for o in (*parts.rbac, parts.deployment, parts.service_account)
    )
    scope = Scope("ops", ("a",), ("ops",), own)
    assert scope.shares_its_namespace
    assert not scope.alone
    assert not scope.owns("Namespace", "ops", None)
    assert scope.owns("Deployment", "appstack-operator", "ops")
    assert scope.owns("ServiceAccount", "appstack-operator", "ops")
    assert not scope.owns("Deployment", "b-appstack-operator", "ops")
    assert not scope.owns("ClusterRole", "b-appstack-operator-metrics-auth-ops", None)
    assert not scope.owns("CustomResourceDefinition", "appservices.appstack.dev", None)
    assert not Scope("ops", ("a",), ("other",), own).shares_its_namespace


def test_a_sharded_install_runs_its_shards_with_what_they_need() -> None:
    default, sharded = install(), install(InstallOptions(shards=3))
    assert sharded.deployment["spec"]["replicas"] == 3
    (container,) = sharded.deployment["spec"]["template"]["spec"]["containers"]
    assert "--sharding" in container["args"]
    assert sharded.budget == default.budget  # at most one replica evicted at a time
    role = sharded.rbac[0]
    assert role["metadata"]["name"] == rbac.cluster_name(rbac.NAME, rbac.NAMESPACE)
    patched = {r["resources"][0] for r in role["rules"] if "patch" in r["verbs"]}
    assert {"appservices", "appstacks", "crontabs", "etcdclusters"} <= patched
    (leases, _marker) = rbac.leader_election_role(sharded=True)["rules"]
    assert "resourceNames" not in leases
    assert "delete" in leases["verbs"]
    names = [o["metadata"]["name"] for o in sharded.admission]
    assert "appstack-shard-labels-appstack-system" in names
    unsharded = [o["metadata"]["name"] for o in default.admission]
    assert "appstack-shard-labels-appstack-system" not in unsharded
    (default_container,) = default.deployment["spec"]["template"]["spec"]["containers"]
    assert "--sharding" not in default_container["args"]
