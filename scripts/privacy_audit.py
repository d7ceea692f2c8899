#!/usr/bin/env python
"""Privacy audit: send secret and private cases through every capture path, then look for them on disk.

About 80 cases in four classes, each carrying a unique canary inside the secret or the private span:

1. ``named``: assignments whose name marks a secret (env, shell, YAML, JSON, TOML, INI, code, flags, headers);
2. ``formats``: provider and command formats (cloud keys, SAS, webhooks, tokens, curl/mysql/psql/sshpass...);
3. ``truncation``: private spans and key blocks that straddle the cuts (tool output head/tail, Edit input, the
   64,000-character event cap);
4. ``tags``: private-tag spellings, comment and square forms, fences (closed, unclosed, with info strings).

Every case goes through: the prompt hook, a PostToolUse (Bash command and output), an Edit (``new_string``), a
PostToolUseFailure, Stop (the reply in the payload, and the transcript fallback), ``memsearch import
transcripts``, a note in the memory root (indexed), and the session summary writer. Then every file under the
memory root but the user's own notes is read as bytes (``index.db`` and its ``-wal`` included, no checkpoint
first) and searched,
case-insensitively, for each canary. A case leaks when its canary is anywhere on disk.

    .venv/bin/python -m scripts.privacy_audit [--json FILE]

Runs against any checkout (to compare filters): ``cd CHECKOUT && .venv/bin/python PATH/privacy_audit.py``
(that checkout's ``.venv`` imports its own modules). Prints leaks by class; ``--json`` for all.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

PAD = "lorem ipsum dolor sit amet " * 80  # ~2,160 characters


def _cases() -> list[tuple[str, str, str]]:
    """(class, canary, text): every text holds its canary inside a secret or a private span."""
    out: list[tuple[str, str, str]] = []

    def add(cls: str, template: str, canary: str | None = None) -> None:
        n = sum(1 for c, _, _ in out if c == cls)
        canary = canary or f"qz{cls[:3]}{n:02d}k9"
        out.append((cls, canary, template.replace("{c}", canary)))

    for t in [
        "export STAGING_DB_PASSWORD={c}", "KEYCLOAK_ADMIN_PASSWORD={c} docker compose up",
        "RABBITMQ_DEFAULT_PASS={c}", "export GCP_SERVICE_ACCOUNT_SECRET='{c} spaced value'",
        "DATADOG_API_KEY={c}", "OPENROUTER_KEY: {c}", "JWT_SIGNING_SECRET = \"{c}\"",
        "NEXTAUTH_SECRET={c}", "  smtp:\n    password: {c} with a space", '{"stripeSecretKey": "{c}"}',
        "[client]\nuser = app\npassword = {c}", "settings.SECRET_KEY = '{c}'", "config.auth_token = \"{c}\"",
        "const dbPassword = '{c}';", "let sessionSecret: String = \"{c}\"", "client_secret={c}&grant_type=x",
        "heroku config:set SENDGRID_PASSWORD={c}", "terraform apply -var db_password={c}",
        "docker run -e MINIO_ROOT_PASSWORD={c} minio", "kubectl create secret generic db --from-literal=password={c}",
        "helm install app --set redis.auth.password={c}", "X-Auth-Token: {c}", "PRIVATE-TOKEN: {c}",
        "my github passphrase is {c}",
    ]:
        add("named", t)
    for t, canary in [
        ("DefaultEndpointsProtocol=https;AccountName=prodst;AccountKey={c}Zm9vYmFy+/==;EndpointSuffix=core.windows.net",
         None),
        ("https://prodst.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&sig={c}%2FAbC%3D", None),
        ("SG.{c}aaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "qzfmt02k9"),
        ("twilio key SK{c}" + "0" * 22, "deadc0ffee"),
        ("curl -sS -u svc-deploy:{c} https://jenkins.example.com/job/x/build", None),
        ("curl --user admin:{c} -X POST https://api.example.com", None),
        ("PGPASSWORD={c} psql -h 10.0.0.5 -U postgres -c 'select 1'", None),
        ("mysql -h db.internal -u root -p{c} -e 'show databases'", None),
        ("mysqladmin -uroot -p{c} status", None),
        ("sshpass -p '{c}' scp dump.sql deploy@backup:/srv", None),
        ("redis-cli -h cache.internal -p 6379 -a {c} INFO", None),
        ("git remote add origin https://ci-bot:{c}@git.example.com/team/app.git", None),
        ("DATABASE_URL=postgresql://app:pa/ss{c}/x@db.example.com:5432/app", None),
        ("mongodb://root:{c}:x@mongo-0.mongo:27017/?authSource=admin", None),
        ("https://hooks.slack.com/services/T0ABCDEF/B0ABCDEF/{c}XyZ", None),
        ("openssl pkcs12 -export -in c.pem -passout pass:{c} -out c.p12", None),
        ("Authorization: Basic {c}ZGVwbG95", None),
        ("Server=tcp:sql.example.net,1433;Database=app;User ID=sa;Password={c};Encrypt=True", None),
        ("token: glpat-{c}xxxxxxxxxxxx", None),
        ("HF token hf_{c}aaaaaaaaaaaaaaaaaaaaaaaaaaaa", "qzfmt19k9"),
        ("export VAULT_ADDR=https://vault:8200 VAULT_TOKEN=hvs.{c}CAESIJ0000000000", None),
        ("AWS_SESSION_TOKEN={c}FwoGZXIvYXdzEJr//////////wEaDN", None),
    ]:
        add("formats", t, canary)
    pre = "x" * 1400
    for t in [
        pre + "<private>{c} " + "y" * 2000 + "</private> done",  # span closes in the cut (tool output head)
        "a" * 900 + "<private>" + "b" * 1500 + "{c}" + "c" * 200 + "</private> tail",  # canary in the kept tail
        "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(["MIIEpAIBAAKCAQEA{c}" + "Q" * 45] * 80)
        + "\n-----END RSA PRIVATE KEY-----",
        "log\n" * 300 + "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(["b3BlbnNzaC1rZXktdjEAAAAA{c}Zz9" + "x" * 30] * 60)
        + "\n-----END OPENSSH PRIVATE KEY-----\nok",
        "[private]" + "z" * 3000 + " {c} [/private] after",
        "<!-- private -->" + "w" * 1700 + "{c}" + "<!-- /private -->",
        "prefix " * 9000 + "<private>{c} close after the cap" + "q" * 2000 + "</private>",  # straddles 64,000
        "p " * 31990 + "export DB_PASSWORD={c}",  # near the cap
        "q" * 63990 + "<private>{c}</private>",
        "line\n" * 500 + "password = \"{c} " + "s" * 2000 + "\"",
        PAD + "AWS_SECRET_ACCESS_KEY=" + "{c}" + "K" * 30 + "\n" + PAD,
        "<private>" + "{c} " + "e" * 450 + "</private>",  # Edit new_string head/tail 400/100
        "e" * 350 + "<private>{c} " + "f" * 300 + "</private>",
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC{c}" + "\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC" * 20
        + "\n-----END PRIVATE KEY-----",
    ]:
        add("truncation", t)
    for t in [
        'note <private reason="client data">{c}</private> end', "note < private>{c}</ private> end",
        "note <Private >{c}</PRIVATE > end", "note <private\n  why='pii'>{c}</private> end",
        "note [ private ]{c}[/private] end", "note [Private]{c}[/ Private] end",
        "note <!--private-->{c}<!--/private--> end", "note <!-- PRIVATE -->{c}<!-- /Private --> end",
        "example:\n```bash\nls -la\n\nthen <private>{c}</private> more", "```\ncode\n``` <private>{c}</private>",
        "~~~\nopen tilde fence\n<private>{c}</private>", "```python title=`x`\n<private>{c}</private>\n```\n",
        "keep this, hide the rest <private>{c} never closed", "tail of a span cut upstream {c}</private> visible",
        "mixed <private>a [private]{c}[/private] b</private> end", "<PRIVATE>{c}</private>",
        "inline `code` then <private>{c}</private>", "<private>\n```\n{c}\n```\n</private>",
        "nested <private>out <private>{c}</private> still</private> end", "text\n````\n```\n<private>{c}</private>",
    ]:
        add("tags", t)
    return out


def _transcript(path: Path, session: str, text: str, i: int) -> None:
    lines = [
        {"type": "user", "uuid": f"u{i}", "sessionId": session, "cwd": "/work/app", "timestamp": "2026-11-20T10:00:00Z",
         "message": {"role": "user", "content": text}},
        {"type": "assistant", "uuid": f"a{i}", "sessionId": session, "cwd": "/work/app",
         "timestamp": "2026-11-20T10:00:05Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": text},
                                                       {"type": "tool_use", "id": f"tu{i}", "name": "Bash",
                                                        "input": {"command": text[:3000]}}]}},
        {"type": "user", "uuid": f"r{i}", "sessionId": session, "cwd": "/work/app", "timestamp": "2026-11-20T10:00:06Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"tu{i}", "content": text}]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def run(home: Path) -> dict:
    os.environ["MEMSEARCH_HOME"] = str(home)
    os.environ["MEMSEARCH_NO_SERVER"] = "1"
    from hooks import handlers
    from indexer.base.settings import resolve_settings
    from indexer.pipeline import index
    from indexer.summaries import write_session_summary
    from indexer.transcripts import import_transcripts

    settings = resolve_settings(home)
    cases = _cases()
    work = Path(tempfile.mkdtemp(prefix="audit-transcripts-"))
    errors: list[str] = []
    try:
        for i, (_cls, _canary, text) in enumerate(cases):
            session = f"audit-{i:03d}"
            base = {"session_id": session, "cwd": "/work/app"}
            calls: list[tuple[Callable[[dict[str, Any]], object], dict[str, Any]]] = [
                (handlers.prompt, {**base, "hook_event_name": "UserPromptSubmit", "prompt": text}),
                (handlers.tool, {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                                 "tool_input": {"command": text[:5000]}, "tool_response": {"stdout": text}}),
                (handlers.tool, {**base, "hook_event_name": "PostToolUse", "tool_name": "Edit",
                                 "tool_input": {"file_path": "/work/app/a.py", "old_string": "x", "new_string": text},
                                 "tool_response": {"success": True}}),
                (handlers.tool, {**base, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                                 "tool_input": {"command": "make deploy"}, "error": text}),
                (handlers.stop, {**base, "hook_event_name": "Stop", "last_assistant_message": text}),
            ]
            fallback = work / f"fallback-{i}.jsonl"
            _transcript(fallback, session, text, i)
            calls.append((handlers.stop, {**base, "hook_event_name": "Stop", "transcript_path": str(fallback)}))
            for fn, payload in calls:
                try:
                    fn(payload)
                except Exception as exc:  # noqa: BLE001 - the audit reports a failing path and goes on
                    errors.append(f"case {i} {fn.__name__}: {type(exc).__name__}: {exc}")
            imported = work / "projects" / "app" / f"import-{i}.jsonl"
            imported.parent.mkdir(parents=True, exist_ok=True)
            _transcript(imported, f"imp-{session}", text, 1000 + i)
            note = home / "notes" / f"case-{i:03d}.md"
            note.parent.mkdir(parents=True, exist_ok=True)
            note.write_text(f"# Case {i}\n\n{text}\n", encoding="utf-8")
        import_transcripts(settings, [work / "projects"])
        index(settings, None)
        for i in range(len(cases)):
            try:
                write_session_summary(settings, f"audit-{i:03d}")
            except Exception as exc:  # noqa: BLE001
                errors.append(f"case {i} summary: {type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return scan(home, cases, errors)


def scan(home: Path, cases: list[tuple[str, str, str]], errors: list[str]) -> dict:
    blobs: dict[str, bytes] = {}
    for path in sorted(home.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.parts[len(home.parts)] != "notes":
            blobs[str(path.relative_to(home))] = path.read_bytes().lower()
    classes: dict[str, dict] = {}
    for cls, canary, _text in cases:
        entry = classes.setdefault(cls, {"cases": 0, "leaked": 0, "leaks": []})
        entry["cases"] += 1
        needle = canary.lower().encode()
        where = [name for name, data in blobs.items() if needle in data]
        if where:
            entry["leaked"] += 1
            entry["leaks"].append({"canary": canary, "files": where})
    return {"cases": len(cases), "files_scanned": len(blobs), "classes": classes, "errors": errors,
            "leaked": sum(c["leaked"] for c in classes.values())}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--home", help="memory root to fill (default: a new temp dir, removed afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the temp memory root and print its path")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="privacy-audit-"))
    home.mkdir(parents=True, exist_ok=True)
    try:
        res = run(home)
    finally:
        if not args.home and not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    print(f"privacy audit of {os.getcwd()}: {res['cases']} cases, {res['files_scanned']} files scanned")
    for cls, entry in res["classes"].items():
        print(f"  {cls:<11} {entry['leaked']:>3} of {entry['cases']:>3} cases leaked")
        for leak in entry["leaks"]:
            print(f"      {leak['canary']}: {', '.join(leak['files'][:6])}")
    print(f"  total       {res['leaked']:>3} of {res['cases']:>3} cases leaked")
    for e in res["errors"][:20]:
        print(f"  error: {e}")
    if args.keep and not args.home:
        print(f"memory root kept at {home}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
