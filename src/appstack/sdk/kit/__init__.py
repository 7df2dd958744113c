"""The controller kit: what every kind's controller stands on (controller-runtime's
``builder`` and ``controllerutil`` for our kinds).

* :mod:`.reconciler` — :class:`~.reconciler.KindReconciler`, the base of every kind's
  reconciler: read the object from the cache, validate its spec against the kind's model
  (``Ready=False`` with the field named, otherwise), the finalizer, then the kind's ``apply``;
* :mod:`.registration` — :class:`~.registration.Registration`, a kind's controller declared
  once (its reconciler, what it owns and watches, its RBAC) and wired into a manager, with
  what outside tools read of its objects (:mod:`.observers`: its ready condition, gauges,
  status view, dashboard panels) and its admission webhooks and policies
  (:mod:`.webhooks`, :mod:`.policies`);
* :mod:`.children` — :class:`~.children.ChildWriter`, every write of a child: server-side
  apply only when something differs, never taking over an object it does not control, one
  Event per change, status written only when it changed;
* :mod:`.compare` (is a child already as wanted; which refusals are the user's) and
  :mod:`.written` (read-your-writes), used by the child writer.

The kit stands on the runtime and the SDK's lower layers (kinds, RBAC, identity); it
imports nothing of an operator's kinds or controllers (import-linter contracts in
``pyproject.toml``).
"""
