"""A PostgreSQL for the benchmark and the evaluation to put team stores on: an administrator's URL (``--pg-url``)
or a throwaway local server (:mod:`scripts.pg_local`), and fresh databases on it, each with the team schema
(``memsearch team init``) and one member whose URL is what a user sets as ``db_url``."""

from __future__ import annotations

import sys
import time
from typing import Any

MEMBER, MEMBER_PASSWORD = "member", "member-pw"


class Server:
    """The administrator's URL of a PostgreSQL: ``url``, or a throwaway local server started with ``options``."""

    def __init__(self, url: str | None, options: dict[str, str] | None = None):
        self.local = None
        if url is None:
            from scripts.pg_local import start

            print(f"[{time.strftime('%H:%M:%S')}] starting a throwaway PostgreSQL 18 + pgvector (scripts/pg_local.py)",
                  file=sys.stderr, flush=True)
            self.local = start(options)
            url = self.local.url()
        self.url = url

    def database_url(self, database: str, user: str | None = None, password: str | None = None) -> str:
        from psycopg.conninfo import make_conninfo

        extra: dict[str, Any] = {"dbname": database}
        if user is not None:
            extra.update(user=user, password=password)
        return as_url(make_conninfo(self.url, **extra))

    def fresh_database(self, name: str, model: str | None, dim: int | None) -> tuple[str, str]:
        """A new database ``name`` (an older one of that name is dropped) with the team schema, the HNSW index of
        ``model`` and one member; returns (the administrator's URL, the member's URL)."""
        import psycopg
        from psycopg import sql

        from indexer.store.postgres import apply_team_init

        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        admin_url = self.database_url(name)
        apply_team_init(admin_url, [MEMBER], [(model, dim)] if model and dim else [])
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(MEMBER),
                                                                       sql.Literal(MEMBER_PASSWORD)))
        return admin_url, self.database_url(name, MEMBER, MEMBER_PASSWORD)

    def drop_database(self, name: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def stop(self) -> None:
        if self.local is not None:
            self.local.stop()


def as_url(conninfo: str) -> str:
    """A libpq key=value string as a ``postgresql://`` URL (what the db_url setting accepts).

    >>> as_url("user=member password=p@ss host=127.0.0.1 port=5433 dbname=team")
    'postgresql://member:p%40ss@127.0.0.1:5433/team'
    """
    from urllib.parse import quote

    from psycopg.conninfo import conninfo_to_dict

    d = conninfo_to_dict(conninfo)
    auth = quote(str(d.pop("user", "")), safe="")
    if "password" in d:
        auth += ":" + quote(str(d.pop("password")), safe="")
    host, port, db = d.pop("host", "127.0.0.1"), d.pop("port", "5432"), d.pop("dbname", "postgres")
    query = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in d.items())
    return f"postgresql://{auth}@{host}:{port}/{db}" + (f"?{query}" if query else "")
