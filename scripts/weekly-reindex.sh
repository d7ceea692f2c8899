#!/bin/sh
# Weekly maintenance of a memsearch index, for cron (`memsearch cron install` adds the line that runs it).
#
#   MEMSEARCH_HOME   memory root (default ~/.claude/memory)
#   MEMSEARCH_BIN    the memsearch command (default: this checkout's .venv, else memsearch on PATH)
#
# One run at a time: a second run while one is going exits 3 without doing anything. Everything is logged to
# <root>/.memsearch/logs/weekly-reindex.log; on failure one line says what failed and where the log is, on stderr
# (cron mails it), and the exit code is non-zero. POSIX sh, so it runs under cron's minimal environment.
set -u
umask 077  # its log lives in the memory root, whose files are its user's alone

root="${MEMSEARCH_HOME:-$HOME/.claude/memory}"
here="$(cd "$(dirname "$0")" && pwd)"
bin="${MEMSEARCH_BIN:-}"
if [ -z "$bin" ]; then
  if [ -x "$here/../.venv/bin/memsearch" ]; then
    bin="$here/../.venv/bin/memsearch"
  elif command -v memsearch >/dev/null 2>&1; then
    bin="$(command -v memsearch)"
  fi
fi

fail() {
  echo "weekly-reindex: FAILED: $1" >&2
  exit "${2:-1}"
}

[ -d "$root" ] || fail "memory root $root does not exist (set MEMSEARCH_HOME)"
[ -n "$bin" ] && [ -x "$bin" ] || fail "memsearch command not found (set MEMSEARCH_BIN to its path)"

logs="$root/.memsearch/logs"
mkdir -p "$logs" || fail "cannot create $logs"
log="$logs/weekly-reindex.log"
stamp() { date '+%Y-%m-%dT%H:%M:%S'; }

# The lock: flock(1) on a file when there is one (Linux), else an atomic mkdir with the holder's pid in it.
lock="$root/.memsearch/weekly-reindex.lock"
if command -v flock >/dev/null 2>&1; then
  exec 9>>"$lock" || fail "cannot open the lock file $lock"
  if ! flock -n 9; then
    echo "$(stamp) skipped: another weekly run holds $lock" >>"$log"
    fail "another weekly maintenance run is still going (lock $lock); this run did nothing" 3
  fi
else
  if ! mkdir "$lock.d" 2>/dev/null; then
    holder="$(cat "$lock.d/pid" 2>/dev/null || true)"
    if [ -n "$holder" ] && kill -0 "$holder" 2>/dev/null; then
      echo "$(stamp) skipped: another weekly run (pid $holder) holds $lock.d" >>"$log"
      fail "another weekly maintenance run (pid $holder) is still going; this run did nothing" 3
    fi
    rm -rf "$lock.d" && mkdir "$lock.d" || fail "cannot take the lock $lock.d"
  fi
  echo $$ >"$lock.d/pid"
  trap 'rm -rf "$lock.d"' EXIT INT TERM
fi

echo "$(stamp) start: $bin maintain (MEMSEARCH_HOME=$root)" >>"$log"
out="$(mktemp "${TMPDIR:-/tmp}/memsearch-weekly.XXXXXX")" || fail "cannot create a temporary file"
MEMSEARCH_HOME="$root" "$bin" maintain >"$out" 2>&1
status=$?
sed "s/^/  /" "$out" >>"$log"
reason="$(grep '^Error: ' "$out" | tail -n 1 | cut -c8-)"
rm -f "$out"
if [ "$status" -ne 0 ]; then
  echo "$(stamp) failed: exit $status" >>"$log"
  fail "memsearch maintain exited $status: ${reason:-see the log}; log: $log" "$status"
fi
echo "$(stamp) done" >>"$log"
