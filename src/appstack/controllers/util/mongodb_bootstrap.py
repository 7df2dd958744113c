"""The MongoDB replica set's bootstrap: a script every member's ``rs-bootstrap`` sidecar runs
every :data:`PASS_SECONDS` (pure text; rendered by :func:`script` for the AppStack's managed
mongodb, shipped in the ConfigMap ``<stack>-<member>-replicaset`` by
``controllers/appstack/mongodb.py``; the ``MongoDBCommunity`` kind runs :data:`PLAN_JS` under
a driver of its own, ``controllers/mongodbcommunity/bootstrap.py``). The sidecar's loop and
the readiness probe run in the image's shell (:func:`shell_for`): ``mongosh`` from MongoDB
5.0, the legacy ``mongo`` shell before (whose images have no mongosh).

One pass looks at the local mongod (and, before initiation, at its peers), decides one
action with the pure JavaScript function ``plan`` (:data:`PLAN_JS`, unit-tested under
node) and carries it out:

* not initiated: member 0 initiates the set with itself alone — unless a peer already has
  a set (member 0 lost its volume: it waits to be added back); other members wait to be
  added by the primary;
* on the primary: the root user, then the application user, are created if missing (the
  first through the localhost exception); then the set's config moves one member at a time
  toward the desired members read from ``replicaset.json`` (an unwanted member removed,
  highest ``_id`` first, else the missing member with the lowest ``_id`` added) — MongoDB
  changes one voting member per reconfig; a primary that is no longer wanted steps down;
* otherwise nothing. When nothing differs a pass writes nothing, so passes are idempotent.

Scaling rewrites only ``replicaset.json`` (a ConfigMap volume: the kubelet refreshes it in
place), so the members are not restarted. Credentials come from secretKeyRef env, never
from the script, and are never printed.
"""

from __future__ import annotations

from typing import Any

PASS_SECONDS = 10
SCRIPT_KEY = "bootstrap.js"
CONFIG_KEY = "replicaset.json"
MOUNT_PATH = "/replicaset"
ROOT_USER = "root"
MONGOSH = "mongosh"
LEGACY = "mongo"  # the legacy shell: MongoDB before 5.0 ships only this one
MONGOSH_FROM = (5, 0)


def shell_for(version: str) -> str:
    """The shell an image of MongoDB ``version`` (``X.Y.Z``) has: mongosh from 5.0 on."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return MONGOSH if (major, minor) >= MONGOSH_FROM else LEGACY


# Pure: no I/O, no mongosh globals. Unit-tested by running it under node.
PLAN_JS = r"""
function nextMembers(current, desired) {
  const wanted = new Set(desired.map((m) => m.host));
  const extra = current.filter((m) => !wanted.has(m.host)).sort((a, b) => b._id - a._id);
  if (extra.length > 0) {
    return current.filter((m) => m.host !== extra[0].host);
  }
  const have = new Set(current.map((m) => m.host));
  const missing = desired.filter((m) => !have.has(m.host)).sort((a, b) => a._id - b._id);
  if (missing.length > 0) {
    return [...current, { _id: missing[0]._id, host: missing[0].host }];
  }
  return null;
}

function plan(s) {
  const h = s.hello;
  if (!h) return { action: "wait", reason: "mongod does not answer yet" };
  const first = s.desired.members[0];
  if (!h.setName) {
    if (s.self !== first.host) {
      return { action: "wait", reason: "not in the set yet: the primary adds this member" };
    }
    if (s.peersInitiated) {
      return { action: "wait", reason: "a peer already has the set: waiting to be added back" };
    }
    const members = [{ _id: first._id, host: first.host }];
    return { action: "initiate", config: { _id: s.desired._id, version: 1, members } };
  }
  if (h.setName !== s.desired._id) {
    return { action: "wait", reason: "member of set " + h.setName + ", not " + s.desired._id };
  }
  if (!h.isWritablePrimary) return { action: "none", reason: "not the primary" };
  const missingUser = s.wantUsers.find((u) => !s.users.includes(u));
  if (missingUser !== undefined) return { action: "createUser", user: missingUser };
  if (!s.desired.members.some((m) => m.host === s.self)) {
    return { action: "stepDown", reason: "this member is no longer wanted" };
  }
  const members = nextMembers(s.config.members, s.desired.members);
  if (members === null) return { action: "none", reason: "the set has the desired members" };
  return { action: "reconfig", config: { ...s.config, version: s.config.version + 1, members } };
}
"""

# mongosh I/O around plan(); process.env and require('fs') are mongosh's (node's) own.
DRIVER_JS = r"""
const fs = require("fs");
const env = process.env;
const CONFIG = "%(mount)s/%(config)s";
const ROOT = "%(root)s";
const PEER_OPTIONS = "directConnection=true&serverSelectionTimeoutMS=2000";

