"""Plain-text rendering of results for people (``--json`` is the machine shape)."""

from __future__ import annotations

import textwrap
from typing import Any

from indexer.base.reports import (
    ChunkView,
    CronReport,
    ForgetPlan,
    ForgetReport,
    IndexReport,
    MaintainReport,
    MemberRemoval,
    ScrubReport,
    SessionInfo,
    Stats,
    Timeline,
)
from indexer.base.types import HIDDEN_STATUSES, Health, Hit, SearchResult, index_note

SNIPPET_CHARS = 240


def _snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _location(hit: Hit) -> str:
    if hit.line_start is not None:
        end = f"-{hit.line_end}" if hit.line_end and hit.line_end != hit.line_start else ""
        return f"{hit.path}:{hit.line_start}{end}"
    if hit.event_id:
        return f"{hit.path} event {hit.event_id}"
    return hit.path


def health_line(h: Health) -> str:
    if not h.index_exists:
        return "index: never built; run `memsearch index`"
    parts = [f"{h.chunks} chunks indexed", f"{h.pending_embeddings} awaiting embeddings"]
    if h.last_indexed is not None:
        parts.append(f"last indexed {h.last_indexed}")
    else:  # the team database, which this member has synced nothing to yet
        parts.append("nothing of yours synced yet")
    return "index: " + ", ".join(parts)


def mode_line(result: SearchResult) -> str:
    line = f"mode_used: {result.mode_used}"
    if result.mode_used != result.mode_requested:
        line += f" (requested {result.mode_requested}: {result.fallback_reason})"
    elif result.fallback_reason:
        line += f" ({result.fallback_reason})"
    return line


def search_text(result: SearchResult, fmt: str = "full") -> str:
    out = [mode_line(result)]
    if result.health.store_reason:
        out.append(f"note: {result.health.store_reason}")
    if not result.hits:
        empty = index_note(result.health)
        out.append(f"No results: {empty}." if empty else "No results.")
    for rank, hit in enumerate(result.hits, start=1):
        date = (hit.ts or "")[:10]
        if fmt == "index":
            out.append(f"{hit.id}  {hit.score:.4f}  {hit.kind:<5} {date:<10}  {_snippet(hit.title or hit.text, 70)}")
            continue
        ranks = " · ".join(
            f"{name} #{r}" for name, r in (("bm25", hit.bm25_rank), ("vector", hit.vector_rank)) if r is not None
        )
        out.append(f"{rank:>2}. [{hit.kind}/{hit.category}] {hit.title}  ({hit.score:.4f}; {ranks})")
        meta = " · ".join(x for x in (_location(hit), date, f"id {hit.id}") if x)
        out.append(f"    {meta}")
        out.append(textwrap.indent(_snippet(hit.text), "    "))
    if result.hidden_duplicates:
        out.append(f"({result.hidden_duplicates} near-duplicate(s) hidden)")
    if result.explain is not None:
        out.append("")
        out.append(f"explain: lexical query {result.lexical_query!r}")
        for e in result.explain:
            b = f"bm25 #{e.bm25_rank} -> {e.bm25_contribution:.5f}" if e.bm25_rank else "bm25 -"
            v = f"vector #{e.vector_rank} -> {e.vector_contribution:.5f}" if e.vector_rank else "vector -"
            tail = f"  HIDDEN: duplicate of {e.duplicate_of} (trigram Jaccard {e.similarity:.3f})" if e.duplicate_of else ""
            fed = f" + feedback {e.feedback_contribution:.5f}" if e.feedback_contribution else ""
            grouped = f" + group {e.group_contribution:.5f}" if e.group_contribution else ""
            fused = f"{b} + {v}{fed}{grouped}"
            if e.boosts:  # "(… + group …) × speaker 2 × time 3"
                fused = f"({fused})" + "".join(f" × {factor}" for factor in e.boosts)
            out.append(f"  {e.id}: {fused} = {e.score:.5f}{tail}")
    out.append(health_line(result.health))
    return "\n".join(out)


def _skipped(skipped, most: int) -> list[str]:
    """One line per skipped source, at most ``most`` of them, then how many more."""
    lines = [f"skipped: {s.path}: {s.reason}" for s in skipped[:most]]
    if len(skipped) > most:
        lines.append(f"... and {len(skipped) - most} more skipped (see --json)")
    return lines


