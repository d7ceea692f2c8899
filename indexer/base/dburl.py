"""The team database's URL (the ``db_url`` setting): checked when the settings are built, and shown only masked.

A URL carries a password; nothing memsearch prints (``status``, errors, logs) may show it, so every display goes
through :func:`mask_url`, and a bad value is described without echoing it.

>>> check_db_url("postgresql://alice:s3cret@db.example/memory")
'postgresql://alice:s3cret@db.example/memory'
>>> mask_url("postgresql://alice:s3cret@db.example:5432/memory?sslmode=require")
'postgresql://alice:***@db.example:5432/memory?sslmode=require'
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

SCHEMES = ("postgresql", "postgres")


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
    """A short digest naming ``url`` without holding it (the warm server compares a caller's team database with
    its own by this)."""
    import hashlib

    return None if url is None else hashlib.sha256(url.encode()).hexdigest()[:16]


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
