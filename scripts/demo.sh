#!/usr/bin/env bash
# Index a fresh copy of the bundled sample memory, then ask a question whose words the right notes do not contain:
# keyword search (BM25) misses it, hybrid search finds it.
set -euo pipefail
cd "$(dirname "$0")/.."
export MEMSEARCH_HOME="$PWD/.demo/memory"
rm -rf .demo && mkdir -p .demo && cp -r examples/sample-memory "$MEMSEARCH_HOME"
MS=.venv/bin/memsearch
QUERY="what prevents a shopper paying double"

echo "== memsearch index  (MEMSEARCH_HOME=$MEMSEARCH_HOME)"
$MS index
echo
echo "== memsearch index  (again: nothing changed, nothing to embed)"
$MS index
echo
echo "== memsearch search \"$QUERY\" --mode bm25 -k 3"
$MS search "$QUERY" --mode bm25 -k 3
echo
echo "== memsearch search \"$QUERY\" -k 3   (hybrid)"
$MS search "$QUERY" -k 3
echo
echo "== memsearch search \"東京\" -k 1   (a 2-character CJK word, found by substring)"
$MS search "東京" -k 1
echo
echo "== memsearch status"
$MS status | head -9
