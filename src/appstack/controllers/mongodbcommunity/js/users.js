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
