import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from indexer import secret_rules
from indexer.eventlog import MAX_CONTENT_CHARS, Event, encode
from indexer.observations import describe_tool, response_text, truncate_middle
from indexer.privacy import (
    MARKER_RE,
    PRIVATE_MARKER,
    cut_head,
    cut_tail,
    kinds,
    mask_secrets,
    redact,
    strip_private,
)


def test_each_tag_style_is_replaced_by_the_marker():
    text = "a <private>one</private> b [private]two[/private] c <!-- private -->three<!-- /private --> d"
    result = redact(text)
    assert result.text == f"a {PRIVATE_MARKER} b {PRIVATE_MARKER} c {PRIVATE_MARKER} d"
    assert result.private_spans == 3


@pytest.mark.parametrize("open_tag, close_tag", [
    ('<private reason="client data">', "</private>"), ("< private>", "</ private>"), ("<Private >", "< /PRIVATE>"),
    ("<PRIVATE\n  scope='x'>", "</private >"), ("[ Private ]", "[/ private]"), ("[private note]", "[/private]"),
    ("<!--private-->", "<!--/private-->"), ("<!-- PRIVATE: keys -->", "<!-- end private -->"),
])
def test_tag_spellings(open_tag, close_tag):
    result = redact(f"keep {open_tag}zq1 hidden{close_tag} keep")
    assert "zq1" not in result.text and result.text.replace("\n", "") == f"keep {PRIVATE_MARKER} keep"


def test_tags_are_case_insensitive_and_nest():
    result = redact("x <PRIVATE>outer <private>inner</private> still outer</Private> y")
    assert result.text == f"x {PRIVATE_MARKER} y"
    assert "outer" not in result.text


def test_multiline_span_keeps_line_numbers():
    result = redact("l1\n<private>secret\nmore\nsecret</private>\nl5")
    assert result.text.split("\n")[-1] == "l5"
    assert result.text.count("\n") == 4
    assert "secret" not in result.text


def test_closed_code_fences_and_inline_code_are_left_literal():
    text = "docs:\n```\nwrap it like <private>this</private>\n```\nwrite `<private>` to hide a span\n"
    assert redact(text).text == text


def test_inline_code_tags_that_pair_still_mark_a_span():
    # backticks around both tags do not make the words between them public
    for text in ("`<private>`zq5`</private>`", "say `<private>` zq5 </private> then", "<private> zq5 `</private>`",
                 "`[private]` zq5 `[/private]` and `<private>` alone"):
        assert "zq5" not in redact(text).text, text
    # a mention that pairs with nothing stays, and does not swallow a real span after it
    out = redact("close with `</private>`; <private>zq6</private> ok").text
    assert out == "close with `</private>`; [REDACTED:private] ok"
    assert redact("open with `<private>` and then `[private]`").text == "open with `<private>` and then `[private]`"


def test_an_unclosed_fence_never_switches_redaction_off():
    text = "example:\n```python\nprint(1)\n\nnow <private>zq2</private> and [private]zq3[/private]"
    out = redact(text).text
    assert "zq2" not in out and "zq3" not in out and out.startswith("example:\n```python")


def test_a_closing_fence_with_text_after_it_is_not_a_fence():
    out = redact("```\ncode\n``` <private>zq4</private>\nmore").text
    assert "zq4" not in out


def test_span_enclosing_a_fence_still_hides_it():
    text = "<private>\n```\ncode with a token\n```\n</private>\nafter"
    result = redact(text)
    assert "token" not in result.text and result.text.endswith("after")


def test_an_unclosed_tag_withholds_the_rest_and_warns():
    result = strip_private("keep <private>this is unclosed\nand more")
    assert result.text == f"keep {PRIVATE_MARKER}\n"
    assert result.warnings and "unclosed" in result.warnings[0]


def test_a_closing_tag_without_opening_withholds_what_came_before():
    result = strip_private("tail of a cut span zq5</private> visible")
    assert result.text == f"{PRIVATE_MARKER} visible"
    assert result.warnings


def test_empty_tags_are_removed():
    assert redact("a <private> </private>b").text == "a b"
    assert redact("a <private></private>b").private_spans == 0
    assert redact("a <private/> b").text == "a <private/> b"