def index_text(report: IndexReport) -> str:
    out = [
        f"files: {report.files_scanned} scanned, {report.files_changed} changed, {report.files_unchanged} unchanged,"
        f" {report.files_deleted} deleted, {len(report.skipped)} skipped",
        f"chunks: {report.chunks_added} added, {report.chunks_removed} removed, {report.chunks_embedded} embedded,"
        f" {report.chunks_pending} awaiting embeddings",
        f"model: {report.model or 'none'}",
    ]
    if report.chunks_embedded == 0 and report.model and report.chunks_pending == 0:
        out[-1] += " (nothing new to embed)"
    if report.model_note:
        out.append(f"note: {report.model_note}")
    out += _skipped(report.skipped, 50)
    out.append(f"time: {report.seconds:.2f}s{' (full rebuild)' if report.full else ''}")
    return "\n".join(out)


#: Chunks the team store refused that the text output names one by one (``--json`` has them all).
SKIPPED_SHOWN = 20


def counted(n: int, word: str) -> str:
    """``n`` and ``word``, plural unless one.

    >>> counted(1, "source"), counted(3, "meta key"), counted(0, "chunk")
    ('1 source', '3 meta keys', '0 chunks')
    """
    return f"{n} {word}" + ("" if n == 1 else "s")


def sync_text(report) -> str:
    """One line: where the local index went and what was sent (a :class:`indexer.sync.SyncReport`); then one line
    per chunk the team store refused, which the sync left out."""
    if report.note:
        return f"team {report.target}: nothing sent: {report.note}"
    vectors = (f"; {report.vectors_sent} vectors sent, {report.vectors_pending} awaiting one ({report.model})"
               if report.model else "; no vectors (the local index has none)")
    out = [f"synced to {report.target} as {report.machine}: {counted(report.sources_sent, 'source')} sent "
           f"({counted(report.chunks_added, 'chunk')} added, {report.chunks_removed} removed), "
           f"{report.sources_unchanged} unchanged, {report.sources_deleted} deleted{vectors}"]
    if report.other_roots:
        out.append(f"{counted(report.other_roots, 'source')} from another memory root on this machine "
                   f"{'was' if report.other_roots == 1 else 'were'} left as they are "
                   "(a memory root moved or deleted leaves its old copies there)")
    out += [f"not sent to the team database: {line}; the local index keeps it"
            for line in report.skipped[:SKIPPED_SHOWN]]
    if len(report.skipped) > SKIPPED_SHOWN:
        out.append(f"... and {len(report.skipped) - SKIPPED_SHOWN} more chunks not sent (see --json)")
    return "\n".join(out)


def show_text(view: ChunkView) -> str:
    h = view.chunk
    out = [
        f"id: {h.id}",
        f"kind: {h.kind}/{h.category}" + (f"  status: {h.status}" if h.status else ""),
        f"title: {h.title}",
        f"source: {_location(h)}",
    ]
    for label, value in (("date", h.ts), ("session", h.session_id), ("project", h.project)):
        if value:
            out.append(f"{label}: {value}")
    out.append(f"neighbours: previous {view.previous_id or '-'} · next {view.next_id or '-'}"
               f" ({view.source_chunks} chunks in this source)")
    if view.note:
        out.append(f"note: {view.note}")
    out.append("")
    out.append(h.text)
    return "\n".join(out)


def _capture_line(capture: dict[str, Any] | None) -> str:
    if not capture:
        return "capture: unknown"
    if capture["capture"] and capture["inject"]:
        return f"capture: on for {capture['project']} (prompts, tools and replies recorded; memories injected)"
    what = "capture and injection off" if not capture["inject"] else "capture off (memories still injected)"
    return f"capture: {what} for {capture['project']}: {capture['reason']}"


def _team_line(team: dict[str, Any]) -> str:
    if not team["reachable"]:
        return (f"team: {team['url']}: unreachable ({team['reason']}); searches read the local index; "
                f"last synced {team['last_synced'] or 'never'}")
    return (f"team: {team['url']} as {team['role']}: {team['chunks']} chunks visible ({team['own_chunks']} yours, "
            f"{team['shared_by_others']} shared by others), {team['pending_embeddings']} awaiting embeddings, "
            f"last synced {team['last_synced'] or 'never'}")


