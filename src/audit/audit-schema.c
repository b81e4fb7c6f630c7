/*
 * audit-schema.c - the audit's database schema as numbered migrations
 * (auditdb.h, docs/audit.md "Schema").  A migration is never changed once
 * released: a change to the schema is a new migration at the end.  Each
 * runs in its own transaction (auditdb_migrate), so its SQL holds no
 * BEGIN or COMMIT; what cannot run in one (an index built concurrently)
 * is its .online (auditdb.h).
 */
#include "audit/auditdb.h"

/*
 * 1: the tables and indexes.  The op CHECK lists audit_op_name's names in
 * enum audit_op's order.  The columns filters compare for equality are
 * COLLATE "C" (bytes compared as bytes: what an id needs, and the cheapest
 * comparison for the indexes kept on every insert); seq needs no unique
 * index of its own (an identity, never given); the extended statistics
 * tell the planner that a run belongs to one agent and a session to one
 * tenant, so a filter on both is not costed as if they were independent.
 * Failed rows are few: the partial indexes behind --failed with each
 * other filter ("every failed write last week") cost an insert nothing
 * unless the row failed.  The indexes are ascending and read backwards
 * for newest first: new rows then fill a page before it splits (a
 * descending index splits at its left edge and stays half empty).  created_at lies in 1970-9999: what a cursor and
 * RFC 3339 can say.  pg_trgm (a trusted extension since PostgreSQL 13:
 * a role with CREATE on the database may create it) backs the
 * `audit ls --search` substring index.
 */
static const char migration_1[] =
	"CREATE EXTENSION IF NOT EXISTS pg_trgm;\n"
	"CREATE TABLE IF NOT EXISTS schema_migrations (\n"
	"  version integer PRIMARY KEY,\n"
	"  name text NOT NULL,\n"
	"  applied_at timestamptz NOT NULL DEFAULT now());\n"
	"CREATE TABLE agents (\n"
	"  id text PRIMARY KEY,\n"
	"  created_at timestamptz DEFAULT now());\n"
	"CREATE TABLE runs (\n"
	"  id text PRIMARY KEY,\n"
	"  agent_id text REFERENCES agents ON DELETE SET NULL,\n"
	"  created_at timestamptz DEFAULT now());\n"
	"CREATE TABLE sandbox_operations (\n"
	"  id uuid PRIMARY KEY,\n"
	"  seq bigint GENERATED ALWAYS AS IDENTITY,\n"
	"  created_at timestamptz NOT NULL CHECK (created_at >= "
	"'1970-01-01 00:00:00+00' AND created_at < '10000-01-01 00:00:00+00'),\n"
	"  tenant text COLLATE \"C\" NOT NULL,\n"
	"  session_key text COLLATE \"C\" NOT NULL,\n"
	"  runtime text COLLATE \"C\" NOT NULL,\n"
	"  agent_id text REFERENCES agents ON DELETE SET NULL,\n"
	"  run_id text REFERENCES runs ON DELETE SET NULL,\n"
	"  agent_ref text COLLATE \"C\",\n"
	"  run_ref text COLLATE \"C\",\n"
	"  op text COLLATE \"C\" NOT NULL CHECK (op IN ('write', 'edit', 'read', "
	"'read_bytes', 'ls_info', 'glob_info', 'grep_raw', 'execute', 'open', "
	"'close', 'reap')),\n"
	"  target text NOT NULL CHECK (char_length(target) <= 512),\n"
	"  ok boolean NOT NULL,\n"
	"  exit_status integer,\n"
	"  bytes bigint CHECK (bytes >= 0),\n"
	"  results bigint CHECK (results >= 0),\n"
	"  duration_ms bigint NOT NULL CHECK (duration_ms >= 0),\n"
	"  detail text NOT NULL,\n"
	"  hash bytea NOT NULL CHECK (octet_length(hash) = 32));\n"
	"CREATE TABLE audit_chains (\n"
	"  session_key text COLLATE \"C\" PRIMARY KEY,\n"
	"  tenant text NOT NULL,\n"
	"  head bytea NOT NULL,\n"
	"  head_seq bigint,\n"
	"  nrows bigint NOT NULL,\n"
	"  swept_hash bytea NOT NULL,\n"
	"  swept_rows bigint NOT NULL,\n"
	"  swept_at timestamptz);\n"
	"CREATE INDEX sandbox_operations_created\n"
	"  ON sandbox_operations (created_at, seq);\n"
	"CREATE INDEX sandbox_operations_tenant\n"
	"  ON sandbox_operations (tenant, created_at, seq);\n"
	"CREATE INDEX sandbox_operations_session\n"
	"  ON sandbox_operations (session_key, created_at, seq);\n"
	"CREATE INDEX sandbox_operations_agent\n"
	"  ON sandbox_operations (agent_ref, created_at, seq);\n"
	"CREATE INDEX sandbox_operations_run\n"
	"  ON sandbox_operations (run_ref, created_at, seq);\n"
	"CREATE INDEX sandbox_operations_op\n"
	"  ON sandbox_operations (op, created_at, seq);\n"
	"CREATE INDEX sandbox_operations_failed\n"
	"  ON sandbox_operations (created_at, seq) WHERE NOT ok;\n"
	"CREATE INDEX sandbox_operations_tenant_failed\n"
	"  ON sandbox_operations (tenant, created_at, seq)\n"
	"  WHERE NOT ok;\n"
	"CREATE INDEX sandbox_operations_op_failed\n"
	"  ON sandbox_operations (op, created_at, seq) WHERE NOT ok;\n"
	"CREATE INDEX sandbox_operations_session_failed\n"
	"  ON sandbox_operations (session_key, created_at, seq)\n"
	"  WHERE NOT ok;\n"
	"CREATE INDEX sandbox_operations_agent_failed\n"
	"  ON sandbox_operations (agent_ref, created_at, seq)\n"
	"  WHERE NOT ok;\n"
	"CREATE INDEX sandbox_operations_run_failed\n"
	"  ON sandbox_operations (run_ref, created_at, seq)\n"
	"  WHERE NOT ok;\n"
	"CREATE INDEX sandbox_operations_target\n"
	"  ON sandbox_operations USING gin (target gin_trgm_ops);\n"
	"CREATE INDEX sandbox_operations_chain\n"
	"  ON sandbox_operations (session_key, seq);\n"
	"CREATE STATISTICS sandbox_operations_who (dependencies, ndistinct)\n"
	"  ON tenant, session_key, agent_ref, run_ref FROM sandbox_operations;\n";

