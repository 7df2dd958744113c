"""A MongoDBCommunity's whole bootstrap script, pass after pass, under node against a scripted
stand-in for mongod — in both shells' clothes: ``mongosh`` (``require`` for files, ``auth``
throws on failure) and the legacy ``mongo`` shell of MongoDB before 5.0 (no ``require``:
``cat`` reads files; ``auth`` returns 0 on failure; ``isMaster`` only — no ``hello``). The
stand-in keeps the set's config and users (per database, with roles and password) and
refuses what mongod refuses (user commands without authentication once a user exists, a
second initiate, a user created twice). Proves: the administrator first, then the spec's
users with their roles, a changed password or roles updated, a user whose Secret is not
mounted skipped until it is, passwords never printed, and nothing written once converged."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from appstack.controllers.mongodb_replicaset import bootstrap as boot
from appstack.controllers.mongodbcommunity import bootstrap

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node runs the bootstrap's JavaScript")

SET = "example-mongodb"
WRITES = {"replSetInitiate", "replSetReconfig", "createUser", "updateUser", "replSetStepDown"}
ROLES = [{"role": "clusterAdmin", "db": "admin"}, {"role": "userAdminAnyDatabase", "db": "admin"}]

STAND_IN = r"""
const fs = require("fs");
const vm = require("vm");
const [scriptPath, worldPath, passes, shell] = process.argv.slice(2);
const legacy = shell === "mongo";
const world = fs.existsSync(worldPath)
  ? JSON.parse(fs.readFileSync(worldPath, "utf8"))
  : { config: null, users: {} };
const log = [];
let sent = [];

class DB {
  constructor(conn, name) { this.conn = conn; this.name = name; }
  auth(user, pwd) {
    const u = world.users[this.name + "." + user];
    if (!u || u.pwd !== pwd) {
      if (legacy) { log.push("Error: Authentication failed."); return 0; }
      throw new Error("Authentication failed.");
    }
    this.conn.authed = true;
    return legacy ? 1 : { ok: 1 };
  }
  runCommand(cmd) {
    const name = Object.keys(cmd)[0];
    sent.push(name);
    if (name === "hello") return { ok: 0, errmsg: "no such command: 'hello'" };
    if (name === "isMaster") {
      if (!world.config) return { ok: 1, ismaster: false, secondary: false, isreplicaset: true };
      return { ok: 1, setName: world.config._id, ismaster: true, secondary: false };
    }
    const anyUser = Object.keys(world.users).length > 0;
    if (!this.conn.authed && (anyUser || name !== "createUser") && name !== "replSetInitiate") {
      return { ok: 0, errmsg: "command " + name + " requires authentication" };
    }
    if (name === "usersInfo") {
      if (!cmd.usersInfo.forAllDBs) return { ok: 0, errmsg: "expected forAllDBs" };
      return { ok: 1, users: Object.entries(world.users).map(([key, u]) => ({
        user: key.slice(key.indexOf(".") + 1), db: key.slice(0, key.indexOf(".")),
        roles: u.roles.map((r) => (typeof r === "string" ? { role: r, db: "admin" } : r)),
      })) };
    }
    if (name === "replSetInitiate") {
      if (world.config) return { ok: 0, errmsg: "already initialized" };
      world.config = { ...cmd.replSetInitiate, term: 1 };
      return { ok: 1 };
    }
    if (name === "replSetGetConfig") return { ok: 1, config: structuredClone(world.config) };
    if (name === "replSetReconfig") { world.config = cmd.replSetReconfig; return { ok: 1 }; }
    const key = this.name + "." + cmd[name];
    if (name === "createUser") {
      if (world.users[key]) return { ok: 0, errmsg: "user already exists" };
      world.users[key] = { pwd: cmd.pwd, roles: cmd.roles };
      return { ok: 1 };
    }
    if (name === "updateUser") {
      if (!world.users[key]) return { ok: 0, errmsg: "no such user" };
      world.users[key] = { pwd: cmd.pwd, roles: cmd.roles };
      return { ok: 1 };
    }
    return { ok: 0, errmsg: "unexpected " + name };
  }
}

class Mongo {
  constructor(host) {
    const uri = host.startsWith("mongodb://");
    if (legacy === uri) throw new Error("the " + shell + " shell got the host " + host);
    this.local = host.replace("mongodb://", "").startsWith("localhost:");
    this.authed = false;
  }
  getDB(name) { return new DB(this, name); }
}

const script = fs.readFileSync(scriptPath, "utf8");
const perPass = [];
for (let i = 0; i < Number(passes); i++) {
  sent = [];
  const context = { Mongo, print: (m) => log.push(m) };
  if (legacy) {
    context.cat = (path) => fs.readFileSync(path, "utf8");  // throws when missing, as mongo's
  } else {
    context.require = require;
  }
  vm.runInNewContext(script, context);
  perPass.push(sent);
}
fs.writeFileSync(worldPath, JSON.stringify(world));
process.stdout.write(JSON.stringify({ world, log, perPass }));
"""


def host(i: int) -> str:
    return f"{SET}-{i}.{SET}-svc.ns.svc:27017"


class Member:
    """Member ``ordinal``'s sidecar: its mounted files and the (shared) state of the set."""

    def __init__(self, tmp: Path, ordinal: int, shell: str) -> None:
        self.tmp = tmp
        self.shell = shell
        self.script = tmp / "script.js"
        self.script.write_text(bootstrap.script(27017, root=str(tmp)))
        (tmp / "stand_in.js").write_text(STAND_IN)
        self.write(f"{bootstrap.PODINFO_PATH}/name", f"{SET}-{ordinal}")
        self.write(f"{bootstrap.ADMIN_PATH}/password", "admin-secret-value")

    def write(self, path: str, text: str) -> None:
        target = self.tmp / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def want(self, n: int, users: list[dict[str, Any]]) -> None:
        members = [{"_id": i, "host": host(i)} for i in range(n)]
        document = bootstrap.config(
            {"_id": SET, "members": members}, f".{SET}-svc.ns.svc:27017", users
        )
        self.write(f"{boot.MOUNT_PATH}/{boot.CONFIG_KEY}", json.dumps(document))

    def passes(self, n: int) -> dict[str, Any]:
        assert NODE is not None
        args = [NODE, str(self.tmp / "stand_in.js"), str(self.script)]
        done = subprocess.run(
            [*args, str(self.tmp / "world.json"), str(n), self.shell],
            capture_output=True,
            text=True,
            check=True,
        )
        out: dict[str, Any] = json.loads(done.stdout)
        return out


