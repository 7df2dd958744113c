"""The replica set bootstrap's decisions (``plan`` in mongodb_replicaset.bootstrap.PLAN_JS),
run under node exactly as rendered: initiation, idempotence, users, adding and removing
members one at a time, stepping down; and the whole rendered script parses."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from appstack.controllers.mongodb_replicaset import bootstrap as boot

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node runs the bootstrap's JavaScript")

SET = "shop-mongo"


def host(i: int) -> str:
    return f"shop-mongo-{i}.shop-mongo-hl.ns.svc:27017"


def desired(n: int) -> dict[str, Any]:
    return {"_id": SET, "members": [{"_id": i, "host": host(i)} for i in range(n)]}


def config(ids: list[int], version: int = 4) -> dict[str, Any]:
    """A config as replSetGetConfig returns it (with fields we must carry over)."""
    members = [{"_id": i, "host": host(i), "priority": 1, "votes": 1, "hidden": False} for i in ids]
    return {"_id": SET, "version": version, "term": 3, "members": members, "settings": {"x": 1}}


PRIMARY = {"setName": SET, "isWritablePrimary": True, "secondary": False}
USERS = ["root", "app"]


def state(n: int, **over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "self": host(0),
        "desired": desired(n),
        "hello": PRIMARY,
        "peersInitiated": False,
        "users": USERS,
        "wantUsers": USERS,
        "config": config(list(range(n))),
    }
    return {**base, **over}


def plans(states: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every state through ``plan`` in one node process."""
    assert NODE is not None
    program = boot.PLAN_JS + (
        "\nconst input = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "\nprocess.stdout.write(JSON.stringify(input.map(plan)));\n"
    )
    done = subprocess.run(
        [NODE, "-e", program], input=json.dumps(states), capture_output=True, text=True, check=True
    )
    out: list[dict[str, Any]] = json.loads(done.stdout)
    return out


def plan(s: dict[str, Any]) -> dict[str, Any]:
    return plans([s])[0]


UNINITIATED = {"isreplicaset": True, "isWritablePrimary": False, "secondary": False}


def test_member_0_initiates_the_set_with_itself_alone() -> None:
    got = plan(state(3, hello=UNINITIATED, users=[], config=None))
    assert got == {
        "action": "initiate",
        "config": {"_id": SET, "version": 1, "members": [{"_id": 0, "host": host(0)}]},
    }


def test_other_members_and_a_member_0_whose_peers_have_the_set_wait() -> None:
    other, lost_volume, down = plans(
        [
            state(3, self=host(1), hello=UNINITIATED, users=[], config=None),
            state(3, hello=UNINITIATED, peersInitiated=True, users=[], config=None),
            state(3, hello=None),
        ]
    )
    assert other["action"] == "wait"
    assert "the primary adds this member" in other["reason"]
    assert lost_volume["action"] == "wait"
    assert "peer already has the set" in lost_volume["reason"]
    assert down == {"action": "wait", "reason": "mongod does not answer yet"}


def test_users_are_created_root_first_then_the_application_user() -> None:
    none_yet, root_only = plans([state(3, users=[]), state(3, users=["root"])])
    assert none_yet == {"action": "createUser", "user": "root"}
    assert root_only == {"action": "createUser", "user": "app"}


def test_a_converged_set_needs_nothing_and_secondaries_never_act() -> None:
    converged, secondary, foreign = plans(
        [
            state(3),
            state(3, self=host(1), hello={"setName": SET, "secondary": True}, config=None),
            state(3, hello={**PRIMARY, "setName": "other"}),
        ]
    )
    assert converged == {"action": "none", "reason": "the set has the desired members"}
    assert secondary == {"action": "none", "reason": "not the primary"}
    assert foreign["action"] == "wait"
    assert "member of set other" in foreign["reason"]


def _steps(current: list[int], want: int) -> list[list[int]]:
    """Apply reconfig plans until none: the member ids after each step."""
    seen = []
    cfg = config(current)
    for _ in range(10):
        got = plan(state(want, config=cfg))
        if got["action"] == "none":
            return seen
        assert got["action"] == "reconfig"
        assert got["config"]["version"] == cfg["version"] + 1
        assert got["config"]["settings"] == {"x": 1}
        assert got["config"]["term"] == 3
        cfg = got["config"]
        seen.append([m["_id"] for m in cfg["members"]])
    raise AssertionError(f"no convergence: {seen}")


def test_scaling_up_adds_one_member_per_reconfig_in_ordinal_order() -> None:
    assert _steps([0], 3) == [[0, 1], [0, 1, 2]]
    assert _steps([0, 1, 2], 5) == [[0, 1, 2, 3], [0, 1, 2, 3, 4]]


def test_scaling_down_removes_one_member_per_reconfig_highest_first() -> None:
    assert _steps([0, 1, 2, 3, 4], 3) == [[0, 1, 2, 3], [0, 1, 2]]


def test_existing_members_keep_their_fields_and_new_ones_get_id_and_host_only() -> None:
    got = plan(state(2, config=config([0])))
    assert got["config"]["members"] == [
        {"_id": 0, "host": host(0), "priority": 1, "votes": 1, "hidden": False},
        {"_id": 1, "host": host(1)},
    ]


def test_a_member_not_in_the_desired_set_is_removed_before_any_is_added() -> None:
    cfg = config([0, 1])
    cfg["members"][1]["host"] = "stranger:27017"
    got = plan(state(3, config=cfg))
    assert [m["host"] for m in got["config"]["members"]] == [host(0)]


def test_a_primary_that_is_no_longer_wanted_steps_down() -> None:
    got = plan(state(3, self=host(4), config=config([0, 1, 2, 3, 4])))
    assert got == {"action": "stepDown", "reason": "this member is no longer wanted"}


def test_the_rendered_script_is_valid_javascript_with_its_paths_filled_in(
    tmp_path: Path,
) -> None:
    assert NODE is not None
    text = boot.script(27017)
    assert text.startswith(boot.PLAN_JS.lstrip())
    assert f'"{boot.MOUNT_PATH}/{boot.CONFIG_KEY}"' in text
    assert "mongodb://localhost:27017/?directConnection=true" in text
    assert "%(" not in text
    path = tmp_path / boot.SCRIPT_KEY
    path.write_text(text)
    subprocess.run([NODE, "--check", str(path)], check=True)


def test_the_sidecar_loops_over_the_script_and_the_probe_asks_the_member_itself() -> None:
    command = boot.loop_command()
    assert command[:2] == ["sh", "-c"]
    assert f"--file {boot.MOUNT_PATH}/{boot.SCRIPT_KEY}" in command[2]
    assert f"sleep {boot.PASS_SECONDS}" in command[2]
    assert command[2].startswith("trap 'exit 0' TERM; while true")
    probe = boot.readiness_probe()
    assert probe["exec"]["command"][:1] == ["mongosh"]