/*
 * 2: each row says which canonical encoding its hash is of
 * (audit_canonical's version), so a later encoding (a column added to the
 * chain) leaves the rows hashed before it verifiable.  Every row before
 * this migration was hashed with version 1, the default.  A constant
 * default makes the column without rewriting the table (PostgreSQL 11
 * and later), so it is quick on a table of any size; no CHECK, which
 * would read every row: verify names a version it does not know.
 */
static const char migration_2[] =
    "ALTER TABLE sandbox_operations\n"
    "  ADD COLUMN hash_version smallint NOT NULL DEFAULT 1;\n";

/*
 * 3: the op "stat" (fs stat, the wire's exists), which was recorded as
 * ls_info, so an auditor could not tell a listing from a test of one
 * file and the wire's events could not say sandboxd's "exists".  The
 * CHECK is made anew NOT VALID: the rows already there hold the old
 * names, a subset, and checking them would read the whole table under a
 * lock; new rows are checked as before.
 */
static const char migration_3[] =
    "ALTER TABLE sandbox_operations\n"
    "  DROP CONSTRAINT sandbox_operations_op_check;\n"
    "ALTER TABLE sandbox_operations\n"
    "  ADD CONSTRAINT sandbox_operations_op_check CHECK (op IN ('write', "
    "'edit', 'read', 'read_bytes', 'ls_info', 'glob_info', 'grep_raw', "
    "'execute', 'open', 'close', 'reap', 'stat')) NOT VALID;\n";

/*
 * 4: the session's id on the service's wire (sandboxd's, the platform's
 * own name of it) beside sbxcat's key, so `audit ls --session ID` finds
 * a wire session's rows by either; and the op "remove" (fs rm, which was
 * recorded as write with detail "removed").  A nullable column with no
 * default is a change of the catalogue alone (no row rewritten); the
 * CHECK is made anew NOT VALID as in 3.  Idempotent (IF EXISTS, IF NOT
 * EXISTS), as a migration with online statements must be: its index is
 * built CONCURRENTLY, after this commits (writers go on meanwhile), and
 * a failure there leaves this done and the migration not recorded.
 * Rows made since carry hash_version 2 (audit_canonical), whose encoding
 * covers wire_id.
 */
static const char migration_4[] =
    "ALTER TABLE sandbox_operations\n"
    "  ADD COLUMN IF NOT EXISTS wire_id text COLLATE \"C\";\n"
    "ALTER TABLE sandbox_operations\n"
    "  DROP CONSTRAINT IF EXISTS sandbox_operations_op_check;\n"
    "ALTER TABLE sandbox_operations\n"
    "  ADD CONSTRAINT sandbox_operations_op_check CHECK (op IN ('write', "
    "'edit', 'read', 'read_bytes', 'ls_info', 'glob_info', 'grep_raw', "
    "'execute', 'open', 'close', 'reap', 'stat', 'remove')) NOT VALID;\n";