def test_secrets_of_common_providers_are_masked():
    samples = {
        "aws-key": "AKIAQ3EGRU7XKZ4TW5NB",
        "github-token": "ghp_" + "a1B2" * 9,
        "openai-key": "sk-proj-" + "x9" * 16,
        "anthropic-key": "sk-ant-api03-" + "Zz" * 15,
        "stripe-key": "sk_test_7hQ28LmZrW4pXk9TnB3vYc6D",
        "slack-token": "xoxb-123456789012-abcdefghij",
        "google-key": "AIza" + "S" * 35,
        "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "sendgrid-key": "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",
        "twilio-key": "SK" + "0a1b2c3d" * 4,
        "gitlab-token": "glpat-" + "Xy7" * 7,
        "api-token": "shpat_" + "0f1e2d3c" * 4,
        "telegram-token": "123456789:AA" + "h" * 33,
        "pypi-token": "pypi-AgEIcHlwaS5vcmc" + "Q" * 50,
    }
    for kind, secret in samples.items():
        masked, count = mask_secrets(f"value {secret} end")
        assert secret not in masked, kind
        assert f"[REDACTED:{kind}]" in masked, (kind, masked)
        assert count >= 1


# class 1: a name that marks a secret, in the forms developers paste
NAMED = [
    "MYSQL_ROOT_PASSWORD=zq{c}",
    "export REDIS_PASSWD=zq{c}",
    "export AZURE_CLIENT_SECRET='zq{c}'",
    "aws_secret_access_key = zq{c}",
    "VAULT_TOKEN=zq{c}",
    "SENTRY_AUTH_TOKEN: zq{c}",
    "  db_password: \"zq{c} with spaces\"",
    '{{"clientSecret": "zq{c} x y", "user": "bob"}}',
    "app.config['SECRET_KEY'] = 'zq{c}'",
    "DJANGO_SECRET_KEY = \"zq{c}\"",
    "encryption_key = zq{c}",
    "smtp_pass=zq{c}",
    "  - name: API_KEY\n    value: zq{c}",
    "--db-password zq{c}",
    "deploy --api-token=zq{c} --env prod",
    "$env:NUGET_API_KEY = \"zq{c}\"",
    "set SLACK_BOT_TOKEN=zq{c}",
    "config.access_token := \"zq{c}\"",
    "'private_key' => 'zq{c}',",
    "<Password>zq{c}</Password>",
    "[database]\npassword = zq{c} rest of line",
    "X-Api-Key: zq{c}",
    "the wifi password is zq{c}",
    "new SqlConnection(\"Server=db;User Id=sa;Password=zq{c};\")",
]

# class 2: provider and command formats
FORMATS = [
    "DefaultEndpointsProtocol=https;AccountName=st;AccountKey=zq{c}+abc/def==;EndpointSuffix=core.windows.net",
    "https://st.blob.core.windows.net/c/f.txt?sp=r&st=2024&sig=zq{c}%2Bx%3D",
    "curl -u deploy:zq{c} https://ci.example.com/api",
    "curl --user 'ops:zq{c}' https://x",
    "PGPASSWORD=zq{c} psql -h db -U app",
    "mysql -h db -u root -pzq{c} shop",
    "mysqldump -uroot -p'zq{c} x' shop",
    "sshpass -p zq{c} ssh deploy@host",
    "redis-cli -h cache -a zq{c} ping",
    "git clone https://oauth2:zq{c}@gitlab.example.com/group/repo.git",
    "mongodb+srv://admin:p/zq{c}:w@cluster0.example.net/db",
    "amqp://guest:zq{c}@@rabbit:5672/",
    "openssl enc -aes-256-cbc -pass pass:zq{c} -in a",
    "keytool -importkeystore -storepass zq{c} -keystore k.jks",
    "Authorization: Basic zq{c}dXNlcg==",
    "Authorization: token zq{c}",
    "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI zq{c}\n-----END EC PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC zq{c} (output cut)",
    "https://hooks.slack.com/services/T000/B000/zq{c}",
]


@pytest.mark.parametrize("template", NAMED + FORMATS)
def test_named_and_formatted_secrets_are_masked(template):
    canary = "Canary7x9"
    text = "before\n" + template.format(c=canary) + "\nafter"
    out = redact(text).text
    assert canary.lower() not in out.lower(), out
    assert out.startswith("before\n") and out.endswith("after") or "PRIVATE KEY" in template
    assert kinds(out)


