"""The PodDisruptionBudget resource, as the EtcdCluster controller names it (now shared:
:data:`appstack.runtime.resources.PDB`)."""

from __future__ import annotations

from appstack.runtime import PDB

__all__ = ["PDB"]
