"""What every controller shares (as controller-runtime's ``controllerutil``): child metadata
and labels (:mod:`.meta`), conditions and validation messages (:mod:`.conditions`),
workload fields and rollout readiness (:mod:`.workloads`), RBAC rules (:mod:`.rbac`), the
start of every reconcile (:mod:`.reconciler`) and a controller's registration
(:mod:`.registration`). Pure helpers, except the reconciler base, which reads the cache and
writes through :class:`~appstack.controllers.children.ChildWriter`.
"""
