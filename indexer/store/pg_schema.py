"""The team index's schema on PostgreSQL, as SQL text: migrations, row-level security, and the administrator's script.

Kept free of any driver import so ``memsearch team init`` can print the script on a machine without psycopg.

Team semantics live in the database, not in the client: every chunk has an ``owner`` (the role that wrote it,
``current_user`` by default) and a ``scope``. A chunk is ``shared`` only if it is a note or a fact (a CHECK
constraint: an event can never be shared); everything else is ``private``. Row-level security, forced on the
tables' owner too, lets a member see shared chunks and their own private ones, write and delete only their own,
and see a vector only when a chunk they can see holds its content, so a member's raw SQL reads no one else's
events. Members are login roles in the group role :data:`MEMBER_ROLE`, which holds the grants.

Every migration is idempotent SQL (``IF NOT EXISTS``, policies dropped and re-created), numbered like the SQLite
ones and recorded in ``memsearch.schema_version``, so the printed script can be run again safely.

>>> mask_url("postgresql://alice:s3cret@db.example:5432/memory?sslmode=require")
'postgresql://alice:***@db.example:5432/memory?sslmode=require'
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from indexer.base.dburl import mask_url as mask_url  # re-exported: the team commands and tests import it here
from indexer.base.errors import UsageError

SCHEMA = "memsearch"
MEMBER_ROLE = "memsearch_member"
_ROLE_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

M001_INITIAL = f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE TABLE IF NOT EXISTS {SCHEMA}.schema_version(version integer NOT NULL, applied_at timestamptz NOT NULL
    DEFAULT now());
CREATE TABLE IF NOT EXISTS {SCHEMA}.meta(
    owner text NOT NULL DEFAULT current_user,
    key text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (owner, key)
);
CREATE TABLE IF NOT EXISTS {SCHEMA}.sources(
    owner text NOT NULL DEFAULT current_user,
    path text NOT NULL,
    source text NOT NULL,
    mtime_ns bigint NOT NULL,
    size bigint NOT NULL,
    content_hash text,
    consumed bigint NOT NULL DEFAULT 0,
    head_hash text,
    indexed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, path)
);
CREATE TABLE IF NOT EXISTS {SCHEMA}.chunks(
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner text NOT NULL DEFAULT current_user,
    scope text NOT NULL DEFAULT 'private',
    uid text NOT NULL,
    hash text NOT NULL,
    source text NOT NULL,
    path text NOT NULL,
    seq integer NOT NULL,
    kind text NOT NULL,
    category text NOT NULL DEFAULT '',
    title text NOT NULL DEFAULT '',
    text text NOT NULL,
    line_start integer,
    line_end integer,
    event_id text,
    ts text,
    session_id text,
    project text,
    status text,
    speaker text,
    fts tsvector NOT NULL,
    UNIQUE (owner, uid),
    FOREIGN KEY (owner, source) REFERENCES {SCHEMA}.sources(owner, path) ON DELETE CASCADE,
    CONSTRAINT chunks_scope CHECK (scope IN ('private', 'shared') AND (scope = 'private' OR kind IN ('note', 'fact')))
);
CREATE INDEX IF NOT EXISTS chunks_source ON {SCHEMA}.chunks(owner, source, seq);
CREATE INDEX IF NOT EXISTS chunks_hash ON {SCHEMA}.chunks(hash);
CREATE INDEX IF NOT EXISTS chunks_ts ON {SCHEMA}.chunks(ts);
CREATE INDEX IF NOT EXISTS chunks_session ON {SCHEMA}.chunks(session_id, ts);
-- the GIN index of fts is migration 6's (this one had the built-in operator class; 6 drops it where it was made)
CREATE TABLE IF NOT EXISTS {SCHEMA}.vectors(
    hash text NOT NULL,
    model text NOT NULL,
    embedding vector,
    created_by text NOT NULL DEFAULT current_user,
    PRIMARY KEY (hash, model)
);
"""

