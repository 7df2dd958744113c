#!/bin/sh
# The official redis image's contract, on Debian's Redis 7.0 (the test bed's redis:<tag>):
# arguments that start with "-" or a *.conf file are redis-server's; redis-server runs in
# /data (its dump and append-only files land on the volume) as redis, uid 999 — started as
# root it takes /data and drops to it, like the original; started as 999 (what appstack's
# managed middleware does) it stays so. The original is built with protected mode off;
# Debian's is not, so without a configuration file this adds --protected-mode no before
# the given options (a later --protected-mode wins). A password is whatever the options
# say: appstack passes --requirepass "$(REDIS_PASSWORD)".
set -eu

case "${1:-}" in
    "") set -- redis-server ;;
    -* | *.conf) set -- redis-server "$@" ;;
esac

if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
    find . \! -user redis -exec chown redis:redis '{}' +
    exec setpriv --reuid=999 --regid=999 --clear-groups "$0" "$@"
fi

if [ "$1" = redis-server ]; then
    shift
    case "${1:-}" in
        *.conf) set -- redis-server "$@" ;;
        *) set -- redis-server --protected-mode no "$@" ;;
    esac
fi

# the original's umask: files private to redis unless the caller chose otherwise
if [ "$(umask)" = 0022 ]; then
    umask 0077
fi

exec "$@"
