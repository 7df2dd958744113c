"""Small helpers every controller shares: child metadata and labels (:mod:`.meta`),
conditions and validation messages (:mod:`.conditions`), workload fields and rollout
readiness (:mod:`.workloads`), RBAC rules (:mod:`.rbac`), pods, quantities, the namespace's
Pod Security level. The framework the controllers stand on — the reconciler base, a kind's
registration, the child writer — is :mod:`appstack.sdk.kit`, which uses these;
they never use it.
"""
