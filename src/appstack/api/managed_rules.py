"""What each engine of managed middleware supports — how many instances (``managed.replicas``),
init scripts — written once in CEL, for admission and the models (client-side,
:mod:`appstack.sdk.cel`) (pure). Used by :mod:`appstack.api.appstack_middleware`.

Only ``mongodb`` forms a cluster in our catalog (a replica set of up to :data:`MAX_MEMBERS`
voting members). mysql, postgres and redis run one instance: their images do not form a
cluster by themselves (replication needs an operator of its own, or Sentinel), so more than
one replica would be independent databases behind one Service — refused, with the field named.
A replica set shrinks by at most a minority of its members in one change, so that the
members that stay still elect a primary and can remove the others from the set's config.
mongodb runs no init scripts (its members start through the replica set's bootstrap, not the
image's entrypoint): ``initScriptsConfigMap`` is refused for it. ``configFiles`` (the
engine's own server configuration, seed 003's ``mysql-dataservice`` ConfigMap) is read by
mysql only, from ``/etc/mysql/conf.d``, where mysqld includes files named ``*.cnf``: any
other engine or file name is refused.
"""

from __future__ import annotations

from typing import Any

MAX_MEMBERS = 7  # MongoDB allows at most 7 voting members; every member here votes
CLUSTERED = ("mongodb",)

REPLICAS = (
    "Instances. mongodb: members of one replica set (1 to 7; an odd number is best). "
    "mysql, postgres and redis: 1 (this catalog does not cluster them)."
)
ONE_INSTANCE = (
    "managed.replicas: only mongodb forms a cluster in this catalog (a replica set); "
    "mysql, postgres and redis run one instance: set replicas to 1"
)
SHRINK = (
    "managed.replicas: a replica set keeps more than half of its members in one change "
    "(new * 2 > old), so that they still elect a primary: scale down in steps"
)
NO_INIT_SCRIPTS = (
    "managed.initScriptsConfigMap: not supported for mongodb (the replica set's bootstrap "
    "creates the users; create collections and indexes from the application)"
)

CONFIG_FILES = (
    "The engine's own configuration files, by file name (mysql only: mounted in "
    "/etc/mysql/conf.d, each named *.cnf). A change restarts the instance."
)
NO_CONFIG_FILES = (
    "managed.configFiles: mysql only (files in /etc/mysql/conf.d, each named *.cnf; mysqld "
    "reads no others)"
)

_CLUSTERED_CEL = " || ".join(f"self.type == '{t}'" for t in CLUSTERED)
MANAGED_RULES: list[dict[str, Any]] = [
    {
        "rule": f"!has(self.managed) || self.managed.replicas <= 1 || {_CLUSTERED_CEL}",
        "message": ONE_INSTANCE,
        "fieldPath": ".managed.replicas",
    },
    {
        "rule": "!has(self.managed) || !has(self.managed.initScriptsConfigMap) || "
        "self.type != 'mongodb'",
        "message": NO_INIT_SCRIPTS,
        "fieldPath": ".managed.initScriptsConfigMap",
    },
    {
        "rule": "!has(self.managed) || !has(self.managed.configFiles) || "
        "(self.type == 'mysql' && self.managed.configFiles.all(f, f.endsWith('.cnf')))",
        "message": NO_CONFIG_FILES,
        "fieldPath": ".managed.configFiles",
    },
    {  # a transition rule: the middleware list is keyed by name
        "rule": "!has(self.managed) || !has(oldSelf.managed) || "
        "self.managed.replicas * 2 > oldSelf.managed.replicas",
        "message": SHRINK,
        "fieldPath": ".managed.replicas",
    },
]
