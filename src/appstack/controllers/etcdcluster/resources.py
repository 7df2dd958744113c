"""The API resources only the EtcdCluster controller uses (the PodDisruptionBudget)."""

from __future__ import annotations

from appstack.core.resource import Resource

PDB = Resource("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets")