#: Row-level security: what a member may see and change (see the module docstring).
M002_ROW_SECURITY = f"""
ALTER TABLE {SCHEMA}.chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE {SCHEMA}.chunks FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS chunks_read ON {SCHEMA}.chunks;
CREATE POLICY chunks_read ON {SCHEMA}.chunks FOR SELECT USING (scope = 'shared' OR owner = current_user);
DROP POLICY IF EXISTS chunks_insert ON {SCHEMA}.chunks;
CREATE POLICY chunks_insert ON {SCHEMA}.chunks FOR INSERT WITH CHECK (owner = current_user);
DROP POLICY IF EXISTS chunks_update ON {SCHEMA}.chunks;
CREATE POLICY chunks_update ON {SCHEMA}.chunks FOR UPDATE USING (owner = current_user)
    WITH CHECK (owner = current_user);
DROP POLICY IF EXISTS chunks_delete ON {SCHEMA}.chunks;
CREATE POLICY chunks_delete ON {SCHEMA}.chunks FOR DELETE USING (owner = current_user);

ALTER TABLE {SCHEMA}.sources ENABLE ROW LEVEL SECURITY;
ALTER TABLE {SCHEMA}.sources FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS sources_own ON {SCHEMA}.sources;
CREATE POLICY sources_own ON {SCHEMA}.sources USING (owner = current_user) WITH CHECK (owner = current_user);

ALTER TABLE {SCHEMA}.meta ENABLE ROW LEVEL SECURITY;
ALTER TABLE {SCHEMA}.meta FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS meta_own ON {SCHEMA}.meta;
CREATE POLICY meta_own ON {SCHEMA}.meta USING (owner = current_user) WITH CHECK (owner = current_user);

ALTER TABLE {SCHEMA}.vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE {SCHEMA}.vectors FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS vectors_read ON {SCHEMA}.vectors;
CREATE POLICY vectors_read ON {SCHEMA}.vectors FOR SELECT
    USING (EXISTS (SELECT 1 FROM {SCHEMA}.chunks c WHERE c.hash = vectors.hash));
DROP POLICY IF EXISTS vectors_insert ON {SCHEMA}.vectors;
CREATE POLICY vectors_insert ON {SCHEMA}.vectors FOR INSERT
    WITH CHECK (created_by = current_user AND EXISTS (SELECT 1 FROM {SCHEMA}.chunks c WHERE c.hash = vectors.hash));

DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{MEMBER_ROLE}') THEN
        CREATE ROLE {MEMBER_ROLE} NOLOGIN;
    END IF;
END $$;
GRANT USAGE ON SCHEMA {SCHEMA} TO {MEMBER_ROLE};
GRANT SELECT ON {SCHEMA}.schema_version TO {MEMBER_ROLE};
GRANT SELECT, INSERT, UPDATE, DELETE ON {SCHEMA}.chunks, {SCHEMA}.sources, {SCHEMA}.meta TO {MEMBER_ROLE};
GRANT SELECT, INSERT ON {SCHEMA}.vectors TO {MEMBER_ROLE};
"""

#: A chunk's uid is unique per source, not per member: one member's two machines holding the same file (same path,
#: same content, so the same uids) each keep their copy, and a source deleted on one leaves the other's whole.
M003_UID_PER_SOURCE = f"""
ALTER TABLE {SCHEMA}.chunks DROP CONSTRAINT IF EXISTS chunks_owner_uid_key;
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_constraint WHERE conname = 'chunks_owner_source_uid_key') THEN
        ALTER TABLE {SCHEMA}.chunks ADD CONSTRAINT chunks_owner_source_uid_key UNIQUE (owner, source, uid);
    END IF;
END $$;
"""

#: The HNSW graph's build parameters. pgvector's defaults (m 16, ef_construction 64) reached recall@10 0.958 at
#: ef_search 400 on the bench's 100k vectors; these 0.981 (0.955 at 200), at 7.7 ms p50 a query and 3x the build
#: time (53 s for 95k vectors of 384 dimensions here), the index about as large.
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 128
HNSW_WITH = f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"

#: The HNSW indexes made before :data:`HNSW_WITH` was set are built again with it, under the same names.
M004_HNSW_BUILD = f"""
DO $$ DECLARE ix record; BEGIN
    FOR ix IN SELECT indexname, indexdef FROM pg_indexes
              WHERE schemaname = '{SCHEMA}' AND tablename = 'vectors' AND indexname LIKE 'vectors_hnsw_%'
                AND indexdef NOT LIKE '%ef_construction%' LOOP
        EXECUTE format('DROP INDEX {SCHEMA}.%I', ix.indexname);
        EXECUTE replace(ix.indexdef, ' WHERE ', ' {HNSW_WITH} WHERE ');
    END LOOP;
END $$;
"""

