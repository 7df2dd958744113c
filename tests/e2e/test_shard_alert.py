"""The shard orphan alert fires when the coordinator is broken (issue #50): a real
Prometheus (the test bed's, as in tests/e2e/test_monitoring_scrape.py) scrapes appstack's
own operator run sharded (``appstack run --sharding``) with the shipped ServiceMonitor's
endpoint settings and evaluates the shipped rules, plus a copy of
``AppstackShardKeysUnassigned`` whose ``for:`` alone is shortened (the shipped expression
unchanged; the shipped 1 m wait is promtool's to prove: tests/integration/test_alert_rules.py).

The coordinator is broken as a cluster can break it: its label patches refused by
admission. A ValidatingAdmissionPolicy and its binding, made by the test and matching only
the test's namespace (a ``namespaceSelector`` on its name label, in the policy and in the
binding), refuse any write that sets or changes appstack's shard label on an AppService.
An AppService created there stays unassigned (the operator logs ``label patch refused``),
``appstack_shard_oldest_unassigned_seconds`` grows past a lease (15 s) and the alert fires
(the shipped copy pending); the binding deleted, the coordinator assigns the key at its
next look, the shard reconciles it and the alert resolves.

The operator runs with the admin kubeconfig, as bench/sharding_appservice.py does: under
the shared unsharded install's RBAC and guards the operator's token may not patch
AppServices at all (tests/e2e/test_sharding_install.py swaps in the sharded install's, so
is serial), a refusal this test could not lift without touching what other tests share.

Parallel: it observes only its own Prometheus, its own operator process (its Leases in the
test's namespace) and its own namespace; the cluster-scoped objects it makes (the policy,
its binding, the scraper's ClusterRoleBinding) are named after the namespace, match nothing
outside it, and are deleted at the end. Its waits are on conditions with wide timeouts; the
figures printed at the end are what was measured.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appstack.api.identity import IDENTITY
from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.rbac import LEASE_NAME
from appstack.runtime import LEASE, errors
from appstack.runtime.client import Client
from appstack.runtime.resources import Resource
from appstack.runtime.sharding import root_key
from appstack_testbed import prometheus_server
from appstack_testbed.prometheus import Binaries
from appstack_testbed.prometheus_config import alert_names, rule_groups
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import Program, appstack_run, program
from tests.e2e.scrape_installed import shipped_documents
from tests.e2e.test_monitoring_scrape import (
    CLUSTER_ROLE_BINDING,
    _free_port,
    _seen,
    _value,
    shipped_scrape,
)

ALERT = "AppstackShardKeysUnassigned"
# The copy's `for:` (the shipped one's is 1 minute); its expression is the shipped one.
SHORT_FOR = "5s"
SHARD = IDENTITY.shard_labels[0]  # the owning shard's label key
SHARD_OF = f"{IDENTITY.key('shard-of')}={LEASE_NAME}"
RESOURCE = str(APP_SERVICE)  # the gauges' resource label: appservices.appstack.dev
WAIT = f'appstack_shard_oldest_unassigned_seconds{{resource="{RESOURCE}"}}'
UNASSIGNED = f'appstack_shard_unassigned_keys{{resource="{RESOURCE}"}}'
APP = "orphan"
POLICIES = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingAdmissionPolicy",
    "validatingadmissionpolicies",
    namespaced=False,
)
BINDINGS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingAdmissionPolicyBinding",
    "validatingadmissionpolicybindings",
    namespaced=False,
)
REFUSAL = "shard label frozen by tests/e2e/test_shard_alert.py"


def _rule_files() -> dict[str, dict[str, Any]]:
    """The shipped groups unchanged, plus the orphan alert again with a short ``for:`` and
    a label telling it apart."""
    (rule,) = shipped_documents("prometheus-rule.yaml")
    shipped = rule_groups(rule)
    (orphans,) = [
        copy.deepcopy(r) for g in shipped["groups"] for r in g["rules"] if r.get("alert") == ALERT
    ]
    orphans["for"] = SHORT_FOR
    orphans["labels"]["e2e"] = "short-for"
    short = {"groups": [{"name": "appstack-e2e-short-for", "rules": [orphans]}]}
    return {"operator.rules.yaml": shipped, "short-for.rules.yaml": short}


def _label(side: str) -> str:
    """CEL: the shard label's value on ``side`` (``object``/``oldObject``), '' without."""
    labels = f"{side}.metadata.labels"
    return f"(has({labels}) && '{SHARD}' in {labels} ? {labels}['{SHARD}'] : '')"


