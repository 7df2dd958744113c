"""What each middleware engine (mysql, postgres, redis, mongodb) needs: image, port, and how its
credentials are passed — one :class:`Engine` profile per ``type``.

Pure data used to build managed middleware (StatefulSet env, Secret keys) and to inject
connection details into the components that use it.
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
    ),
    "postgres": Engine(
        "postgres",
        "16",
        5432,
        "POSTGRES_USER",
        "POSTGRES_PASSWORD",
        "/var/lib/postgresql/data",
        "app",
    ),
    "redis": Engine("redis", "7.4", 6379, None, "REDIS_PASSWORD", "/data", None),
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