static const char *const migration_4_online[] = {
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS sandbox_operations_wire\n"
    "  ON sandbox_operations (wire_id, created_at, seq)",
    NULL,
};

/*
 * 5: what `audit ls --follow` reads (auditq-follow.c).  xact is the
 * inserting transaction's id (pg_current_xact_id(), the top-level one,
 * 64 bits so it never wraps), given by the column's default to every
 * writer's row, whatever its version or host; a follower takes the rows
 * whose transaction was still running in its last snapshot (xact at or
 * past that snapshot's xmax, or among its xip), which is exactly the rows
 * committed since, in whatever order their seqs were given.  The column
 * is added without a default first, then given one: a volatile default
 * in ADD COLUMN would rewrite the table; rows already there keep NULL
 * (committed before any follower's first snapshot, so never new to one).
 * The index serves that one question, built CONCURRENTLY after this
 * commits (writers go on meanwhile).  The statement-level trigger sends
 * one notification per inserting statement (COPY too), delivered at
 * commit, so a follower wakes when rows are there to read; the payload is
 * empty (PostgreSQL folds equal notifications of a transaction into one).
 * Idempotent, as a migration with online statements must be.
 */
static const char migration_5[] =
    "ALTER TABLE sandbox_operations ADD COLUMN IF NOT EXISTS xact xid8;\n"
    "ALTER TABLE sandbox_operations\n"
    "  ALTER COLUMN xact SET DEFAULT pg_current_xact_id();\n"
    "CREATE OR REPLACE FUNCTION sbxcat_audit_notify() RETURNS trigger\n"
    "  LANGUAGE plpgsql AS\n"
    "  $$BEGIN PERFORM pg_notify('sbxcat_audit', ''); RETURN NULL; END$$;\n"
    "DROP TRIGGER IF EXISTS sandbox_operations_notify ON sandbox_operations;\n"
    "CREATE TRIGGER sandbox_operations_notify\n"
    "  AFTER INSERT ON sandbox_operations\n"
    "  FOR EACH STATEMENT EXECUTE FUNCTION sbxcat_audit_notify();\n";

static const char *const migration_5_online[] = {
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS sandbox_operations_xact\n"
    "  ON sandbox_operations (xact)",
    NULL,
};

/*
 * 6: the fleet (fleetdb.h, docs/fleet.md): the hosts that serve, each with
 * its lease; the sessions' hosts; placement's tenant lock is an advisory
 * transaction lock, so no table of tenants.  A host's row is its own
 * (instance: the process that holds the name); a session's row names the
 * host it lives on, 'placing' from placement until the host's open
 * answered, 'open' then, 'kept' once closed with its workspace kept.  A
 * host's rows go with it (ON DELETE CASCADE: `fleet forget`).
 */
