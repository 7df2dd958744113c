"""A pod as the API server returns it, shared by the unit tests of the cache
(tests/unit/runtime/test_cache.py) and of the kit's pod helpers
(tests/unit/sdk/kit/test_pods.py)."""

from __future__ import annotations


def web_pod() -> dict[str, object]:
    """Pod web-1 of app web on node-1, its image not pulled (ImagePullBackOff)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "ns",
            "resourceVersion": "3",
            "labels": {"app.kubernetes.io/instance": "web"},
            "managedFields": [{"manager": "kubelet"}],
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx"}]},
        "status": {
            "containerStatuses": [
                {"name": "web", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
            ]
        },
    }
