"""A MongoDBCommunity's bootstrap script: the replica set's shared decision
(:data:`~appstack.controllers.mongodb_replicaset.bootstrap.PLAN_JS`: initiate, users first, one
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

from typing_extensions import TypedDict

from appstack.api.mongodbcommunity import ADMIN_USER
from appstack.controllers.mongodb_replicaset import bootstrap as boot
from appstack.controllers.mongodb_replicaset.members import ReplicaSetConfig

ADMIN_PATH = "/admin"  # the generated Secret <name>-admin, key password
PODINFO_PATH = "/podinfo"  # downward API: the pod's name in the file "name"
USERS_PATH = "/users"  # /users/<index>/password: each user's Secret key


# Pure: which spec user to create or update, if any. Unit-tested under node.
USERS_JS = boot.script_file(__package__, "users.js")

# Shell I/O around plan() and planUsers(): the same text in mongo (legacy) and mongosh.
DRIVER_JS = boot.script_file(__package__, "driver.js")


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


class Role(TypedDict):
    role: str
    db: str


class UserConfig(TypedDict):
    """A user as the bootstrap creates it (roles as MongoDB spells them)."""

    name: str
    db: str
    roles: list[Role]


class BootstrapConfig(ReplicaSetConfig):
    """``replicaset.json`` of a MongoDBCommunity."""

    hostSuffix: str
    users: list[UserConfig]


def config(
    replica_set: ReplicaSetConfig, host_suffix: str, users: list[UserConfig]
) -> BootstrapConfig:
    """``replicaset.json``: the desired members (``_id``, ``members``), the suffix that makes
    a pod's name its member host, and the users (name, db, roles as MongoDB spells them),
    in spec order: user ``i``'s password is mounted at ``/users/<i>/password``."""
    return {**replica_set, "hostSuffix": host_suffix, "users": users}
