"""The well-known kinds and the cache keys (runtime/resources.py): an object's key is
``namespace/name`` (its name alone when cluster-scoped), and each kind's path is the API
server's."""

from __future__ import annotations

from appstack.runtime.resources import CONFIG_MAP, DEPLOYMENT, NAMESPACE, object_key, split_key


def _obj(name: str, namespace: str = "ns") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": namespace}}


def test_keys_and_paths() -> None:
    assert object_key(_obj("a", "ns")) == "ns/a"
    assert object_key({"metadata": {"name": "cluster-wide"}}) == "cluster-wide"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("cluster-wide") == (None, "cluster-wide")
    assert CONFIG_MAP.path("ns", "a") == "/api/v1/namespaces/ns/configmaps/a"
    assert DEPLOYMENT.path("ns", "d", "scale") == "/apis/apps/v1/namespaces/ns/deployments/d/scale"
    assert DEPLOYMENT.path() == "/apis/apps/v1/deployments"
    assert NAMESPACE.path("ignored", "x") == "/api/v1/namespaces/x"
