"""What is asked of the team database outside a member's :class:`~indexer.store.postgres.PgStore`: ``memsearch
doctor``'s look at what the connecting member may do there (:func:`probe_member`, read-only), and the
administrator's removal of a member (:func:`remove_member`, with :func:`member_holdings` before it).

A member's rows are theirs by ``owner`` (see :mod:`indexer.store.pg_schema`), so removing a member is: no more
logins, their sessions ended (a sync stopped mid-way may still hold its temporary staging table, which would keep
``DROP ROLE`` from running), then in one transaction their chunks, sources and meta deleted, the vectors of the
content no remaining chunk holds deleted (the schema's ``drop_orphan_vectors``, as a forget does), whatever else
the role owns in the database handed to the administrator, its grants revoked, and the role dropped.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import psycopg
from psycopg import sql

from indexer.base.errors import NotFound, one_line
from indexer.base.reports import MemberRemoval
from indexer.store.pg_schema import MEMBER_ROLE, SCHEMA, check_role, mask_url
from indexer.store.postgres import StoreUnavailable, schema_version

#: Seconds ``memsearch doctor`` waits for the team database (libpq's ``connect_timeout`` counts whole seconds, at
#: least 2): a stopped server or a wrong port answers at once, a host that drops packets costs this.
PROBE_TIMEOUT = 2
#: Milliseconds :func:`remove_member` waits for each of the member's sessions to end once told to.
TERMINATE_WAIT_MS = 5000
#: What a member needs on the schema's tables (the grants ``team init`` gives the member group).
MEMBER_PRIVILEGES = (("chunks", "SELECT, INSERT, UPDATE, DELETE"), ("sources", "SELECT, INSERT, UPDATE, DELETE"),
                     ("meta", "SELECT, INSERT, UPDATE, DELETE"), ("vectors", "SELECT, INSERT"))
#: Seconds the removal's transaction waits for a lock before it fails (and changes nothing).
LOCK_WAIT_S = 30
#: The kept counts (migration 7): a removed member's rows there are all zero once their chunks are gone.
_COUNT_TABLES = ("counts", "lexemes", "hashes", "contents")


@dataclass(frozen=True)
class MemberAccess:
    """What the role of a ``db_url`` is and may do on the team database (:func:`probe_member`)."""

    role: str
    #: 0: no schema there; None: the role may not read it.
    schema_version: int | None
    #: ``"superuser"`` or ``"bypassrls"`` when row-level security does not apply to the role, else None.
    bypasses_rls: str | None = None
    #: Grants the role lacks, e.g. ``("member of memsearch_member", "INSERT on memsearch.chunks")``.
    missing: tuple[str, ...] = ()
    own_sources: int = 0
    own_meta: int = 0
    #: Why reading its own rows failed (one line), or None.
    read_error: str | None = None
    connect_ms: int = 0
    #: How many of the chunk ids asked about (forgets still waiting) the role's own rows hold; None: not read.
    pending_held: int | None = None


def probe_member(url: str, timeout: int = PROBE_TIMEOUT, pending: Sequence[str] = ()) -> MemberAccess:
    """Connect to ``url`` (within ``timeout`` seconds) and see, in a read-only transaction rolled back at the end,
    the schema version, whether the role is a member with the grants a sync needs, its own sources and meta
    keys read through row-level security, and how many of the chunk ids ``pending`` (forgets that could not reach
    the database) its own rows still hold. Writes nothing. :class:`StoreUnavailable` (one line, password masked)
    when it cannot connect."""
    start = time.monotonic()
    try:
        conn = psycopg.connect(url, connect_timeout=max(2, int(timeout)))
    except psycopg.Error as exc:
        raise StoreUnavailable(f"cannot reach {mask_url(url)}: {one_line(exc)}") from None
    connect_ms = round((time.monotonic() - start) * 1000)
    with conn:
        try:
            conn.execute("SET TRANSACTION READ ONLY")
            role, superuser, bypass = conn.execute(
                "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user").fetchone() \
                or ("?", False, False)
            bypasses = "superuser" if superuser else "bypassrls" if bypass else None
            if _count(conn, "SELECT count(*) FROM pg_namespace WHERE nspname = %s", (SCHEMA,)) and not _count(
                    conn, "SELECT has_schema_privilege(current_user, %s, 'USAGE')::int", (SCHEMA,)):
                return MemberAccess(role=role, schema_version=None, connect_ms=connect_ms, bypasses_rls=bypasses,
                                    missing=(f"USAGE on schema {SCHEMA} (not in {MEMBER_ROLE})",))
            version = schema_version(conn)
            access = MemberAccess(role=role, schema_version=version, connect_ms=connect_ms, bypasses_rls=bypasses)
            if version == 0:
                return access
            missing = [] if _count(conn, "SELECT count(*) FROM pg_roles g WHERE g.rolname = %s"
                                         " AND pg_has_role(current_user, g.oid, 'member')", (MEMBER_ROLE,)) \
                else [f"member of {MEMBER_ROLE}"]
            for table, privileges in MEMBER_PRIVILEGES:
                for privilege in privileges.split(", "):
                    if not _count(conn, "SELECT coalesce(has_table_privilege(current_user, to_regclass(%s), %s),"
                                        " false)::int", (f"{SCHEMA}.{table}", privilege)):
                        missing.append(f"{privilege} on {SCHEMA}.{table}")
            access = replace(access, missing=tuple(missing))
            try:
                with conn.transaction():  # a savepoint: a refused read is the finding, the probe goes on
                    sources = _count(conn, f"SELECT count(*) FROM {SCHEMA}.sources WHERE owner = current_user")
                    meta = _count(conn, f"SELECT count(*) FROM {SCHEMA}.meta WHERE owner = current_user")
                    held = _count(conn, f"SELECT count(DISTINCT uid) FROM {SCHEMA}.chunks WHERE owner = current_user"
                                        " AND uid = ANY(%s)", (list(pending),)) if pending else 0
            except psycopg.Error as exc:
                return replace(access, read_error=one_line(exc))
            return replace(access, own_sources=sources, own_meta=meta, pending_held=held)
        except psycopg.Error as exc:
            raise StoreUnavailable(f"{mask_url(url)} answers but fails: {one_line(exc)}") from None
        finally:
            conn.rollback()  # nothing to keep: the transaction was read-only


def member_holdings(admin_url: str, name: str) -> MemberRemoval:
    """What :func:`remove_member` would remove for member ``name`` (counted as the administrator, whom row-level
    security does not filter); :class:`~indexer.base.errors.NotFound` in one line when ``name`` is not a member."""
    with _admin(admin_url) as conn:
        role = _member(conn, admin_url, name)
        chunks, sources, meta, vectors, sessions = conn.execute(
            f"SELECT (SELECT count(*) FROM {SCHEMA}.chunks WHERE owner = %(r)s),"
            f" (SELECT count(*) FROM {SCHEMA}.sources WHERE owner = %(r)s),"
            f" (SELECT count(*) FROM {SCHEMA}.meta WHERE owner = %(r)s),"
            f" (SELECT count(*) FROM {SCHEMA}.vectors v WHERE EXISTS (SELECT 1 FROM {SCHEMA}.chunks c"
            "   WHERE c.hash = v.hash AND c.owner = %(r)s)"
            f"  AND NOT EXISTS (SELECT 1 FROM {SCHEMA}.chunks c WHERE c.hash = v.hash AND c.owner <> %(r)s)),"
            " (SELECT count(*) FROM pg_stat_activity WHERE usename = %(r)s)", {"r": role}).fetchone() or (0,) * 5
    return MemberRemoval(member=role, database=mask_url(admin_url), chunks=chunks, sources=sources, meta=meta,
                         vectors=vectors, sessions=sessions)


def remove_member(admin_url: str, name: str) -> MemberRemoval:
    """Remove member ``name`` from the team database of ``admin_url`` (a superuser's URL): their login refused,
    their sessions ended (waiting for each to end, and with it any temporary table it held), then in one
    transaction their chunks, sources and meta deleted with the vectors no remaining chunk holds, what else they
    own in this database reassigned to the administrator, their grants revoked, and the role dropped.

    Refused (:class:`~indexer.base.errors.NotFound`, nothing changed) when ``name`` is not a login role in the
    member group (a superuser never is). Should the first step (``ALTER ROLE name NOLOGIN``) fail, as it does for a
    URL of a role not allowed to alter roles, nothing was changed and the member can still log in; should a later
    one fail, nothing of the transaction is kept and the role stays without login (run it again, or ``ALTER ROLE
    name LOGIN``). The error says which in one line."""
    with _admin(admin_url) as conn:
        role = _member(conn, admin_url, name)
        ident = sql.Identifier(role)
        try:
            conn.execute(sql.SQL("ALTER ROLE {} NOLOGIN").format(ident))
        except psycopg.Error as exc:
            raise StoreUnavailable(f"removing member {role} from {mask_url(admin_url)} failed at its first step "
                                   f"(ALTER ROLE {role} NOLOGIN: {one_line(exc)}): nothing was changed, and {role} "
                                   "can still log in: run it with the administrator's --admin-url (a role allowed to "
                                   "ALTER ROLE and DROP ROLE: a superuser's, as for `memsearch team init --apply`)"
                                   ) from None
        try:
            ended = _count(conn, "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, %s)) FROM pg_stat_activity"
                                 " WHERE usename = %s AND pid <> pg_backend_pid()", (TERMINATE_WAIT_MS, role))
            with conn.transaction():
                # a session that did not end in time would hold its staging table's lock: fail, never wait for good
                conn.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT_S}s'")
                hashes = [r[0] for r in conn.execute(f"DELETE FROM {SCHEMA}.chunks WHERE owner = %s RETURNING hash",
                                                     (role,))]
                sources = conn.execute(f"DELETE FROM {SCHEMA}.sources WHERE owner = %s", (role,)).rowcount
                meta = conn.execute(f"DELETE FROM {SCHEMA}.meta WHERE owner = %s", (role,)).rowcount
                vectors = _count(conn, f"SELECT {SCHEMA}.drop_orphan_vectors(%s)", (sorted(set(hashes)),))
                for table in _COUNT_TABLES:  # zeros once the chunks are gone; no row may name a dropped role
                    conn.execute(sql.SQL("DELETE FROM {} WHERE owner = %s").format(sql.Identifier(SCHEMA, table)),
                                 (role,))
                objects = _count(conn, "SELECT count(*) FROM pg_shdepend d JOIN pg_roles r ON r.oid = d.refobjid"
                                       " WHERE d.refclassid = 'pg_authid'::regclass AND d.deptype = 'o'"
                                       " AND r.rolname = %s AND d.dbid = (SELECT oid FROM pg_database"
                                       " WHERE datname = current_database())", (role,))
                conn.execute(sql.SQL("REASSIGN OWNED BY {} TO CURRENT_USER").format(ident))
                conn.execute(sql.SQL("DROP OWNED BY {}").format(ident))  # what is left: its grants
                conn.execute(sql.SQL("DROP ROLE {}").format(ident))
        except psycopg.Error as exc:
            raise StoreUnavailable(f"removing member {role} from {mask_url(admin_url)} failed: {one_line(exc)}; "
                                   f"nothing of theirs was deleted, and {role} cannot log in until this is run "
                                   f"again or `ALTER ROLE {role} LOGIN`") from None
    return MemberRemoval(member=role, database=mask_url(admin_url), chunks=len(hashes), sources=max(sources, 0),
                         meta=max(meta, 0), vectors=vectors, sessions=ended, objects=objects, role_dropped=True)


def _admin(admin_url: str) -> psycopg.Connection:
    try:
        return psycopg.connect(admin_url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise StoreUnavailable(f"cannot reach {mask_url(admin_url)}: {one_line(exc)}") from None


def _count(conn: psycopg.Connection, query: str, params: tuple | dict = ()) -> int:
    row = conn.execute(query, params).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _member(conn: psycopg.Connection, admin_url: str, name: str) -> str:
    """``name`` checked to be a member role of this team database (directly in the member group, not a superuser,
    not the administrator connecting); :class:`NotFound` naming the members otherwise."""
    role = check_role(name)
    where = mask_url(admin_url)
    try:
        if schema_version(conn) == 0:
            raise NotFound(f"{where} holds no memsearch team schema: nothing to remove "
                           "(is this the team database's URL?)")
        found = conn.execute(
            "SELECT r.rolname FROM pg_roles r JOIN pg_auth_members m ON m.member = r.oid"
            " JOIN pg_roles g ON g.oid = m.roleid WHERE g.rolname = %s AND NOT r.rolsuper AND r.rolname <> current_user"
            " ORDER BY 1", (MEMBER_ROLE,)).fetchall()
    except psycopg.Error as exc:
        raise StoreUnavailable(f"reading the members of {where} failed: {one_line(exc)}") from None
    members = [r[0] for r in found]
    if role not in members:
        raise NotFound(f"{role!r} is not a member role of the team database {where} "
                       f"(members: {', '.join(members) or 'none'}): nothing removed")
    return role