#: Events are embedded with the turn they reply to, kept with the chunk (never in ``fts``). Rows sent before hold ''
#: in it, which is what their hash was made of; a member's next sync replaces them (their uids changed with their
#: hash) by rows that carry it.
M005_REPLY_TO = f"""
ALTER TABLE {SCHEMA}.chunks ADD COLUMN IF NOT EXISTS reply_to text NOT NULL DEFAULT '';
"""

#: The full-text match under row-level security. PostgreSQL runs a member's condition as an index condition only
#: when its operator is leakproof (else the policy's condition must come first, row by row), and the built-in
#: ``tsvector @@ tsquery`` is not marked so: every member's lexical query read the whole table (measured at 100k
#: chunks: 180 ms to count one word's matches as a member, 9 ms through the GIN index as the administrator).
#: ``memsearch.@@`` is the same C function (``ts_match_vq``: a match, no error or output that depends on the row)
#: declared leakproof, with a GIN operator class made of the built-in tsvector support functions, so the index
#: serves it and the policies still decide which of the rows it returns a member sees. Creating them needs a
#: superuser (the administrator who runs ``memsearch team init``).
M006_LEAKPROOF_MATCH = f"""
CREATE OR REPLACE FUNCTION {SCHEMA}.ts_match(tsvector, tsquery) RETURNS boolean LANGUAGE internal IMMUTABLE STRICT
    PARALLEL SAFE LEAKPROOF AS 'ts_match_vq';
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace
                   WHERE n.nspname = '{SCHEMA}' AND o.oprname = '@@') THEN
        CREATE OPERATOR {SCHEMA}.@@ (LEFTARG = tsvector, RIGHTARG = tsquery, FUNCTION = {SCHEMA}.ts_match,
                                     RESTRICT = tsmatchsel, JOIN = tsmatchjoinsel);
    END IF;
    IF NOT EXISTS (SELECT FROM pg_opclass c JOIN pg_namespace n ON n.oid = c.opcnamespace
                   WHERE n.nspname = '{SCHEMA}' AND c.opcname = 'tsvector_match') THEN
        CREATE OPERATOR CLASS {SCHEMA}.tsvector_match FOR TYPE tsvector USING gin AS
            OPERATOR 1 {SCHEMA}.@@ (tsvector, tsquery),
            FUNCTION 1 gin_cmp_tslexeme(text, text),
            FUNCTION 2 gin_extract_tsvector(tsvector, internal, internal),
            FUNCTION 3 gin_extract_tsquery(tsvector, internal, smallint, internal, internal, internal, internal),
            FUNCTION 4 gin_tsquery_consistent(internal, smallint, tsvector, integer, internal, internal, internal,
                                              internal),
            FUNCTION 5 gin_cmp_prefix(text, text, smallint, internal),
            FUNCTION 6 gin_tsquery_triconsistent(internal, smallint, tsvector, integer, internal, internal, internal),
            STORAGE text;
    END IF;
END $$;
GRANT EXECUTE ON FUNCTION {SCHEMA}.ts_match(tsvector, tsquery) TO {MEMBER_ROLE};
CREATE INDEX IF NOT EXISTS chunks_fts_match ON {SCHEMA}.chunks USING gin (fts {SCHEMA}.tsvector_match);
DROP INDEX IF EXISTS {SCHEMA}.chunks_fts;
"""

