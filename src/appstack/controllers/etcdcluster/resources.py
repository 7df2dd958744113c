"""The PodDisruptionBudget resource, as the EtcdCluster controller names it (now shared:
:data:`appstack.runtime.resources.PDB`)."""

from __future__ import annotations

from appstack.runtime.resources import PDB

__all__ = ["PDB"]
