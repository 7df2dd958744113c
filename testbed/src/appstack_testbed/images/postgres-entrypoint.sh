#!/bin/sh
# The official postgres image's contract, on Debian's PostgreSQL 15 (the test bed's
# postgres:<tag>): on the first start of an empty PGDATA (default /var/lib/postgresql/data),
# initdb creates the cluster with POSTGRES_USER (default postgres) as its superuser and
# POSTGRES_PASSWORD as that user's password (POSTGRES_INITDB_ARGS passed on), the database
# POSTGRES_DB (default: the user's name) is created and the scripts in
# /docker-entrypoint-initdb.d run in name order (*.sh run if executable, else sourced;
# *.sql and *.sql.gz through psql into POSTGRES_DB). The server listens on every address;
# a connection from another address than the pod's own loopback needs the password
# (POSTGRES_HOST_AUTH_METHOD, default scram-sha-256), the local socket and 127.0.0.1 are
# trusted — both as in the original. Started as root it takes PGDATA and drops to postgres
# (uid 999), like the original; started as 999 (what appstack's managed middleware does) it
# stays so. PGDATA is made 0700 on every start (a volume's fsGroup may have opened it).
set -eu

log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [entrypoint] $*" >&2; }

case "${1:-}" in
    "" | -*) ;;
    postgres) shift ;;
    *) exec "$@" ;;
esac

: "${PGDATA:=/var/lib/postgresql/data}"
export PGDATA

if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    find "$PGDATA" \! -user postgres -exec chown postgres:postgres '{}' +
    chown postgres:postgres /var/run/postgresql
    chmod 3777 /var/run/postgresql
    exec setpriv --reuid=999 --regid=999 --clear-groups "$0" postgres "$@"
fi

mkdir -p "$PGDATA"
chmod 700 "$PGDATA" 2>/dev/null || :

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_USER:=postgres}"
    : "${POSTGRES_DB:=$POSTGRES_USER}"
    : "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"
    if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
        log "error: the database is uninitialized and POSTGRES_PASSWORD is not set:"
        log "  set POSTGRES_PASSWORD (or POSTGRES_HOST_AUTH_METHOD=trust, which opens it to all)"
        exit 1
    fi
    log "initializing $PGDATA"
    if [ -n "${POSTGRES_PASSWORD:-}" ]; then
        # the password through a pipe, never on a command line
        printf '%s\n' "$POSTGRES_PASSWORD" \
            | initdb --username="$POSTGRES_USER" --pwfile=/dev/stdin ${POSTGRES_INITDB_ARGS:-} \
                >/dev/null
    else
        initdb --username="$POSTGRES_USER" ${POSTGRES_INITDB_ARGS:-} >/dev/null
    fi
    printf '\nhost all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >>"$PGDATA/pg_hba.conf"
    # a temporary server on the socket only: nothing reaches it over the network meanwhile
    pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -p ${PGPORT:-5432}" start >/dev/null
    export PGPASSWORD="${PGPASSWORD:-${POSTGRES_PASSWORD:-}}"
    sql() { psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc "$@"; }
    if [ "$POSTGRES_DB" != postgres ]; then
        sql --dbname postgres --set db="$POSTGRES_DB" <<'EOSQL'
CREATE DATABASE :"db" ;
EOSQL
    fi
    for f in /docker-entrypoint-initdb.d/*; do
        [ -e "$f" ] || continue
        case "$f" in
            *.sh)
                if [ -x "$f" ]; then log "running $f"; "$f"; else log "sourcing $f"; . "$f"; fi
                ;;
            *.sql) log "running $f"; sql --dbname "$POSTGRES_DB" -f "$f" ;;
            *.sql.gz) log "running $f"; gunzip -c "$f" | sql --dbname "$POSTGRES_DB" ;;
            *) log "ignoring $f" ;;
        esac
    done
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    unset PGPASSWORD
    log "PostgreSQL init process complete; ready for start up"
fi

exec postgres "$@"