def _chunk_counts_sql(rows: str) -> str:
    """One statement that adds the signed chunk rows of ``rows`` (owner, scope, kind, hash, fts, d = +1 or -1) to
    the kept counts: ``counts``, ``lexemes``, ``hashes``, and ``contents`` for the hashes that appear in or leave
    a group (their count goes from 0 or to 0), for all content ('') and per model that has a vector of it."""
    s = SCHEMA
    return (
        f"WITH r AS ({rows}),"
        f" k AS (INSERT INTO {s}.counts(owner, scope, kind, chunks) SELECT owner, scope, kind, sum(d) FROM r"
        "  GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3"
        "  ON CONFLICT (owner, scope, kind) DO UPDATE SET chunks = counts.chunks + excluded.chunks),"
        f" x AS (INSERT INTO {s}.lexemes(lexeme, owner, scope, chunks) SELECT l, owner, scope, sum(d)"
        "  FROM r, unnest(tsvector_to_array(r.fts)) AS l GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3"
        "  ON CONFLICT (lexeme, owner, scope) DO UPDATE SET chunks = lexemes.chunks + excluded.chunks),"
        " g AS (SELECT owner, scope, hash, sum(d) AS d FROM r GROUP BY 1, 2, 3 HAVING sum(d) <> 0),"
        f" h AS (INSERT INTO {s}.hashes(owner, scope, hash, chunks) SELECT * FROM g ORDER BY 1, 2, 3"
        "  ON CONFLICT (owner, scope, hash) DO UPDATE SET chunks = hashes.chunks + excluded.chunks"
        "  RETURNING owner, scope, hash, chunks),"
        " m AS (SELECT h.owner, h.scope, h.hash, CASE WHEN h.chunks = 0 THEN -1 ELSE 1 END AS s FROM h"
        "  JOIN g USING (owner, scope, hash) WHERE h.chunks = 0 OR h.chunks = g.d)"
        f" INSERT INTO {s}.contents(owner, scope, model, hashes, vectors)"
        " SELECT owner, scope, model, sum(s), coalesce(sum(s) FILTER (WHERE vector), 0) FROM"
        " (SELECT owner, scope, '' AS model, s, false AS vector FROM m UNION ALL"
        "  SELECT m.owner, m.scope, v.model, m.s, v.embedding IS NOT NULL"
        f"  FROM m JOIN {s}.vectors v ON v.hash = m.hash) AS t GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        " ON CONFLICT (owner, scope, model) DO UPDATE SET hashes = contents.hashes + excluded.hashes,"
        " vectors = contents.vectors + excluded.vectors;")


def _vector_counts_sql(rows: str, sign: int) -> str:
    """One statement that adds ``sign`` to ``contents`` for each group holding the content of each vector row of
    ``rows`` (inserted or deleted vectors)."""
    return (f"INSERT INTO {SCHEMA}.contents(owner, scope, model, hashes, vectors) SELECT h.owner, h.scope, v.model,"
            f" {int(sign)} * count(*), {int(sign)} * count(*) FILTER (WHERE v.embedding IS NOT NULL)"
            f" FROM {rows} v JOIN {SCHEMA}.hashes h ON h.hash = v.hash AND h.chunks > 0"
            " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
            " ON CONFLICT (owner, scope, model) DO UPDATE SET hashes = contents.hashes + excluded.hashes,"
            " vectors = contents.vectors + excluded.vectors;")


#: The kept counts computed from the rows (what migration 7 starts from, and what ``memsearch team init --apply``
#: sets them to again; the tests compare the kept ones with it).
RECOUNT_SQL = f"""
DELETE FROM {SCHEMA}.counts;
INSERT INTO {SCHEMA}.counts(owner, scope, kind, chunks)
    SELECT owner, scope, kind, count(*) FROM {SCHEMA}.chunks GROUP BY 1, 2, 3;
DELETE FROM {SCHEMA}.lexemes;
INSERT INTO {SCHEMA}.lexemes(lexeme, owner, scope, chunks)
    SELECT l, owner, scope, count(*) FROM {SCHEMA}.chunks, unnest(tsvector_to_array(fts)) AS l GROUP BY 1, 2, 3;
DELETE FROM {SCHEMA}.hashes;
INSERT INTO {SCHEMA}.hashes(owner, scope, hash, chunks)
    SELECT owner, scope, hash, count(*) FROM {SCHEMA}.chunks GROUP BY 1, 2, 3;
DELETE FROM {SCHEMA}.contents;
INSERT INTO {SCHEMA}.contents(owner, scope, model, hashes, vectors)
    SELECT owner, scope, '', count(*), 0 FROM {SCHEMA}.hashes GROUP BY 1, 2
    UNION ALL SELECT h.owner, h.scope, v.model, count(*), count(*) FILTER (WHERE v.embedding IS NOT NULL)
        FROM {SCHEMA}.hashes h JOIN {SCHEMA}.vectors v ON v.hash = h.hash GROUP BY 1, 2, 3;
"""

