"""The controller runtime: client wrapper, informer cache, workqueue, reconcile loop,
manager, leader election, metrics, health and events.

It depends only on ``appstack.api``; the controllers are built on it.
"""
