"""The team database's URL (the ``db_url`` setting): checked when the settings are built, and shown only masked.

A URL carries a password; nothing memsearch prints (``status``, errors, logs) may show it, so every display goes
through :func:`mask_url`, and a bad value is described without echoing it.

>>> check_db_url("postgresql://alice:s3cret@db.example/memory")
'postgresql://alice:s3cret@db.example/memory'
>>> mask_url("postgresql://alice:s3cret@db.example:5432/memory?sslmode=require")
'postgresql://alice:***@db.example:5432/memory?sslmode=require'

Two digests name a URL without holding it: :func:`fingerprint`, of the whole URL (the connection, credentials
included), and :func:`database_id`, of the database and role it reaches (what was synced there, what waits to be
forgotten there), which a changed password or ``localhost`` for ``127.0.0.1`` leaves as it was.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

SCHEMES = ("postgresql", "postgres")
#: Names of this machine's loopback interface: one host for :func:`database_id`.
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
#: libpq's port when the URL gives none.
DEFAULT_PORT = 5432


def check_db_url(raw: object) -> str:
    """``raw`` if it is a ``postgresql://`` (or ``postgres://``) URL libpq can read; a ValueError saying what is
    expected (never quoting the value) otherwise."""
    expected = "a postgresql://user:password@host:port/database URL"
    if not isinstance(raw, str) or not raw.strip() or any(ch.isspace() or ord(ch) < 32 for ch in raw.strip()):
        raise ValueError(expected)
    url = raw.strip()
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number raises here
    except ValueError:
        raise ValueError(expected) from None
    if parts.scheme.lower() not in SCHEMES or not (parts.netloc or parts.path.strip("/")):
        raise ValueError(expected)
    return url


def fingerprint(url: str | None) -> str | None:
    """A short digest of the whole ``url``, password included: the connection itself. The warm server answers a
    caller only when it would connect as the caller would, and the memo of a failed connection is tried again at
    once when the URL changes (a corrected password). What names the database is :func:`database_id`."""
    import hashlib

    return None if url is None else hashlib.sha256(url.encode()).hexdigest()[:16]


def database_id(url: str | None) -> str | None:
    """A short digest of the database ``url`` reaches as which role: the user, the host (``localhost``,
    ``127.0.0.1`` and ``::1`` are one), the port (5432 when none is given) and the database name (the user's when
    none is given, as libpq does), never the password. What this memory root synced there and the forgets waiting
    for it are keyed by this, so they stay when the password changes.

    >>> database_id("postgresql://alice:one@localhost/memory") == database_id("postgres://alice:two@127.0.0.1:5432/memory")
    True
    >>> database_id("postgresql://alice@db/memory") == database_id("postgresql://bob@db/memory")
    False
    """
    import hashlib

    if url is None:
        return None
    try:
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        user = unquote(parts.username or "") or query.get("user", "")
        host = (parts.hostname or unquote(query.get("host", ""))).lower()
        port = parts.port or int(query.get("port") or DEFAULT_PORT)
        name = unquote(parts.path.lstrip("/")) or query.get("dbname", "") or user
    except ValueError:  # not a URL (checked settings never hold one): the whole text names it
        return fingerprint(url)
    host = "localhost" if host in LOOPBACK else host
    return hashlib.sha256("\0".join((user, host, str(port), name)).encode()).hexdigest()[:16]


_DSN_PASSWORD_RE = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def mask_url(url: str) -> str:
    """``url`` with any password replaced by ``***``, for display (status and errors never show credentials).
    Takes a ``postgresql://`` URL (password in the authority or as a ``password=`` parameter) or a key=value DSN.

    >>> mask_url("host=db user=bob password='a b'")
    'host=db user=bob password=***'
    >>> mask_url("postgres://bob@db/m?password=x&sslmode=verify-full")
    'postgres://bob@db/m?password=%2A%2A%2A&sslmode=verify-full'
    """
    if "://" not in url:
        return _DSN_PASSWORD_RE.sub(r"\1***", url)
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hosts = netloc.rpartition("@")
            if ":" in userinfo:
                userinfo = userinfo.split(":", 1)[0] + ":***"
            netloc = f"{userinfo}@{hosts}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(k.lower() == "password" for k, _ in pairs):
                query = urlencode([(k, "***" if k.lower() == "password" else v) for k, v in pairs], quote_via=quote)
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "<a database URL that cannot be parsed (hidden)>"
