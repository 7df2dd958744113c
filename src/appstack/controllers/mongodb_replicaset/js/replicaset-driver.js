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