def _breakage(namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The policy and its binding that refuse, in ``namespace`` only, a create or update of
    an AppService that sets or changes appstack's shard label: the coordinator's patches."""
    name = f"e2e-shard-label-frozen-{namespace}"
    only_here = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    old = f"(request.operation == 'CREATE' ? '' : {_label('oldObject')})"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "namespaceSelector": only_here,
                "resourceRules": [
                    {
                        "apiGroups": [APP_SERVICE.group],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": [APP_SERVICE.plural],
                    }
                ],
            },
            "validations": [
                {"expression": f"{_label('object')} == {old}", "message": f"{REFUSAL}: {SHARD}"}
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": only_here},
        },
    }
    return policy, binding


def _app(namespace: str, name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"image": "nginx:1.27", "ports": [{"port": 80}]},
    }


async def _in_force(client: Client, namespace: str) -> None:
    """A new policy is enforced a moment after it is created: dry-run creates of an
    AppService carrying the shard label until the API server refuses it with ours."""
    probe = _app(namespace, "shard-label-probe", **{SHARD: "probe"})
    said: list[str] = []

    async def refused() -> bool:
        try:
            await client.request(
                "POST", APP_SERVICE.path(namespace), params={"dryRun": "All"}, body=probe
            )
        except errors.ApiError as error:
            said.append(str(error))
            return REFUSAL in str(error)
        said.append("admitted")
        return False

    await eventually(
        refused, timeout=60, interval=0.2, what="the policy in force", diagnose=lambda: said[-1:]
    )


async def _shards(client: Client, namespace: str) -> list[str]:
    """The held shard Leases of the operator in ``namespace``."""
    leases, _ = await client.list(LEASE, namespace, label_selector=SHARD_OF)
    return [lease["metadata"]["name"] for lease in leases if lease["spec"].get("holderIdentity")]


@dataclass
class Watched:
    """What the test watches: the operator's process, its Prometheus, the AppService."""

    client: Client
    namespace: str
    operator: Program
    server: prometheus_server.PrometheusServer

    def orphan_alerts(self) -> dict[str, str]:
        """The orphan alert's copies that are active: ``shipped``/``short-for`` -> state."""
        return {
            a["labels"].get("e2e", "shipped"): a["state"]
            for a in self.server.alerts()
            if a["labels"]["alertname"] == ALERT
        }

    def seen(self) -> str:
        return f"{_seen(self.server)}\noperator log:\n{self.operator.tail()}"

    async def app(self) -> dict[str, Any]:
        return dict(await self.client.get(APP_SERVICE, APP, self.namespace))

    async def wait(self, probe: Any, check: Any, what: str, timeout: float = 60) -> Any:
        return await eventually(
            probe, check, timeout=timeout, what=what, interval=0.2, diagnose=self.seen
        )

    async def healthy(self) -> str:
        """Until the coordinator's gauges are scraped (it has swept: nothing waits), its
        shard's Lease held, and the rules evaluated since with the orphan alert inactive:
        the shard's name."""

        def swept() -> bool:
            assert self.operator.proc.poll() is None, self.operator.tail()
            return _value(self.server, WAIT) == 0

        await self.wait(swept, bool, "the coordinator's gauges in Prometheus", timeout=90)
        (shard,) = await self.wait(
            lambda: _shards(self.client, self.namespace), bool, "the shard's Lease"
        )
        swept_at = time.time()
        await self.wait(
            lambda: self.server.evaluated_since(swept_at), bool, "a rule evaluation after"
        )
        rules = [r for g in self.server.rule_groups() for r in g["rules"]]
        assert sorted(r["name"] for r in rules) == sorted(
            [*alert_names(_rule_files()["operator.rules.yaml"]), ALERT]
        )
        assert all(r["health"] == "ok" for r in rules), rules
        assert self.orphan_alerts() == {}, self.server.alerts()
        return str(shard)

    async def refused_and_alerted(self) -> float:
        """Until the coordinator's label patch of the AppService is refused and the alert
        fires (its shipped copy pending), the AppService still unassigned: the oldest
        unassigned key's wait then, as Prometheus has it."""
        key = root_key(APP_SERVICE.group, APP_SERVICE.kind, self.namespace, APP)

        def refused() -> bool:  # by the test's policy, not anything else
            return any(
                "label patch refused" in line and key in line and REFUSAL in line
                for line in self.operator.log.read_text().splitlines()
            )

        await self.wait(refused, bool, "the coordinator's label patch refused", timeout=30)
        await self.wait(
            self.orphan_alerts,
            lambda states: states == {"short-for": "firing", "shipped": "pending"},
            f"{ALERT} firing (short for:) and pending (shipped)",
            timeout=90,
        )
        waited = _value(self.server, WAIT)
        assert waited is not None
        assert waited > 15
        assert _value(self.server, UNASSIGNED) == 1
        labels = (await self.app())["metadata"].get("labels") or {}
        assert SHARD not in labels, labels
        return waited


async def test_orphan_alert_fires_while_label_patches_are_refused_and_resolves_after(
    client: Client,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
    prometheus_binaries: Binaries,  # built before the clock starts
) -> None:
    _, job, metrics = await shipped_scrape(client, namespace, tmp_path)
    argv = appstack_run(
        kubeconfig,
        namespace,
        "--sharding",
        f"--leader-election-namespace={namespace}",
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{_free_port()}",
    )
    policy, binding = _breakage(namespace)
    started = time.monotonic()
    try:
        await client.create(POLICIES, policy)
        await client.create(BINDINGS, binding)
        with (
            program(argv, tmp_path / "operator.log") as operator,
            prometheus_server.running(tmp_path / "prometheus", [job], _rule_files()) as server,
        ):
            watched = Watched(client, namespace, operator, server)
            await _in_force(client, namespace)  # while the operator starts
            shard = await watched.healthy()
            healthy = time.monotonic() - started

            # The coordinator broken: a new AppService, its label patch refused.
            await client.create(APP_SERVICE, _app(namespace, APP))
            created = time.monotonic()
            waited = await watched.refused_and_alerted()
            fired = time.monotonic() - created

            # Repaired: the binding gone, the key assigned at the coordinator's next look,
            # the alert resolved, the AppService reconciled by its shard.
            await client.delete(BINDINGS, binding["metadata"]["name"])
            repaired = time.monotonic()
            await watched.wait(
                watched.app,
                lambda a: (a["metadata"].get("labels") or {}).get(SHARD) == shard,
                f"{APP} labelled to shard {shard}",
            )
            labelled = time.monotonic() - repaired
            await watched.wait(watched.orphan_alerts, lambda s: s == {}, f"{ALERT} resolved")
            resolved = time.monotonic() - repaired
            assert _value(server, WAIT) == 0
            assert _value(server, UNASSIGNED) == 0
            await watched.wait(
                watched.app,
                lambda a: (
                    (a.get("status") or {}).get("observedGeneration") == a["metadata"]["generation"]
                ),
                f"{APP} reconciled by shard {shard}",
            )
            print(
                f"\ncoordinator swept, rules evaluated {healthy:.1f}s after the start; {ALERT} "
                f"firing ({SHORT_FOR} for:) {fired:.1f}s after the AppService was created "
                f"(oldest unassigned {waited:.0f}s); binding deleted: the key labelled to its "
                f"shard after {labelled:.1f}s, the alert resolved after {resolved:.1f}s"
            )
    finally:
        await client.delete(BINDINGS, binding["metadata"]["name"])
        await client.delete(POLICIES, policy["metadata"]["name"])
        await client.delete(CLUSTER_ROLE_BINDING, f"prometheus-{namespace}")
