"""A MongoDBCommunity's bootstrap script: the replica set's shared decision
(:data:`~appstack.controllers.util.mongodb_bootstrap.PLAN_JS`: initiate, users first, one
member per reconfig, step down) plus the spec's users, under a driver that runs in both the
legacy ``mongo`` shell (MongoDB before 5.0) and ``mongosh``. Pure text, rendered by
:func:`script`; the desired members and users are :func:`config` (``replicaset.json``).

Everything the driver reads is a file, so that it needs neither shell's environment API:
``replicaset.json`` and the script (the ConfigMap), the pod's name (a downward-API volume),
the bootstrap administrator's password (the generated ``<name>-admin`` Secret) and each
user's password (a volume of the user's own Secret, optional: a user whose Secret is
missing is skipped until the kubelet mounts it). Passwords are never printed.

Users: the administrator (``appstack-admin``, role root, created first through the
localhost exception) and the spec's users, created when missing; a spec user whose roles
differ, or whose password no longer authenticates, is updated (``updateUser``). Nothing
is written when everything is as wanted. Users removed from the spec are left in place.
"""

from __future__ import annotations

from typing import Any

from appstack.api.mongodbcommunity import ADMIN_USER
from appstack.controllers.util import mongodb_bootstrap as boot

ADMIN_PATH = "/admin"  # the generated Secret <name>-admin, key password
PODINFO_PATH = "/podinfo"  # downward API: the pod's name in the file "name"
USERS_PATH = "/users"  # /users/<index>/password: each user's Secret key

# Pure: which spec user to update, if any. Unit-tested under node.
USERS_JS = r"""
function roleKeys(roles) {
  return roles.map((r) => r.db + "." + r.role).sort();
}

function planUsers(s) {
  for (const u of s.specUsers) {
    const have = s.existing.find((e) => e.key === u.key);
    if (have === undefined || !s.passwords.includes(u.key)) continue;
    const a = roleKeys(have.roles);
    const b = roleKeys(u.roles);
    const same = a.length === b.length && a.every((k, i) => k === b[i]);
    if (!same) return { action: "updateUser", user: u.key, reason: "roles changed" };
    if (!s.passwordOk[u.key]) return { action: "updateUser", user: u.key, reason: "password" };
  }
  return null;
}
"""