@pytest.mark.parametrize("text", [
    "The password policy says rotate every 90 days; see the private channel.",
    "sorted(rows, key=len)", "max_tokens: 4096", "token_count = 12", "PASSWORD_FILE=/run/secrets/db",
    "password = os.environ['DB_PASSWORD']", "api_key = get_api_key()", "auth: true", "password: str",
    "git log --format=%H e83c5163316f89bfbd7d9ab23ca2e25604af290a",
    '"integrity": "sha512-Yx9ZnkqL2cLIqvVxc8lwEmgiYx0FsSk4JsiRZ3mTHmkT9c5Lia5O0IMx9FS0SwcOSsyFNWM5wVpyLHw0Q7vpjg=="',
    "export PATH=$HOME/bin:$PATH", "ssh -p 2222 deploy@host", "DB_PASSWORD=${DB_PASSWORD}",
])
def test_ordinary_text_is_untouched(text):
    assert redact(text).text == text


def test_assignments_bearer_tokens_keys_and_connection_strings():
    text = (
        "password = hunter2hunter2\nAPI_KEY: 'abcd1234efgh'\nAuthorization: Bearer abcdef0123456789xyz\n"
        "postgres://app:S3cr3tPw@db.internal:5432/main\n"
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
    )
    masked = redact(text).text
    for secret in ("hunter2hunter2", "abcd1234efgh", "abcdef0123456789xyz", "S3cr3tPw", "MIIEowIBAAKCAQEA"):
        assert secret not in masked
    assert "postgres://app:[REDACTED:connection-string]@db.internal" in masked


def test_key_material_without_its_begin_line():
    body = "\n".join(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "aB3x" * 3] * 4)
    assert redact(f"tail of a key:\n{body}\n-----END PRIVATE KEY-----").text.count("MIIE") == 0


def test_quoted_high_entropy_strings_are_masked():
    assert redact('client = Client("tP9xQ2mZ7vK4rL8wN3sB6yH1")').text == 'client = Client("[REDACTED:high-entropy]")'


# -- capture paths cut after filtering ---------------------------------------------------------------------------
def _stored(content: str) -> str:
    return json.loads(encode(Event(type="tool", content=content)))["content"]


def test_a_span_closed_in_the_cut_part_of_a_tool_output_is_still_hidden():
    output = "<private>zq6 " + "x" * 5000 + "</private> done"
    content, _ = describe_tool("Bash", {"command": "cat notes"}, output, True)
    assert "zq6" not in _stored(content) and "</private>" not in content


def test_a_key_block_whose_begin_line_is_in_the_cut_is_still_masked():
    block = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(["zq7" + "A" * 61] * 60) + "\n-----END RSA PRIVATE KEY-----"
    content, _ = describe_tool("Bash", {"command": "cat id_rsa"}, "head\n" * 10 + block + "\ntail", True)
    assert "zq7" not in _stored(content)


def test_an_edit_new_string_is_filtered_before_its_cut():
    new = "API_TOKEN = '" + "zq8" * 300 + "'"
    content, _ = describe_tool("Edit", {"file_path": "a.py", "new_string": new}, "", True)
    assert "zq8" not in content