static const char migration_6[] =
    "CREATE TABLE IF NOT EXISTS fleet_hosts (\n"
    "  name text COLLATE \"C\" PRIMARY KEY,\n"
    "  url text NOT NULL,\n"
    "  instance text NOT NULL,\n"
    "  capacity integer NOT NULL CHECK (capacity >= 0),\n"
    "  resident integer NOT NULL DEFAULT 0,\n"
    "  pool jsonb NOT NULL DEFAULT '{}',\n"
    "  draining boolean NOT NULL DEFAULT false,\n"
    "  lease_until timestamptz NOT NULL,\n"
    "  registered_at timestamptz NOT NULL DEFAULT now(),\n"
    "  renewed_at timestamptz NOT NULL DEFAULT now(),\n"
    "  epoch bigint NOT NULL DEFAULT 1);\n"
    "CREATE TABLE IF NOT EXISTS fleet_sessions (\n"
    "  wire_id text COLLATE \"C\" PRIMARY KEY,\n"
    "  tenant text COLLATE \"C\",\n"
    "  host text COLLATE \"C\" NOT NULL\n"
    "    REFERENCES fleet_hosts (name) ON DELETE CASCADE,\n"
    "  state text NOT NULL DEFAULT 'placing'\n"
    "    CHECK (state IN ('placing', 'open', 'kept')),\n"
    "  runtime text,\n"
    "  tokens text[] NOT NULL DEFAULT '{}',\n"
    "  placed_at timestamptz NOT NULL DEFAULT now());\n"
    "CREATE INDEX IF NOT EXISTS fleet_sessions_host\n"
    "  ON fleet_sessions (host, state);\n"
    "CREATE INDEX IF NOT EXISTS fleet_sessions_tenant\n"
    "  ON fleet_sessions (tenant, state);\n"
    /* Placement, one round trip (fleetdb_place): the tenant's lock and
     * the id's, the id's row if a live host has it (a dead host's is
     * given up), the tenant's count across live hosts, the best live
     * host with room (its pool ready first, then the least loaded, then
     * at random), the row inserted.  outcome: placed, there, tenant
     * (n of lim), full (n of lim across live hosts), none. */
    "CREATE OR REPLACE FUNCTION sbxcat_fleet_place(p_id text,\n"
    "    p_tenant text, p_max integer, p_runtime text, p_exclude text[])\n"
    "  RETURNS TABLE (outcome text, host text, url text, alive boolean,\n"
    "    state text, n bigint, lim bigint)\n"
    "  LANGUAGE plpgsql AS $$\n"
    "DECLARE r record; cnt bigint; cap bigint;\n"
    "BEGIN\n"
    "  IF p_tenant IS NOT NULL THEN\n"
    "    PERFORM pg_advisory_xact_lock(\n"
    "      hashtextextended('sbxcat-fleet-tenant:' || p_tenant, 0));\n"
    "  END IF;\n"
    "  PERFORM pg_advisory_xact_lock(\n"
    "    hashtextextended('sbxcat-fleet-id:' || p_id, 0));\n"
    "  SELECT s.host, h.url, h.lease_until > now() AS live, s.state AS st\n"
    "    INTO r FROM fleet_sessions s JOIN fleet_hosts h ON h.name = s.host\n"
    "    WHERE s.wire_id = p_id;\n"
    "  IF FOUND THEN\n"
    "    IF r.live THEN\n"
    "      RETURN QUERY SELECT 'there'::text, r.host, r.url, true, r.st,\n"
    "        0::bigint, 0::bigint;\n"
    "      RETURN;\n"
    "    END IF;\n"
    "    DELETE FROM fleet_sessions WHERE wire_id = p_id;\n"
    "  END IF;\n"
    "  IF p_tenant IS NOT NULL AND p_max > 0 THEN\n"
    "    SELECT count(*) INTO cnt FROM fleet_sessions s\n"
    "      JOIN fleet_hosts h ON h.name = s.host\n"
    "      WHERE s.tenant = p_tenant AND s.state IN ('placing', 'open')\n"
    "        AND h.lease_until > now();\n"
    "    IF cnt >= p_max THEN\n"
    "      RETURN QUERY SELECT 'tenant'::text, NULL::text, NULL::text,\n"
    "        false, NULL::text, cnt, p_max::bigint;\n"
    "      RETURN;\n"
    "    END IF;\n"
    "  END IF;\n"
    "  SELECT h.name, h.url INTO r FROM fleet_hosts h,\n"
    "    LATERAL (SELECT count(*) AS placed FROM fleet_sessions s\n"
    "      WHERE s.host = h.name AND s.state IN ('placing', 'open')) c\n"
    "    WHERE h.lease_until > now() AND NOT h.draining\n"
    "      AND NOT (h.name = ANY (coalesce(p_exclude, '{}')))\n"
    "      AND c.placed < h.capacity\n"
    "    ORDER BY (jsonb_typeof(h.pool -> p_runtime) = 'number'\n"
    "        AND (h.pool ->> p_runtime)::numeric > 0) IS TRUE DESC,\n"
    "      c.placed::float8 / greatest(h.capacity, 1), random()\n"
    "    LIMIT 1;\n"
    "  IF NOT FOUND THEN\n"
    "    SELECT count(*), coalesce(sum(h.capacity), 0) INTO cnt, cap\n"
    "      FROM fleet_hosts h WHERE h.lease_until > now();\n"
    "    IF cnt = 0 THEN\n"
    "      RETURN QUERY SELECT 'none'::text, NULL::text, NULL::text, false,\n"
    "        NULL::text, 0::bigint, 0::bigint;\n"
    "      RETURN;\n"
    "    END IF;\n"
    "    SELECT count(*) INTO cnt FROM fleet_sessions s\n"
    "      JOIN fleet_hosts h ON h.name = s.host\n"
    "      WHERE s.state IN ('placing', 'open') AND h.lease_until > now();\n"
    "    RETURN QUERY SELECT 'full'::text, NULL::text, NULL::text, false,\n"
    "      NULL::text, cnt, cap;\n"
    "    RETURN;\n"
    "  END IF;\n"
    "  INSERT INTO fleet_sessions (wire_id, tenant, host, state, runtime)\n"
    "    VALUES (p_id, p_tenant, r.name, 'placing', p_runtime);\n"
    "  RETURN QUERY SELECT 'placed'::text, r.name, r.url, true,\n"
    "    'placing'::text, 0::bigint, 0::bigint;\n"
    "END $$;\n";

