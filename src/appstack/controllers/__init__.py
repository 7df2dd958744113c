"""One controller per custom resource kind, all of the same shape, listed in
:data:`appstack.controllers.registry.ALL`.

Each ``controllers/<kind>/`` package has ``desired`` (spec → children, pure), ``status``
(observed children → status, pure), ``reconciler`` (a
:class:`~appstack.controllers.kit.reconciler.KindReconciler`) and an ``__init__`` that
exports its :class:`~appstack.controllers.kit.registration.Registration`. What they share
is in :mod:`appstack.controllers.util` and :mod:`appstack.controllers.kit.children` (the only
writer). Controllers use ``appstack.runtime`` and ``appstack.api``, never each other.
"""