def test_the_content_cap_cuts_after_filtering():
    text = "<private>" + "zq9 " * (MAX_CONTENT_CHARS // 2) + "</private> end"
    stored = _stored(text)
    assert "zq9" not in stored and stored.endswith("end")


def test_long_command_metadata_is_filtered_before_its_cut():
    command = "x" * 990 + " curl -u me:zqa1secret https://h"
    _, metadata = describe_tool("Bash", {"command": command}, "", True)
    assert "zqa1" not in metadata["command"]


def test_unstructured_responses_are_filtered_before_their_cut():
    text = response_text({"data": "<private>" + "y" * 3000 + " zqb2</private>"})
    assert "zqb2" not in text


def test_cuts_never_split_a_marker():
    text = "a" * 10 + "[REDACTED:password]" + "b" * 10
    for limit in range(len(text) + 1):
        for piece in (cut_head(text, limit), cut_tail(text, limit)):
            assert "REDACTED" not in MARKER_RE.sub("", piece) and "]" not in MARKER_RE.sub("", piece), piece
        assert len(cut_head(text, limit)) <= limit and len(cut_tail(text, limit)) <= limit


# -- properties ----------------------------------------------------------------------------------------------------
_filler = st.text(alphabet=st.sampled_from(list("abcdefghij klmnop\n.,:=-_'\"`#0123456789")), max_size=3000)
_TAGS = [("<private>", "</private>"), ("[private]", "[/private]"), ("<!-- private -->", "<!-- /private -->"),
         ('<private reason="pii">', "</ private>")]
_SECRET_TEMPLATES = NAMED + FORMATS + [
    "token: ghp_{c}" + "A" * 30, "sk-ant-api03-{c}" + "x" * 20, "AWS_SESSION_TOKEN={c}", "password = '{c} horse battery'",
]


def _capture_paths(text: str) -> list[str]:
    """What each capture path stores for ``text``: prompt/reply (event content cap), tool output, Edit input,
    failure output, unstructured responses."""
    tool, meta = describe_tool("Bash", {"command": text}, text, True)
    edit, _ = describe_tool("Edit", {"file_path": "f", "new_string": text}, "", False)
    failed, _ = describe_tool("Bash", {"command": "make"}, response_text({"weird": text}), False)
    return [_stored(text), _stored(tool), _stored(edit), _stored(failed), json.dumps(meta)]


@settings(max_examples=60, deadline=None)
@given(before=_filler, after=_filler, inner_before=_filler, inner_after=_filler, tag=st.sampled_from(_TAGS),
       repeat=st.integers(0, 40))
def test_a_canary_inside_a_private_span_never_survives_any_cut(before, after, inner_before, inner_after, tag, repeat):
    canary = "Zqcanary42"
    text = f"{before}{tag[0]}{inner_before}{canary}{inner_after}{tag[1]}{after}" + " filler" * repeat * 50
    for stored in _capture_paths(text):
        assert canary not in stored


@settings(max_examples=60, deadline=None)
@given(before=_filler, after=_filler, template=st.sampled_from(_SECRET_TEMPLATES), pad=st.integers(0, 3000))
def test_a_canary_inside_a_secret_never_survives_any_cut(before, after, template, pad):
    canary = "Zqcanary42"
    text = f"{before}\n{'z' * pad}\n{template.format(c=canary)}\n{after}"
    for stored in _capture_paths(text):
        assert canary.lower() not in stored.lower()


_PIECES = ["<private>", "</private>", "[private]", "[/private]", "<!-- private -->", "```", "\n```\n", "`",
           "password", "PASSWORD=", "_TOKEN", " = ", ": ", "'", '"', "AKIAQ3EGRU7XKZ4TW5NB", "ghp_" + "a" * 36,
           "https://u:p@h/x", "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "[REDACTED:secret]",
           "curl -u a:b ", "mysql -pX ", "sig=abcdefghij", "AccountKey=", " is ", "\n", "key=", "secret", "x"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=8)), max_size=30))
def test_redaction_is_idempotent(pieces):
    once = redact("".join(pieces)).text
    assert redact(once).text == once


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=8)), max_size=30))
def test_anchored_formats_equal_running_every_format(pieces):
    text = "".join(pieces)
    expected = text
    for kind, _anchors, pattern, group in secret_rules._FORMATS:
        expected = secret_rules._apply(pattern, kind, group, expected)[0]
    lower = text.lower()
    present = {a for a in secret_rules._FORMAT_ANCHORS if a in lower}
    got = text
    for kind, anchors, pattern, group in secret_rules._FORMATS:
        if not present.isdisjoint(anchors):
            got = secret_rules._apply(pattern, kind, group, got)[0]
    assert got == expected


def test_anchors_are_lower_case_and_plain_text_passes_through():
    assert mask_secrets("We met on Tuesday to plan the migration of the billing tables.") == (
        "We met on Tuesday to plan the migration of the billing tables.", 0)
    for kind, anchors, _pattern, _group in secret_rules._FORMATS:
        assert anchors and all(a == a.lower() for a in anchors), kind


def test_truncate_middle_reports_what_it_cut():
    out = truncate_middle("a" * 3000)
    assert re.search(r"\[… \d+ characters cut …\]", out) and len(out) < 2100


def test_every_case_of_the_privacy_audit_is_filtered_out():
    """The audit script's 80 cases (scripts/privacy_audit.py sends them through every capture path, slowly): the
    filter alone must already take each canary out, so a rule change that lets one through fails here at once."""
    from scripts.privacy_audit import _cases

    cases = _cases()
    assert len(cases) >= 80
    kept = [(cls, canary) for cls, canary, text in cases if canary.lower() in redact(text).text.lower()]
    assert kept == []
