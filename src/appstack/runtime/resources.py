"""Well-known Kubernetes kinds as :class:`~appstack.core.resource.Resource` descriptors.

The descriptor type and the cache keys (:func:`object_key`, :func:`split_key`) live in
:mod:`appstack.core.resource` (below the runtime, so that kinds are declared with them
without it) and are re-exported here for the runtime's users.
"""

from __future__ import annotations

from typing import Any

from appstack.core.resource import Resource, object_key, split_key

Obj = dict[str, Any]
"""A Kubernetes object as the runtime handles it: the decoded JSON, a plain dict."""

__all__ = [
    "CONFIG_MAP",
    "CRON_JOB",
    "DEPLOYMENT",
    "ENDPOINT_SLICE",
    "EVENT",
    "JOB",
    "LEASE",
    "NAMESPACE",
    "POD",
    "PVC",
    "SECRET",
    "SERVICE",
    "SERVICE_ACCOUNT",
    "STATEFUL_SET",
    "Obj",
    "Resource",
    "object_key",
    "split_key",
]

CONFIG_MAP = Resource("", "v1", "ConfigMap", "configmaps")
SECRET = Resource("", "v1", "Secret", "secrets")
SERVICE = Resource("", "v1", "Service", "services")
POD = Resource("", "v1", "Pod", "pods")
NAMESPACE = Resource("", "v1", "Namespace", "namespaces", namespaced=False)
SERVICE_ACCOUNT = Resource("", "v1", "ServiceAccount", "serviceaccounts")
PVC = Resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims")
DEPLOYMENT = Resource("apps", "v1", "Deployment", "deployments")
STATEFUL_SET = Resource("apps", "v1", "StatefulSet", "statefulsets")
CRON_JOB = Resource("batch", "v1", "CronJob", "cronjobs")
JOB = Resource("batch", "v1", "Job", "jobs")
LEASE = Resource("coordination.k8s.io", "v1", "Lease", "leases")
EVENT = Resource("events.k8s.io", "v1", "Event", "events")
ENDPOINT_SLICE = Resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices")
PDB = Resource("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets")
