"""``appstack status KIND/NAME`` without a cluster: kinds resolved by any of their names,
and the tree drawn from a collected view."""

from __future__ import annotations

from appstack.cli.status_kinds import VIEWS, render, resolve
from appstack.controllers.registry import ALL


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


def test_every_kind_but_appstack_has_a_view() -> None:
    assert set(VIEWS) == {c.kind.kind for c in ALL} - {"AppStack"}  # AppStack: status.py
    mdbc = resolve("mdbc")
    assert mdbc is not None
    assert mdbc.kind == "MongoDBCommunity"