def status_text(info: dict[str, Any]) -> str:
    m = info["model"]
    team = info.get("team") or {}
    local = "" if info["index_exists"] else (
        " (not built on this machine; searches read the team database)" if team.get("reachable")
        else " (never built; run `memsearch index`)")
    model = f"{m['id']} ({m['source']}{', ' + m['path'] if m['path'] else ''})" if m["available"] else (
        f"none: {m['reason']}")
    out = [
        f"home: {info['home']}" + ("" if info.get("home_exists", True) else
                                   f" ({info.get('home_problem') or 'does not exist'}: check --home or MEMSEARCH_HOME)"),
        f"index: {info['db_path']}{local}",
        f"model: {model}",
        f"chunks: {info['chunks']}" + (
            " (" + ", ".join(f"{k} {v}" for k, v in info["chunks_by_kind"].items()) + ")" if info["chunks_by_kind"] else ""),
        f"files: {info['files']}",
        f"awaiting embeddings: {info['pending_embeddings']}",
        *(["catching up: the index predates this version's chunker (events are now embedded with the turn they "
           "reply to); the next `memsearch index` or `memsearch maintain` re-chunks every source and embeds each "
           "event once more, losing nothing"] if info.get("rechunk_due") else []),
        *([f"not embedded: {info['not_embedded']} (text the model cannot represent, such as CJK for an English-only "
           "model; found by BM25; model = \"multilingual-e5-small\" or \"minilm+e5\" embeds CJK text)"]
          if info.get("not_embedded") else []),
        f"index built with model: {info['index_model'] or '-'}",
        f"last indexed: {info['last_indexed'] or 'never'}",
        f"database size: {info['db_bytes'] / 1e6:.2f} MB",
        _capture_line(info.get("capture")),
        *([f"lost events: {info['lost_events']['note']}"] if info.get("lost_events") else []),
        *([_team_line(info["team"])] if info.get("team") else []),
        "settings:",
    ]
    for name, entry in info["settings"].items():
        out.append(f"  {name} = {entry['value']}  [{entry['from']}]")
    return "\n".join(out)


def timeline_text(view: Timeline) -> str:
    from search_engine.context import titled  # the prompt block's reading of an item (not loaded for --help)

    def line(hit: Hit, mark: str) -> str:
        status = f" ({hit.status}: searches leave it out)" if hit.status in HIDDEN_STATUSES else ""
        return (f"{mark} {hit.ts or '?':<19}  {hit.id}  [{hit.kind}/{hit.category}]{status} "
                f"{_snippet(titled(hit, hit.text), 110)}")

    lines = [*(line(h, " ") for h in view.before), line(view.center, ">"), *(line(h, " ") for h in view.after)]
    return "\n".join(lines + ([f"note: {view.note}"] if view.note else []))


def maintain_text(report: MaintainReport) -> str:
    """The short report of ``memsearch maintain``: what changed, checks, sizes before and after, time."""
    r, c = report.index, report.check
    out = [
        f"rescan: {r.files_scanned} files, {r.files_changed} changed, {r.files_deleted} gone, {len(r.skipped)} skipped;"
        f" chunks {r.chunks_added} added, {r.chunks_removed} removed, {r.chunks_embedded} embedded,"
        f" {r.chunks_pending} awaiting embeddings",
    ]
    if report.retention_days_event:
        where = sum(1 for e in report.expired if e.archived_to)
        out.append(f"retention: events older than {report.retention_days_event} days: {len(report.expired)} logs"
                   f" expired ({sum(e.chunks for e in report.expired)} chunks; {where} archived under archive/events/)")
    else:
        out.append("retention: off (retention_days_event = 0)")
    if report.scrubbed is not None:
        changed = ", ".join(f"{k} {v}" for k, v in report.scrubbed.items()) or "nothing changed"
        out.append(f"privacy: the filter changed since the last scrub; files scrubbed again: {changed}")
    out.append(f"cleanup: {report.orphan_vectors_dropped} orphan vectors dropped, FTS optimized, vacuumed")
    agree = "agree" if c.ok else "DISAGREE"
    out.append(f"integrity: {c.integrity}; fts: {c.fts_integrity}; chunks {c.chunks}, fts rows {c.fts_rows},"
               f" vectors {c.vectors}: tables {agree}")
    out.append(f"chunks: {report.chunks_before} -> {report.chunks_after}")
    out.append(f"size: {report.bytes_before / 1e6:.2f} MB -> {report.bytes_after / 1e6:.2f} MB")
    out.append("time: " + f"{report.seconds:.2f}s (" + ", ".join(f"{n} {s:.2f}s" for n, s in report.steps) + ")")
    if r.model_note:
        out.append(f"note: {r.model_note}")
    out += _skipped(r.skipped, 20)
    return "\n".join(out)


