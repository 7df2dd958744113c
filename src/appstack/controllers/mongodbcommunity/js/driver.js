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
