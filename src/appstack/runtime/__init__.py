"""The controller runtime: client, informer cache, workqueue, reconcile loop, manager,
leader election, metrics, health and events.

What a user needs to write a controller is importable from here (see ``__all__``)::

    from appstack.runtime import Builder, Client, Manager, Request, Result, Resource

    WIDGET = Resource("example.com", "v1", "Widget", "widgets")

    class WidgetReconciler:
        async def reconcile(self, request: Request) -> Result | None: ...

    async with await Client.connect() as client:
        manager = Manager(client)
        Builder(manager, "widget").for_(WIDGET).complete(WidgetReconciler())
        await manager.run()

It depends on no other part of appstack; the controllers are built on it.
"""

from appstack.runtime.builder import Builder
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.clock import Clock, FakeClock, RealClock
from appstack.runtime.controller import Controller, Reconciler, Request, Result
from appstack.runtime.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ServerError,
    ServerTimeout,
    TerminalError,
    TooManyRequests,
    TransportError,
    Unauthorized,
    WatchStalled,
)
from appstack.runtime.events import EventRecorder
from appstack.runtime.informer import EventHandler, FuncHandler, Informer
from appstack.runtime.leaderelection import LeaderElectionConfig, LeadershipLost, NotLeader
from appstack.runtime.manager import Manager
from appstack.runtime.metrics import Metrics
from appstack.runtime.resources import Resource, object_key, split_key

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Builder",
    "Cache",
    "Client",
    "Clock",
    "Conflict",
    "Controller",
    "EventHandler",
    "EventRecorder",
    "FakeClock",
    "Forbidden",
    "FuncHandler",
    "Gone",
    "Informer",
    "Invalid",
    "LeaderElectionConfig",
    "LeadershipLost",
    "Manager",
    "MethodNotAllowed",
    "Metrics",
    "NotFound",
    "NotLeader",
    "RealClock",
    "Reconciler",
    "Request",
    "Resource",
    "Result",
    "ServerError",
    "ServerTimeout",
    "TerminalError",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "WatchStalled",
    "object_key",
    "split_key",
]
