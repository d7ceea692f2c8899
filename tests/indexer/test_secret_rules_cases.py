"""Families of secrets the filter must mask, and of ordinary developer text it must leave alone (each family is
a method, not one string: the values here are made up for the tests)."""

import pytest

from indexer.privacy import redact

# ordinary text that only looks like an assignment, a URL credential, a token or a command password
BENIGN = [
    "app/models/user_password.rb:17: warning: method redefined",  # grep / warning locations
    "  File lib/api_token.go:203:12: undefined: Foo",
    "podman run -it -u 501:20 alpine sh",  # uid:gid
    "docker exec --user postgres:postgres db psql",
    "curl http://127.0.0.1:5000/accounts/@alice",  # a port, then a path with @
    "GET http://verdaccio.local:4873/@myorg/widgets",
    '"@octokit/auth-token": "~5.1.1", "keytar-forked": "^7.10.0"',  # versions of packages named like secrets
    "The API supports Bearer authorization and cookies.",  # prose
    '{"api_key": {"type": "string", "pattern": "^[a-z]+$"}}',  # JSON schema
    '{"change_password": "Change your password", "token_hint": "Paste the token here."}',  # i18n labels
    "    secret_key: The key used to sign the session cookie.",  # docstrings
    "class Opts(BaseSettings):\n    client_secret: SecretStr\n    refresh_token: Optional[str] = None",  # types
    "type Env = {\n  authToken: string | null;\n  privateKey: Uint8Array;\n};",
    "pw = getpass('Vault password: ')",  # a prompt
    'export API_TOKEN="${API_TOKEN:?set API_TOKEN first}"',
    "see lib/ops_reports/weekly_summary.py and https://github.com/xai-org/xai-sdk-python",  # prefixes in paths
    "pip install aio_http_helpers_extra",
    "cache_key = 'user-profile-2024'", "sort_key: updated_at", "public_key = 'age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3'",
    "r = redis_connect('cache.internal', '6380')", "-----BEGIN CERTIFICATE-----\n" + "\n".join(
        ["MIIBszCCAVmgAwIBAgIUQ9f2hZ8kYv3Wm1Xr0Tq7bLcN4sEwCgYIKoZIzj0EAwIw"] * 4) + "\n-----END CERTIFICATE-----",
]


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_developer_text_is_left_alone(text):
    assert redact(text).text == text


# the secrets next to those look-alikes are still masked
SECRETS = [
    ("curl -u deploy:Vq8#mT2p https://ci.example.com", "Vq8#mT2p"),
    ("mongodb://svc:Zx9!kQ2w@mongo.example.com:27017/app", "Zx9!kQ2w"),
    ("https://ops:7Tq2vZ9w/x@registry.example.com:8443/@scope/pkg", "7Tq2vZ9w/x"),
    ("Authorization: Bearer Qm8vZ2xYd3Rv9kPq", "Qm8vZ2xYd3Rv9kPq"),
    ('{"db_password": "Forgot2Change!"}', "Forgot2Change!"),
    ("session_key = 'c29tZS1yYW5kb20tSDNzaGE5'", "c29tZS1yYW5kb20tSDNzaGE5"),
    ("partition_key = 'Xk29fLq0PzV8rTw3'", "Xk29fLq0PzV8rTw3"),
    ("password: Wintergarden", "Wintergarden"),
    ("export DB_PASSWORD='river stone amber lantern'", "river stone amber lantern"),
    ("ops_" + "f3A9kZ2qL8vN1xW7cR5tY0uB", "f3A9kZ2qL8vN1xW7cR5tY0uB"),
    ("server.login('me@example.com', 'Pq7-vX2!')", "Pq7-vX2!"),
]


@pytest.mark.parametrize("text, secret", SECRETS)
def test_secrets_beside_the_look_alikes_are_still_masked(text, secret):
    assert secret not in redact(text).text
