"""What each middleware engine (mysql, postgres, redis, mongodb) needs: image, port, and how its
credentials are passed — one :class:`Engine` profile per ``type``.

Pure data used to build managed middleware (StatefulSet env, arguments, readiness probe,
Secret keys) and to inject connection details into the components that use it.

Readiness is the database's own answer: the engine's client, in the pod, logs in as the
application user with the password the pod was started with and runs a query — a server
that is up but refuses that login is not ready (a TCP connect would say it is). PostgreSQL
is asked over the pod's own address, not the loopback one its image trusts without a
password. The password reaches the client through its environment, never a command line.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Engine:
    """How to run one middleware engine and hand out its credentials."""

    image: str
    default_version: str
    port: int
    user_env: str | None  # the image's variable for the application user
    password_env: str  # ... and its password (from the generated Secret)
    data_path: str  # where the volume is mounted
    default_user: str | None
    uid: int = 999  # the image's own non-root user (mysql, postgres and redis: 999)
    config_dir: str | None = None  # where it reads managed.configFiles (None: it does not)
    ready: str | None = None  # the readiness check, a sh script (None: a TCP connect)
    args: tuple[str, ...] = ()  # the container's arguments (the image's command when empty)


# The clients' scripts: the variables are the pod's own (:func:`.middleware._middleware_env`).
MYSQL_READY = (
    'MYSQL_PWD="$MYSQL_PASSWORD" exec mysql --protocol=TCP --host=127.0.0.1 --port=3306 '
    '--user="$MYSQL_USER" --connect-timeout=3 --execute="SELECT 1" "$MYSQL_DATABASE"'
)
POSTGRES_READY = (
    'PGPASSWORD="$POSTGRES_PASSWORD" PGCONNECT_TIMEOUT=3 exec psql --no-password --no-psqlrc '
    '--quiet --tuples-only --host="$POD_IP" --port=5432 --username="$POSTGRES_USER" '
    '--dbname="$POSTGRES_DB" --command="SELECT 1"'
)
REDIS_READY = 'test "$(REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli -h 127.0.0.1 -p 6379 ping)" = PONG'
# The official redis image reads no password variable: the password is an option, expanded
# by the kubelet from the Secret's variable (the pod spec holds only its name); writes go
# to an append-only file on the volume, so that a crash loses at most a second of them.
REDIS_ARGS = ("redis-server", "--requirepass", "$(REDIS_PASSWORD)", "--appendonly", "yes")


CATALOG: dict[str, Engine] = {
    "mysql": Engine(
        "mysql",
        "8.4",
        3306,
        "MYSQL_USER",
        "MYSQL_PASSWORD",
        "/var/lib/mysql",
        "app",
        config_dir="/etc/mysql/conf.d",  # mysqld includes *.cnf from here
        ready=MYSQL_READY,
    ),
    "postgres": Engine(
        "postgres",
        "16",
        5432,
        "POSTGRES_USER",
        "POSTGRES_PASSWORD",
        "/var/lib/postgresql/data",
        "app",
        ready=POSTGRES_READY,
    ),
    "redis": Engine(
        "redis",
        "7.4",
        6379,
        None,
        "REDIS_PASSWORD",
        "/data",
        None,
        ready=REDIS_READY,
        args=REDIS_ARGS,
    ),
    # A replica set (mongodb.py): the bootstrap sidecar's variables create the app user.
    "mongodb": Engine("mongo", "8.0", 27017, "APP_USERNAME", "APP_PASSWORD", "/data/db", "app"),
}


def image(engine: str, image_override: str | None, version: str | None) -> str:
    entry = CATALOG[engine]
    if image_override:
        return (
            image_override
            if ":" in image_override.rsplit("/", 1)[-1] or not version
            else f"{image_override}:{version}"
        )
    return f"{entry.image}:{version or entry.default_version}"
