import re

from hypothesis import given, settings, strategies as st

from indexer.privacy import _SECRETS, PRIVATE_MARKER, mask_secrets, redact, strip_private


def test_each_tag_style_is_replaced_by_the_marker():
    text = "a <private>one</private> b [private]two[/private] c <!-- private -->three<!-- /private --> d"
    result = redact(text)
    assert result.text == f"a {PRIVATE_MARKER} b {PRIVATE_MARKER} c {PRIVATE_MARKER} d"
    assert result.private_spans == 3


def test_tags_are_case_insensitive_and_nest():
    result = redact("x <PRIVATE>outer <private>inner</private> still outer</Private> y")
    assert result.text == f"x {PRIVATE_MARKER} y"
    assert "outer" not in result.text


def test_multiline_span_keeps_line_numbers():
    result = redact("l1\n<private>secret\nmore\nsecret</private>\nl5")
    assert result.text.split("\n")[-1] == "l5"
    assert result.text.count("\n") == 4
    assert "secret" not in result.text


def test_code_fences_are_left_literal():
    text = "docs:\n```\nwrap it like <private>this</private>\n```\n"
    assert redact(text).text == text


def test_span_enclosing_a_fence_still_hides_it():
    text = "<private>\n```\ncode with a token\n```\n</private>\nafter"
    result = redact(text)
    assert "token" not in result.text and result.text.endswith("after")


def test_unclosed_tag_is_left_and_warned():
    result = strip_private("keep <private>this is unclosed")
    assert result.text == "keep <private>this is unclosed"
    assert result.warnings and "unclosed" in result.warnings[0]


def test_empty_tags_are_removed():
    assert redact("a <private> </private>b").text == "a b"
    assert redact("a <private></private>b").private_spans == 0


def test_secrets_of_common_providers_are_masked():
    samples = {
        "aws-key": "AKIAIOSFODNN7EXAMPLE",
        "github-token": "ghp_" + "a1B2" * 9,
        "openai-key": "sk-proj-" + "x9" * 16,
        "anthropic-key": "sk-ant-api03-" + "Zz" * 15,
        "stripe-key": "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "slack-token": "xoxb-123456789012-abcdefghij",
        "google-key": "AIza" + "S" * 35,
        "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    }
    for kind, secret in samples.items():
        masked, count = mask_secrets(f"value {secret} end")
        assert secret not in masked, kind
        assert f"[REDACTED:{kind}]" in masked, (kind, masked)
        assert count >= 1


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


def test_redaction_is_idempotent():
    once = redact("a <private>b</private> key=sk-proj-" + "q" * 30).text
    assert redact(once).text == once


def test_plain_text_is_untouched():
    text = "The password policy says rotate every 90 days; see the private channel."
    assert redact(text).text == text


_safe_text = st.text(alphabet=st.characters(blacklist_characters="<>[]`~-!", blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(before=_safe_text, secret=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 \n", min_size=1, max_size=30),
       after=_safe_text, style=st.sampled_from([("<private>", "</private>"), ("[private]", "[/private]"),
                                                 ("<!-- private -->", "<!-- /private -->")]))
def test_a_tagged_span_never_leaks(before, secret, after, style):
    token = "ZQX" + re.sub(r"\s", "", secret) + "QXZ"
    text = f"{before}{style[0]}{secret} {token} {secret}{style[1]}{after}"
    out = redact(text).text
    assert token not in out
    assert out.startswith(before.split("\n")[0][:5]) or not before


def _mask_without_anchors(text: str) -> str:
    for kind, _anchors, pattern, group in _SECRETS:
        marker = f"[REDACTED:{kind}]"
        text = pattern.sub(
            lambda m, g=group, mk=marker: mk if g == 0 else m.group(0)[: m.start(g) - m.start(0)] + mk
            + m.group(0)[m.end(g) - m.start(0):],
            text,
        )
    return text


_SECRET_PIECES = [
    "AKIAIOSFODNN7EXAMPLE", "asia", "ghp_", "gho_" + "Ab1" * 11, "github_pat_" + "x_" * 16, "glpat-" + "k" * 22,
    "sk-ant-" + "Q" * 24, "sk-", "SK-proj-" + "9" * 24, "rk_live_" + "Z" * 18, "xoxp-1234567890", "AIza" + "_" * 35,
    "hf_" + "H" * 32, "npm_" + "n" * 36, "eyJabcdefgh.eyJabcdefgh.sig_sig_sig", "Bearer ", "BEARER tok.en-123456789",
    "://", "mysql://root:pw1234@h", "PASSWORD", "Passwd=", "pwd: ", "api-key", "ApiKey", "client_secret",
    "AUTH_TOKEN", "access-key", "-----BEGIN OPENSSH PRIVATE KEY-----", "-----END OPENSSH PRIVATE KEY-----",
    "=", ":", "'", '"', " ", "\n", "secret", "value", "s3cr3t!!", "\u0130", "K",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_SECRET_PIECES), st.text(max_size=6)), max_size=14))
def test_anchored_masking_equals_running_every_pattern(pieces):
    text = "".join(pieces)
    assert mask_secrets(text)[0] == _mask_without_anchors(text)


def test_anchors_are_lower_case_and_plain_text_passes_through():
    assert mask_secrets("We met on Tuesday to plan the migration of the billing tables.") == (
        "We met on Tuesday to plan the migration of the billing tables.", 0)
    for kind, anchors, _pattern, _group in _SECRETS:
        assert anchors and all(a == a.lower() for a in anchors), kind
