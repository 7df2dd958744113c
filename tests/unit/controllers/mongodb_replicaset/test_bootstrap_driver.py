"""The whole rendered bootstrap script, pass after pass, under node against a scripted
stand-in for mongod (``STAND_IN``: not mongod — it keeps a set's config and users and
refuses what mongod refuses: a second initiate, a reconfig whose version is not the next
or that changes more than one member, user commands without authentication once a user
exists). Proves the driver's wiring: which command each decision sends, credentials taken
from the environment and never printed, and that a converged set gets no more writes."""

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

SET = "shop-orders"
ENV = {"ROOT_PASSWORD": "r00t-secret-value", "APP_USERNAME": "app", "APP_PASSWORD": "app-secret"}
WRITES = {"replSetInitiate", "replSetReconfig", "createUser", "replSetStepDown"}

STAND_IN = r"""
const fs = require("fs");
const vm = require("vm");
const [scriptPath, worldPath, passes, self] = process.argv.slice(2);
const world = fs.existsSync(worldPath)
  ? JSON.parse(fs.readFileSync(worldPath, "utf8"))
  : { config: null, users: {} };
const log = [];
let sent = [];

function hostsOf(config) {
  return new Set(config.members.map((m) => m.host));
}

class DB {
  constructor(conn) { this.conn = conn; }
  auth(user, pwd) {
    const u = world.users[user];
    if (!u || u.pwd !== pwd) throw new Error("Authentication failed.");
    this.conn.authed = true;
    return { ok: 1 };
  }
  runCommand(cmd) {
    const name = Object.keys(cmd)[0];
    sent.push(name);
    const local = this.conn.local;
    if (name === "hello") {
      if (!local || !world.config) return { ok: 1, isreplicaset: true, isWritablePrimary: false };
      return { ok: 1, setName: world.config._id, isWritablePrimary: true, secondary: false };
    }
    const anyUser = Object.keys(world.users).length > 0;
    if (!this.conn.authed && (anyUser || name !== "createUser") && name !== "replSetInitiate") {
      return { ok: 0, errmsg: "command " + name + " requires authentication" };
    }
    if (name === "usersInfo") {
      return { ok: 1, users: Object.keys(world.users).map((user) => ({ user, db: "admin" })) };
    }
    if (name === "replSetInitiate") {
      if (world.config) return { ok: 0, errmsg: "already initialized" };
      world.config = { ...cmd.replSetInitiate, term: 1, settings: { chainingAllowed: true } };
      return { ok: 1 };
    }
    if (name === "replSetGetConfig") return { ok: 1, config: structuredClone(world.config) };
    if (name === "replSetReconfig") {
      const next = cmd.replSetReconfig;
      if (next.version !== world.config.version + 1) return { ok: 0, errmsg: "version" };
      const before = hostsOf(world.config);
      const after = hostsOf(next);
      const changed = [...before].filter((h) => !after.has(h)).length
        + [...after].filter((h) => !before.has(h)).length;
      if (changed > 1) return { ok: 0, errmsg: "only one voting member may change" };
      world.config = next;
      return { ok: 1 };
    }
    if (name === "createUser") {
      if (world.users[cmd.createUser]) return { ok: 0, errmsg: "user already exists" };
      world.users[cmd.createUser] = { pwd: cmd.pwd, roles: cmd.roles };
      return { ok: 1 };
    }
    return { ok: 0, errmsg: "unexpected " + name };
  }
}

class Mongo {
  constructor(uri) { this.local = uri.startsWith("mongodb://localhost:"); this.authed = false; }
  getDB() { return new DB(this); }
}

const script = fs.readFileSync(scriptPath, "utf8");
const perPass = [];
for (let i = 0; i < Number(passes); i++) {
  sent = [];
  const env = { ...JSON.parse(process.env.STAND_IN_ENV), MEMBER_HOST: self };
  vm.runInNewContext(script, { Mongo, require, process: { env }, print: (m) => log.push(m) });
  perPass.push(sent);
}
fs.writeFileSync(worldPath, JSON.stringify(world));
process.stdout.write(JSON.stringify({ world, log, perPass }));
"""