def _writes(out: dict[str, Any]) -> list[list[str]]:
    return [[c for c in sent if c in WRITES] for sent in out["perPass"]]


USER = {"name": "my-user", "db": "admin", "roles": ROLES}


@pytest.mark.parametrize("shell", [boot.LEGACY, boot.MONGOSH])
def test_initiate_admin_then_the_users_then_members_then_nothing(
    tmp_path: Path, shell: str
) -> None:
    member = Member(tmp_path, 0, shell)
    member.write(f"{bootstrap.USERS_PATH}/0/password", "my-user-secret")
    member.want(
        3, [USER, {"name": "reports", "db": "shop", "roles": [{"role": "read", "db": "shop"}]}]
    )
    member.write(f"{bootstrap.USERS_PATH}/1/password", "reports-secret")
    out = member.passes(8)
    world = out["world"]
    assert [m["host"] for m in world["config"]["members"]] == [host(i) for i in range(3)]
    assert world["users"] == {
        "admin.appstack-admin": {"pwd": "admin-secret-value", "roles": ["root"]},
        "admin.my-user": {"pwd": "my-user-secret", "roles": ROLES},
        "shop.reports": {"pwd": "reports-secret", "roles": [{"role": "read", "db": "shop"}]},
    }
    assert _writes(out)[:6] == [
        ["replSetInitiate"],
        ["createUser"],
        ["createUser"],
        ["createUser"],
        ["replSetReconfig"],
        ["replSetReconfig"],
    ]
    assert _writes(out)[6:] == [[], []]  # converged: idempotent
    printed = "\n".join(out["log"])
    assert " failed:" not in printed, printed  # (the legacy shell prints a failed auth itself)
    for secret in ("admin-secret-value", "my-user-secret", "reports-secret"):
        assert secret not in printed


@pytest.mark.parametrize("shell", [boot.LEGACY, boot.MONGOSH])
def test_a_changed_password_or_roles_is_updated_once(tmp_path: Path, shell: str) -> None:
    member = Member(tmp_path, 0, shell)
    member.write(f"{bootstrap.USERS_PATH}/0/password", "first")
    member.want(1, [USER])
    member.passes(4)
    member.write(f"{bootstrap.USERS_PATH}/0/password", "second")  # the Secret changed
    out = member.passes(2)
    assert _writes(out) == [["updateUser"], []]
    assert out["world"]["users"]["admin.my-user"]["pwd"] == "second"
    member.want(1, [{**USER, "roles": [{"role": "readWrite", "db": "shop"}]}])
    out = member.passes(2)
    assert _writes(out) == [["updateUser"], []]
    assert out["world"]["users"]["admin.my-user"]["roles"] == [{"role": "readWrite", "db": "shop"}]
    assert any("updateUser admin.my-user roles changed (ok)" in line for line in out["log"])


@pytest.mark.parametrize("shell", [boot.LEGACY, boot.MONGOSH])
def test_a_user_whose_secret_is_not_mounted_waits_for_it(tmp_path: Path, shell: str) -> None:
    member = Member(tmp_path, 0, shell)
    member.want(1, [USER])  # no /users/0/password: the optional Secret volume is empty
    out = member.passes(3)
    assert list(out["world"]["users"]) == ["admin.appstack-admin"]
    assert _writes(out) == [["replSetInitiate"], ["createUser"], []]
    member.write(f"{bootstrap.USERS_PATH}/0/password", "arrived")
    out = member.passes(2)
    assert _writes(out) == [["createUser"], []]
    assert out["world"]["users"]["admin.my-user"]["pwd"] == "arrived"


def test_another_member_never_initiates_or_writes(tmp_path: Path) -> None:
    member = Member(tmp_path, 1, boot.LEGACY)
    member.want(3, [USER])
    out = member.passes(2)
    assert out["world"]["config"] is None
    assert _writes(out) == [[], []]


# What MongoDB 4.2's legacy shell (SpiderMonkey 60, ES2018) lacks, and mongosh-only globals.
NEWER_THAN_ES2018 = ("?.", "??", ".flat(", ".flatMap(", "fromEntries", "replaceAll", "matchAll")
MONGOSH_ONLY = ("process.env", "structuredClone", "db.hello")


def test_the_script_keeps_to_what_the_legacy_shell_has() -> None:
    script = bootstrap.script(27017)
    for feature in (*NEWER_THAN_ES2018, *MONGOSH_ONLY):
        assert feature not in script, feature
    assert script.count('require("fs")') == 1  # behind the MONGOSH check only
    assert 'MONGOSH ? require("fs")' in script
