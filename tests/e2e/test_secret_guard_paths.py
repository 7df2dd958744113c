"""The Secret guard holds in every install path (issue #28, P0): whatever namespace or name
the operator's ServiceAccount ends up with, its token cannot mint a
``kubernetes.io/service-account-token`` Secret — the attack reproduced per path with
``kubectl create token`` of the installed ServiceAccount, as a user holding it would:

* the README's kustomize overlay (``namespace: platform-ops``), and one with ``namePrefix``;
* ``appstack manifests --namespace``; a Helm release in another namespace;
* a namespaced install (Roles only), attacked in the namespace it may write Secrets in.

The attack mints a token of ``default``'s ServiceAccount in ``default``; in ``kube-system``
the second policy (sdk/guards/writes.py) refuses any write of the operator first.

The guard follows the operator's RBAC binding (manifests/admission.py), so cluster
administrators and other ServiceAccounts are not affected (checked too). On a cluster of
its own (installs cluster-wide objects).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.api.namespaces import ENABLED
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.helm import Helm
from appstack_testbed.waiting import eventually_sync

ROOT = Path(__file__).resolve().parents[2]
TOKEN_SECRET = "kubernetes.io/service-account-token"
REFUSED = "the appstack operator may only write Secrets of type Opaque"


def _secret(namespace: str, type_: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"generateName": "attack-", "namespace": namespace}
    if type_ == TOKEN_SECRET:
        meta["annotations"] = {"kubernetes.io/service-account.name": "default"}
    # what the operator writes: ours, kept for a stack member
    meta["labels"] = {
        "app.kubernetes.io/managed-by": "appstack",
        "appstack.dev/stack": "shop",
        "appstack.dev/member": "db",
    }
    return {"apiVersion": "v1", "kind": "Secret", "type": type_, "metadata": meta}


def token_kubeconfig(cluster: LocalCluster, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig holding nothing but ``kubectl create token`` of that ServiceAccount."""
    token = cluster.kubectl("create", "token", account, f"--namespace={namespace}").stdout
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"] = [{"name": "attacker", "user": {"token": token.strip()}}]
    config["contexts"][0]["context"]["user"] = "attacker"
    path.write_text(yaml.safe_dump(config))
    return path


def create_as(cluster: LocalCluster, kubeconfig: Path, obj: dict[str, Any]) -> str:
    """Create ``obj`` with that kubeconfig; the API server's answer (stderr when refused)."""
    proc = subprocess.run(
        [
            str(cluster.toolchain.binary("kubectl")),
            f"--kubeconfig={kubeconfig}",
            "create",
            "-f",
            "-",
        ],
        input=json.dumps(obj),
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout + proc.stderr


def assert_guarded(cluster: LocalCluster, kubeconfig: Path, namespace: str) -> None:
    """The token is refused a token Secret (once the new policy is in force) and still
    writes what reconciling needs: a labelled Opaque Secret."""
    eventually_sync(
        lambda: create_as(cluster, kubeconfig, _secret(namespace, TOKEN_SECRET)),
        lambda answer: REFUSED in answer,
        timeout=30,
        what="a service-account-token Secret refused to the operator's token",
        interval=0.5,
    )
    assert "created" in create_as(cluster, kubeconfig, _secret(namespace, "Opaque"))
    # kube-system: refused as well (both policies cover it)
    system = create_as(cluster, kubeconfig, _secret("kube-system", TOKEN_SECRET))
    assert "forbidden" in system, system


@pytest.fixture(scope="module")
def cluster(fresh_cluster: LocalCluster) -> LocalCluster:
    crds = ROOT / "deploy" / "crds"
    fresh_cluster.kubectl("apply", "--server-side", "-f", str(crds))
    # the namespaces attacked are enabled for appstack (elsewhere every write is refused)
    fresh_cluster.kubectl("label", "namespace", "default", f"{ENABLED}=true")
    return fresh_cluster


def test_the_readme_kustomize_overlays_keep_the_guard(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    for name, overlay in {
        "namespace": {"namespace": "platform-ops"},
        "prefix": {"namespace": "prefixed-ops", "namePrefix": "team-"},
    }.items():
        directory = tmp_path / name
        directory.mkdir()
        (directory / "kustomization.yaml").write_text(
            yaml.safe_dump({"resources": ["../deploy"], **overlay})
        )
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(directory))
        account = f"{overlay.get('namePrefix', '')}appstack-operator"
        kubeconfig = token_kubeconfig(
            cluster, str(overlay["namespace"]), account, tmp_path / f"{name}.kubeconfig"
        )
        assert_guarded(cluster, kubeconfig, "default")
        # gone before the next overlay is attacked: every install's policies match any
        # operator token (the marker), so a leftover would hide the next overlay's own
        # policies not working (as kubectl 1.30's kustomize left them, see docs/security.md)
        cluster.kubectl("delete", "-k", str(directory), "--wait=true")


def test_appstack_manifests_and_a_namespaced_install_keep_the_guard(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    cluster.kubectl("create", "namespace", "tenant-a")
    cluster.kubectl("label", "namespace", "tenant-a", f"{ENABLED}=true")
    for args, attacked in (
        (["--namespace", "team-ops"], "default"),
        (["--namespace", "tenant-ops", "--watch-namespace", "tenant-a"], "tenant-a"),
    ):
        bundle = subprocess.run(
            [sys.executable, "-m", "appstack", "manifests", "-o", "-", *args],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=bundle)
        kubeconfig = token_kubeconfig(cluster, args[1], "appstack-operator", tmp_path / args[1])
        assert_guarded(cluster, kubeconfig, attacked)
    # the namespaced operator may not touch Secrets outside its namespaces at all (RBAC)
    answer = create_as(cluster, tmp_path / "tenant-ops", _secret("kube-system", "Opaque"))
    assert "forbidden" in answer


def test_a_helm_release_in_another_namespace_keeps_the_guard(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    helm = Helm.ensure(cluster.kubeconfig, tmp_path / "helm")
    helm(
        "install",
        "ops",
        str(ROOT / "charts" / "appstack"),
        "--namespace=helm-ops",
        "--create-namespace",
        "--set=crd.enable=false",  # the session's CRDs are there, applied by kubectl
    )
    # release "ops": its objects are named ops-appstack-... (the chart's fullname)
    account = "ops-appstack-operator"
    kubeconfig = token_kubeconfig(cluster, "helm-ops", account, tmp_path / "helm.cfg")
    assert_guarded(cluster, kubeconfig, "default")


def test_administrators_and_other_service_accounts_are_not_affected(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    admin = create_as(cluster, cluster.kubeconfig, _secret("kube-system", TOKEN_SECRET))
    assert "created" in admin, admin  # system:masters
    cluster.kubectl("create", "namespace", "ci")
    cluster.kubectl("create", "serviceaccount", "deployer", "--namespace=ci")
    cluster.kubectl(
        "create",
        "clusterrolebinding",
        "ci-deployer-admin",
        "--clusterrole=cluster-admin",
        "--serviceaccount=ci:deployer",
    )
    cluster.kubectl("create", "serviceaccount", "builder", "--namespace=ci")
    cluster.kubectl(
        "create",
        "rolebinding",
        "builder-edit",
        "--clusterrole=edit",
        "--serviceaccount=ci:builder",
        "--namespace=ci",
    )
    for account, where in (("deployer", "kube-system"), ("builder", "ci")):
        kubeconfig = token_kubeconfig(cluster, "ci", account, tmp_path / account)
        answer = create_as(cluster, kubeconfig, _secret(where, TOKEN_SECRET))
        assert "created" in answer, f"{account}: {answer}"