def host(i: int) -> str:
    return f"shop-orders-{i}.shop-orders-hl.ns.svc:27017"


class Member:
    """One member's sidecar, its mounted ConfigMap and the (shared) state of the set."""

    def __init__(self, tmp: Path, ordinal: int) -> None:
        self.tmp = tmp
        self.self = host(ordinal)
        self.script = tmp / boot.SCRIPT_KEY
        self.script.write_text(boot.script(27017, mount=str(tmp)))
        (tmp / "stand_in.js").write_text(STAND_IN)

    def want(self, n: int) -> None:
        members = [{"_id": i, "host": host(i)} for i in range(n)]
        (self.tmp / boot.CONFIG_KEY).write_text(json.dumps({"_id": SET, "members": members}))

    def passes(self, n: int) -> dict[str, Any]:
        assert NODE is not None
        args = [NODE, str(self.tmp / "stand_in.js"), str(self.script)]
        done = subprocess.run(
            [*args, str(self.tmp / "world.json"), str(n), self.self],
            capture_output=True,
            text=True,
            check=True,
            env={"STAND_IN_ENV": json.dumps(ENV)},
        )
        out: dict[str, Any] = json.loads(done.stdout)
        return out


def _hosts(world: dict[str, Any]) -> list[str]:
    return [m["host"] for m in world["config"]["members"]]


def _writes(sent: list[str]) -> list[str]:
    return [c for c in sent if c in WRITES]


def test_member_0_initiates_creates_both_users_adds_the_others_then_writes_nothing(
    tmp_path: Path,
) -> None:
    member = Member(tmp_path, 0)
    member.want(3)
    out = member.passes(7)
    world = out["world"]
    assert _hosts(world) == [host(0), host(1), host(2)]
    assert world["config"]["version"] == 3  # initiated at 1, one member added per reconfig
    assert world["users"] == {
        "root": {"pwd": ENV["ROOT_PASSWORD"], "roles": ["root"]},
        "app": {"pwd": ENV["APP_PASSWORD"], "roles": [{"role": "readWrite", "db": "app"}]},
    }
    writes = [_writes(sent) for sent in out["perPass"]]
    assert writes[:5] == [
        ["replSetInitiate"],
        ["createUser"],
        ["createUser"],
        ["replSetReconfig"],
        ["replSetReconfig"],
    ]
    assert writes[5:] == [[], []]  # converged: idempotent
    assert all(" failed" not in line for line in out["log"]), out["log"]
    printed = "\n".join(out["log"])
    assert ENV["ROOT_PASSWORD"] not in printed
    assert ENV["APP_PASSWORD"] not in printed


def test_the_set_follows_the_mounted_members_up_and_down_one_at_a_time(tmp_path: Path) -> None:
    member = Member(tmp_path, 0)
    member.want(3)
    member.passes(5)
    member.want(5)
    up = member.passes(3)
    assert _hosts(up["world"]) == [host(i) for i in range(5)]
    assert [_writes(s) for s in up["perPass"]] == [["replSetReconfig"], ["replSetReconfig"], []]
    member.want(3)
    down = member.passes(3)
    assert _hosts(down["world"]) == [host(i) for i in range(3)]
    assert down["world"]["config"]["settings"] == {"chainingAllowed": True}  # carried over
    assert [_writes(s) for s in down["perPass"]] == [["replSetReconfig"], ["replSetReconfig"], []]


def test_another_member_never_initiates_or_writes(tmp_path: Path) -> None:
    member = Member(tmp_path, 1)
    member.want(3)
    out = member.passes(2)
    assert out["world"]["config"] is None
    assert [_writes(s) for s in out["perPass"]] == [[], []]
    assert any("the primary adds this member" in line for line in out["log"])
