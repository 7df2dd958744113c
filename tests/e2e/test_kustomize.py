"""deploy/ is a kustomize base: ``kubectl kustomize deploy`` yields exactly the objects of
install.yaml, and an overlay can change the image and the namespace the usual way."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from appstack.manifests.install import install
from appstack_testbed.pytest_plugin import ClusterHandle

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def _kustomize(kube_cluster: ClusterHandle, directory: Path) -> list[dict[str, Any]]:
    out = kube_cluster.require_local().kubectl("kustomize", str(directory)).stdout
    return sorted(yaml.safe_load_all(out), key=_key)


def test_kubectl_kustomize_of_deploy_is_the_install(kube_cluster: ClusterHandle) -> None:
    built = _kustomize(kube_cluster, DEPLOY)
    assert built == sorted(install().objects(), key=_key)


def test_an_overlay_sets_the_image_and_namespace(
    kube_cluster: ClusterHandle, tmp_path: Path
) -> None:
    shutil.copytree(DEPLOY, tmp_path / "base")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": ["../base"],
                "namespace": "platform-ops",
                "images": [{"name": "appstack", "newName": "reg.example/appstack", "newTag": "9"}],
            }
        )
    )
    built = {_key(o)[:2]: o for o in _kustomize(kube_cluster, tmp_path / "overlay")}
    deployment = built["Deployment", "platform-ops"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "reg.example/appstack:9"
    binding = built["ClusterRoleBinding", ""]
    assert binding["subjects"][0]["namespace"] == "platform-ops"
