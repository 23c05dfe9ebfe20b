#!/usr/bin/env bash
# Install and start a local PostgreSQL for the bridge's --db test; print the database URL.
# Idempotent: a machine that already has the server, role and database is fine.
set -euo pipefail
if ! command -v pg_lsclusters >/dev/null 2>&1; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi
read -r version cluster port status _ < <(pg_lsclusters --no-header | head -n 1)
if [ "$status" != "online" ]; then
    pg_ctlcluster "$version" "$cluster" start >&2
fi
psql_as_postgres() { su postgres -c "psql -p $port -v ON_ERROR_STOP=1 -qAt -c \"$1\""; }
if [ "$(psql_as_postgres "SELECT 1 FROM pg_roles WHERE rolname = 'ovos_a2a'")" != "1" ]; then
    psql_as_postgres "CREATE ROLE ovos_a2a LOGIN PASSWORD 'ovos_a2a'" >&2
fi
# the replicas' start-up tests make a new, empty database for each try
if [ "$(psql_as_postgres "SELECT rolcreatedb FROM pg_roles WHERE rolname = 'ovos_a2a'")" != "t" ]; then
    psql_as_postgres "ALTER ROLE ovos_a2a CREATEDB" >&2
fi
if [ "$(psql_as_postgres "SELECT 1 FROM pg_database WHERE datname = 'ovos_a2a_test'")" != "1" ]; then
    psql_as_postgres "CREATE DATABASE ovos_a2a_test OWNER ovos_a2a" >&2
fi
echo "postgresql+asyncpg://ovos_a2a:ovos_a2a@127.0.0.1:$port/ovos_a2a_test"
