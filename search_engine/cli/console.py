"""The ``memsearch`` console script. ``memsearch search`` while a warm server runs for the memory root is answered
here, without loading the command-line framework: Typer (with the pydantic it validates options by) costs a
``memsearch search`` process about four times what the server's answer does. Every other command, a search
without a running server, and any argument this parser is not sure of go to the Typer app
(:mod:`search_engine.cli.main`), which gives the same output and the errors users know; a test holds the two
parsers to the same options.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


class _Unsure(Exception):
    """An argument list this parser leaves to the Typer app."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        """argparse would print and exit: the Typer app says it better."""
        raise _Unsure(message)


def _home(value: str) -> Path:
    if not value.strip():
        raise ValueError("--home is empty")  # the Typer app says it in its words
    return Path(value)


def search_parser() -> argparse.ArgumentParser:
    """``memsearch search``'s options as :func:`search_engine.cli.main.search` declares them."""
    p = _Parser(prog="memsearch search", add_help=False, exit_on_error=False, allow_abbrev=False)
    p.add_argument("query")
    p.add_argument("--mode", default="hybrid")
    p.add_argument("-k", "--limit", dest="k", type=int, default=10)
    for name in ("--kind", "--category", "--session", "--project", "--since", "--until", "--model", "--db-url"):
        p.add_argument(name, default=None)
    for name in ("--all-status", "--raw", "--explain"):
        p.add_argument(name, action="store_true")
    p.add_argument("--format", dest="fmt", default="full")
    p.add_argument("--json", dest="as_json", action="store_true")
    p.add_argument("--home", type=_home, default=None)
    return p


def _parsed(argv: list[str]) -> argparse.Namespace:
    parser = search_parser()
    if any(a in ("-h", "--help") for a in argv):
        raise _Unsure
    try:
        args = parser.parse_args(argv)
    except (argparse.ArgumentError, ValueError) as exc:
        raise _Unsure from exc
    if args.fmt not in ("full", "index"):
        raise _Unsure
    return args


def answered_by_server(argv: list[str]) -> bool:
    """Print the answer of the running server to ``memsearch search ARGV`` and return True; False (nothing
    printed) when there is no server for this memory root, it did not answer, or anything is unsure."""
    try:
        args = _parsed(argv)
    except _Unsure:
        return False
    from indexer.base.errors import MemsearchError
    from indexer.base.settings import resolve_settings
    from search_engine.cli.output import emit, warn_refused
    from search_engine.serve.client import remote_search, server_pid

    try:
        settings = resolve_settings(args.home, model=args.model, db_url=args.db_url)
        if server_pid(settings) is None:
            return False
        from search_engine.filters import Filters

        filters = Filters.build(kind=args.kind, category=args.category, session=args.session, project=args.project,
                                since=args.since, until=args.until, all_status=args.all_status)
        result = remote_search(settings, args.query, mode=args.mode, k=args.k, filters=filters, raw=args.raw,
                               explain=args.explain)
        if result is None:
            return False
        from search_engine.cli import render

        text = None if args.as_json else render.search_text(result, args.fmt)
    except (MemsearchError, OSError, ValueError):  # the Typer app reports it, as it always has
        return False
    warn_refused(settings)
    emit(result, args.as_json, text)
    return True


def main() -> None:
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character gets "?", not a traceback
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    argv = sys.argv[1:]
    if argv[:1] == ["search"] and answered_by_server(argv[1:]):
        return
    from search_engine.cli.main import main as typer_main

    typer_main()


if __name__ == "__main__":
    main()
