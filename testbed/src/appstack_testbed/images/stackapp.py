"""A small HTTP service for the test bed's application images (the DataService services of
seed 003, ``registry.example.com/dataservice/<name>:1.0``, and the other examples' apps).

It does what those services need to show that a stack really works: it listens on the port
its configuration names (``server.port`` in ``/app/config/application.yml``, as a Spring Boot
service reads it; else ``$PORT``; else 8080 and 8761, eureka's), and it uses exactly the
connection settings appstack injected: for every ``<NAME>_HOST``/``<NAME>_PORT`` pair with a
``<NAME>_PASSWORD`` it logs in by the port's protocol — MySQL on 3306 with
``<NAME>_USERNAME`` (a login and a query), PostgreSQL on 5432 with ``<NAME>_USERNAME`` (a
login over the network, where the server asks for the password, and a query), Redis on
6379 (AUTH with the password, then SET and GET of a key of its own); it GETs an HTTP
``<NAME>_URL``, and connects to anything else over TCP. Each answer says who the server
took it for and what the server is, or the error.

* ``GET /`` — who it is and what each connection answered (JSON);
* ``GET /healthz`` — ``ok`` (for probes);
* ``GET /call/<host>:<port>/<path>`` — asks another in-cluster service and returns its
  answer, so a request can be followed through a chain (web -> proxy -> auth -> MySQL).

Runs with the image's python3 and Debian's python3-pymysql, python3-psycopg2 and
python3-redis; standard library otherwise.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CONFIG = Path("/app/config/application.yml")
TIMEOUT = 3.0


def ports() -> list[int]:
    if CONFIG.is_file():
        match = re.search(r"^\s*server\.port\s*:\s*(\d+)", CONFIG.read_text(), re.MULTILINE)
        if match:
            return [int(match.group(1))]
    if os.environ.get("PORT"):
        return [int(os.environ["PORT"])]
    return [8080, 8761]


def connections() -> dict[str, dict[str, object]]:
    env = os.environ
    names = sorted(
        k[: -len("_HOST")] for k in env if k.endswith("_HOST") and f"{k[:-5]}_PORT" in env
    )
    names += sorted(
        k[: -len("_URL")]
        for k in env
        if k.endswith("_URL") and k[:-4] not in names and env[k].startswith("http")
    )
    return {name.lower(): check(name) for name in names}


def check(name: str) -> dict[str, object]:
    env = os.environ
    host, port = env.get(f"{name}_HOST"), env.get(f"{name}_PORT")
    url = env.get(f"{name}_URL")
    try:
        login = LOGINS.get(port or "")
        if host and port and login and f"{name}_PASSWORD" in env:
            return login(host, int(port), env.get(f"{name}_USERNAME"), env[f"{name}_PASSWORD"])
        if url and url.startswith("http"):
            with urllib.request.urlopen(url, timeout=TIMEOUT) as response:  # noqa: S310
                return {"url": url, "status": response.status}
        if host and port:
            with socket.create_connection((host, int(port)), timeout=TIMEOUT):
                return {"host": host, "port": int(port), "connected": True}
    except Exception as error:
        return {"error": f"{type(error).__name__}: {error}"}
    return {"error": "no address"}


def mysql(host: str, port: int, user: str | None, password: str) -> dict[str, object]:
    import pymysql  # type: ignore[import-untyped]  # noqa: PLC0415 - only for databases

    connection = pymysql.connect(
        host=host, port=port, user=user or "root", password=password, connect_timeout=TIMEOUT
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT VERSION(), CURRENT_USER()")
            version, current_user = cursor.fetchone()
            cursor.execute("SHOW DATABASES")
            databases = sorted(row[0] for row in cursor.fetchall())
    finally:
        connection.close()
    return {
        "host": host,
        "port": port,
        "user": current_user,
        "server": version,
        "databases": databases,
    }


def postgres(host: str, port: int, user: str | None, password: str) -> dict[str, object]:
    """A login as ``user`` (libpq's default database: the user's name) and a query."""
    import psycopg2  # type: ignore[import-untyped]  # noqa: PLC0415 - only for databases

    connection = psycopg2.connect(
        host=host,
        port=port,
        user=user or "postgres",
        password=password,
        connect_timeout=int(TIMEOUT),
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT version(), current_user, current_database()")
            version, current_user, database = cursor.fetchone()
    finally:
        connection.close()
    return {
        "host": host,
        "port": port,
        "user": current_user,
        "server": version,
        "database": database,
    }


def redis(host: str, port: int, user: str | None, password: str) -> dict[str, object]:
    """AUTH (as ``user``, else the default user), then SET and GET of this pod's key."""
    import redis as client  # type: ignore[import-not-found]  # noqa: PLC0415 - only for databases

    connection = client.Redis(
        host=host,
        port=port,
        username=user,
        password=password,
        socket_timeout=TIMEOUT,
        socket_connect_timeout=TIMEOUT,
    )
    try:
        key, value = f"stackapp:{name()}", os.urandom(8).hex()
        connection.set(key, value, ex=3600)
        read = connection.get(key)
        whoami = connection.execute_command("ACL", "WHOAMI")
        version = connection.info("server")["redis_version"]
    finally:
        connection.close()
    return {
        "host": host,
        "port": port,
        "user": whoami.decode(),
        "server": f"Redis {version}",
        "set_get": read is not None and read.decode() == value,
    }


LOGINS = {"3306": mysql, "5432": postgres, "6379": redis}


def call(target: str) -> dict[str, object]:
    hostport, _, path = target.partition("/")
    with urllib.request.urlopen(f"http://{hostport}/{path}", timeout=TIMEOUT * 3) as response:
        return {"via": name(), "answer": json.loads(response.read())}


def name() -> str:
    return os.environ.get("APP_NAME") or socket.gethostname()


class Handler(BaseHTTPRequestHandler):
    server_version = "stackapp/1"

    def do_GET(self) -> None:
        try:
            if self.path == "/healthz":
                self.reply(200, "ok\n", "text/plain")
                return
            if self.path.startswith("/call/"):
                body: dict[str, object] = call(self.path[len("/call/") :])
            else:
                body = {
                    "service": name(),
                    "port": int(self.server.server_address[1]),  # type: ignore[index]
                    "path": self.path,
                    "connections": connections(),
                }
            self.reply(200, json.dumps(body, indent=2) + "\n", "application/json")
        except (urllib.error.URLError, OSError, ValueError) as error:
            self.reply(
                502, json.dumps({"via": name(), "error": str(error)}) + "\n", "application/json"
            )

    def reply(self, code: int, text: str, kind: str) -> None:
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


def main() -> None:
    # as the container's first process, SIGTERM does nothing unless handled: stop at once
    # (as a service does on Kubernetes), not after the grace period's SIGKILL
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    servers = [ThreadingHTTPServer(("", port), Handler) for port in ports()]
    for server in servers[1:]:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"{name()} listening on {', '.join(str(p) for p in ports())}", flush=True)
    servers[0].serve_forever()


if __name__ == "__main__":
    main()
