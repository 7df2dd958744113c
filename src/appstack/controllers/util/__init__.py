"""Small helpers appstack's controllers share: child metadata and labels (:mod:`.meta`),
workload fields and rollout readiness (:mod:`.workloads`), the namespace's Pod Security
level (:mod:`.podsecurity`). The framework the controllers stand on — the reconciler base, a
kind's registration, the child writer, conditions, pods — is :mod:`appstack.sdk.kit`; the
MongoDB replica set two controllers share is :mod:`appstack.controllers.mongodb_replicaset`.
"""
