"""``appstack status KIND/NAME`` without a cluster: kinds resolved by any of their names,
every kind's view declared with its controller, and the tree drawn from a collected view."""

from __future__ import annotations

import asyncio
from typing import Any

from appstack.cli.status_kinds import DEFAULT_KIND, render, resolve
from appstack.controllers.registry import ALL
from appstack.controllers.util.statusview import basic_view


def test_kinds_are_found_by_kind_plural_singular_or_short_name() -> None:
    for name in ("EtcdCluster", "etcdclusters", "etcdcluster", "etcd", "ETCD"):
        resource = resolve(name)
        assert resource is not None
        assert resource.kind == "EtcdCluster"
    ct = resolve("ct")
    assert ct is not None
    assert ct.kind == "CronTab"
    assert resolve("deployment") is None


def test_an_etcd_view_shows_members_leader_and_backup() -> None:
    tree = {
        "kind": "EtcdCluster",
        "name": "e",
        "ready": "True",
        "reason": "Quorum",
        "message": "3 of 3 voting members healthy",
        "count": "3/3",
        "leader": "e-1",
        "lastBackup": "e-4.db",
        "items": [
            {"name": "Member/e-0", "ready": "3.6.16", "status": "follower, healthy"},
            {"name": "Member/e-1", "ready": "3.6.16", "status": "leader, healthy"},
        ],
    }
    lines = render(tree).splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS"]
    assert lines[1].startswith("EtcdCluster/e")
    assert "Quorum: 3 of 3 voting members healthy; leader e-1; lastBackup e-4.db" in lines[1]
    assert lines[2].startswith("├─ Member/e-0")
    assert lines[3].startswith("└─ Member/e-1")
    assert lines[3].endswith("leader, healthy")
    recovered = {**tree, "recovery": "Recovered from e-0.db (24s of writes lost)"}
    assert (
        render(recovered)
        .splitlines()[1]
        .endswith("lastBackup e-4.db; recovery Recovered from e-0.db (24s of writes lost)")
    )


def test_each_shipped_kind_declares_its_view_and_appstack_is_the_default() -> None:
    shipped = {"AppService", "AppStack", "CronTab", "EtcdCluster", "MongoDBCommunity"}
    assert {c.kind.kind for c in ALL if c.status_view is not None} >= shipped
    default = resolve(DEFAULT_KIND)
    assert default is not None
    assert default.kind == "AppStack"
    mdbc = resolve("mdbc")
    assert mdbc is not None
    assert mdbc.kind == "MongoDBCommunity"


def test_an_appstack_is_drawn_as_a_tree_of_members_and_their_objects() -> None:
    tree = {
        "kind": "AppStack",
        "name": "shop",
        "ready": "False",
        "reason": "MembersNotReady",
        "message": "1 of 2 members ready",
        "readyMembers": "1/2",
        "members": [
            {
                "name": "db",
                "kind": "Middleware/postgres",
                "ready": "1/1",
                "state": "Ready",
                "message": "ready",
                "objects": [{"kind": "StatefulSet", "name": "shop-db", "ready": "1/1"}],
            },
            {
                "name": "api",
                "kind": "Component",
                "ready": "0/1",
                "state": "Progressing",
                "message": "rolling out",
                "objects": [
                    {"kind": "Deployment", "name": "shop-api", "ready": "0/1"},
                    {"kind": "Service", "name": "shop-api", "ready": None},
                ],
            },
        ],
    }
    assert render(tree).splitlines() == [
        "NAME                          READY   STATUS",
        "AppStack/shop                 1/2     MembersNotReady: 1 of 2 members ready",
        "├─ db (Middleware/postgres)   1/1     Ready",
        "│  └─ StatefulSet/shop-db     1/1",
        "└─ api (Component)            0/1     Progressing (rolling out)",
        "   ├─ Deployment/shop-api     0/1",
        "   └─ Service/shop-api",
    ]


def test_a_kind_without_a_view_shows_its_ready_condition() -> None:
    up = {"type": "Available", "status": "True", "reason": "Quorum", "message": "3 of 3"}
    obj: dict[str, Any] = {
        "kind": "Thing",
        "metadata": {"name": "t", "namespace": "ns"},
        "status": {"conditions": [up]},
    }
    view = basic_view("Available")
    tree = asyncio.run(view.collect(None, obj))  # type: ignore[arg-type]  # reads nothing
    assert view.render(tree).splitlines() == [
        "NAME      READY   STATUS",
        "Thing/t   -       Quorum: 3 of 3",
    ]


def test_an_etcd_clusters_alarms_defragmentation_and_database_sizes_are_shown() -> None:
    from appstack.controllers.etcdcluster.view import VIEW  # noqa: PLC0415

    obj = {
        "kind": "EtcdCluster",
        "metadata": {"name": "e", "namespace": "ns", "generation": 1},
        "spec": {"replicas": 3},
        "status": {
            "readyMembers": 3,
            "leader": "e-0",
            "alarms": ["NOSPACE"],
            "defragmentation": {"lastTime": "2026-11-27T03:00:05Z", "reclaimedBytes": 3 << 20},
            "members": [{"name": "e-0", "isLeader": True, "healthy": True, "dbSize": 5 << 20}],
            "conditions": [{"type": "Available", "status": "True", "reason": "Quorum"}],
        },
    }
    text = VIEW.render(asyncio.run(VIEW.collect(None, obj)))  # type: ignore[arg-type]
    assert "alarms NOSPACE; defragmented 2026-11-27T03:00:05Z (3.0 MiB reclaimed)" in text
    assert "leader, healthy, db 5.0 MiB" in text