def scrub_text(report: ScrubReport) -> str:
    """The report of ``memsearch scrub``: counts by kind, never the text."""
    def counts(d: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in d.items()) or "none"

    verb = "would change" if report.dry_run else "changed"
    previous = report.previous_filter_version
    out = [
        f"filter version {report.filter_version} (memory last scrubbed with "
        f"{previous if previous is not None else 'none recorded'})"
        + (" - dry run, nothing written" if report.dry_run else ""),
        f"files {verb}: {counts(report.files_changed)}; events {verb}: {report.events_changed}",
        f"redactions added to files: {counts(report.redactions)}",
        f"index: {report.chunks_changed} chunks {verb}; redactions: {counts(report.index_redactions)}"
        + ("; rebuilt from the scrubbed sources" if report.index_rebuilt else ""),
        f"leftover rebuild files: {report.stale_builds}" + ("" if report.dry_run else " (removed)"),
        f"database: {report.database}",
        f"time: {report.seconds:.2f}s",
    ]
    out += [f"problem: {p}" for p in report.problems]
    return "\n".join(out)


def cron_text(report: CronReport, action: str) -> str:
    if report.crontab is None:
        return f"{report.note}:\n{report.line}"
    if action == "status":
        return f"installed: {report.line}" if report.installed else f"not installed; `memsearch cron install` adds:\n{report.line}"
    if action == "install":
        return f"{'installed' if report.changed else 'already installed'}: {report.line}"
    return f"removed: {report.line}" if report.changed else "no memsearch line for this memory root in the crontab"


def _clean(text: str | None, limit: int = SNIPPET_CHARS) -> str:
    """Stored text made safe for a terminal: control and invisible characters (escape sequences included) out,
    one line, bounded."""
    from search_engine.context import sanitize

    return _snippet(sanitize(text or ""), limit)


def sessions_text(sessions: list[SessionInfo], *, project: str | None = None, total: int = 0) -> str:
    """One line per session; none found for ``project`` while ``total`` sessions exist is said as such."""
    if not sessions and project is not None and total:
        return (f"No sessions for project {_clean(project, 60)!r} ({total} session(s) captured in all: "
                "`memsearch sessions` lists them with their projects).")
    if not sessions:
        return "No sessions captured yet."
    out = []
    for s in sessions:
        counts = ", ".join(f"{n} {t}" for t, n in s.counts.items())
        span = f"{(s.first_ts or '?')[:16]} → {(s.last_ts or '?')[:16]}"
        out.append(f"{_clean(s.session_id, 40)}  {_clean(s.project or '-', 30)}  {span}  {counts}"
                   + (f"  “{_clean(s.first_prompt, 80)}”" if s.first_prompt else ""))
    return "\n".join(out)


def recent_text(hits: list[Hit], narrowed: str = "") -> str:
    if not hits:
        return f"Nothing for {narrowed}." if narrowed else "Nothing yet."
    from search_engine.context import titled

    return "\n".join(
        f"{h.id}  {(h.ts or '')[:16]:<16}  {h.kind}/{_clean(h.category, 20):<10} {_clean(titled(h, h.text), 90)}"
        for h in hits)


def stats_text(s: Stats) -> str:
    p = s.privacy
    out = [
        f"events: {s.events} in {s.sessions} sessions (" + (", ".join(f"{t} {n}" for t, n in s.events_by_type.items())
                                                           or "none") + ")",
        "chunks: " + str(s.chunks) + (" (" + ", ".join(f"{k} {n}" for k, n in s.chunks_by_kind.items()) + ")"
                                      if s.chunks_by_kind else ""),
        f"awaiting embeddings: {s.pending_embeddings}",
        f"last indexed: {s.last_indexed or 'never'}",
        f"privacy: {p.private_spans} private spans redacted, "
        + (", ".join(f"{n} {k}" for k, n in p.secrets_by_kind.items()) or "no") + " secrets masked, "
        f"{p.sessions_with_private} sessions held private content",
        f"forgotten notes hidden by tombstones: {s.tombstones}",
    ]
    if s.events_by_day:
        days = list(s.events_by_day.items())[-14:]
        out.append("events by day: " + ", ".join(f"{d} {n}" for d, n in days))
    out.append("storage: " + ", ".join(f"{e.path} {e.bytes / 1e3:.1f} kB" for e in s.storage[:12]))
    if s.store == "team":
        out.insert(0, "index: the team database (what you see there: your chunks and what others shared)")
    if s.note:
        out.append(f"note: {s.note}")
    return "\n".join(out)