#: Kept counts, so that neither a search nor its health scans the chunks (at 1M chunks the count of content
#: awaiting a vector alone took 6.6 s): per owner and scope, the chunks of each kind (``counts``), the chunks
#: holding each lexeme (``lexemes``: a term's document frequency, for the lexical list's idf), the chunks holding
#: each content hash (``hashes``) and the distinct contents, all of them (model '') and those with a vector row of
#: each model (``contents``: ``hashes``, and ``vectors`` of them not ``NULL``). Row-level security shows a member the rows of what they may see, so a sum is over the
#: chunks the member sees, as a scan would be; a content held in two groups (a member's private and shared copy,
#: two members' shared notes) counts in each. Statement triggers keep them, as security definers owned by the
#: administrator: a vector one member adds changes the counts of another member's chunks, and members may only
#: read the counts. A member's writing transactions take a lock of their own first, so two machines of one member
#: syncing at once wait for each other instead of deadlocking on the count rows.
M007_KEPT_COUNTS = f"""
CREATE TABLE IF NOT EXISTS {SCHEMA}.counts(
    owner text NOT NULL, scope text NOT NULL, kind text NOT NULL, chunks bigint NOT NULL,
    PRIMARY KEY (owner, scope, kind));
CREATE TABLE IF NOT EXISTS {SCHEMA}.lexemes(
    lexeme text COLLATE "C" NOT NULL, owner text NOT NULL, scope text NOT NULL, chunks bigint NOT NULL,
    PRIMARY KEY (lexeme, owner, scope));
CREATE TABLE IF NOT EXISTS {SCHEMA}.hashes(
    owner text NOT NULL, scope text NOT NULL, hash text NOT NULL, chunks bigint NOT NULL,
    PRIMARY KEY (owner, scope, hash));
CREATE INDEX IF NOT EXISTS hashes_hash ON {SCHEMA}.hashes(hash);
CREATE TABLE IF NOT EXISTS {SCHEMA}.contents(
    owner text NOT NULL, scope text NOT NULL, model text NOT NULL, hashes bigint NOT NULL, vectors bigint NOT NULL,
    PRIMARY KEY (owner, scope, model));
DO $$ DECLARE t text; BEGIN
    FOREACH t IN ARRAY ARRAY['counts', 'lexemes', 'hashes', 'contents'] LOOP
        EXECUTE format('ALTER TABLE {SCHEMA}.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE {SCHEMA}.%I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('DROP POLICY IF EXISTS %I ON {SCHEMA}.%I', t || '_read', t);
        EXECUTE format('CREATE POLICY %I ON {SCHEMA}.%I FOR SELECT USING (scope = ''shared'' OR owner = current_user)',
                       t || '_read', t);
    END LOOP;
END $$;
GRANT SELECT ON {SCHEMA}.counts, {SCHEMA}.lexemes, {SCHEMA}.contents TO {MEMBER_ROLE};

CREATE OR REPLACE FUNCTION {SCHEMA}.keep_chunk_counts() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('memsearch-counts'), hashtext(session_user));
    IF TG_OP = 'INSERT' THEN
        {_chunk_counts_sql("SELECT owner, scope, kind, hash, fts, 1 AS d FROM new_rows")}
    ELSIF TG_OP = 'DELETE' THEN
        {_chunk_counts_sql("SELECT owner, scope, kind, hash, fts, -1 AS d FROM old_rows")}
    ELSE
        {_chunk_counts_sql("SELECT owner, scope, kind, hash, fts, 1 AS d FROM new_rows"
                           " UNION ALL SELECT owner, scope, kind, hash, fts, -1 FROM old_rows")}
    END IF;
    IF TG_OP <> 'INSERT' THEN  -- the rows of what the group no longer holds go (what stays at 0 would pile up)
        DELETE FROM {SCHEMA}.hashes h USING (SELECT DISTINCT owner, scope, hash FROM old_rows) o
            WHERE h.chunks = 0 AND h.owner = o.owner AND h.scope = o.scope AND h.hash = o.hash;
        DELETE FROM {SCHEMA}.lexemes x USING (SELECT DISTINCT owner, scope, unnest(tsvector_to_array(fts)) AS lexeme
                                              FROM old_rows) o
            WHERE x.chunks = 0 AND x.lexeme = o.lexeme AND x.owner = o.owner AND x.scope = o.scope;
    END IF;
    RETURN NULL;
END $f$;
CREATE OR REPLACE FUNCTION {SCHEMA}.keep_vector_counts() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {_vector_counts_sql("new_rows", 1)}
    ELSE
        {_vector_counts_sql("old_rows", -1)}
    END IF;
    RETURN NULL;
END $f$;
REVOKE ALL ON FUNCTION {SCHEMA}.keep_chunk_counts() FROM PUBLIC;
REVOKE ALL ON FUNCTION {SCHEMA}.keep_vector_counts() FROM PUBLIC;

DO $$ DECLARE t record; BEGIN
    FOR t IN SELECT * FROM (VALUES ('chunks', 'keep_chunk_counts'), ('vectors', 'keep_vector_counts')) AS x(tab, fn)
    LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON {SCHEMA}.%I', t.fn || '_insert', t.tab);
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON {SCHEMA}.%I REFERENCING NEW TABLE AS new_rows'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.%I()', t.fn || '_insert', t.tab, t.fn);
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON {SCHEMA}.%I', t.fn || '_delete', t.tab);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON {SCHEMA}.%I REFERENCING OLD TABLE AS old_rows'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.%I()', t.fn || '_delete', t.tab, t.fn);
    END LOOP;
    DROP TRIGGER IF EXISTS keep_chunk_counts_update ON {SCHEMA}.chunks;
    CREATE TRIGGER keep_chunk_counts_update AFTER UPDATE ON {SCHEMA}.chunks REFERENCING OLD TABLE AS old_rows
        NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.keep_chunk_counts();
END $$;
{RECOUNT_SQL}
"""