function log(message) {
  print(new Date().toISOString() + " " + message);
}

function hello(uri) {
  try {
    return new Mongo(uri).getDB("admin").runCommand({ hello: 1 });
  } catch (e) {
    return null;
  }
}

function look(admin, desired) {
  const state = {
    self: env.MEMBER_HOST,
    desired,
    hello: hello("mongodb://localhost:%(port)d/?directConnection=true"),
    peersInitiated: false,
    users: [],
    wantUsers: [ROOT, env.APP_USERNAME],
    config: null,
  };
  const h = state.hello;
  if (h && !h.setName && state.self === desired.members[0].host) {
    state.peersInitiated = desired.members.slice(1).some((m) => {
      const peer = hello("mongodb://" + m.host + "/?" + PEER_OPTIONS);
      return peer !== null && Boolean(peer.setName);
    });
  }
  if (h && h.isWritablePrimary) {
    try {
      admin.auth(ROOT, env.ROOT_PASSWORD);
    } catch (e) {
      return state; // no users yet: the localhost exception lets us create root
    }
    state.users = admin.runCommand({ usersInfo: 1 }).users.map((u) => u.user);
    state.config = admin.runCommand({ replSetGetConfig: 1 }).config;
  }
  return state;
}

function act(admin, step) {
  if (step.action === "initiate") return admin.runCommand({ replSetInitiate: step.config });
  if (step.action === "reconfig") return admin.runCommand({ replSetReconfig: step.config });
  if (step.action === "stepDown") return admin.runCommand({ replSetStepDown: 60 });
  if (step.action === "createUser") {
    const root = step.user === ROOT;
    return admin.runCommand({
      createUser: step.user,
      pwd: root ? env.ROOT_PASSWORD : env.APP_PASSWORD,
      roles: root ? ["root"] : [{ role: "readWrite", db: "app" }],
    });
  }
  return { ok: 1 };
}

const admin = new Mongo("mongodb://localhost:%(port)d/?directConnection=true").getDB("admin");
const step = plan(look(admin, JSON.parse(fs.readFileSync(CONFIG, "utf8"))));
if (step.action !== "none") {
  const what = [step.action, step.user, step.reason].filter(Boolean).join(" ");
  try {
    const result = act(admin, step);
    log(what + (result.ok ? " (ok)" : " failed: " + result.errmsg));
  } catch (e) {
    log(what + " failed: " + e.message);
  }
}
"""


def script(port: int, mount: str = MOUNT_PATH) -> str:
    """The whole bootstrap script: :data:`PLAN_JS` and its mongosh driver, reading the
    members from ``<mount>/replicaset.json``."""
    values = {"mount": mount, "config": CONFIG_KEY, "root": ROOT_USER, "port": port}
    return PLAN_JS.lstrip() + DRIVER_JS % values


def loop_command(shell: str = MONGOSH) -> list[str]:
    """The sidecar's command: one pass every :data:`PASS_SECONDS`, for ever; it exits at
    once on SIGTERM (a shell as PID 1 would otherwise ignore it until the grace period ends).
    The legacy shell takes the script as an argument (it has no ``--file``)."""
    path = f"{MOUNT_PATH}/{SCRIPT_KEY}"
    run = (
        f"mongosh --nodb --quiet --norc --file {path}"
        if shell == MONGOSH
        else f"mongo --nodb --quiet --norc {path}"
    )
    pause = f"sleep {PASS_SECONDS} & wait $!"
    return ["sh", "-c", f"trap 'exit 0' TERM; while true; do {run}; {pause}; done"]


READINESS = "const h = db.hello(); if (!(h.isWritablePrimary || h.secondary)) { quit(1); }"
# The legacy shell before 4.2.10/4.4.2 has no hello: isMaster (still answered by every version).
LEGACY_READINESS = "var h = db.isMaster(); if (!(h.ismaster || h.secondary)) { quit(1); }"


def readiness_probe(shell: str = MONGOSH) -> dict[str, Any]:
    """A member is ready when it is the primary or a secondary of the set."""
    check = READINESS if shell == MONGOSH else LEGACY_READINESS
    return {
        "exec": {"command": [shell, "--quiet", "--norc", "--eval", check]},
        "periodSeconds": 10,
        "timeoutSeconds": 10,
        "failureThreshold": 3,
    }