/*
 * 7: rows by day (docs/audit.md "Rows by day").  sandbox_operations
 * becomes a table partitioned by the UTC day of created_at, one partition
 * a day named sandbox_operations_YYYYMMDD, and a default partition that
 * takes a row of a day with none (a write never fails for want of one;
 * sbxcat_audit_day leaves a day whose rows sit there to the default).
 * Retention then drops whole days (auditdb_sweep).  A partitioned table's
 * unique keys hold its partition key: the key is (id, created_at), which
 * is what a replay repeats.
 *
 * Online, with no row lost or changed: this transaction makes the new
 * table beside the old one (sandbox_operations_p, with its indexes, a
 * partition for every day the old one has rows in, the last ten years at
 * most, found by probing its created_at index a day at a time, and the
 * days around today), and row triggers on the old table that do to the
 * new one whatever is done to the old one from here on (an insert, the
 * SET NULL of a deleted agent, the sweep's delete).  Its online part,
 * sbxcat_audit_partition_copy(), copies the rows that were there before
 * in batches of 20000 by the created index, each batch its own
 * transaction holding its rows FOR SHARE (so a delete or update of one of
 * them waits for the copy, and its trigger then finds the copy), with its
 * progress kept in sbxcat_partitioning so a copy cut short resumes; then,
 * under an exclusive lock taken with a timeout and retried (writers wait
 * for one moment, not for the copy), checks that both tables hold the
 * same rows, carries the identity on, drops the old table and gives the
 * new one its name and its indexes' names.  Every row keeps every column
 * (seq, xact and hash too), so chains verify and followers see no row
 * anew.  Idempotent: run again after the swap, it does nothing.
 */
