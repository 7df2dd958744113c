"""The images the local registry serves, and what each really contains (pure).

No public registry is reachable here, so every image the README, the examples and the tests
name is built locally, daemonless, from Debian packages (mmdebstrap: nothing is installed
on the host) or from binaries built here, and pushed under the names those files use. Each
:class:`LocalImage` says what it is made of; docs/design.md ("Images") lists them:

* ``registry.k8s.io/pause`` — the pod sandbox: :file:`pause.c`, built statically with gcc;
* ``busybox`` — Debian's busybox-static, its applets as links, ``sh`` by default, root;
* ``nginx`` (every tag the examples use, ``1.7.9`` included) — Debian 12's nginx 1.22, run
  as root like the original (workers as www-data), the official image's layout
  (``/etc/nginx/conf.d/default.conf``, ``/usr/share/nginx/html``, logs to stdout/stderr);
* ``mysql`` — Debian 12's MariaDB 10.11 behind :file:`mysql-entrypoint.sh`, the official
  image's contract (``MYSQL_*`` variables, ``/docker-entrypoint-initdb.d``,
  ``/etc/mysql/conf.d``), user ``mysql`` = uid 999 like the original;
* ``postgres`` — Debian 12's PostgreSQL 15 behind :file:`postgres-entrypoint.sh`, the
  official image's contract (``POSTGRES_USER``/``_PASSWORD``/``_DB``, ``PGDATA``,
  ``/docker-entrypoint-initdb.d``, password auth from the pod network, stopped with
  SIGINT), user ``postgres`` = uid 999 like the original;
* ``redis`` — Debian 12's Redis 7.0 behind :file:`redis-entrypoint.sh`, the official
  image's contract (options or a ``.conf`` as arguments, ``/data``, protected mode off),
  user ``redis`` = uid 999 like the original;
* the application images (``registry.example.com/...``) — Debian's python3 with pymysql,
  psycopg2 and redis-py, and :file:`stackapp.py`, a small service that uses the connection
  settings it is given;
* ``etcd`` (``gcr.io/etcd-development/etcd:v<version>``) — etcd, etcdctl and etcdutl of that
  version built from Go modules, nothing else (like the distroless original).
* ``versitygw`` (``versity/versitygw:v1.8.0``, ``:latest``) — Versity S3 Gateway, an
  S3-compatible object store (:mod:`appstack_testbed.versitygw`), built from Go modules, run
  as uid 65532 with nothing else but ``/tmp``: for the etcd backup tests
  (:mod:`appstack_testbed.objectstore`), built and pushed on demand only.

Each is served under the tags appstack defaults to and the documents name (``postgres:16``,
``redis:7.4``, ``mysql:8.4``) although it is another version: docs/local-cluster.md says
which. The operator's own image is :mod:`appstack_testbed.image`. MongoDB has no Debian
package: its tests stop at the objects (docs/design.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources

from appstack_testbed.oci import ImageConfig
from appstack_testbed.versions import ETCD, VERSITYGW

SUITE = "bookworm"
PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TESTBED_LABEL = "dev.appstack.testbed.image"


def _data(name: str) -> str:
    return resources.files("appstack_testbed.images").joinpath(name).read_text()


@dataclass(frozen=True)
class LocalImage:
    """One image: a root filesystem, its configuration, and the names it is pushed as."""

    name: str
    refs: tuple[str, ...]  # repository:tag in the registry (docker.io's "library/..." form)
    config: ImageConfig
    packages: tuple[str, ...] = ()  # Debian packages on a minbase root; () for scratch
    files: Mapping[str, str] = field(default_factory=dict)  # path -> text (mode 0755 if #!)
    script: str = ""  # run chrooted as root once the files are in (Debian-based only)
    binaries: tuple[str, ...] = ()  # what else goes in: "pause", "busybox", "etcd:<version>"

    @property
    def key(self) -> str:
        spec = [
            self.name,
            sorted(self.packages),
            sorted(self.files.items()),
            self.script,
            repr(self.config),
            self.binaries,
        ]
        if self.config.stop_signal:  # only then: the other images keep their keys
            spec.append(self.config.stop_signal)
        return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:16]


def _config(
    entrypoint: tuple[str, ...] = (),
    cmd: tuple[str, ...] = (),
    *,
    user: str = "0:0",
    env: tuple[str, ...] = (PATH,),
    ports: tuple[int, ...] = (),
    what: str,
    workdir: str = "/",
    stop_signal: str | None = None,
) -> ImageConfig:
    return ImageConfig(
        entrypoint=entrypoint,
        cmd=cmd,
        user=user,
        env=env,
        ports=ports,
        labels={TESTBED_LABEL: what},
        workdir=workdir,
        stop_signal=stop_signal,
    )


def _library(name: str, *tags: str) -> tuple[str, ...]:
    return tuple(f"library/{name}:{tag}" for tag in tags)


PAUSE = LocalImage(
    name="pause",
    refs=tuple(f"pause:{tag}" for tag in ("3.10", "3.9", "3.6")),
    config=_config(("/pause",), user="65535:65535", what="pause (test bed, pause.c)"),
    binaries=("pause",),
)

BUSYBOX = LocalImage(
    name="busybox",
    refs=_library("busybox", "latest", "stable", "1.36", "1.37", "1.35"),
    config=_config(cmd=("sh",), what="Debian busybox-static"),
    binaries=("busybox",),
)

_NGINX_DEFAULT = """server {
    listen 80;
    listen [::]:80;
    server_name localhost;
    location / {
        root /usr/share/nginx/html;
        index index.html index.htm;
    }
    error_page 500 502 503 504 /50x.html;
    location = /50x.html {
        root /usr/share/nginx/html;
    }
}
"""
_NGINX_INDEX = """<!DOCTYPE html>
<html>
<head><title>Welcome to nginx!</title></head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and working.</p>
<p><em>Thank you for using nginx.</em> (appstack test bed: Debian's nginx)</p>
</body>
</html>
"""
NGINX = LocalImage(
    name="nginx",
    refs=_library("nginx", "1.7.9", "1.25", "1.26", "1.27", "latest", "stable", "alpine"),
    config=_config(
        cmd=("nginx", "-g", "daemon off;"), ports=(80,), what="Debian 12 nginx 1.22, as root"
    ),
    packages=("nginx",),
    files={
        "/etc/nginx/conf.d/default.conf": _NGINX_DEFAULT,
        "/usr/share/nginx/html/index.html": _NGINX_INDEX,
        "/usr/share/nginx/html/50x.html": "<h1>An error occurred.</h1>\n",
    },
    script=(
        "rm -f /etc/nginx/sites-enabled/default\n"
        "ln -sf /dev/stdout /var/log/nginx/access.log\n"
        "ln -sf /dev/stderr /var/log/nginx/error.log\n"
    ),
)

_MYSQL_SERVER_CNF = """[mysqld]
# appstack test bed: listen for the pod network (Debian's default is 127.0.0.1 only)
bind-address = 0.0.0.0
skip-name-resolve
"""
MYSQL = LocalImage(
    name="mysql",
    refs=(
        *_library("mysql", "8.4", "8.0", "8", "lts", "latest"),
        *_library("mariadb", "10.11", "11", "latest"),
    ),
    config=_config(
        ("docker-entrypoint.sh",),
        ("mysqld",),
        ports=(3306,),
        what="Debian 12 MariaDB 10.11 with the mysql image's entrypoint contract",
    ),
    packages=("mariadb-server", "mariadb-client"),
    files={
        "/usr/local/bin/docker-entrypoint.sh": _data("mysql-entrypoint.sh"),
        "/etc/mysql/mariadb.conf.d/99-appstack.cnf": _MYSQL_SERVER_CNF,
    },
    script=(
        # The official image's mysql user and group are 999 (appstack runs middleware as it).
        "groupmod -g 999 mysql && usermod -u 999 -g 999 mysql\n"
        "mkdir -p /var/lib/mysql /run/mysqld /var/log/mysql /docker-entrypoint-initdb.d "
        "/etc/mysql/conf.d\n"
        "rm -rf /var/lib/mysql/*\n"
        "chown -R 999:999 /var/lib/mysql /run/mysqld /var/log/mysql\n"
        "chmod 1777 /run/mysqld\n"
    ),
)

POSTGRES_MAJOR = "15"  # Debian 12's
_POSTGRES_BIN = f"/usr/lib/postgresql/{POSTGRES_MAJOR}/bin"
POSTGRES = LocalImage(
    name="postgres",
    refs=_library("postgres", "16", "15", "latest"),
    config=_config(
        ("docker-entrypoint.sh",),
        ("postgres",),
        # the server's own binaries first (psql, pg_ctl, initdb), as in the original
        env=(
            PATH.replace("PATH=", f"PATH={_POSTGRES_BIN}:"),
            f"PG_MAJOR={POSTGRES_MAJOR}",
            "PGDATA=/var/lib/postgresql/data",
            "LANG=C.UTF-8",
        ),
        ports=(5432,),
        what="Debian 12 PostgreSQL 15 with the postgres image's entrypoint contract",
        stop_signal="SIGINT",  # a fast shutdown, as the original's STOPSIGNAL
    ),
    packages=(f"postgresql-{POSTGRES_MAJOR}",),
    files={"/usr/local/bin/docker-entrypoint.sh": _data("postgres-entrypoint.sh")},
    script=(
        # The original's postgres user and group are 999 (appstack runs middleware as it).
        "groupmod -g 999 postgres && usermod -u 999 -g 999 postgres\n"
        # no cluster of Debian's own (pg_createcluster's "main"): PGDATA is the only one
        f"rm -rf /var/lib/postgresql/{POSTGRES_MAJOR} /etc/postgresql/{POSTGRES_MAJOR}\n"
        # listen on the pod network, as the original's sample configuration does
        "sed -ri \"s!^#?(listen_addresses)\\s*=\\s*\\S+.*!\\1 = '*'!\" "
        f"/usr/share/postgresql/{POSTGRES_MAJOR}/postgresql.conf.sample\n"
        "grep -q \"^listen_addresses = '\\*'\" "
        f"/usr/share/postgresql/{POSTGRES_MAJOR}/postgresql.conf.sample\n"
        "mkdir -p /var/lib/postgresql/data /var/run/postgresql /docker-entrypoint-initdb.d\n"
        "chown -R 999:999 /var/lib/postgresql /var/run/postgresql /var/log/postgresql\n"
        "chmod 1777 /var/lib/postgresql/data\n"
        "chmod 3777 /var/run/postgresql\n"
    ),
)

REDIS = LocalImage(
    name="redis",
    refs=_library("redis", "7.4", "7", "7.0", "latest"),
    config=_config(
        ("docker-entrypoint.sh",),
        ("redis-server",),
        ports=(6379,),
        what="Debian 12 Redis 7.0 with the redis image's entrypoint contract",
        workdir="/data",
    ),
    packages=("redis-server",),
    files={"/usr/local/bin/docker-entrypoint.sh": _data("redis-entrypoint.sh")},
    script=(
        # The original's redis user and group are 999 (appstack runs middleware as it).
        "groupmod -g 999 redis && usermod -u 999 -g 999 redis\n"
        "mkdir -p /data && chown 999:999 /data\n"
        "rm -rf /var/lib/redis /var/log/redis\n"
    ),
)

DATASERVICE = (
    "eureka",
    "auth",
    "api-manager",
    "ds-adapter",
    "es-adapter",
    "trd-adapter",
    "gateway-master",
    "gateway-web",
    "proxy",
)
APP = LocalImage(
    name="app",
    refs=(
        *(f"dataservice/{name}:1.0" for name in DATASERVICE),
        "shop/api:1.0",
        "appstack/stackapp:1.0",
    ),
    config=_config(
        ("python3", "/usr/local/bin/stackapp.py"),
        user="1000:1000",
        env=(PATH, "PYTHONUNBUFFERED=1"),
        ports=(8080,),
        what="the test bed's stackapp.py on Debian 12 python3",
    ),
    packages=("python3-minimal", "python3-pymysql", "python3-psycopg2", "python3-redis"),
    files={"/usr/local/bin/stackapp.py": _data("stackapp.py")},
    script="mkdir -p /app/config && chown 1000:1000 /app\n",
)


def etcd(version: str, repository: str = "etcd-development/etcd") -> LocalImage:
    """etcd ``version`` (``v3.6.16``) under ``<repository>:<version>``."""
    return LocalImage(
        name=f"etcd-{version}",
        refs=(f"{repository}:{version}", f"coreos/etcd:{version}"),
        config=_config(
            cmd=("etcd",),
            ports=(2379, 2380),
            what=f"etcd {version} built from Go modules",
        ),
        binaries=(f"etcd:{version}",),
    )


# distroless' "nonroot" (no /etc/passwd entry: the gateway needs none)
VERSITYGW_USER = "65532:65532"
VERSITYGW_PORT = 7070  # the gateway's default --port


def versitygw(version: str = VERSITYGW) -> LocalImage:
    """Versity S3 Gateway ``version`` as ``versity/versitygw:<version>`` and ``:latest``; its
    entrypoint is the binary, as the original's with arguments (``--access ... posix
    /data``). Not in :func:`standard`: pushed on demand (:mod:`appstack_testbed.objectstore`)."""
    return LocalImage(
        name=f"versitygw-{version}",
        refs=(f"versity/versitygw:{version}", "versity/versitygw:latest"),
        config=_config(
            ("/usr/local/bin/versitygw",),
            user=VERSITYGW_USER,
            ports=(VERSITYGW_PORT,),
            what=f"Versity S3 Gateway {version} built from Go modules",
        ),
        binaries=(f"versitygw:{version}",),
    )


def standard() -> list[LocalImage]:
    """What ``appstack cluster up`` makes available: every image the README, the examples,
    the seeds and appstack's managed middleware name (other etcd releases and
    :func:`versitygw` are built on demand)."""
    return [PAUSE, BUSYBOX, NGINX, MYSQL, POSTGRES, REDIS, APP, etcd(ETCD)]
