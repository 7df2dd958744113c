"""One controller per custom resource kind, all of the same shape, listed in
:data:`appstack.controllers.registry.ALL`.

Each ``controllers/<kind>/`` package has ``desired`` (spec → children, pure), ``status``
(observed children → status, pure), ``reconciler`` (a
:class:`~appstack.sdk.kit.reconciler.KindReconciler`) and an ``__init__`` that
exports its :class:`~appstack.sdk.kit.registration.Registration`. What they share
is in :mod:`appstack.controllers.util` and :mod:`appstack.sdk.kit.children` (the only
writer). Controllers use ``appstack.runtime`` and ``appstack.api``, never each other.
"""
