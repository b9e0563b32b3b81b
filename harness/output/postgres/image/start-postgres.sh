#!/bin/sh
# A fresh PostgreSQL cluster for one run: initdb with the run's random passwords (never fixed ones), a
# database for the sinks, then the server in the foreground. Env: EO_PG_DATABASE, EO_PG_ADMIN and
# EO_PG_ADMIN_PASSWORD (the harness's superuser), EO_PG_USER and EO_PG_PASSWORD (the sinks' role).
# `synchronous_standby_names` names a standby that never connects: a transaction that asks for a
# synchronous commit (the harness's trigger does, for a table output's commits: harness.output.postgres)
# is committed locally and then waits there, its client not yet answered, until the harness lets it go.
set -eu
: "${EO_PG_DATABASE:?}" "${EO_PG_ADMIN:?}" "${EO_PG_ADMIN_PASSWORD:?}" "${EO_PG_USER:?}" "${EO_PG_PASSWORD:?}"
bin=/opt/postgres-bin
data=/var/lib/postgresql/data
mkdir -p "$data" /run/postgresql
chown postgres:postgres "$data" /run/postgresql
secret="$(mktemp)"
printf '%s\n' "$EO_PG_ADMIN_PASSWORD" > "$secret"
chown postgres "$secret"
runuser -u postgres -- "$bin/initdb" -D "$data" -U "$EO_PG_ADMIN" --pwfile="$secret" --auth-local=trust \
  --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
rm -f "$secret"
cat >> "$data/postgresql.conf" <<CONF
listen_addresses = '*'
max_connections = 200
fsync = off
full_page_writes = off
synchronous_commit = local
synchronous_standby_names = 'eo_hold'
client_connection_check_interval = 1000
track_commit_timestamp = on
log_line_prefix = '%m [%p] %q%u@%d '
CONF
echo "host all all all scram-sha-256" >> "$data/pg_hba.conf"
runuser -u postgres -- "$bin/postgres" --single -D "$data" postgres >/dev/null <<SQL
CREATE ROLE "$EO_PG_USER" LOGIN PASSWORD '$EO_PG_PASSWORD';
CREATE DATABASE "$EO_PG_DATABASE" OWNER "$EO_PG_USER";
SQL
exec runuser -u postgres -- "$bin/postgres" -D "$data"