static const char migration_7[] =
    "CREATE OR REPLACE FUNCTION sbxcat_audit_day(p_parent regclass,\n"
    "    p_day date) RETURNS boolean LANGUAGE plpgsql AS $$\n"
    "DECLARE\n"
    "  part text := 'sandbox_operations_' || to_char(p_day, 'YYYYMMDD');\n"
    "  lo text := to_char(p_day, 'YYYY-MM-DD') || ' 00:00:00+00';\n"
    "  hi text := to_char(p_day + 1, 'YYYY-MM-DD') || ' 00:00:00+00';\n"
    "BEGIN\n"
    /* Two hosts of a fleet making the same day: one at a time. */
    "  PERFORM pg_advisory_xact_lock(hashtextextended(\n"
    "    'sbxcat-audit-day:' || p_day, 0));\n"
    "  IF to_regclass(part) IS NOT NULL THEN RETURN false; END IF;\n"
    "  EXECUTE format('CREATE TABLE %I (LIKE %s INCLUDING DEFAULTS '\n"
    "    'INCLUDING CONSTRAINTS)', part, p_parent);\n"
    "  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK '\n"
    "    '(created_at >= %L AND created_at < %L)', part, part || '_day',\n"
    "    lo, hi);\n"
    "  BEGIN\n"
    "    EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I FOR VALUES '\n"
    "      'FROM (%L) TO (%L)', p_parent, part, lo, hi);\n"
    "  EXCEPTION WHEN check_violation THEN\n"
    "    EXECUTE format('DROP TABLE %I', part);\n"
    "    RETURN false;\n"
    "  END;\n"
    "  RETURN true;\n"
    "END $$;\n"
    "DO $m$\n"
    "DECLARE d date; made integer := 0;\n"
    "BEGIN\n"
    "  IF (SELECT relkind FROM pg_class\n"
    "      WHERE oid = 'sandbox_operations'::regclass) = 'p'\n"
    "     OR to_regclass('sandbox_operations_p') IS NOT NULL THEN\n"
    "    RETURN;\n"
    "  END IF;\n"
    "  CREATE TABLE sandbox_operations_p (LIKE sandbox_operations\n"
    "    INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY)\n"
    "    PARTITION BY RANGE (created_at);\n"
    "  ALTER TABLE sandbox_operations_p\n"
    "    ADD CONSTRAINT sandbox_operations_p_pkey\n"
    "      PRIMARY KEY (id, created_at),\n"
    "    ADD CONSTRAINT sandbox_operations_p_agent_id_fkey\n"
    "      FOREIGN KEY (agent_id) REFERENCES agents ON DELETE SET NULL,\n"
    "    ADD CONSTRAINT sandbox_operations_p_run_id_fkey\n"
    "      FOREIGN KEY (run_id) REFERENCES runs ON DELETE SET NULL;\n"
    "  CREATE INDEX sandbox_operations_p_created\n"
    "    ON sandbox_operations_p (created_at, seq);\n"
    "  CREATE INDEX sandbox_operations_p_tenant\n"
    "    ON sandbox_operations_p (tenant, created_at, seq);\n"
    "  CREATE INDEX sandbox_operations_p_session\n"
    "    ON sandbox_operations_p (session_key, created_at, seq);\n"
    "  CREATE INDEX sandbox_operations_p_agent\n"
    "    ON sandbox_operations_p (agent_ref, created_at, seq);\n"
    "  CREATE INDEX sandbox_operations_p_run\n"
    "    ON sandbox_operations_p (run_ref, created_at, seq);\n"
    "  CREATE INDEX sandbox_operations_p_op\n"
    "    ON sandbox_operations_p (op, created_at, seq);\n"
    "  CREATE INDEX sandbox_operations_p_wire\n"
    "    ON sandbox_operations_p (wire_id, created_at, seq);\n"
    "  CREATE INDEX sandbox_operations_p_failed\n"
    "    ON sandbox_operations_p (created_at, seq) WHERE NOT ok;\n"
    "  CREATE INDEX sandbox_operations_p_tenant_failed\n"
    "    ON sandbox_operations_p (tenant, created_at, seq) WHERE NOT ok;\n"
    "  CREATE INDEX sandbox_operations_p_op_failed\n"
    "    ON sandbox_operations_p (op, created_at, seq) WHERE NOT ok;\n"
    "  CREATE INDEX sandbox_operations_p_session_failed\n"
    "    ON sandbox_operations_p (session_key, created_at, seq)\n"
    "    WHERE NOT ok;\n"
    "  CREATE INDEX sandbox_operations_p_agent_failed\n"
    "    ON sandbox_operations_p (agent_ref, created_at, seq) WHERE NOT ok;\n"
    "  CREATE INDEX sandbox_operations_p_run_failed\n"
    "    ON sandbox_operations_p (run_ref, created_at, seq) WHERE NOT ok;\n"
    "  CREATE INDEX sandbox_operations_p_target\n"
    "    ON sandbox_operations_p USING gin (target gin_trgm_ops);\n"
    "  CREATE INDEX sandbox_operations_p_chain\n"
    "    ON sandbox_operations_p (session_key, seq);\n"
    "  CREATE INDEX sandbox_operations_p_xact ON sandbox_operations_p (xact);\n"
    "  CREATE TABLE sandbox_operations_default\n"
    "    PARTITION OF sandbox_operations_p DEFAULT;\n"
    /* The days the old table has rows in: its created index probed a
     * day at a time (as many probes as days, not rows). */
    "  FOR d IN WITH RECURSIVE days(day) AS (\n"
    "      SELECT (min(created_at) AT TIME ZONE 'UTC')::date\n"
    "        FROM sandbox_operations\n"
    "        WHERE created_at >= now() - interval '3653 days'\n"
    "      UNION ALL\n"
    "      SELECT (SELECT (min(o.created_at) AT TIME ZONE 'UTC')::date\n"
    "        FROM sandbox_operations o WHERE o.created_at >=\n"
    "          ((days.day + 1)::timestamp AT TIME ZONE 'UTC'))\n"
    "        FROM days WHERE days.day IS NOT NULL)\n"
    "    SELECT day FROM days WHERE day IS NOT NULL\n"
    "      AND day <= (now() AT TIME ZONE 'UTC')::date + 7\n"
    "    UNION\n"
    "    SELECT (now() AT TIME ZONE 'UTC')::date + k\n"
    "      FROM generate_series(-1, 7) k\n"
    "    ORDER BY 1 LOOP\n"
    "    PERFORM sbxcat_audit_day('sandbox_operations_p', d);\n"
    "  END LOOP;\n"
    "  CREATE FUNCTION sbxcat_audit_mirror() RETURNS trigger\n"
    "    LANGUAGE plpgsql AS $t$\n"
    "  BEGIN\n"
    "    IF TG_OP = 'INSERT' THEN\n"
    "      INSERT INTO sandbox_operations_p OVERRIDING SYSTEM VALUE\n"
    "        SELECT NEW.*;\n"
    "    ELSIF TG_OP = 'UPDATE' THEN\n"
    "      DELETE FROM sandbox_operations_p\n"
    "        WHERE id = OLD.id AND created_at = OLD.created_at;\n"
    "      IF FOUND THEN\n"
    "        INSERT INTO sandbox_operations_p OVERRIDING SYSTEM VALUE\n"
    "          SELECT NEW.*;\n"
    "      END IF;\n"
    "    ELSE\n"
    "      DELETE FROM sandbox_operations_p\n"
    "        WHERE id = OLD.id AND created_at = OLD.created_at;\n"
    "    END IF;\n"
    "    RETURN NULL;\n"
    "  END $t$;\n"
    "  CREATE TRIGGER sandbox_operations_mirror\n"
    "    AFTER INSERT OR UPDATE OR DELETE ON sandbox_operations\n"
    "    FOR EACH ROW EXECUTE FUNCTION sbxcat_audit_mirror();\n"
    /* Only now, the trigger there (its lock waited for every writer
     * that had inserted, and holds the next ones until this commits):
     * a row not in the last seq read is one the trigger mirrors.  Read
     * before it, a row inserted in between would be in neither. */
    "  CREATE TABLE sbxcat_partitioning (\n"
    "    upto bigint NOT NULL, at_created timestamptz, at_seq bigint);\n"
    "  INSERT INTO sbxcat_partitioning (upto)\n"
    "    SELECT coalesce(max(seq), 0) FROM sandbox_operations;\n"
    "END $m$;\n"
    "CREATE OR REPLACE PROCEDURE sbxcat_audit_partition_copy()\n"
    "  LANGUAGE plpgsql AS $$\n"
    "DECLARE\n"
    "  upto bigint; ac timestamptz; aseq bigint; n bigint;\n"
    "  nold bigint; nnew bigint; last bigint; called boolean;\n"
    "  tries integer := 0;\n"
    "BEGIN\n"
    "  IF (SELECT relkind FROM pg_class\n"
    "      WHERE oid = 'sandbox_operations'::regclass) = 'p' THEN\n"
    "    RETURN;\n"
    "  END IF;\n"
    "  LOOP\n"
    "    SELECT p.upto, p.at_created, p.at_seq INTO upto, ac, aseq\n"
    "      FROM sbxcat_partitioning p;\n"
    /* The rows past upto are the trigger's: neither locked nor
     * counted, so writers faster than the copy cannot keep it going. */
    "    WITH b AS (SELECT o.* FROM sandbox_operations o\n"
    "        WHERE (o.created_at, o.seq) > (coalesce(ac, '-infinity'),\n"
    "          coalesce(aseq, 0)) AND o.seq <= upto\n"
    "        ORDER BY o.created_at, o.seq LIMIT 20000 FOR SHARE),\n"
    "      c AS (INSERT INTO sandbox_operations_p OVERRIDING SYSTEM VALUE\n"
    "        SELECT * FROM b RETURNING 1),\n"
    "      l AS (SELECT b.created_at, b.seq FROM b\n"
    "        ORDER BY b.created_at DESC, b.seq DESC LIMIT 1)\n"
    "    UPDATE sbxcat_partitioning p SET at_created = l.created_at,\n"
    "      at_seq = l.seq FROM l;\n"
    "    GET DIAGNOSTICS n = ROW_COUNT;\n"
    "    COMMIT;\n"
    "    EXIT WHEN n = 0;\n"
    "  END LOOP;\n"
    "  LOOP\n"
    "    BEGIN\n"
    "      PERFORM set_config('lock_timeout', '3s', true);\n"
    "      LOCK TABLE sandbox_operations, sandbox_operations_p\n"
    "        IN ACCESS EXCLUSIVE MODE;\n"
    "      SELECT count(*) INTO nold FROM sandbox_operations;\n"
    "      SELECT count(*) INTO nnew FROM sandbox_operations_p;\n"
    "      IF nold <> nnew THEN\n"
    "        RAISE EXCEPTION 'partitioning: the old table holds % rows, '\n"
    "          'the new one %: not swapped', nold, nnew;\n"
    "      END IF;\n"
    "      SELECT last_value, is_called INTO last, called\n"
    "        FROM sandbox_operations_seq_seq;\n"
    "      PERFORM setval('sandbox_operations_p_seq_seq', last, called);\n"
    "      DROP TABLE sandbox_operations;\n"
    "      DROP FUNCTION sbxcat_audit_mirror();\n"
    "      DROP TABLE sbxcat_partitioning;\n"
    "      ALTER TABLE sandbox_operations_p RENAME TO sandbox_operations;\n"
    "      ALTER SEQUENCE sandbox_operations_p_seq_seq\n"
    "        RENAME TO sandbox_operations_seq_seq;\n"
    "      ALTER TABLE sandbox_operations RENAME CONSTRAINT\n"
    "        sandbox_operations_p_pkey TO sandbox_operations_pkey;\n"
    "      ALTER TABLE sandbox_operations RENAME CONSTRAINT\n"
    "        sandbox_operations_p_agent_id_fkey\n"
    "        TO sandbox_operations_agent_id_fkey;\n"
    "      ALTER TABLE sandbox_operations RENAME CONSTRAINT\n"
    "        sandbox_operations_p_run_id_fkey\n"
    "        TO sandbox_operations_run_id_fkey;\n"
    "      ALTER INDEX sandbox_operations_p_created\n"
    "        RENAME TO sandbox_operations_created;\n"
    "      ALTER INDEX sandbox_operations_p_tenant\n"
    "        RENAME TO sandbox_operations_tenant;\n"
    "      ALTER INDEX sandbox_operations_p_session\n"
    "        RENAME TO sandbox_operations_session;\n"
    "      ALTER INDEX sandbox_operations_p_agent\n"
    "        RENAME TO sandbox_operations_agent;\n"
    "      ALTER INDEX sandbox_operations_p_run\n"
    "        RENAME TO sandbox_operations_run;\n"
    "      ALTER INDEX sandbox_operations_p_op\n"
    "        RENAME TO sandbox_operations_op;\n"
    "      ALTER INDEX sandbox_operations_p_wire\n"
    "        RENAME TO sandbox_operations_wire;\n"
    "      ALTER INDEX sandbox_operations_p_failed\n"
    "        RENAME TO sandbox_operations_failed;\n"
    "      ALTER INDEX sandbox_operations_p_tenant_failed\n"
    "        RENAME TO sandbox_operations_tenant_failed;\n"
    "      ALTER INDEX sandbox_operations_p_op_failed\n"
    "        RENAME TO sandbox_operations_op_failed;\n"
    "      ALTER INDEX sandbox_operations_p_session_failed\n"
    "        RENAME TO sandbox_operations_session_failed;\n"
    "      ALTER INDEX sandbox_operations_p_agent_failed\n"
    "        RENAME TO sandbox_operations_agent_failed;\n"
    "      ALTER INDEX sandbox_operations_p_run_failed\n"
    "        RENAME TO sandbox_operations_run_failed;\n"
    "      ALTER INDEX sandbox_operations_p_target\n"
    "        RENAME TO sandbox_operations_target;\n"
    "      ALTER INDEX sandbox_operations_p_chain\n"
    "        RENAME TO sandbox_operations_chain;\n"
    "      ALTER INDEX sandbox_operations_p_xact\n"
    "        RENAME TO sandbox_operations_xact;\n"
    "      CREATE STATISTICS sandbox_operations_who (dependencies,\n"
    "        ndistinct) ON tenant, session_key, agent_ref, run_ref\n"
    "        FROM sandbox_operations;\n"
    "      CREATE TRIGGER sandbox_operations_notify\n"
    "        AFTER INSERT ON sandbox_operations\n"
    "        FOR EACH STATEMENT EXECUTE FUNCTION sbxcat_audit_notify();\n"
    "    EXCEPTION WHEN lock_not_available THEN\n"
    "      tries := tries + 1;\n"
    "      IF tries >= 20 THEN\n"
    "        RAISE EXCEPTION 'partitioning: sandbox_operations stayed '\n"
    "          'in use for 20 tries of 3 s: run audit migrate again';\n"
    "      END IF;\n"
    "      PERFORM pg_sleep(0.5);\n"
    "      CONTINUE;\n"
    "    END;\n"
    "    COMMIT;\n"
    "    EXIT;\n"
    "  END LOOP;\n"
    "END $$;\n";

static const char *const migration_7_online[] = {
    "CALL sbxcat_audit_partition_copy()",
    NULL,
};

const struct auditdb_migration auditdb_migrations[] = {
    {1, "audit tables", migration_1, NULL},
    {2, "hash version", migration_2, NULL},
    {3, "stat op", migration_3, NULL},
    {4, "wire id and remove op", migration_4, migration_4_online},
    {5, "follow", migration_5, migration_5_online},
    {6, "fleet", migration_6, NULL},
    {7, "rows by day", migration_7, migration_7_online},
};

const int auditdb_nmigrations =
	(int)(sizeof(auditdb_migrations) / sizeof(auditdb_migrations[0]));
