"""The PostgreSQL store against a real PostgreSQL 18 + pgvector (the session's ``pg_server``) in what only it does:
the HNSW index and its search width, row-level security between two members (also with raw SQL as a member's
role), vectors shared by content hash, migrations, and credentials never shown. The contract every backend keeps
is tests/indexer/store/test_store.py."""

from __future__ import annotations

import subprocess
import uuid

import numpy as np
import pytest

pytest.importorskip("psycopg", reason="the team extra (psycopg, pgvector) is not installed")

import psycopg  # noqa: E402

from conftest import MEMSEARCH  # noqa: E402
from indexer.base.embedder import BUNDLED_ID  # noqa: E402
from indexer.base.errors import UsageError  # noqa: E402
from indexer.store import ChunkRow, SourceState, Store, postgres  # noqa: E402
from indexer.store.pg_schema import (  # noqa: E402
    EXTENSION_SQL,
    MIGRATIONS,
    SCHEMA_VERSION,
    mask_url,
    record_version_sql,
    team_init_sql,
)
from indexer.store.postgres import PgStore, StoreUnavailable, apply_team_init, migrate, schema_version  # noqa: E402
from search_engine.filters import Filters  # noqa: E402
from search_engine.query import content_terms, terms  # noqa: E402

pytestmark = pytest.mark.postgres
MODEL, DIM = "test-model@1", 16


@pytest.fixture
def alice(team) -> PgStore:
    return team.store("alice")


def source(path: str, kind: str = "notes") -> SourceState:
    return SourceState(path=path, source=kind, mtime_ns=1, size=10, content_hash="h-" + path)


def chunk(uid: str, text: str, kind: str = "note", **kw) -> ChunkRow:
    return ChunkRow(uid=uid, hash=kw.pop("hash", "hash-" + uid), kind=kind, text=text, path=kw.pop("path", "n.md"),
                    **kw)


def lexical(store: PgStore, query: str, filters: Filters | None = None, op: str = "AND", limit: int = 10):
    return [s.id for s in store.lexical_top_k(content_terms(terms(query)), op, filters or Filters(), limit)]


def uids(store: PgStore, ids) -> set[str]:
    return {row.uid for row in store.fetch_hits(list(ids)).values()}