def forget_plan_text(plan: ForgetPlan, *, dry_run: bool) -> str:
    """What a plan takes; ``dry_run`` ends it with the line that says nothing changed (not so before a question)."""
    total = len(plan.items) + plan.archived_events
    if not total:
        return "Nothing matches: nothing to forget."
    how = {"rewrite": "removed from its event log", "summary": "its session summary is rebuilt or deleted",
           "tombstone": "your note: hidden, edit the file to remove it"}
    out = [f"Would forget {len(plan.items)} indexed item(s)"
           + (f" and {plan.archived_events} archived event(s)" if plan.archived_events else "") + ":"]
    for i in plan.items[:100]:
        where = f"{i.path}:{i.line_start}-{i.line_end}" if i.line_start is not None else i.path
        out.append(f"  {i.id}  {(i.ts or '')[:16]:<16} {i.kind}/{_clean(i.category, 20)}  {_clean(where, 60)}"
                   f"  ({how[i.action]})\n      {_clean(i.snippet, 110)}")
    if len(plan.items) > 100:
        out.append(f"  … and {len(plan.items) - 100} more (see --json)")
    if plan.summaries:
        out.append(f"session summaries rebuilt or deleted: {len(plan.summaries)}")
    if dry_run:
        out.append("(dry run: nothing changed; run again without --dry-run to forget)")
    return "\n".join(out)


def forget_text(r: ForgetReport) -> str:
    out = [
        f"forgotten: {r.chunks_removed} chunks ({r.events_removed} events removed from {r.event_logs_rewritten} "
        f"event log(s); {r.archived_events_removed} archived events from {r.archives_rewritten} archive(s))",
        f"session summaries: {r.summaries_rewritten} rebuilt, {r.summaries_deleted} deleted",
        f"index: {r.db_bytes_before / 1e6:.2f} MB -> {r.db_bytes_after / 1e6:.2f} MB"
        + (" (vacuumed)" if r.vacuumed else ""),
    ]
    if not r.wal_truncated:
        out.append("warning: a reader kept the index's write-ahead log busy, so old pages may stay in it until the"
                   " next checkpoint: run `memsearch maintain` (or `memsearch forget --vacuum` again) later")
    if r.notes_to_edit:
        out.append(f"hidden in your own notes ({r.tombstones_added} chunk(s)) until the file changes; to remove the"
                   " text, edit:")
        for n in r.notes_to_edit:
            lines = f":{n.line_start}-{n.line_end}" if n.line_start is not None else ""
            out.append(f"  {_clean(n.path, 200)}{lines}")
    if r.team_removed is not None:
        rebuilt = " and the old copies of the session summaries it changed" if (
            r.summaries_rewritten or r.summaries_deleted) else ""
        out.append(f"team database: {counted(r.team_removed, 'chunk')} of yours removed (what was forgotten{rebuilt})")
    if r.team_note:
        out.append(f"warning: {r.team_note}")
    out.append(f"time: {r.seconds:.2f}s")
    return "\n".join(out)


def member_removal_text(r: MemberRemoval) -> str:
    """``team remove-member``: what goes (asked before), or what went."""
    held = (f"{counted(r.chunks, 'chunk')}, {counted(r.sources, 'source')}, {counted(r.meta, 'meta key')}, "
            f"{counted(r.vectors, 'vector')} no other member's chunk holds")
    if not r.role_dropped:
        return f"member {r.member} on {r.database}: {held}; {counted(r.sessions, 'open session')}, which will be ended"
    return (f"removed member {r.member} from {r.database}: {held}; {counted(r.sessions, 'session')} ended"
            + (f", {counted(r.objects, 'object')} they owned handed to the administrator" if r.objects else "")
            + f"; role {r.member} dropped")
