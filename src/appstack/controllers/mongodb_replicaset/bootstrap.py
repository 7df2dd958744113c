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

from importlib import resources

from appstack.sdk import ProbeDict

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


def script_file(package: str, name: str) -> str:
    """A script of ``package``'s ``js/`` folder (package data: linted by ``node --check`` in
    tests/unit/controllers/mongodb_replicaset/test_javascript.py, run under node by the
    bootstrap tests)."""
    return resources.files(package).joinpath("js").joinpath(name).read_text(encoding="utf-8")


# the pure decision of one pass (no I/O, no shell globals; unit-tested under node)
PLAN_JS = script_file(__package__, "plan.js")

# The AppStack's managed mongodb: plan() and its I/O, one pass in mongosh or the legacy shell.
DRIVER_JS = script_file(__package__, "replicaset-driver.js")


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


def readiness_probe(shell: str = MONGOSH) -> ProbeDict:
    """A member is ready when it is the primary or a secondary of the set."""
    check = READINESS if shell == MONGOSH else LEGACY_READINESS
    return {
        "exec": {"command": [shell, "--quiet", "--norc", "--eval", check]},
        "periodSeconds": 10,
        "timeoutSeconds": 10,
        "failureThreshold": 3,
    }