#: A forgotten chunk's vector goes when no chunk holds its content any more, whoever's chunk that was, and only
#: then. A member may not delete from ``vectors`` (another member's chunks may use a vector), so this function,
#: a security definer owned by the administrator, does it for the hashes a member's ``forget`` removed
#: (:meth:`indexer.store.postgres.PgStore.delete_uids`): it deletes only vectors no chunk holds, which no member
#: can read anyway. The vectors left by forgets before this version go once, here.
M008_ORPHAN_VECTORS = f"""
CREATE OR REPLACE FUNCTION {SCHEMA}.drop_orphan_vectors(hashes text[]) RETURNS bigint LANGUAGE sql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $f$
    WITH gone AS (DELETE FROM {SCHEMA}.vectors v WHERE v.hash = ANY(hashes)
                  AND NOT EXISTS (SELECT 1 FROM {SCHEMA}.chunks c WHERE c.hash = v.hash) RETURNING 1)
    SELECT count(*) FROM gone
$f$;
REVOKE ALL ON FUNCTION {SCHEMA}.drop_orphan_vectors(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {SCHEMA}.drop_orphan_vectors(text[]) TO {MEMBER_ROLE};
DELETE FROM {SCHEMA}.vectors v WHERE NOT EXISTS (SELECT 1 FROM {SCHEMA}.chunks c WHERE c.hash = v.hash);
"""

#: The vector-read policy's rule (a member sees a vector when a chunk they can see holds its content) checked row
#: by row, through a function. Written as an ``EXISTS``, the planner could make it a hashed subplan once the tables
#: were analyzed: every visible chunk scanned to hash their contents before the first vector was read, which it
#: chose between ~10k and ~150k chunks (measured at 100k, the bench's questions, ``ef_search`` 400: the vector list
#: 53 ms p50 that way, 7.1 ms through the function). A function with its own ``search_path`` is never inlined, so
#: the HNSW scan checks only the vectors it reads. The cost is on a sync's look for content without a vector, which
#: reads every vector: 160 -> 457 ms at 100k (a sync that changes nothing no longer looks).
M009_VECTOR_READ = f"""
CREATE OR REPLACE FUNCTION {SCHEMA}.content_visible(content text) RETURNS boolean LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp AS $f$
    SELECT EXISTS (SELECT 1 FROM {SCHEMA}.chunks c WHERE c.hash = content)
$f$;
REVOKE ALL ON FUNCTION {SCHEMA}.content_visible(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {SCHEMA}.content_visible(text) TO {MEMBER_ROLE};
DROP POLICY IF EXISTS vectors_read ON {SCHEMA}.vectors;
CREATE POLICY vectors_read ON {SCHEMA}.vectors FOR SELECT USING ({SCHEMA}.content_visible(hash));
"""

