#!/bin/sh
# The official mysql image's contract, on Debian's MariaDB (the test bed's mysql:<tag>):
# on the first start of an empty data directory, MYSQL_ROOT_PASSWORD (or
# MYSQL_ALLOW_EMPTY_PASSWORD / MYSQL_RANDOM_ROOT_PASSWORD), MYSQL_DATABASE, MYSQL_USER and
# MYSQL_PASSWORD are created and the scripts in /docker-entrypoint-initdb.d run (*.sql,
# *.sql.gz, *.sh, in name order); server configuration is read from /etc/mysql/conf.d.
# Started as root it takes the data directory and drops to mysql (uid 999), like the
# original; started as 999 (what appstack's managed middleware does) it stays so.
set -eu

DATADIR=/var/lib/mysql
SOCKET=/run/mysqld/mysqld.sock

log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [entrypoint] $*" >&2; }

case "${1:-mysqld}" in
    mysqld | mariadbd) shift || true ;;
    -*) ;;
    *) exec "$@" ;;
esac

if [ "$(id -u)" = 0 ]; then
    mkdir -p "$DATADIR" /run/mysqld
    chown -R mysql:mysql "$DATADIR" /run/mysqld
    exec setpriv --reuid=999 --regid=999 --clear-groups "$0" mysqld "$@"
fi

quote() { printf "%s" "$1" | sed -e "s/\\\\/\\\\\\\\/g" -e "s/'/''/g"; }

if [ ! -d "$DATADIR/mysql" ]; then
    if [ -z "${MYSQL_ROOT_PASSWORD:-}" ] && [ -z "${MYSQL_ALLOW_EMPTY_PASSWORD:-}" ] \
        && [ -z "${MYSQL_RANDOM_ROOT_PASSWORD:-}" ]; then
        log "error: the database is uninitialized and no password option is set:"
        log "  set one of MYSQL_ROOT_PASSWORD, MYSQL_ALLOW_EMPTY_PASSWORD, MYSQL_RANDOM_ROOT_PASSWORD"
        exit 1
    fi
    log "initializing $DATADIR"
    mariadb-install-db --datadir="$DATADIR" --skip-test-db --skip-name-resolve \
        --auth-root-authentication-method=normal >/dev/null
    mariadbd --skip-networking --socket="$SOCKET" --datadir="$DATADIR" &
    pid=$!
    i=0
    until mariadb-admin --socket="$SOCKET" --silent ping >/dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -gt 300 ]; then log "error: the temporary server did not start"; exit 1; fi
        sleep 0.1
    done
    if [ -n "${MYSQL_RANDOM_ROOT_PASSWORD:-}" ]; then
        MYSQL_ROOT_PASSWORD=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
        log "GENERATED ROOT PASSWORD: $MYSQL_ROOT_PASSWORD"
    fi
    root=$(quote "${MYSQL_ROOT_PASSWORD:-}")
    {
        echo "DELETE FROM mysql.user WHERE user = '';"
        echo "ALTER USER 'root'@'localhost' IDENTIFIED BY '$root';"
        echo "CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY '$root';"
        echo "GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;"
        if [ -n "${MYSQL_DATABASE:-}" ]; then
            echo "CREATE DATABASE IF NOT EXISTS \`$MYSQL_DATABASE\`;"
        fi
        if [ -n "${MYSQL_USER:-}" ] && [ -n "${MYSQL_PASSWORD:-}" ]; then
            echo "CREATE USER '$(quote "$MYSQL_USER")'@'%' IDENTIFIED BY '$(quote "$MYSQL_PASSWORD")';"
            if [ -n "${MYSQL_DATABASE:-}" ]; then
                echo "GRANT ALL ON \`$MYSQL_DATABASE\`.* TO '$(quote "$MYSQL_USER")'@'%';"
            fi
        fi
        echo "FLUSH PRIVILEGES;"
    } | mariadb --protocol=socket --socket="$SOCKET" -uroot
    client="mariadb --protocol=socket --socket=$SOCKET -uroot"
    export MYSQL_PWD="${MYSQL_ROOT_PASSWORD:-}"
    for f in /docker-entrypoint-initdb.d/*; do
        [ -e "$f" ] || continue
        case "$f" in
            *.sh) log "running $f"; . "$f" ;;
            *.sql) log "running $f"; $client ${MYSQL_DATABASE:+"$MYSQL_DATABASE"} < "$f" ;;
            *.sql.gz) log "running $f"; gunzip -c "$f" | $client ${MYSQL_DATABASE:+"$MYSQL_DATABASE"} ;;
            *) log "ignoring $f" ;;
        esac
    done
    unset MYSQL_PWD
    mariadb-admin --socket="$SOCKET" -uroot --password="${MYSQL_ROOT_PASSWORD:-}" shutdown
    wait "$pid" || true
    log "initialized; starting the server"
fi

exec mariadbd "$@"
