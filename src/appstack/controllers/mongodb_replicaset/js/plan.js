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