def random_unit(rng, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_vector_candidates_use_hnsw_with_ef_search_and_filter_inside(alice, team, monkeypatch):
    rng = np.random.default_rng(7)
    vectors = random_unit(rng, 300)
    rows = [chunk(f"c{i}", f"chunk {i}", kind="note" if i % 3 else "fact", seq=i) for i in range(300)]
    alice.write_batch(source("/m/v.md"), rows)
    assert len(alice.pending_embeddings(MODEL)) == 300
    assert alice.put_embeddings(MODEL, [(r.hash, v.tobytes()) for r, v in zip(rows, vectors)]) == 300
    assert alice.pending_embeddings(MODEL) == []
    query = random_unit(rng, 1)[0]
    exact = [f"c{i}" for i in np.argsort(1 - vectors @ query, kind="stable")[:10]]
    by_uid = {h.id: h.uid for h in alice.fetch_hits(list(range(1, 400))).values()}

    found = alice.vector_candidates(query, MODEL, Filters(), 10, ef_search=100)
    assert [by_uid[s.id] for s in found] == exact
    assert [s.score for s in found] == sorted(s.score for s in found)
    assert found[0].score == pytest.approx(float(1 - vectors[int(exact[0][1:])] @ query), abs=1e-5)
    narrow = alice.vector_candidates(query, MODEL, Filters(), 10, ef_search=1)  # iterative scans still fill k
    assert len(narrow) == 10
    facts = alice.vector_candidates(query, MODEL, Filters(kind="fact"), 5, ef_search=40)
    assert [by_uid[s.id] for s in facts] == [u for u in (f"c{i}" for i in np.argsort(1 - vectors @ query))
                                             if int(u[1:]) % 3 == 0][:5]
    with pytest.raises(ValueError, match="ef_search"):
        alice.vector_candidates(query, MODEL, Filters(), 10, ef_search=0)
    # a filter that lets more than EXACT_MAX chunks through goes through the index first, with the same answer
    monkeypatch.setattr(postgres, "EXACT_MAX", 50)
    monkeypatch.setattr(PgStore, "_exact", staticmethod(lambda *a, **k: pytest.fail("the exact scan ran")))
    wide = alice.vector_candidates(query, MODEL, Filters(kind="note"), 5, ef_search=100)
    assert [by_uid[s.id] for s in wide] == [u for u in (f"c{i}" for i in np.argsort(1 - vectors @ query))
                                            if int(u[1:]) % 3][:5]
    monkeypatch.undo()

    sent: list[tuple[str, str]] = []  # what the store sends: ef_search is set in the search's own transaction
    execute = psycopg.Connection.execute

    def recording(conn, query, params=None, **kw):
        text = query.as_string(conn) if isinstance(query, psycopg.sql.Composable) else query
        sent.append((conn.info.transaction_status.name, text.split(" FROM ")[0][:60]))
        return execute(conn, query, params, **kw)

    monkeypatch.setattr(psycopg.Connection, "execute", recording)
    alice.vector_candidates(query, MODEL, Filters(), 10, ef_search=7)
    monkeypatch.undo()
    assert ("INTRANS", "SET LOCAL hnsw.ef_search = 7") in sent
    assert sent.index(("INTRANS", "SET LOCAL hnsw.ef_search = 7")) < next(
        i for i, (_, text) in enumerate(sent) if text.startswith("WITH near"))

    def plan() -> str:
        with psycopg.connect(team.urls["alice"]) as conn:
            from pgvector.psycopg import register_vector

            register_vector(conn)
            conn.execute("SET hnsw.ef_search = 100")
            return "\n".join(r[0] for r in conn.execute(
                psycopg.sql.SQL("EXPLAIN ") + PgStore.knn_sql(DIM, psycopg.sql.SQL("true")),
                [query, MODEL, query, 64, 10]))

    assert "vectors_hnsw_" in plan()  # the approximate query really runs on the HNSW index
    with psycopg.connect(team.admin_url, autocommit=True) as admin:
        admin.execute("ANALYZE")
    # the policy is checked on each vector read (a function), never by hashing every visible chunk's content
    # first, which the planner chose for an EXISTS once the tables had statistics (53 ms a search at 100k chunks)
    analyzed = plan()
    assert "content_visible" in analyzed and "hashed SubPlan" not in analyzed and "chunks c_1" not in analyzed


def test_fetch_hits_and_meta(team):
    alice, bob = team.store("alice"), team.store("bob")
    alice.write_batch(source("/m/a.md"), [chunk("a1", "text", title="T", line_start=3, line_end=9,
                                                ts="2026-05-01T10:00:00", session_id="s1", project="p", speaker="Mel")])
    [hit] = alice.fetch_hits([alice.lexical_top_k(terms("text"), "AND", Filters(), 1)[0].id, 999_999]).values()
    assert (hit.uid, hit.title, hit.line_start, hit.line_end, hit.session_id, hit.project, hit.speaker, hit.owner,
            hit.scope) == ("a1", "T", 3, 9, "s1", "p", "Mel", "alice", "private")
    [(row, where, _)] = alice.find_uid_prefix("a1")
    assert (row.speaker, row.owner, where) == ("Mel", "alice", "alice:/m/a.md")
    assert alice.get_meta("last_indexed") is None
    alice.set_meta("last_indexed", "2026-05-01T10:00:00")
    alice.set_meta("last_indexed", "2026-05-02T10:00:00")
    assert alice.get_meta("last_indexed") == "2026-05-02T10:00:00"
    assert bob.get_meta("last_indexed") is None  # meta is each member's own
    alice.set_meta("last_indexed", None)
    assert alice.get_meta("last_indexed") is None


def alice_writes_team_memory(alice: PgStore) -> None:
    alice.write_batch(source("/alice/notes/deploy.md"), [
        chunk("a-shared", "the release checklist: run migrations before deploy", scope="shared", hash="H-shared"),
        chunk("a-private", "my private note about the release", hash="H-private"),
    ])
    alice.write_batch(source("/alice/events/s1.jsonl", "events"), [
        chunk("a-event", "alice asked about the release password rotation", kind="event", session_id="s1",
              hash="H-event"),
    ])


def test_member_b_sees_a_shared_notes_and_never_a_events(team):
    alice, bob = team.store("alice"), team.store("bob")
    alice_writes_team_memory(alice)
    bob.write_batch(source("/bob/notes/x.md"), [chunk("b-own", "bob's release notes", hash="H-bob")])
    assert uids(alice, lexical(alice, "release")) == {"a-shared", "a-private", "a-event", "b-own"} - {"b-own"}
    assert uids(bob, lexical(bob, "release")) == {"a-shared", "b-own"}
    assert uids(bob, lexical(bob, "password rotation", op="OR")) == set()
    health = bob.health(None)
    assert (health.chunks, health.own_chunks, health.shared_by_others) == (2, 1, 1)
    all_ids = [h.id for h in alice.fetch_hits(range(1, 100)).values()]
    assert uids(bob, all_ids) == {"a-shared"}  # fetching by id is filtered too
    assert bob.delete_source("/alice/events/s1.jsonl") == 0
    assert uids(alice, lexical(alice, "password")) == {"a-event"}


def test_raw_sql_as_member_b_cannot_read_or_change_a_private_rows(team):
    alice = team.store("alice")
    alice_writes_team_memory(alice)
    with psycopg.connect(team.urls["bob"], autocommit=True) as bob:
        seen = bob.execute("SELECT uid FROM memsearch.chunks WHERE owner = 'alice'").fetchall()
        assert seen == [("a-shared",)]
        assert bob.execute("SELECT count(*) FROM memsearch.sources").fetchone()[0] == 0
        assert bob.execute("UPDATE memsearch.chunks SET scope = 'shared' WHERE uid = 'a-private'").rowcount == 0
        assert bob.execute("DELETE FROM memsearch.chunks WHERE owner = 'alice'").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            bob.execute("INSERT INTO memsearch.sources(owner, path, source, mtime_ns, size)"
                        " VALUES ('alice', '/x', 'notes', 1, 1)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            bob.execute("ALTER TABLE memsearch.chunks DISABLE ROW LEVEL SECURITY")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            bob.execute("SET ROLE alice")
    with psycopg.connect(team.urls["alice"], autocommit=True) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute("UPDATE memsearch.chunks SET scope = 'shared' WHERE uid = 'a-event'")  # events stay private
    assert uids(alice, lexical(alice, "release")) == {"a-shared", "a-private", "a-event"}


def test_a_vector_is_computed_once_per_hash_and_model_for_the_team(team):
    alice, bob = team.store("alice"), team.store("bob")
    alice_writes_team_memory(alice)
    rng = np.random.default_rng(1)
    todo = alice.pending_embeddings(MODEL)
    assert {p.hash for p in todo} == {"H-shared", "H-private", "H-event"}
    alice.put_embeddings(MODEL, [(p.hash, v) for p, v in zip(todo, random_unit(rng, len(todo)))])
    # bob's own note holding the same content as alice's private one: the vector is reused, not recomputed
    bob.write_batch(source("/bob/notes/same.md"), [chunk("b-same", "my private note about the release",
                                                         hash="H-private"), chunk("b-new", "new", hash="H-new")])
    assert [p.hash for p in bob.pending_embeddings(MODEL)] == ["H-new"]
    assert bob.put_embeddings(MODEL, [("H-private", random_unit(rng, 1)[0])]) == 0
    with psycopg.connect(team.urls["bob"]) as conn:  # and alice's event's vector stays out of bob's reach
        assert {r[0] for r in conn.execute("SELECT hash FROM memsearch.vectors")} == {"H-shared", "H-private"}
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO memsearch.vectors(hash, model) VALUES ('H-event', 'other')")
    with psycopg.connect(team.admin_url) as admin:
        assert admin.execute("SELECT count(*) FROM memsearch.vectors WHERE hash = 'H-private'").fetchone()[0] == 1
    assert bob.health(MODEL).vectors == 2
    assert bob.health(MODEL).pending_embeddings == 1


def test_two_members_write_and_search_at_once(team):
    from concurrent.futures import ThreadPoolExecutor

    stores = {"alice": team.store("alice"), "bob": team.store("bob")}

    def writer(role: str, worker: int) -> int:
        added = 0
        for batch in range(5):
            rows = [chunk(f"{role}-{worker}-{batch}-{i}", f"{role} wrote deployment note {i}", seq=i,
                          scope="shared" if i % 2 else "private") for i in range(20)]
            added += stores[role].write_batch(source(f"/{role}/{worker}/{batch}.md"), rows)
        return added

    def searcher() -> set[str]:
        seen: set[str] = set()
        for _ in range(20):
            seen |= uids(stores["bob"], lexical(stores["bob"], "deployment note", limit=50))
        return seen

    with ThreadPoolExecutor(5) as pool:
        writes = [pool.submit(writer, role, w) for role in stores for w in range(2)]
        searching = pool.submit(searcher)
        assert [f.result() for f in writes] == [100] * 4
        seen_by_bob = searching.result()
    # while the writes ran, bob's searches saw his own chunks and alice's shared ones (odd i), never her private
    assert all(u.startswith("bob-") or int(u.rsplit("-", 1)[1]) % 2 for u in seen_by_bob)
    for role in stores:
        health = stores[role].health(None)
        assert (health.own_chunks, health.shared_by_others, health.sources) == (200, 100, 10)


def test_migrations_and_the_admin_script_run_again_without_change(team, pg_server):
    with psycopg.connect(team.admin_url, autocommit=True) as admin:
        before = admin.execute("SELECT version FROM memsearch.schema_version ORDER BY version").fetchall()
        assert migrate(admin) == SCHEMA_VERSION
        admin.execute(team_init_sql(["alice", "bob", "carol"], [(MODEL, DIM)]))  # the printed script, re-run
        assert admin.execute("SELECT version FROM memsearch.schema_version ORDER BY version").fetchall() == before
        assert before == [(n,) for n in range(1, SCHEMA_VERSION + 1)]
        policies = admin.execute("SELECT count(*) FROM pg_policies WHERE schemaname = 'memsearch'").fetchone()[0]
    assert apply_team_init(team.admin_url, ["alice"], [(MODEL, DIM)]) == SCHEMA_VERSION
    with psycopg.connect(team.admin_url) as admin:
        assert admin.execute("SELECT count(*) FROM pg_policies WHERE schemaname = 'memsearch'").fetchone()[0] == (
            policies)
        assert schema_version(admin) == SCHEMA_VERSION


def test_a_version_4_team_database_gains_reply_to_and_keeps_its_rows(pg_server):
    """The schema before events carried the turn they reply to: its rows stay, with '' (what their hash was made
    of), and a member's store opens on the upgraded database and writes and reads the new column."""
    name = f"v4_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = pg_server.url(database=name)
    try:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(EXTENSION_SQL)
            for number, text in MIGRATIONS[:4]:
                admin.execute(text)
                admin.execute(record_version_sql(number))
            assert schema_version(admin) == 4
            admin.execute("INSERT INTO memsearch.sources(path, source, mtime_ns, size) VALUES ('/e', 'events', 1, 1)")
            admin.execute("INSERT INTO memsearch.chunks(uid, hash, source, path, seq, kind, text, fts)"
                          " VALUES ('old', 'H0', '/e', 'e', 0, 'event', 'an older turn', ''::tsvector)")
            assert migrate(admin) == SCHEMA_VERSION
            assert admin.execute("SELECT uid, reply_to FROM memsearch.chunks").fetchall() == [("old", "")]
            # migration 7 starts the kept counts from the rows already there
            assert admin.execute("SELECT owner, scope, kind, chunks FROM memsearch.counts").fetchall() == [
                ("postgres", "private", "event", 1)]
        store = PgStore(url)
        try:
            assert [(p.hash, p.reply_to) for p in store.pending_embeddings(MODEL)] == [("H0", "")]
            store.write_batch(source("/f", "events"), [chunk("new", "Yes.", kind="event", hash="H1", speaker="Jon",
                                                             reply_to="Still running?")])
            pending = {p.hash: p for p in store.pending_embeddings(MODEL)}
            assert pending["H1"].reply_to == "Still running?" and pending["H1"].input == (
                "Jon: Yes.\n(in reply to: Still running?)")
        finally:
            store.close()
    finally:
        with psycopg.connect(pg_server.url(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_a_member_store_refuses_a_database_without_the_schema(pg_server):
    name = f"empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with pytest.raises(StoreUnavailable, match="schema version 0") as raised:
            PgStore(pg_server.url(database=name))
        assert pg_server.password not in str(raised.value)
        assert "postgres:***@" in str(raised.value)
    finally:
        with psycopg.connect(pg_server.url(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}"')


def test_an_unreachable_or_refused_database_is_one_line_without_the_password(pg_server):
    wrong = pg_server.url("alice", "not-the-password-42")
    with pytest.raises(StoreUnavailable) as raised:
        PgStore(wrong, timeout=3)
    assert "not-the-password-42" not in str(raised.value) and "alice:***@" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_mask_url_hides_every_password_form():
    assert mask_url("postgresql://alice:s3cr%40t@db:5432/m") == "postgresql://alice:***@db:5432/m"
    assert mask_url("postgresql://alice@db/m") == "postgresql://alice@db/m"
    assert "s3cret" not in mask_url("postgresql:///m?host=/run&password=s3cret")
    assert mask_url("dbname=m password=s3cret user=a") == "dbname=m password=*** user=a"
    assert "s3cret" not in mask_url("host=db PASSWORD = 's3 cret'")
    assert "s3cret" not in mask_url("postgresql://u:s3cret@[::1]:5432/m")


def test_pg_schema_docstring_examples():
    import doctest

    import indexer.base.dburl
    import indexer.store.pg_schema

    results = [doctest.testmod(indexer.store.pg_schema), doctest.testmod(indexer.base.dburl)]  # mask_url moved there
    assert sum(r.attempted for r in results) >= 5 and sum(r.failed for r in results) == 0


def test_team_init_cli_prints_and_applies(pg_server):
    printed = subprocess.run([MEMSEARCH, "team", "init", "--member", "dave"], capture_output=True, text=True)
    assert printed.returncode == 0 and 'CREATE ROLE "dave" LOGIN' in printed.stdout
    assert "ENABLE ROW LEVEL SECURITY" in printed.stdout and "USING hnsw" in printed.stdout
    deferred = subprocess.run([MEMSEARCH, "team", "init", "--defer-vector-index"], capture_output=True, text=True)
    assert deferred.returncode == 0 and "ENABLE ROW LEVEL SECURITY" in deferred.stdout
    assert "USING hnsw ((embedding" not in deferred.stdout  # the index the first import builds afterwards
    bad = subprocess.run([MEMSEARCH, "team", "init", "--member", "Robert'); DROP"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("Error: invalid member name") and bad.stdout == ""
    name = f"cli_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        applied = subprocess.run([MEMSEARCH, "team", "init", "--member", "dave", "--apply"], capture_output=True,
                                 text=True, env={"MEMSEARCH_ADMIN_URL": pg_server.url(database=name), "PATH": "/usr/bin"})
        assert applied.returncode == 0, applied.stderr
        assert f"team schema version {SCHEMA_VERSION} applied" in applied.stdout
        assert pg_server.password not in applied.stdout + applied.stderr
        with psycopg.connect(pg_server.url(database=name)) as admin:
            assert admin.execute("SELECT pg_has_role('dave', 'memsearch_member', 'member')").fetchone()[0]
    finally:
        with psycopg.connect(pg_server.url(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.mark.model
def test_the_bundled_model_vectors_go_through_its_hnsw_index(team, real_embedder):
    from indexer.base.chunktext import embed_input

    alice, bob = team.store("alice"), team.store("bob")
    alice.write_batch(source("/alice/notes/ops.md"), [
        chunk("ship", "To release to production, tag the commit and let the pipeline deploy it", scope="shared"),
        chunk("cook", "A recipe for sourdough bread with a long cold proof", scope="shared"),
        chunk("cats", "The cat sleeps on the warm windowsill all afternoon", scope="shared"),
    ])
    todo = alice.pending_embeddings(BUNDLED_ID)
    vectors = real_embedder.embed_passages([embed_input(p.title, p.text, p.speaker, p.ts) for p in todo])
    assert alice.put_embeddings(BUNDLED_ID, list(zip([p.hash for p in todo], vectors))) == 3
    # a second model's narrower vectors share the table, each model behind its own partial HNSW index
    alice.put_embeddings(MODEL, [(p.hash, v) for p, v in zip(todo, random_unit(np.random.default_rng(3), 3))])
    found = bob.vector_candidates(real_embedder.embed_query("how do we ship a new version?"), BUNDLED_ID,
                                  Filters(), 3, ef_search=40)
    assert [bob.fetch_hits([s.id])[s.id].uid for s in found][0] == "ship"
    assert bob.pending_embeddings(BUNDLED_ID) == []
    assert len(bob.vector_candidates(random_unit(np.random.default_rng(4), 1)[0], MODEL, Filters(), 3)) == 3


def test_raw_queries_the_lexical_expression_and_the_vector_model(team):
    alice = team.store("alice")
    assert isinstance(alice, Store)
    alice.write_batch(source("/m/raw.md"), [chunk("deploy", "We were deploying the servers on Friday"),
                                           chunk("api", "the servers of another project deploy nightly")])
    assert uids(alice, [s.id for s in alice.lexical_native("deploy & friday", Filters(), 10)]) == {"deploy"}
    assert uids(alice, [s.id for s in alice.lexical_native("friday | nightly", Filters(), 10)]) == {"deploy", "api"}
    with pytest.raises(UsageError) as raised:
        alice.lexical_native("deploy & & (", Filters(), 10)
    assert "\n" not in str(raised.value) and "drop --raw" in str(raised.value)
    assert alice.lexical_expression(content_terms(terms("deploy 東京")), "AND") == (
        "plainto_tsquery('deploy') && (phraseto_tsquery('東京'))")
    # the model of the vectors she sees, whoever sent them: not the meta of her own last sync
    alice.set_meta("vector_model", "her-laptop-model@1")
    assert alice.vector_model() is None and not alice.holds_vectors(MODEL)
    alice.put_embeddings(MODEL, [("hash-deploy", random_unit(np.random.default_rng(7), 1)[0])])
    assert alice.vector_model() == MODEL and alice.holds_vectors(MODEL)
    bob = team.store("bob")  # her notes are private: bob sees none of their vectors
    assert bob.vector_model() is None and not bob.holds_vectors(MODEL)


def test_browsing_and_forget_see_and_touch_only_what_row_level_security_allows(team):
    alice, bob = team.store("alice"), team.store("bob")
    alice_writes_team_memory(alice)
    bob.write_batch(source("/bob/notes/x.md"), [chunk("b-own", "bob's release notes", hash="H-bob")])
    # bob finds alice's shared note by id, never her private note or her event
    found = {uid: [(row.uid, row.owner) for row, _, _ in bob.find_uid_prefix(uid)] for uid in ("a-shared", "a-private",
                                                                                          "a-event")}
    assert found == {"a-shared": [("a-shared", "alice")], "a-private": [], "a-event": []}
    ((_, file, seq),) = bob.find_uid_prefix("a-shared")
    assert bob.neighbours(file, seq) == (None, None, 1)  # her private chunk of that file is not counted
    ((_, file, seq),) = alice.find_uid_prefix("a-shared")
    assert alice.neighbours(file, seq) == (None, None, 2)
    assert bob.event_counts() == ({}, {}, 0) and alice.event_counts()[2] == 1
    assert {r.uid for r in bob.recent_rows()} == {"b-own", "a-shared"}
    # forget: bob cannot delete alice's rows, shared or not, through the store or raw SQL
    assert bob.delete_uids(["a-shared", "a-private", "a-event"]) == 0
    with psycopg.connect(team.urls["bob"], autocommit=True) as raw:
        assert raw.execute("DELETE FROM memsearch.chunks WHERE uid = 'a-shared'").rowcount == 0
    assert all(alice.find_uid_prefix(uid) for uid in ("a-shared", "a-private", "a-event"))
    assert alice.delete_uids(["a-shared", "b-own"]) == 1  # her own one only
    assert bob.find_uid_prefix("a-shared") == [] and [r.uid for r, _, _ in bob.find_uid_prefix("b-own")] == ["b-own"]


def kept_counts(conn: psycopg.Connection) -> dict[str, list[tuple]]:
    """The kept counts; of ``counts`` and ``contents`` the rows not at 0 (a group's rows stay when it empties)."""
    return {table: conn.execute(f"SELECT * FROM memsearch.{table} WHERE {nonzero} ORDER BY 1, 2, 3").fetchall()
            for table, nonzero in (("counts", "chunks <> 0"), ("lexemes", "true"), ("hashes", "true"),
                                   ("contents", "hashes <> 0 OR vectors <> 0"))}


def test_the_kept_counts_stay_what_a_recount_of_the_rows_gives(team):
    """Writes, deletes, scope changes, vectors and forgets by two members (the same content in both, shared and
    private): the counts the triggers keep equal the ones computed from the rows."""
    from indexer.store.pg_schema import RECOUNT_SQL

    alice, bob = team.store("alice"), team.store("bob")
    rng = np.random.default_rng(11)
    alice_writes_team_memory(alice)
    bob.write_batch(source("/bob/notes/same.md"), [
        chunk("b-same", "the release checklist: run migrations before deploy", hash="H-shared", scope="shared"),
        chunk("b-twice", "the release checklist: run migrations before deploy", hash="H-shared", seq=1),
        chunk("b-own", "bob's deploy notes", hash="H-bob", seq=2)])
    alice.put_embeddings(MODEL, [("H-shared", random_unit(rng, 1)[0]), ("H-event", None)])
    bob.put_embeddings(MODEL, [("H-bob", random_unit(rng, 1)[0])])
    alice.replace_source(source("/alice/notes/deploy.md"), [  # un-shared, one chunk gone, one new
        chunk("a-shared", "the release checklist: run migrations before deploy", hash="H-shared"),
        chunk("a-new", "a new line about the deploy window", hash="H-new", seq=1)])
    bob.delete_uids(["b-twice"])
    alice.delete_source("/alice/events/s1.jsonl")
    with psycopg.connect(team.admin_url) as admin:
        kept = kept_counts(admin)
        with admin.transaction(force_rollback=True):
            admin.execute(RECOUNT_SQL)
            assert kept_counts(admin) == kept
    assert kept["counts"] == [("alice", "private", "note", 2), ("bob", "private", "note", 1),
                              ("bob", "shared", "note", 1)]
    assert bob.health(MODEL).pending_embeddings == 0 and alice.health(MODEL).pending_embeddings == 1  # H-new
    # H-shared is in alice's private group and bob's shared one: alice counts it in each (bob: H-shared, H-bob)
    assert (alice.health(MODEL).vectors, bob.health(MODEL).vectors) == (2, 2)


def test_member_search_reads_the_gin_index_and_row_level_security_still_filters(team):
    alice, bob = team.store("alice"), team.store("bob")
    alice_writes_team_memory(alice)
    with psycopg.connect(team.urls["bob"]) as conn:
        conn.execute("SET enable_seqscan = off")  # a 3-row table: say which plans the member's query may use
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM memsearch.chunks WHERE fts OPERATOR(memsearch.@@) 'releas'::tsquery"))
        assert "Index Cond" in plan and "chunks_fts_match" in plan
        plan = "\n".join(r[0] for r in conn.execute(  # the built-in @@ cannot go before the policy's condition
            "EXPLAIN SELECT id FROM memsearch.chunks WHERE fts @@ 'releas'::tsquery"))
        assert "Index Cond" not in plan
        assert conn.execute("SELECT uid FROM memsearch.chunks WHERE fts OPERATOR(memsearch.@@) 'releas'::tsquery"
                            ).fetchall() == [("a-shared",)]
    # document frequencies among the chunks each member sees: bob sees one of alice's three "release" chunks
    with alice.pool.connection() as conn:
        assert alice.term_frequencies(conn, ["'releas'", "'password' & 'rotat'", "'zzz'"]) == (3, [3, 1, 0])
    with bob.pool.connection() as conn:
        assert bob.term_frequencies(conn, ["'releas'", "'password' & 'rotat'"]) == (1, [1, 0])
    assert uids(bob, lexical(bob, "release password", op="OR")) == {"a-shared"}


def test_lexical_or_reads_the_rarest_terms_and_ranks_by_idf(team, monkeypatch):
    """An OR query's candidates are the chunks of its rarest terms within the budget, the rare term's holders
    first; the chunks of the common term join them only when those are too few to fill the list, and then at most
    the budget of them."""
    import indexer.store.postgres as pg

    alice = team.store("alice")
    rows = [chunk(f"common{i}", f"the pipeline step {i} ran", seq=i) for i in range(30)]
    rows += [chunk("rare", "the flamingo pipeline", seq=30), chunk("rare-only", "a flamingo", seq=31)]
    alice.write_batch(source("/m/p.md"), rows)
    everything = {f"common{i}" for i in range(30)} | {"rare", "rare-only"}
    ranked = lexical(alice, "flamingo pipeline", op="OR", limit=50)
    assert uids(alice, ranked) == everything and uids(alice, ranked[:2]) == {"rare", "rare-only"}
    monkeypatch.setattr(pg, "CANDIDATES", 10)  # the common term's 31 chunks exceed it
    capped = lexical(alice, "flamingo pipeline", op="OR", limit=50)  # 2 rare ones cannot fill 50: 10 others join
    assert capped[:2] == ranked[:2] and len(capped) == 12 and uids(alice, capped[2:]) < everything
    monkeypatch.setattr(pg, "RESCORED", 1)  # 2 candidates for a list of 2: the common term's chunks are not read
    assert lexical(alice, "flamingo pipeline", op="OR", limit=2) == ranked[:2]


def test_forget_drops_the_vectors_no_chunk_holds_and_never_one_another_member_uses(team):
    """bob's forget of his copy of alice's content keeps the vector her chunks use; alice's forget of content no
    one else holds removes its vector; a member cannot call the cleanup on a vector that is still used, nor delete
    vectors with raw SQL."""
    alice, bob = team.store("alice"), team.store("bob")
    rng = np.random.default_rng(4)
    alice_writes_team_memory(alice)
    bob.write_batch(source("/bob/notes/copy.md"), [
        chunk("b-copy", "the release checklist: run migrations before deploy", hash="H-shared"),
        chunk("b-only", "bob's own thought", hash="H-bob", seq=1)])
    alice.put_embeddings(MODEL, [(h, random_unit(rng, 1)[0]) for h in ("H-shared", "H-private", "H-event")])
    bob.put_embeddings(MODEL, [("H-bob", random_unit(rng, 1)[0])])

    def vectors() -> set[str]:
        with psycopg.connect(team.admin_url) as admin:
            return {r[0] for r in admin.execute("SELECT hash FROM memsearch.vectors")}

    assert vectors() == {"H-shared", "H-private", "H-event", "H-bob"}
    assert bob.delete_uids(["b-copy", "b-only"]) == 2
    assert vectors() == {"H-shared", "H-private", "H-event"}  # H-shared: alice's note still holds it
    with psycopg.connect(team.urls["bob"], autocommit=True) as raw:
        assert raw.execute("SELECT memsearch.drop_orphan_vectors(ARRAY['H-shared', 'H-private', 'H-event'])"
                           ).fetchone()[0] == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            raw.execute("DELETE FROM memsearch.vectors")
    assert alice.delete_uids(["a-private", "a-event"]) == 2
    assert vectors() == {"H-shared"}
    assert alice.delete_uids(["a-shared"]) == 1 and vectors() == set()
    assert alice.health(MODEL).vectors == 0


def test_probe_member_reads_what_a_role_may_do_and_writes_nothing(team, pg_server):
    """A member: every grant and its own rows; a login role outside the member group: what it lacks, in one line
    each, and why reading its rows fails; the superuser: said to bypass row-level security."""
    from indexer.store.pg_admin import probe_member

    alice = probe_member(team.urls["alice"])
    assert (alice.role, alice.schema_version, alice.bypasses_rls, alice.missing, alice.read_error) == (
        "alice", SCHEMA_VERSION, None, (), None)
    with psycopg.connect(team.admin_url, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS outsider")
        admin.execute("CREATE ROLE outsider LOGIN PASSWORD 'outsider-pw'")
        try:
            outsider = probe_member(pg_server.url("outsider", "outsider-pw", team.db))
        finally:
            admin.execute("DROP ROLE outsider")
    assert outsider.role == "outsider" and outsider.bypasses_rls is None
    assert (outsider.schema_version, outsider.missing) == (None, (
        "USAGE on schema memsearch (not in memsearch_member)",))
    with psycopg.connect(team.admin_url, autocommit=True) as admin:  # the schema readable, the tables not
        admin.execute("CREATE ROLE outsider LOGIN PASSWORD 'outsider-pw'")
        admin.execute("GRANT USAGE ON SCHEMA memsearch TO outsider")
        admin.execute("GRANT SELECT ON memsearch.schema_version TO outsider")
        try:
            outsider = probe_member(pg_server.url("outsider", "outsider-pw", team.db))
        finally:
            admin.execute("DROP OWNED BY outsider")
            admin.execute("DROP ROLE outsider")
    assert outsider.schema_version == SCHEMA_VERSION and outsider.missing[0] == "member of memsearch_member"
    assert "INSERT on memsearch.chunks" in outsider.missing and outsider.read_error.startswith("permission denied")
    assert probe_member(team.admin_url).bypasses_rls == "superuser"
    with pytest.raises(StoreUnavailable) as refused:
        probe_member(team.urls["alice"].replace("alice-pw-Zq9", "wrong-pw-7"))
    assert "wrong-pw-7" not in str(refused.value) and "\n" not in str(refused.value)