# Shell I/O around plan() and planUsers(): the same text in mongo (legacy) and mongosh.
DRIVER_JS = r"""
const MONGOSH = typeof require === "function";
const ADMIN = "%(admin)s";
const ADMIN_KEY = "admin." + ADMIN;
const LOCAL = "localhost:%(port)d";

function log(message) {
  print(new Date().toISOString() + " " + message);
}

function readFile(path) {
  try {
    return String(MONGOSH ? require("fs").readFileSync(path, "utf8") : cat(path));
  } catch (e) {
    return null;
  }
}

function connect(host) {
  if (!MONGOSH) return new Mongo(host);
  return new Mongo("mongodb://" + host + "/?directConnection=true&serverSelectionTimeoutMS=2000");
}

function hello(host) {
  try {
    const r = connect(host).getDB("admin").runCommand({ isMaster: 1 });
    if (!r.ok) return null;
    const primary = Boolean(r.ismaster);
    return { setName: r.setName, isWritablePrimary: primary, secondary: Boolean(r.secondary) };
  } catch (e) {
    return null;
  }
}

function auth(db, user, pwd) {
  try {
    const ok = db.auth(user, pwd);
    return ok !== false && ok !== 0;
  } catch (e) {
    return false;
  }
}

function look(conn, desired, self, secrets) {
  const specUsers = desired.users.map((u) => Object.assign({ key: u.db + "." + u.name }, u));
  const passwords = specUsers.filter((u) => secrets[u.key] !== null).map((u) => u.key);
  const state = {
    self: self,
    desired: desired,
    hello: hello(LOCAL),
    peersInitiated: false,
    users: [],
    wantUsers: [ADMIN_KEY].concat(passwords),
    config: null,
    specUsers: specUsers,
    passwords: passwords,
    existing: [],
    passwordOk: {},
  };
  const h = state.hello;
  if (h && !h.setName && self === desired.members[0].host) {
    state.peersInitiated = desired.members.slice(1).some((m) => {
      const peer = hello(m.host);
      return peer !== null && Boolean(peer.setName);
    });
  }
  if (h && h.isWritablePrimary) {
    const admin = conn.getDB("admin");
    if (!auth(admin, ADMIN, secrets[ADMIN_KEY])) return state; // the localhost exception
    const info = admin.runCommand({ usersInfo: { forAllDBs: true } }).users || [];
    state.existing = info.map((u) => ({ key: u.db + "." + u.user, roles: u.roles }));
    state.users = state.existing.map((u) => u.key);
    state.config = admin.runCommand({ replSetGetConfig: 1 }).config;
    for (const u of specUsers) {
      if (passwords.includes(u.key) && state.users.includes(u.key)) {
        state.passwordOk[u.key] = auth(connect(LOCAL).getDB(u.db), u.name, secrets[u.key]);
      }
    }
  }
  return state;
}

function act(conn, state, secrets, step) {
  const admin = conn.getDB("admin");
  if (step.action === "initiate") return admin.runCommand({ replSetInitiate: step.config });
  if (step.action === "reconfig") return admin.runCommand({ replSetReconfig: step.config });
  if (step.action === "stepDown") return admin.runCommand({ replSetStepDown: 60 });
  if (step.user === ADMIN_KEY) {
    return admin.runCommand({ createUser: ADMIN, pwd: secrets[ADMIN_KEY], roles: ["root"] });
  }
  const u = state.specUsers.find((x) => x.key === step.user);
  const pwd = secrets[u.key];
  if (step.action === "createUser") {
    return conn.getDB(u.db).runCommand({ createUser: u.name, pwd: pwd, roles: u.roles });
  }
  return conn.getDB(u.db).runCommand({ updateUser: u.name, pwd: pwd, roles: u.roles });
}

function pass() {
  const desired = JSON.parse(readFile("%(mount)s/%(config)s"));
  const self = (readFile("%(podinfo)s/name") || "").trim() + desired.hostSuffix;
  const secrets = {};
  secrets[ADMIN_KEY] = readFile("%(admin_path)s/password");
  desired.users.forEach((u, i) => {
    secrets[u.db + "." + u.name] = readFile("%(users)s/" + i + "/password");
  });
  const conn = connect(LOCAL);
  const state = look(conn, desired, self, secrets);
  let step = plan(state);
  if (step.action === "none" && state.hello && state.hello.isWritablePrimary) {
    step = planUsers(state) || step;
  }
  if (step.action === "none") return;
  const what = [step.action, step.user, step.reason].filter(Boolean).join(" ");
  try {
    const result = act(conn, state, secrets, step);
    log(what + (result.ok ? " (ok)" : " failed: " + result.errmsg));
  } catch (e) {
    log(what + " failed: " + e.message);
  }
}

try {
  pass();
} catch (e) {
  log("mongod does not answer yet: " + e.message);
}
"""


def script(port: int, mount: str = boot.MOUNT_PATH, root: str = "") -> str:
    """The whole script; ``root`` prefixes every path it reads (tests run it elsewhere)."""
    values = {
        "admin": ADMIN_USER,
        "port": port,
        "mount": root + mount,
        "config": boot.CONFIG_KEY,
        "podinfo": root + PODINFO_PATH,
        "admin_path": root + ADMIN_PATH,
        "users": root + USERS_PATH,
    }
    return boot.PLAN_JS.lstrip() + USERS_JS + DRIVER_JS % values


def config(
    replica_set: dict[str, Any], host_suffix: str, users: list[dict[str, Any]]
) -> dict[str, Any]:
    """``replicaset.json``: the desired members (``_id``, ``members``), the suffix that makes
    a pod's name its member host, and the users (name, db, roles as MongoDB spells them),
    in spec order: user ``i``'s password is mounted at ``/users/<i>/password``."""
    return {**replica_set, "hostSuffix": host_suffix, "users": users}