#: (number, SQL). Each runs in its own transaction; the number is recorded after it.
MIGRATIONS: list[tuple[int, str]] = [(1, M001_INITIAL), (2, M002_ROW_SECURITY), (3, M003_UID_PER_SOURCE),
                                     (4, M004_HNSW_BUILD), (5, M005_REPLY_TO), (6, M006_LEAKPROOF_MATCH),
                                     (7, M007_KEPT_COUNTS), (8, M008_ORPHAN_VECTORS), (9, M009_VECTOR_READ)]
SCHEMA_VERSION = MIGRATIONS[-1][0]
EXTENSION_SQL = "CREATE EXTENSION IF NOT EXISTS vector;"


def record_version_sql(number: int) -> str:
    return (f"INSERT INTO {SCHEMA}.schema_version(version) SELECT {int(number)} WHERE NOT EXISTS"
            f" (SELECT 1 FROM {SCHEMA}.schema_version WHERE version = {int(number)});")


def vector_index_name(model: str, dim: int) -> str:
    import hashlib

    return f"vectors_hnsw_{hashlib.sha1(f'{model}:{int(dim)}'.encode()).hexdigest()[:12]}"


def vector_index_sql(model: str, dim: int) -> str:
    """The HNSW index (cosine) over ``model``'s vectors, cast to their width: pgvector indexes a fixed-width
    ``vector``, and one partial index per model lets two models' vectors share the table (and a model change
    re-embed without dropping the other's).

    >>> vector_index_sql("m'1", 4).split(" ON ")[1]
    "memsearch.vectors USING hnsw ((embedding::vector(4)) vector_cosine_ops) WITH (m = 32, ef_construction = 128) WHERE model = 'm''1';"
    """
    literal = "'" + model.replace("'", "''") + "'"
    return (f"CREATE INDEX IF NOT EXISTS {vector_index_name(model, dim)} ON {SCHEMA}.vectors USING hnsw "
            f"((embedding::vector({int(dim)})) vector_cosine_ops) {HNSW_WITH} WHERE model = {literal};")


def check_role(name: str) -> str:
    """A member's role name, checked: lower-case letters, digits and ``_``, as PostgreSQL folds unquoted names.

    >>> check_role("alice")
    'alice'
    """
    if not _ROLE_RE.match(name) or name.startswith("pg_") or name == MEMBER_ROLE:
        raise UsageError(f"invalid member name {name!r}: use lower-case letters, digits and _ (not pg_…)")
    return name


def member_sql(name: str) -> str:
    """Create the login role ``name`` (if missing) in the member group. It has no password: the administrator
    sets one (``ALTER ROLE name PASSWORD …``) or authenticates it another way in ``pg_hba.conf``."""
    role = check_role(name)
    return (f"DO $$ BEGIN\n    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN\n"
            f"        CREATE ROLE \"{role}\" LOGIN;\n    END IF;\nEND $$;\nGRANT {MEMBER_ROLE} TO \"{role}\";")


def team_init_sql(members: list[str], vector_models: Sequence[tuple[str, int]] = ()) -> str:
    """The administrator's script, run once per database as a superuser (and again to add members): pgvector,
    the schema, the policies, the HNSW index of each ``(model id, dim)``, and one role per member. Idempotent.

    >>> "CREATE POLICY chunks_read" in team_init_sql(["alice"])
    True
    """
    roles = [member_sql(m) for m in dict.fromkeys(members)]
    parts = [f"-- memsearch team index, schema version {SCHEMA_VERSION}", EXTENSION_SQL]
    for number, sql in MIGRATIONS:
        parts += [f"-- migration {number}", "BEGIN;", sql.strip(), record_version_sql(number), "COMMIT;"]
    parts += [vector_index_sql(model, dim) for model, dim in vector_models]
    if roles:
        parts += ["-- members", *roles]
    return "\n".join(parts) + "\n"
