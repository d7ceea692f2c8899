"""Families of secrets the filter must mask, and of ordinary developer text it must leave alone (each family is
a method, not one string: the values here are made up for the tests)."""

from pathlib import Path

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
    # a value shaped like a type name is a password unless it names a common type or has type syntax
    ("db_password: GreenHarbor", "GreenHarbor"),
    ("admin password: LakeView,", "LakeView"),
    ("password: amber77;", "amber77"),
]


@pytest.mark.parametrize("text, secret", SECRETS)
def test_secrets_beside_the_look_alikes_are_still_masked(text, secret):
    assert secret not in redact(text).text


# secrets in forms the filter used to miss, one or two per family
MISSED_BEFORE = [
    ('curl -H "Authorization: Key-V2 Zt8qLm2xVb7nRc4d" https://api.example.com', "Zt8qLm2xVb7nRc4d"),
    ("Authorization: Session Hq3Zp9LmXw2Rt7Vb", "Hq3Zp9LmXw2Rt7Vb"),
    ("https://api.telegram.org/bot5123456789:AAG" + "k" * 16 + "Q7w9" * 4 + "z/getMe", "Q7w9Q7w9Q7w9Q7w9"),
    ("token ATBB" + "Kp3vT9xQ2mW7zR4n" * 2, "Kp3vT9xQ2mW7zR4n"),
    ("sonar analysis token sqp_" + "9f8e7d6c5b4a" * 3, "9f8e7d6c5b4a9f8e"),
    ("refresh: 1//04" + "Xq9_Lm2-Vb7nRc4dZt8qLm2xVb7nRc4dZt8qLm2x", "Lm2-Vb7nRc4dZt8q"),
    ("MYSQL_PASSWORD=Gq7&vN2;xR9)wT4", "vN2;xR9)wT4"),
    ("database:\n  password: $Kp9vT2xQ&m", "Kp9vT2xQ&m"),
    ("oauth:\n  client_secret: |\n    Wv8Rk2Lq9Zt4Xm\n  scope: read\n", "Wv8Rk2Lq9Zt4Xm"),
    ("ALTER ROLE app WITH ENCRYPTED PASSWORD 'Lq8-Vz2#Tn5';", "Lq8-Vz2#Tn5"),
    ("GRANT ALL ON db.* TO 'svc'@'%' IDENTIFIED BY 'Rm4!Kx9@Pz2';", "Rm4!Kx9@Pz2"),
    ("mongodump --uri mongodb://db -u backup -p Tz7Kq2Wm9Lx4 --out /b", "Tz7Kq2Wm9Lx4"),
    ("bcp dbo.t out t.dat -S sql01 -U sa -P Qn3Zv8Rk1Wp6", "Qn3Zv8Rk1Wp6"),
    ("7za x -pHx5Lm2Vq9Rt3 backup.7z", "Hx5Lm2Vq9Rt3"),
    ("printf 'Yt6Nq2Wz8Kv4' | sudo -S systemctl restart app", "Yt6Nq2Wz8Kv4"),
    ("aws configure set aws_secret_access_key Pq9Lz2Xv7Rk4Tm8Wn3Bc6Hs1Jd5Fg0Ae2Uy7Io --profile ci", "Pq9Lz2Xv7Rk4"),
    ("$ vault login hvb.Kz8Qm2Xv7Rt4Lp9Wn3", "Kz8Qm2Xv7Rt4Lp9Wn3"),
    # files and outputs that give a secret by position or layout
    ("machine registry.example.org\n    login ci-bot\n    password Fh3Wq8Zt2Lm6\n", "Fh3Wq8Zt2Lm6"),
    ("machine files.example.org password Nv5Kx2Rq8Tz1 login ops", "Nv5Kx2Rq8Tz1"),
    ("replica.internal:6432:orders:reporter:Wd4Hy7Qs2Lk9", "Wd4Hy7Qs2Lk9"),
    ("AWS Secret Access Key [****************ABCD]: Gm3Tz8Qk2Lx7Vn4Rp9Wd6Hs1Jf5Bc0Ye3Ua8Io2", "Gm3Tz8Qk2Lx7Vn4R"),
    ("ACCESSKEY\tAKIA" + "Q7ZX3LM2VT9KR4WP" + "\t2026-01-02T03:04:05Z\tZp8Kw2Qx7Lm4Tr9Vn3Bd6Hs1Jf5Gc0Ya2Ue8Io3W\tActive",
     "Zp8Kw2Qx7Lm4Tr9V"),
    ("Key              Value\n---              -----\napi_token        Lq7Vz2Xm9Kt4Rw8Pn3\n", "Lq7Vz2Xm9Kt4Rw8Pn3"),
    ("| name | value |\n| --- | --- |\n| smtp_password | Cz6Wn1Qv8Ht3 |", "Cz6Wn1Qv8Ht3"),
    ('dsn := "report:Jx5Pq8Lw2Zt7@tcp(db.internal:3306)/sales"', "Jx5Pq8Lw2Zt7"),
    ("url=jdbc:oracle:thin:hr/Bv9Rt2Kq6Xm3@//ora01:1521/PDB1", "Bv9Rt2Kq6Xm3"),
    ("git remote add origin https://v8k2qz7mt4lx9wp3rn6bd1hs5jf0gc2ya8ue@dev.example.com/org/_git/app",
     "v8k2qz7mt4lx9wp3rn6b"),
    # names of other secrets, Terraform and Dockerfile forms, a function key, a password told in a sentence
    ("users:\n- name: ci\n  user:\n    client-key-data: TFMwdExTMUNSVWRKVGlCU1UwRWdVRkpKVmtGVVJTQkxSVmt0\n",
     "TFMwdExTMUNSVWRKVGlC"),
    ('network={\n    ssid="lab"\n    psk="Hw7Zq2Lx9Vt4"\n}', "Hw7Zq2Lx9Vt4"),
    ('WALLET_MNEMONIC="orbit maple canyon velvet tiger sugar"', "orbit maple canyon"),
    ('variable "api_token" {\n  type    = string\n  default = "Rk5Tq8Wz2Lm7"\n}', "Rk5Tq8Wz2Lm7"),
    ("ENV REDIS_PASSWORD Gy4Lp9Qz2Wx7", "Gy4Lp9Qz2Wx7"),
    ("https://app.example.net/api/hook?code=Tq8Zm2Lx7Vn4Rk9Wp3Bd6Hs1==&clientId=x", "Tq8Zm2Lx7Vn4Rk9Wp3Bd6"),
    ("fyi the password for the demo tenant is Kq7-Zv2Lm, change it after", "Kq7-Zv2Lm"),
    # a literal passed where a known call takes its secret
    ('twilio = Client("AC" + sid, "d41d8cd98f00b204e9800998ecf8427e")', "d41d8cd98f00b204e9800998ecf8427e"),
    ("const t = jwt.sign({ sub: u.id }, 'Wq7-Lz2Xk9', { expiresIn: 60 })", "Wq7-Lz2Xk9"),
    ('digest = hmac.new(b"Nt5Kv8Qz2Lw", body, "sha256").hexdigest()', "Nt5Kv8Qz2Lw"),
    ('DriverManager.getConnection("jdbc:postgresql://db/app", "app", "Rb6Yq1Wz8Lc")', "Rb6Yq1Wz8Lc"),
    ("$db = new PDO('mysql:host=db;dbname=shop', 'shop', 'Hx2Kp9Qv4Lt');", "Hx2Kp9Qv4Lt"),
    # a secret's fallback in code, base64 JSON tokens, cookies
    ("const key = process.env.STRIPE_SECRET ?? 'Vk3Qz8Lm2Xw';", "Vk3Qz8Lm2Xw"),
    ('SIGNING_KEY = os.getenv("SIGNING_KEY", "Pw4Lx9Qz2Tv")', "Pw4Lx9Qz2Tv"),
    ("token: eyJrIjoiWnE5dkxtMlh0N1JrNFdwOE5iM1ljNkhkMUZzIiwibiI6ImNpIiwiaWQiOjF9", "WnE5dkxtMlh0N1JrNFdw"),
    ("Cookie: csrftoken=abc; sessionid=Yt7Lq2Zx9Wv4Kp8Nb3Rc6Hd", "Yt7Lq2Zx9Wv4Kp8Nb3Rc6Hd"),
]


@pytest.mark.parametrize("text, secret", MISSED_BEFORE)
def test_secrets_in_forms_once_missed_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_a_masked_secret_is_never_masked_again_inside_its_marker():
    for text in ("https://ghp_" + "Zx8yQ2vLm9Tk4Rw7Pn3Jb6Hc1Fd5Gs0Ae2" + "@github.com/acme/repo.git",
                 "https://sk-ant-" + "Zx8yQ2vLm9Tk4Rw7Pn3Jb6" + ":x@example.com"):
        out = redact(text).text
        assert "[REDACTED:[REDACTED" not in out and out.count("[REDACTED:") == 1, out


def test_layouts_without_a_secret_stay():
    for text in ("password    required", "token_count    4096", "primary_key    id", "key         value",
                 "12:30:45:123:foo", "https://jenkins-build-agent-12@ci.example.com", "the secret access key rotates",
                 "| password | The user's password |", "AWS Session Token [None]: None",
                 "the password is required.", "Password reset emails are sent by the worker", "password-reset flow",
                 'variable "region" {\n  default = "eu-west-1"\n}', "ENV PATH /usr/local/bin:$PATH",
                 "see ?code=42 in the docs", 'c = httpx.Client("https://api.example.com", "v2")',
                 "Client(account_sid, auth_token)", "jwt.sign(payload, process.env.JWT_SECRET)",
                 "const port = process.env.PORT || '3000';", 'host = os.environ.get("DB_HOST", "localhost")',
                 'header = "eyJhbGciOiJIUzI1NiJ9"'):
        assert redact(text).text == text, redact(text).text


def test_variable_references_and_empty_options_stay():
    for text in ("password: $DB_PASSWORD", "password: ${DB_PASSWORD}", "API_KEY=$(pass show api)",
                 "ssh-keygen -t ed25519 -N '' -f key", "apiKey: <YOUR_API_KEY>", "az login --use-device-code"):
        assert redact(text).text == text


# secrets told by what holds or prints them: a hash's format, a Secret's kind, a command that prints one
TOLD_BY_THEIR_HOLDER = [
    ("deploy:$2b$12$" + "Qm4Lz8Rt2Xv7Kp9Wn3Bd6Hs1Jf5Gc0Ya2Ue8Io3Tq7Lm4Zx9Rv2Kw", "Qm4Lz8Rt2Xv7Kp9W"),
    ("ops:$6$rounds=5000$Hq2Lz7Xv$" + "Tm8Kw3Rq9Zp2Lx7Vn4Bd6Hs1Jf5Gc0Ya" + ":19700:0:99999:7:::", "Tm8Kw3Rq9Zp2Lx7V"),
    ("ci:$y$j9T$Vb3Nq8Lz2Wx$" + "Pk7Rt4Zm9Lq2Xw8Vn3Bd6Hs1Jf5Gc0Ya2Ue8Io3Tq", "Pk7Rt4Zm9Lq2Xw8V"),
    ('"password": "pbkdf2_sha256$720000$Wq8Lz2Xv$Zt7Kq2Lm9Rx4Vn8Bd3Hs6Jf1Gc5Ya0Ue="', "Zt7Kq2Lm9Rx4Vn8B"),
    ("hash = '$argon2id$v=19$m=65536,t=3,p=4$Rk2Lq8Zx$Vm7Tq3Lz9Wx2Kp8Nb4Hd6Js1Fg5'", "Vm7Tq3Lz9Wx2Kp8N"),
    ("userPassword: {SSHA}Yq8Lz2Xv7Rt4Kp9Wn3Bd6Hs1Jf5Gc0=", "Yq8Lz2Xv7Rt4Kp9W"),
    ("svc_backup:1104:aad3b435b51404eeaad3b435b51404ee:8846f7eaee8fb117ad06bdd830b7586c:::",
     "8846f7eaee8fb117ad06bdd830b7586c"),
    ("smtp_pass: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  " + "3a7f9c2e" * 8 + "\n  " + "61b4d8e0" * 8 + "\n",
     "3a7f9c2e3a7f9c2e"),
    ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\ndata:\n  SMTP_URL: "
     "c210cDovL21haWw6UXo4THcyWHY3QG14LmV4YW1wbGUuY29t\n  region: ZXUtd2VzdC0x\n", "c210cDovL21haWw6UXo4"),
    ('{"apiVersion": "v1", "kind": "Secret",\n "data": {\n  "ADMIN_DSN": "cG9zdGdyZXM6Ly9hOmJAaC9k"\n }\n}',
     "cG9zdGdyZXM6Ly9hOmJAaC9k"),
    ("$ op read 'op://Infra/prod-db/credential'\nVt8Qm2Lx9Zr4\n$ ls", "Vt8Qm2Lx9Zr4"),
    ("Bash: gcloud secrets versions access latest --secret=stripe-webhook\nwhsk_Zq8Lm2Xv7Rt4Kp9W", "Zq8Lm2Xv7Rt4Kp9W"),
    ("$ security find-generic-password -s wifi -w\nmaple-Orbit-77", "maple-Orbit-77"),
    ("~/app$ echo \"$SENTRY_AUTH_TOKEN\"\n9c1f0e7ab24d4b8e8f1d2c3b4a596877", "9c1f0e7ab24d4b8e8f1d2c3b4a596877"),
    ("PS C:\\app> Get-Content .\\config\\deploy.key\nKm3Tz8Qk2Lx7Vn4R", "Km3Tz8Qk2Lx7Vn4R"),
    ("$ openssl rand -base64 24\nq7Lz2Xv9Rt4Kp8Wn3Bd6Hs1Jf5Gc0Ya", "q7Lz2Xv9Rt4Kp8Wn3Bd6"),
    ("snmpget -v2c -c Rq7Lz2Xw9 10.1.2.3 sysUpTime.0", "Rq7Lz2Xw9"),
    ("mc alias set backup https://s3.internal:9000 backupuser Wz8Kq2Lm7Xr4Tv9", "Wz8Kq2Lm7Xr4Tv9"),
    ("GITLAB_DEPLOY_PAT=zq8lm2xv7rt4kp9wn3bd6hs1", "zq8lm2xv7rt4kp9wn3bd6hs1"),
    ("OTP_SEED=JBSWY3DPEHPK3PXPQ7LZ2XV9", "JBSWY3DPEHPK3PXPQ7LZ2XV9"),
    ('curl --cookie "sid=Vq8Lz2Xm7Rt4Kp9Wn3Bd6; theme=dark" https://app.example.com', "Vq8Lz2Xm7Rt4Kp9Wn3Bd6"),
    ("|  SessionToken  |  Fq7Lz2Xv9Rt4Kp8Wn3Bd6Hs1Jf5Gc0Ya  |", "Fq7Lz2Xv9Rt4Kp8Wn3Bd6"),
    ('imap.login(account, "Tq7-Lz2Xv9")', "Tq7-Lz2Xv9"),
    ('client = replicate.Client("c7d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3")', "c7d9e0f1a2b3c4d5e6f7"),
    ('sdk = Mixpanel("6f2c8e1d9a7b4c3e5f0a1b2c3d4e5f6a")', "6f2c8e1d9a7b4c3e5f0a"),
    ('conn = Database::connect("reporting", "Lq7#Zx2Vm9Tk")', "Lq7#Zx2Vm9Tk"),
    ("bot.start('OTk4NzY1NDMyMTA5ODc2NTQz.Gq8Lz2.Xv7Rt4Kp9Wn3Bd6Hs1Jf5Gc0Ya2Ue8Io3Tq7L')", "Xv7Rt4Kp9Wn3Bd6Hs1Jf"),
    ("the deploy token for staging: Vz8-Lq2.Xm7+Tk4", "Vz8-Lq2.Xm7+Tk4"),
]


@pytest.mark.parametrize("text, secret", TOLD_BY_THEIR_HOLDER)
def test_secrets_told_by_their_format_kind_or_command_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_what_only_looks_held_like_a_secret_stays():
    for text in ("RANDOM_SEED=42", "seed: 1337", 'IPV4_PAT = "[0-9]{1,3}(?:\\.[0-9]{1,3}){3}"',
                 "longopt_pat = r'[-a-zA-Z0-9]+'", 'repo.commit("9fceb02d0ae598e95dc970b74767f19372d61af8")',
                 'ObjectId("507f1f77bcf86cd799439011")', 'Path("fixtures/Run2024Q3/report.csv")',
                 "const label = 'ThisIsAVeryLongConstantName2024WithDigits';",
                 '"transcript_path": "~/.claude/projects/-home-dev-app/7c1e4f2a-91d3-4b8e-a6f5.jsonl"',
                 "$ echo $HOME\n/home/dev", "$ cat README.md\nmemsearch indexes notes", "the token is invalid",
                 "token = self._in_arguments and ARGUMENT or SYNTAX", "API token is 128-bit",
                 "kind: ConfigMap\ndata:\n  LOG_LEVEL: ZGVidWc=\n", "export PATH=$HOME/bin:$PATH",
                 "s = SrcPackage(cache, '../tests/pkg_0.2.9-6.dsc')", "snmpwalk -v2c 10.0.0.1 system",
                 "price = Decimal('12345678901234567890.25')"):
        assert redact(text).text == text, redact(text).text


# secrets given by a layout the name rules do not see: fields beside their value, lists of arguments, directives,
# stdin, a command's output, prose; each a family, the values made up
BY_LAYOUT = [
    ('<setting key="smtp.password">Vq7-Lz2Xm9</setting>', "Vq7-Lz2Xm9"),
    ("<key>STRIPE_SECRET</key>\n    <string>Rk8Tq2Lz7Xw4Vm9</string>", "Rk8Tq2Lz7Xw4Vm9"),
    ('"signing_secret": {\n  "sensitive": true,\n  "value": "Hq2Lz8Xv7Rt4"\n}', "Hq2Lz8Xv7Rt4"),
    ('cmd = ["pg_dump", "-h", "db", "-U", "app", "--password=Wq8Lz2Xv7"]', "Wq8Lz2Xv7"),
    ("  command: [\"redis-cli\", \"-a\", \"Tz7Kq2Lm9Rx4\", \"ping\"]", "Tz7Kq2Lm9Rx4"),
    ("fastcgi_param APP_SECRET Lx9Qz2Wv7Rt4Km8;", "Lx9Qz2Wv7Rt4Km8"),
    ("RequestHeader set X-Auth-Token \"Zm8Kq2Lx7Vt4Rw9\"", "Zm8Kq2Lx7Vt4Rw9"),
    ("requirepass Qz8-Lm2Xv7\nmaxmemory 2gb", "Qz8-Lm2Xv7"),
    ("cache:6379> AUTH Kv7Lq2Zx9", "Kv7Lq2Zx9"),
    ("echo 'Nq7Lz2Xv9Rt4' | wrangler secret put STRIPE_KEY", "Nq7Lz2Xv9Rt4"),
    ("printf '%s' 'Bz8Kq2Lm7' | docker secret create db_pass -", "Bz8Kq2Lm7"),
    ("kubectl create secret generic api --from-literal=token=Xq7Lz2Vm9Rt4", "Xq7Lz2Vm9Rt4"),
    ("gh secret set NPM_TOKEN --body Lq8Zx2Vm7Tk4Rw9", "Lq8Zx2Vm7Tk4Rw9"),
    ("$ terraform output -raw smtp_password\nGq7-Lz2Xv9\n$ ", "Gq7-Lz2Xv9"),
    ("$ aws ssm get-parameter --name /ci/npm --with-decryption --query Parameter.Value --output text\n"
     "Wz8Kq2Lm7Xr4Tv9", "Wz8Kq2Lm7Xr4Tv9"),
    ("$ wg genpsk\nQm4Lz8Rt2Xv7Kp9Wn3Bd6Hs1Jf5Gc0Ya2Ue8Io3Tq7L=", "Qm4Lz8Rt2Xv7Kp9Wn3Bd6"),
    ("VENDOR_API=Tq7Lz2Xv9Rk4Wm8Pn3Bd6Hs1", "Tq7Lz2Xv9Rk4Wm8Pn3Bd6Hs1"),
    ("registry:\n  auth: \"builder:Kq7Lz2Xv9Rt4\"", "Kq7Lz2Xv9Rt4"),
    ("**API key:** `Vb8Kq2Lm7Xr4Tz9Wn3`", "Vb8Kq2Lm7Xr4Tz9Wn3"),
    ("Das Passwort lautet: Hz7-Kq2Lm9", "Hz7-Kq2Lm9"),
    ("use Pz8!Lq2Xv7 as the password for the vpn", "Pz8!Lq2Xv7"),
    ("the wifi login is guest:Rv7Kq2Lz9x", "Rv7Kq2Lz9x"),
    ('curl -H "Authorization: Zq8Lm2Xv7Rt4Kp9Wn3Bd6" https://api.example.com', "Zq8Lm2Xv7Rt4Kp9Wn3Bd6"),
    ("https://chat.example.com/hooks/9xq2lmz7vt4rw8kp3bd6hs1jf5", "9xq2lmz7vt4rw8kp3bd6hs1jf5"),
    ("https://api.example.com/weather?city=Oslo&appid=q7Lz2Xv9Rt4Kp8Wn3Bd6", "q7Lz2Xv9Rt4Kp8Wn3Bd6"),
    ('{"kty": "oct", "k": "Vq8Lz2Xm7Rt4Kp9Wn3Bd6Hs1"}', "Vq8Lz2Xm7Rt4Kp9Wn3Bd6Hs1"),
    ("-----BEGIN OpenVPN Static key V1-----\n" + "3f9a7c2e" * 8 + "\n-----END OpenVPN Static key V1-----",
     "3f9a7c2e3f9a7c2e"),
    ("my recovery phrase: orbit maple canyon velvet tiger sugar lemon harbor quiet sand pilot frost", "velvet tiger"),
    ("Your 2FA backup codes:\n  4821-9935\n  1177-0242\n  6630-5518\n", "4821-9935"),
    ("Enter this setup key: JBSW Y3DP EHPK 3PXP", "JBSW Y3DP EHPK 3PXP"),
    ("IDENTIFIED WITH mysql_native_password AS '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'",
     "2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"),
    ("res.cookie('sid', 'Qz8Lm2Xv7Rt4Kp9Wn3Bd6', { httpOnly: true })", "Qz8Lm2Xv7Rt4Kp9Wn3Bd6"),
    ("ipmitool -H 10.0.0.9 -U root -P Kx7-Qz2Lm9 sensor list", "Kx7-Qz2Lm9"),
    ("twine upload -u ci -p Lz8Kq2Xv7Rt4 dist/*", "Lz8Kq2Xv7Rt4"),
]


@pytest.mark.parametrize("text, secret", BY_LAYOUT)
def test_secrets_given_by_layout_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_stand_ins_and_names_stay():
    for text in ('curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com',
                 'mysql -u root -p"$MYSQL_ROOT_PASSWORD" -e "select 1"', "DB_PASSWORD=op://Prod/Postgres/password",
                 "password: !secret mqtt_password", "api_key: <set me>", "API_KEY=YOUR_API_KEY_HERE",
                 "OPENAI_API_KEY=sk-...", 'tokenizer.add_special_tokens({"pad_token": "[PAD]"})',
                 '{"bos_token": "<s>", "eos_token": "</s>"}', "permissions:\n  id-token: write",
                 "password_encryption = scram-sha-256", 'FIELDS = ("password", "api_key", "token")',
                 "api_key = api_key or os.environ.get('API_KEY')", "client = OpenAI(api_key=api_key)",
                 "secret_key = settings.SECRET_KEY", "<key>CFBundleName</key>\n<string>Memo</string>",
                 'ETag: W/"25c39de0-B07tjdmTHt/4QQEZeRk4Q/2gTGv"', "$ kubectl get secrets\nNAME    TYPE    DATA",
                 "LoadCredential=tls_key:/etc/app/tls.key", "arn:aws:secretsmanager:eu-west-1:1234:secret:prod/db",
                 "See :manpage:`shutdown(2)`.", "OID_RSA_WITH_SHA256 = x509.oid.SignatureAlgorithmOID.RSA_WITH_SHA256",
                 "res = re_splitComparison.match(pred)", "self.token += nextchar",
                 'SAMPLE = ["--verbose", "--output", "report.txt"]', "user install incompatible with --prefix/--home"):
        assert redact(text).text == text, redact(text).text


# secrets told in sentences in other languages, after a word for them, or set by calls and flags named for them
IN_WORDS_AND_CALLS = [
    ("la password del database di test è Rk7!Lq2Xv9", "Rk7!Lq2Xv9"),
    ("het wachtwoord van de nas is Tz8#Kq2Lm7", "Tz8#Kq2Lm7"),
    ("пароль от сервера: Vq7*Lz2Xm9", "Vq7*Lz2Xm9"),
    ("服务器密码是 Hq2!Lz8Xv7，不要外传", "Hq2!Lz8Xv7"),
    ("ステージングのパスワードは Nz7?Kq2Lm9 です", "Nz7?Kq2Lm9"),
    ("서버 비밀번호는 Pw8@Lq2Zx7 입니다", "Pw8@Lq2Zx7"),
    ("the webhook secret we rotated today: Zq8Lm2Xv7Rt4Kp9Wn3Bd6 please update it", "Zq8Lm2Xv7Rt4Kp9Wn3Bd6"),
    ("The PIN for the door panel is 48213377", "48213377"),
    ('conn.setPassword("Lq8#Zx2Vm7");', "Lq8#Zx2Vm7"),
    ('client.basic_auth("ops", Some("Wv7!Kq2Lz9"))', "Wv7!Kq2Lz9"),
    ('req.SetBasicAuth("ops", "Tk4Rw8Pn3Bd6Hs1Jf5")', "Tk4Rw8Pn3Bd6Hs1Jf5"),
    ('var smtpPassword string = "Gz8-Lq2Xv7"', "Gz8-Lq2Xv7"),
    ("Parameters:\n  AdminToken:\n    Type: String\n    NoEcho: true\n    Default: Hv7Kq2Lz9Xm4", "Hv7Kq2Lz9Xm4"),
    ('db_pass = ENV.fetch("DB_PASSWORD") { "Qz7!Lm2Xv9" }', "Qz7!Lm2Xv9"),
    ("psql -h db -U report -p 5432 -d sales --password=Rv8Kq2Lz7", "Rv8Kq2Lz7"),
    ("clickhouse-client --user admin --password Xz7!Lq2Vm9 --query 'select 1'", "Xz7!Lq2Vm9"),
    ("az webapp config appsettings set --name api --key STRIPE_SECRET --value Kq8Lz2Xv7Rt4", "Kq8Lz2Xv7Rt4"),
    ("ci-upload --token 7c1e4f2a91d34b8ea6f5c3d2b1a09876 --file out.xml", "7c1e4f2a91d34b8ea6f5c3d2b1a09876"),
    ("const rpc = 'https://mainnet.example-rpc.io/v2/Hq8Lz2Xv7Rt4Kp9Wn3Bd6Zm1Y'", "Hq8Lz2Xv7Rt4Kp9Wn3Bd6Zm1Y"),
    ('store.set("Wq7!Lz2Xv9", forKey: "vpnPassword")', "Wq7!Lz2Xv9"),
    ("mycli config set api_token Tz8Kq2Lm7Xr4Vb9Wn3", "Tz8Kq2Lm7Xr4Vb9Wn3"),
]


@pytest.mark.parametrize("text, secret", IN_WORDS_AND_CALLS)
def test_secrets_in_words_calls_and_flags_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_long_tokens_are_masked_whole():
    token = "Zq8Lm2Xv7Rt4Kp9Wn3Bd6Hs1Jf5Gc0Ya2Ue8Io3" * 6
    for text in (f"here is the bot token, keep it safe: {token}", f"token: {token}", f"my api key {token} thanks"):
        out = redact(text).text
        assert not any(token[i : i + 10] in out for i in range(0, len(token) - 10, 5)), out


def test_words_near_a_secret_word_that_are_no_secret_stay():
    for text in ("the password must be at least 12 characters", "Password reset link expires in 24h",
                 "password_encryption = scram-sha-256", "the token endpoint returns JSON",
                 "if isinstance(key, (Ed25519PrivateKey, Ed448PrivateKey)):", "keys = _load_keys(path, 'rb')",
                 "psql -h db -U app -p 5432 -d shop", "docker run -u 1000 -p 8080:80 nginx",
                 "docker build -t registry.example.com/app:2024 .", "from_secret: docker_password",
                 "creds = ' --username=%s --password=%s' % (user, pw)", "kubectl describe secret db\npassword:  24 bytes",
                 "API_KEY: prod/api-key", "let token = std::env::var(\"API_TOKEN\")?;",
                 "guard let password = passwordField.text, !password.isEmpty else { return }",
                 "data_bag_item('credentials', 'postgres')", "git commit -m 'rotate the token (see 9fceb02)'"):
        assert redact(text).text == text, redact(text).text


# passwords in configs and commands whose layout says what they are
BY_CONFIG_AND_COMMAND = [
    ("# ~/.msmtprc\naccount work\nhost mail.example.com\nuser ops@example.com\npassword qzlmxvwtkrpbdnsa\n",
     "qzlmxvwtkrpbdnsa"),
    ("ldap_uri ldaps://ldap.example.com\nbinddn cn=reader,dc=example\nbindpw Kv8!Lq2Zx7\n", "Kv8!Lq2Zx7"),
    ("listen admin\n    bind :9000\n    stats auth ops:Wq8#Lz2Xv7\n", "Wq8#Lz2Xv7"),
    ("myhost.example.com myvpn.example.com : PSK \"Hz7!Kq2Lm9Xv\"", "Hz7!Kq2Lm9Xv"),
    ("KafkaServer {\n  org.apache.kafka.common.security.plain.PlainLoginModule required\n"
     "  user_broker=\"Tq7#Lz2Xv9\";\n};", "Tq7#Lz2Xv9"),
    ("enable secret 5 $1$mERr$hx5rVt7rPNoS4wqbXKX7m0\nusername ops privilege 15 password 7 0822455D0A16",
     "0822455D0A16"),
    ("{epgsql, [{host, \"db\"}, {password, \"Rz8-Kq2Lm7\"}]}", "Rz8-Kq2Lm7"),
    ("(def conn {:user \"app\" :password \"Vq7!Lz2Xm9\"})", "Vq7!Lz2Xm9"),
    ("steamcmd +login builder Lz8%Kq2Xv7 +quit", "Lz8%Kq2Xv7"),
    ("schtasks /Create /TN backup /RU EXAMPLE\\svc /RP Nq7#Lz2Xv9 /TR backup.cmd", "Nq7#Lz2Xv9"),
    ("echo 'Pz8!Lq2Xv7' > ~/.rsync.pass && chmod 600 ~/.rsync.pass", "Pz8!Lq2Xv7"),
    ("$ cat /etc/app/admin.pw\nBq7-Lz2Xv9Kt\n$ ", "Bq7-Lz2Xv9Kt"),
    ("echo 'Hq2Lz8Xv7!' | kinit deploy@EXAMPLE.COM", "Hq2Lz8Xv7!"),
    ("Backlog WifiConfig 2; Password1 Kz7#Lq2Xm9; MqttHost 10.0.0.5", "Kz7#Lq2Xm9"),
    ("Adgangskoden til routeren er Xv8#Lq2Zm7", "Xv8#Lq2Zm7"),
    ("كلمة المرور للخادم هي Qz8!Lm2Xv7", "Qz8!Lm2Xv7"),
    ("WiFi.begin(\"lab-net\", \"Tk4#Rw8Pn3Bd\");", "Tk4#Rw8Pn3Bd"),
    ("relay.example.com:587 mailer@example.com:Gz8!Lq2Xv7Rt", "Gz8!Lq2Xv7Rt"),
    ("$ nsc generate nkey --user\nSUAM7Z2XQ4LW6VJ3KPN5RBT2YH4GD6CF7XE3WQ2PK5ZMV3NB6JT4HQ7XL2", "SUAM7Z2XQ4LW6VJ3"),
]


@pytest.mark.parametrize("text, secret", BY_CONFIG_AND_COMMAND)
def test_secrets_by_config_and_command_layout_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_digests_public_keys_and_references_in_configs_stay():
    for text in ("golang.org/x/text v0.14.0 h1:ScX5w1eTa3QqT8oi6+ziP7dTV1S2+ALU0bI+0zXKWiQ=",
                 '  hashes = [\n    "h1:Qm4Lz8Rt2Xv7Kp9Wn3Bd6Hs1Jf5Gc0Ya2Ue8Io3T=",\n  ]',
                 "[Peer]\nPublicKey = Qm4Lz8Rt2Xv7Kp9Wn3Bd6Hs1Jf5Gc0Ya2Ue8Io3Tq7=",
                 "ED25519 key fingerprint is SHA256:Qm4Lz8Rt2Xv7Kp9Wn3Bd6Hs1Jf5Gc0Ya2Ue8Io3Tq.",
                 "admin_password = $__file{/run/secrets/admin}", "my $pw = $ENV{DB_PASSWORD} // die;",
                 "security:\n  authorization: enabled\n  keyFile: /etc/mongod/keyfile",
                 "PASSWORD_HISTORY = 5", "the new one is in 1Password under \"prod\"",
                 "$ kubectl get secret app -o jsonpath='{.data}' | jq 'keys'\n[\n  \"db-password\"\n]",
                 "# made with: htpasswd -nbB <user> <password>\n# bcrypt cost 10",
                 "cacerts = _ffi.new(\"Cryptography_STACK_OF_X509**\")",
                 "'JsonLexer': ('pygments.lexers.data', 'Javascript+UL4', ('js+ul4',))"):
        assert redact(text).text == text, redact(text).text


# exports and tables with a secret's column, labels above their values, REPL output, cookie lists
BY_EXPORT_AND_OUTPUT = [
    ("name,url,username,password,note\nwiki,https://wiki.example.com,ops,Tq7#Lz2Xv9,\nvpn,,ops,Rk8!Lq2Zx7,",
     "Rk8!Lq2Zx7"),
    ('"Group","Title","Username","Password"\n"Root","nas","admin","Vq8-Lz2Xm7"', "Vq8-Lz2Xm7"),
    ("| env | user | password |\n|-----|------|----------|\n| stage | admin | Hz7!Kq2Lm9 |", "Hz7!Kq2Lm9"),
    ("│ NAME            │ VALUE                │\n│ SMTP_PASSWORD   │ Wq7#Lz2Xv9Rk         │", "Wq7#Lz2Xv9Rk"),
    ("Access key ID\nAKIAQ7ZX3LM2VT9KR4WP\nSecret access key\nZp8Kw2Qx7Lm4Tr9Vn3Bd6Hs1Jf5Gc0Ya2Ue8Io3W",
     "Zp8Kw2Qx7Lm4Tr9Vn3Bd"),
    (">>> settings.SMTP_PASSWORD\n'Kq7!Lz2Xv9'", "Kq7!Lz2Xv9"),
    ("In [4]: os.environ['API_TOKEN']\nOut[4]: 'Tz8Kq2Lm7Xr4Vb9Wn3Bd6'", "Tz8Kq2Lm7Xr4Vb9Wn3Bd6"),
    ("$ op run --env-file=.env -- printenv STRIPE_SECRET\nWq8Lz2Xv7Rk4Tm9Xq7Lz2Vm9", "Xq7Lz2Vm9"),
    ("STRIPE_KEY_PROD=Rq7Lz2Xv9Kt4Wm8Pn3Bd6Hs1", "Rq7Lz2Xv9Kt4Wm8Pn3Bd6Hs1"),
    ("APP_KEYS=Vm8Kq2Lz7Xr4==,Tq7Lz2Xv9Rk4==", "Tq7Lz2Xv9Rk4"),
    ('  ~ "API_SECRET" = "(sensitive)" -> "Gq7!Lz2Xv9"', "Gq7!Lz2Xv9"),
    ('reg add "HKCU\\Software\\Tool" /v ApiToken /t REG_SZ /d "Hq8Lz2Xv7Rt4Kp9W" /f', "Hq8Lz2Xv7Rt4Kp9W"),
    ("curl https://app.example.com -b 'theme=dark; sessionid=Qz8Lm2Xv7Rt4Kp9Wn3Bd6; csrftoken=Vb8Kq2Lm7Xr4Tz9Wn3'",
     "Qz8Lm2Xv7Rt4Kp9Wn3Bd6"),
    ("Het wachtwoord is Lichen-fjord7506", "Lichen-fjord7506"),
    ("Паролата е Heron#nectar01", "Heron#nectar01"),
]


@pytest.mark.parametrize("text, secret", BY_EXPORT_AND_OUTPUT)
def test_secrets_in_exports_labels_repl_output_and_cookie_lists_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_tables_of_names_and_settings_stay():
    for text in ("| Variable | Required | Description |\n|---|---|---|\n| `API_TOKEN` | yes | Token for the API |\n"
                 "| `DB_PASSWORD` | yes | Database password |",
                 "| Key | Description |\n|-----|-------------|\n| `api_key` | Your API key |\n| `timeout` | Seconds |",
                 '  File "/app/auth.py", line 88, in verify_token\n    payload = jwt.decode(token, key, algorithms=["HS256"])',
                 "max_tokens: 4096", "SECRET_ROTATION_DAYS=90", 'fetch(url, {"credentials": "omit"})',
                 "set-cookie: locale=de-DE; Path=/; Max-Age=31536000; SameSite=Lax",
                 "val apiKey = BuildConfig.MAPS_API_KEY", "ENC[AES256_GCM,data:q9Xk2w==,iv:E9zfQm4Lz8Rt2Xv7Kp=,type:str]",
                 "name,email,role\nada,ada@example.com,admin"):
        assert redact(text).text == text, redact(text).text


_EVAL = Path(__file__).resolve().parents[3] / "shared" / "eval"


def _locomo_turns() -> list[str]:
    import json

    turns = []
    for conversation in json.loads((_EVAL / "locomo-dev" / "locomo_dev.json").read_text(encoding="utf-8")):
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns.extend(turn["text"] for turn in session if isinstance(turn, dict) and "text" in turn)
    return turns


@pytest.mark.skipif(not _EVAL.is_dir(), reason="the public eval sets live in ../shared/eval")
def test_scientific_abstracts_and_conversations_pass_through_unchanged():
    """Prose with no secret in it: 1,500 SciFact abstracts and every LoCoMo dev turn leave the filter as they came
    (secretase, a community setting, a key finding are words, not secrets)."""
    import json

    with (_EVAL / "scifact" / "corpus.jsonl").open(encoding="utf-8") as f:
        abstracts = [json.loads(line)["text"] for _, line in zip(range(1500), f)]
    turns = _locomo_turns()
    assert len(abstracts) == 1500 and len(turns) > 1000
    changed = [t for t in abstracts + turns if redact(t).text != t]
    assert changed == [], changed[:3]


# secrets written to token files, wrapped in calls, set by directives with flags, or told in more languages
ROUND_SIX = [
    ("printf '%s\\n' 'Zq8Lm2Xv7Rt4Kp9Wn3Bd6' > ~/.config/tool/token", "Zq8Lm2Xv7Rt4Kp9Wn3Bd6"),
    ("echo 'Vq8Lz2Xm7Rt4Kp9Wn3' | sudo tee /etc/agent/api-token", "Vq8Lz2Xm7Rt4Kp9Wn3"),
    ("define: { __SEARCH_ADMIN_KEY__: JSON.stringify('Hq2Lz8Xv7Rt4Kp9Wn3Bd') }", "Hq2Lz8Xv7Rt4Kp9Wn3Bd"),
    ('let key = env::var("MAPS_API_KEY").unwrap_or_else(|_| "Tq7Lz2Xv9Rk4Wm8Pn3".to_string());', "Tq7Lz2Xv9Rk4Wm8Pn3"),
    ('process.env.SMTP_PASS ??= "Kq7!Lz2Xv9";', "Kq7!Lz2Xv9"),
    ("rootpw --plaintext Rz8#Kq2Lm7", "Rz8#Kq2Lm7"),
    ("set service vpn ipsec authentication plaintext-password 'Nq7#Lz2Xv9'", "Nq7#Lz2Xv9"),
    ('(setq my/imap-password "Wv7!Kq2Lz9")', "Wv7!Kq2Lz9"),
    ("<AdminPassword>\n  <Value>Bz8!Lq2Xv7</Value>\n</AdminPassword>", "Bz8!Lq2Xv7"),
    ('set(GEO_API_KEY "Xz7Lq2Vm9Tk4Rw8Pn3" CACHE STRING "")', "Xz7Lq2Vm9Tk4Rw8Pn3"),
    ("$ oc whoami -t\nsha256~Qm4Lz8Rt2Xv7Kp9Wn3Bd6Hs1Jf5Gc0Ya2", "Qm4Lz8Rt2Xv7Kp9Wn3Bd6"),
    ("$ jq -r .token ~/.config/tool/auth.json\nTz8Kq2Lm7Xr4Vb9Wn3Bd6Hs1", "Tz8Kq2Lm7Xr4Vb9Wn3Bd6Hs1"),
    ("pip install --extra-index-url https://Qz8Lm2Xv7Rt4Kp9Wn3Bd6:@pkgs.example.com/simple/ app", "Qz8Lm2Xv7Rt4Kp9Wn3Bd6"),
    ("Uzbek: Serverning paroli: Kz7#Lq2Xm9", "Kz7#Lq2Xm9"),
]


@pytest.mark.parametrize("text, secret", ROUND_SIX)
def test_secrets_in_token_files_wrappers_directives_and_more_languages_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_scientific_terms_after_using_and_plist_names_stay():
    for text in ("edited using CRISPR-Cas9 and a Rosa26-tdTomato reporter",
                 "<key>NSCameraUsageDescription</key>\n<string>Scan receipts</string>"):
        assert redact(text).text == text, redact(text).text


def test_env_reads_fake_values_placeholders_and_algorithm_names_stay():
    for text in ('dsn := fmt.Sprintf("%s:%s@/%s", os.Getenv("DB_USER"), os.Getenv("DB_PASSWORD"), os.Getenv("DB_NAME"))',
                 'let key = env::var("OPENAI_API_KEY").expect("OPENAI_API_KEY must be set");',
                 "expect(client.auth).toBe('Bearer not-a-real-token')", "MEILI_MASTER_KEY=<at least 16 bytes>",
                 'jsonwebtoken = "9"', "Store passwords with Argon2id (m=19456, t=2, p=1).",
                 "auth:\n  existingSecret: pg-app", "CREATE ROLE app LOGIN PASSWORD :'pw';"):
        assert redact(text).text == text, redact(text).text


# secrets stored as a CLI's last argument, answered to prompts, encoded for Basic auth, passed to connect and JWT
# calls, held in wallet lists, Go byte literals, SNMP and key-chain lines, here-strings and expect scripts
ROUND_SEVEN = [
    ("$ linode token add ci-runner Pq4Lz8Xv2Rt7Kw9Mn3Bd5Hs", "Pq4Lz8Xv2Rt7Kw9Mn3Bd5Hs"),
    ("composer config --global --auth github-oauth.github.com Gq7Lm2Xz9Rt4Vk8Wn3Pb", "Gq7Lm2Xz9Rt4Vk8Wn3Pb"),
    ("uploader configure -u build-bot -a 5e0c2b7a-91d4-4f3e-b8a6-2c7d9e1f4a03", "5e0c2b7a-91d4-4f3e-b8a6-2c7d9e1f4a03"),
    ("key chain BGP-KEYS\n key 10\n  key-string Rq8vL2mZx7Tk", "Rq8vL2mZx7Tk"),
    ("rwcommunity Zk3Lq9Xm2Vt 192.168.8.0/24", "Zk3Lq9Xm2Vt"),
    ("com2sec6 monitor fd00::/8 Hq7Zm2Lx9Kt", "Hq7Zm2Lx9Kt"),
    ("$ sudo -S systemctl restart nginx <<< \"Wm4!qLz8Rx\"", "Wm4!qLz8Rx"),
    ('spawn sftp ops@files\nexpect "Password for ops:"\nsend "Lq8#Vz2Xm7\\r"', "Lq8#Vz2Xm7"),
    ("proc.expect('passphrase')\nproc.sendline('Tz9!Kq4Lm2')", "Tz9!Kq4Lm2"),
    ("? Enter the token value: › Vx8Lq2Zm7Rt4Kp9Wn3", "Vx8Lq2Zm7Rt4Kp9Wn3"),
    ("fyi the grafana admin user was locked so I reset it to Kestrel#ridge58", "Kestrel#ridge58"),
    ("we changed the vpn password to Orchid!lake903 yesterday", "Orchid!lake903"),
    ('req.headers["Authorization"] = "Basic " + btoa("ops:Zq7!Lm2Xv")', "Zq7!Lm2Xv"),
    ('byte[] creds = "builder:Tm4#Lq8Zx".getBytes(); String basic = Base64.getEncoder().encodeToString(creds);',
     "Tm4#Lq8Zx"),
    ('db = pymysql.connect("db.internal", "reporter", "Vq2#Lm8Zx7", "stats")', "Vq2#Lm8Zx7"),
    ("const orm = new Sequelize('shop', 'shop_rw', 'Kz8!Lq2Vm7', { dialect: 'postgres' });", "Kz8!Lq2Vm7"),
    ('claims = jwt.decode(raw, "Lm7!Qz2Xv8Rt4", algorithms=["HS512"])', "Lm7!Qz2Xv8Rt4"),
    ("const signer = new ethers.Wallet('0x" + "3b9f" * 16 + "', provider)", "3b9f" * 16),
    ("networks: { holesky: { url: RPC, accounts: ['0x" + "7ac1" * 16 + "'] } }", "7ac1" * 16),
    ('store := sessions.NewCookieStore([]byte("q8Lz2Xv7Rt4Kp9Wn3Bd6Hs1J"))', "q8Lz2Xv7Rt4Kp9Wn3Bd6Hs1J"),
    ("A palavra-passe da base de dados é Tq8#Lm2Zx7", "Tq8#Lm2Zx7"),
    ("tool login --token-value Q2hlY2tzdW0=:Zq8Lm2Xv7Rt4Kp9Wn3Bd6Hs", "Zq8Lm2Xv7Rt4Kp9Wn3Bd6Hs"),
]


@pytest.mark.parametrize("text, secret", ROUND_SEVEN)
def test_secrets_stored_by_clis_answered_encoded_or_passed_to_calls_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_urls_calls_object_ids_and_stock_communities_stay():
    for text in ("tabcmd login -s https://eu-1.online.example.com -t site --token-name ci",
                 'auth = base64.b64encode(payload).decode()', 'print("status:ok".encode())',
                 'const b = Buffer.from("hello:world", "utf8")', "rocommunity public 127.0.0.1",
                 '{"id": "pi_Vq8Lz2Xm7Rt4Kp9Wn3Bd6Hs", "customer": "cus_Lm2Xz9Rt4Vk8Wn", '
                 '"latest_charge": "ch_Tq7Lm2Xz9Rt4Vk8Wn3Pb5"}',
                 '{"id": "cmpl-Rt4Vk8Wn3Pb5Lm2Xz9Tq7Hs", "object": "text_completion"}',
                 "PLAN_TEAM_YEARLY=plan_Zq8Lm2Xv7Rt4Kp9Wn3Bd6H",
                 '{"transactionHash": "0x' + "5d2e" * 16 + '"}', "gh secret set DEPLOY_KEY",
                 "I set it to Python3.12-Slim for the base image", "rsync -u -a ./site/ web1:/srv/www/",
                 'MySQLdb.connect("db.internal", "reporter", passwd=os.environ["DB_PW"], db="stats")',
                 "        Token.String: \"#BA2121\","):
        assert redact(text).text == text, redact(text).text
    masked = redact('{"session": "sess_Vq8Lz2Xm7Rt4Kp9Wn3Bd6Hs"}').text  # a session's id is its credential
    assert "Vq8Lz2Xm7Rt4Kp9Wn3Bd6Hs" not in masked


# secrets announced on the line above, told beside their user, in protocol traces, one-time links, set-up commands,
# secrets blocks, byte lists, Lisp and Perl settings, and in more languages
ROUND_EIGHT = [
    ("Your new admin password (shown once):\n\n   Lq8#Zv2mXr7Kt4", "Lq8#Zv2mXr7Kt4"),
    ("app-1  | Use this token to join:\napp-1  |\napp-1  | 9c1f4e7a2b8d3c6f0e5a9b7d4c2f8e1a", "9c1f4e7a2b8d3c6f0e5a9b7d4c2f8e1a"),
    ("$ wallet-cli export-key\nmaple orbit shadow lunar cotton pilot frame gravel honey", "maple orbit shadow lunar"),
    ("MariaDB init: a random password was generated for root@%: Zq8%Lm2Vx", "Zq8%Lm2Vx"),
    ("rsync rsync://backup:Vz7#Lq2Mx9@files.example.org/share/ ./", "Vz7#Lq2Mx9"),
    ("secretsdump.py 'EXAMPLE/ops:Kx8!Lq2Zm7@10.0.4.9'", "Kx8!Lq2Zm7"),
    ("hysteria2://Tz8.Lq2Xm7Vk@edge.example.net:443/?sni=edge", "Tz8.Lq2Xm7Vk"),
    ("GET https://api.example.org/me\n[BasicAuth]\nreporter: Wq7%Lz2Xm8", "Wq7%Lz2Xm8"),
    ("login for the demo: ops@example.org / Hq8!Lz2Vm7", "Hq8!Lz2Vm7"),
    ("fyi admin on db-3 is Rz7_Lq2Xm9Kt", "Rz7_Lq2Xm9Kt"),
    ("localclient:Mz8?Lq2Xv7:10", "Mz8?Lq2Xv7"),
    ("ops:Bz8#Lq2Xm7,admin,deploy", "Bz8#Lq2Xm7"),
    ("tunnel --auth relay:Xq7*Lm2Vz9 https://relay.example.net", "Xq7*Lm2Vz9"),
    ("crackmapexec smb 10.0.0.0/24 -u admin -H 8846f7eaee8fb117ad06bdd830b7586c", "8846f7eaee8fb117ad06bdd830b7586c"),
    ('127.0.0.1:6379> MONITOR\n1721034112.44 [0 10.0.0.2:5154] "AUTH" "Vq8-Lz2Xm7Kt"', "Vq8-Lz2Xm7Kt"),
    ('write(5, "*2\\r\\n$4\\r\\nAUTH\\r\\n$12\\r\\nTq7^Lz2Xm8Vk\\r\\n", 31) = 31', "Tq7^Lz2Xm8Vk"),
    ("AUTH LOGIN\n334 VXNlcm5hbWU6\nb3BzQGV4YW1wbGUub3Jn\n334 UGFzc3dvcmQ6\nTHE4I1p2Mm1Ycjc=", "THE4I1p2Mm1Ycjc="),
    ("Click https://app.example.org/verify-email/Lq8Zv2mXr7Kt4Wn3Bd6Hs to confirm", "Lq8Zv2mXr7Kt4Wn3Bd6Hs"),
    ("$ geoip init 7Hq2Lz8Xv4Rt9Kp3Wn6Bd1Ys", "7Hq2Lz8Xv4Rt9Kp3Wn6Bd1Ys"),
    ("$ k3s-like join 10.0.0.4:25000/5e1c9a7f3b2d8e6a4c0f9b1d7e3a5c8f", "5e1c9a7f3b2d8e6a4c0f9b1d7e3a5c8f"),
    (" crypto isakmp key 0\n ikev2 local-authentication pre-shared-key Nq7$Lz2Xv9", "Nq7$Lz2Xv9"),
    ("config wifi-iface 'guest'\n\toption ssid 'Guest'\n\toption key 'Vz8-Lq2Xm7Kt'", "Vz8-Lq2Xm7Kt"),
    ("radio:\n  aes_key: [11, 22, 33, 44, 55, 66, 77, 88, 99, 110, 121, 132, 143, 154, 165, 176]", "143, 154, 165"),
    ("secrets:\n  signing: 'a7f3b2d8e6a4c0f9b1d7e3a5c8f5e1c9'\nlisten:\n  port: 9000", "a7f3b2d8e6a4c0f9b1d7e3a5c8f5e1c9"),
    ("(defvar *imap-pass* \"Kz7!Lq2Vm8\")", "Kz7!Lq2Vm8"),
    ("    $Config->{SmtpPassword} = 'Tz9#Lq2Xm7';", "Tz9#Lq2Xm7"),
    ("Set($LdapPass, 'Qz8#Lm2Vx7');", "Qz8#Lm2Vx7"),
    ('req <- authenticate (basicAuth "ops" "Wz8!Lq2Xm7")', "Wz8!Lq2Xm7"),
    ("relay_login:\n  driver = plaintext\n  client_send = : ops@example.org : Lz8!Qq2Vm7", "Lz8!Qq2Vm7"),
    ('AuthInfo:mail.example.org "U:ops" "P:Gq7#Lz2Xm9" "M:LOGIN"', "Gq7#Lz2Xm9"),
    ("b'GET / HTTP/1.1\\r\\nAuthorization: Basic b3BzOkxxOCNadjJtWHI3S3Q0\\r\\n'", "b3BzOkxxOCNadjJtWHI3S3Q0"),
    ("payment.setTransactionKey('Lq8Zv2mXr7Kt4Wn3')", "Lq8Zv2mXr7Kt4Wn3"),
    ('mysql_real_connect(db, "db.internal", "reporter", "Rq8#Lz2Xm7", "stats", 0, NULL, 0);', "Rq8#Lz2Xm7"),
    ("Il-password tal-VPN hija Kq8#Lz2Xm7.", "Kq8#Lz2Xm7"),
    ("Пароли нав: Zq8!Lm2Vx7", "Zq8!Lm2Vx7"),
    ("Iphasiwedi yami ithi Tz7#Lq2Xm8", "Tz7#Lq2Xm8"),
]


@pytest.mark.parametrize("text, secret", ROUND_EIGHT)
def test_secrets_announced_told_with_their_user_traced_or_kept_in_blocks_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_public_keys_digests_pins_references_and_template_expressions_stay():
    for text in ("Public key:     5d2e" + "a1" * 30, '"integrity": "Xq8Lz2Vm7Rt4Kp9Wn3Bd6Hs1Jf5Gc0Ya2Lq8Zv2"',
                 '.add("api.example.org", "sha256/Lq8Zv2mXr7Kt4Wn3Bd6Hs1Jf5Gc0Ya2Tq9XvRm=")',
                 '"ed25519:DEVICEID": "Lq8Zv2mXr7Kt4Wn3Bd6Hs1Jf5Gc0Ya2Tq9XvRm"', "$ pass ls\nPassword Store\n└── mail",
                 '$pw = Read-Host -AsSecureString "Password"', 'token = keyring.get_password("svc", "__token__")',
                 "  password: System.fetch_env!(\"DB_PASSWORD\"),", "let password = env:DB_PASSWORD as Text",
                 "Secret=db-pass,type=env,target=POSTGRES_PASSWORD", "  DB_PASSWORD: prod/app/db:password",
                 "--set-env-vars API_KEY=secretref:api-key", "  newPassword: String! @constraint(minLength: 12)",
                 '<input type="password" bind:value={password} />', "{ name: 'API_TOKEN', value: token }",
                 "1 incorrect password attempt ; TTY=pts/0 ; PWD=/home/ana", "# your public key (safe to share)\n"
                 "UAB3C4ZZQXJ7DKJ2H5RB7P4QZ6X5JX4CYQ3F2SOOE7XQ7W6W3F6YGTTK",
                 "binaryData:\n  favicon.png: iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAA/0iHij3t"):
        assert redact(text).text == text, redact(text).text


# a strong password standing alone in a sentence in any language, REPL output, stdin readers, CLI flags and
# subcommands, CI log commands, XML values, T-SQL and keyword options, key stores, qemu and net use
ROUND_NINE = [
    ("Ua ta'u i le 'au: o le upu lilo o le server o Kestrel#ridge58, aua le ta'ua.", "Kestrel#ridge58"),
    ("[10:02] <ana> the new wifi one is Tz7!qLm2Xv9k", "Tz7!qLm2Xv9k"),
    ("Me: Orchid$lake903", "Orchid$lake903"),
    ('julia> ENV["SMTP_PASSWORD"]\n"Lq8#Zv2mXr7"', "Lq8#Zv2mXr7"),
    ('scala> val pw = conf.get("db.password")\nval pw: String = Vz7#Lq2Mx9', "Vz7#Lq2Mx9"),
    ("iex(node@10.0.0.4)3> Application.get_env(:app, :api_token)\n\"Tq7Lz2Xm8Vk4Rw9Pn3Bd6Hs\"", "Tq7Lz2Xm8Vk4Rw9Pn3Bd6Hs"),
    ("echo 'Rz7#Lq2Xm9' | sshfs -o password_stdin ops@10.0.0.9:/data /mnt/data", "Rz7#Lq2Xm9"),
    ("# echo 'Gq7#Lz2Xm9' | zfs load-key pool/vault", "Gq7#Lz2Xm9"),
    ("$ filebrowser users add mira 'Hq8!Lz2Vm7' --perm.admin", "Hq8!Lz2Vm7"),
    ("unrar x -p'Wq7%Lz2Xm8' backup.rar /restore/", "Wq7%Lz2Xm8"),
    ('vmrun -T ws -gu admin -gp "Bz8#Lq2Xm7" listProcessesInGuest vm.vmx', "Bz8#Lq2Xm7"),
    ("virsh secret-set-value --secret 5e1c9a7f-3b2d-4e6a-8c0f-9b1d7e3a5c8f --base64 QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
     "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
    ("##vso[task.setvariable variable=apiSecret;issecret=true]Kz8!Lq2Vm7", "Kz8!Lq2Vm7"),
    ("echo \"::set-output name=deploy_token::Tz8Lq2Xm7Vk4Rw9Pn3Bd6\"", "Tz8Lq2Xm7Vk4Rw9Pn3Bd6"),
    ('buildkite-agent meta-data set "smtp-password" "Mz8?Lq2Xv7"', "Mz8?Lq2Xv7"),
    ('<param name="DB_PASSWORD"><value>Nq7$Lz2Xv9</value></param>', "Nq7$Lz2Xv9"),
    ("EXEC sp_addlogin @loginame = N'app', @passwd = N'Xq7*Lm2Vz9';", "Xq7*Lm2Vz9"),
    ("#+begin_src sql :dbhost db :dbpassword Rq8#Lz2Xm7 :database app", "Rq8#Lz2Xm7"),
    ('store.load(stream, "Lz8!Qq2Vm7".toCharArray());', "Lz8!Qq2Vm7"),
    ("qemu-img info --object secret,id=s0,data=Wz8!Lq2Xm7 --image-opts driver=luks", "Wz8!Lq2Xm7"),
    ("net use Y: \\\\files\\share Qz8#Lm2Vx7 /user:EXAMPLE\\ops", "Qz8#Lm2Vx7"),
    ("BasicAuth reporter Tz9#Lq2Xm7", "Tz9#Lq2Xm7"),
    ("//host/share via smb://EXAMPLE/ops:Gz7#Lq2Xm8@files01/share", "Gz7#Lq2Xm8"),
    ("<RSAKeyValue><Modulus>AQAB</Modulus><D>Lq8Zv2mXr7Kt4Wn3Bd6Hs1Jf5Gc0Ya2T</D></RSAKeyValue>",
     "Lq8Zv2mXr7Kt4Wn3Bd6Hs1Jf5Gc0Ya2T"),
    ("$conn = ldap_bind($ds, 'cn=ops,dc=example,dc=org', 'Hz8#Lq2Xm7');", "Hz8#Lq2Xm7"),
    ("uid = common.authenticate('prod', 'ops@example.org', 'Kq7!Lz2Vm8', {})", "Kq7!Lz2Vm8"),
    ("|     ops:Vq8%Lz2Xm7 - Valid credentials", "Vq8%Lz2Xm7"),
    ("8846f7eaee8fb117ad06bdd830b7586c:Lz7!Qq2Vm8", "Lz7!Qq2Vm8"),
    ("chat = ChatService.getInstance('app-key', 'Vq8Lz2Xm7Rt4Kp9Wn3Bd6Hs1')", "Vq8Lz2Xm7Rt4Kp9Wn3Bd6Hs1"),
    ("lib = library.Library('92211', 'group', 'Tq7Lz2Xm8Vk4Rw9Pn3Bd6')", "Tq7Lz2Xm8Vk4Rw9Pn3Bd6"),
    ("svc = MailService('ops@example.org', 'Kestrel#ridge58')", "Kestrel#ridge58"),
    ("- [s9 q2] changed it again, the new one is Wz8#Lq2Xm7 for now", "Wz8#Lq2Xm7"),  # a summary's list line
    ("> 2) the kiosk one is Tq7!Lz2Xm8 until Friday", "Tq7!Lz2Xm8"),
]


@pytest.mark.parametrize("text, secret", ROUND_NINE)
def test_strong_passwords_in_any_sentence_repl_output_and_more_commands_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_cells_hashtags_anchors_masked_displays_and_ui_strings_stay():
    for text in ("CD14++CD16+ monocytes and IL-6R+CD4 cells", "see x509v3_config.html#STANDARD-EXTENSIONS",
                 "Incorrect API key provided: sk-proj-****Xq2a", "  Password:  ••••••••••••  [Change]",
                 "configurable string dbPassword = ?;", '$dbPassword = $OctopusParameters["Db.Password"]',
                 '"apiKey": "{env:OPENROUTER_API_KEY}"', '"Secret": "REDACTED",',
                 "-   password: '-------- # (16 bytes)'", '"login.password.placeholder" = "Passwort";',
                 "reset-password-button = Restablecer contraseña", "--- PASS: TestTokenRefresh (0.03s)",
                 "It served as a spoken password: those who said it passed.", "Idempotency-Key: 8b169e63-a3a6-4a44",
                 "https://__token__:****@pkgs.example.org/simple/",
                 '{"VersionId": "Wwa3rlZND9a5UuizlaYcBc35bqZFKN6G"}',
                 "  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef: {name: db, key: password}\n"
                 "  - name: DATABASE_URL\n    value: \"postgres://app:$(DB_PASSWORD)@db/app\""):
        assert redact(text).text == text, redact(text).text


def test_a_value_masked_once_is_masked_where_the_output_repeats_it():
    text = ("$ tool config --api-secret Vq8Lz2Xm7Rt4Kp9Wn3Bd6Hs1\n"
            "The value of `api-secret` was updated to Vq8Lz2Xm7Rt4Kp9Wn3Bd6Hs1 (saved)")
    masked = redact(text).text
    assert "Vq8Lz2Xm7Rt4Kp9Wn3Bd6Hs1" not in masked and masked.count("[REDACTED:secret]") == 2, masked
    assert "updated to [REDACTED:secret] (saved)" in masked


def test_a_random_latin_token_in_a_line_of_another_script_is_masked_and_latin_versions_stay():
    masked = redact("Шинэ нууц үгийг бүү задруул, серверийн шинэ утга нь Lq8_zV2mXr7Kt энэ байна.").text
    assert "Lq8_zV2mXr7Kt" not in masked, masked
    for text in ("We moved the base image to Python3.11-Slim last week.", "東京の会議は iPhone15-Pro で録音した。"):
        assert redact(text).text == text, redact(text).text


ROUND_TEN = [
    # a strong token in a Latin sentence: a sign that is part of it, or letters in an order no name takes
    ("Il codice della cassaforte resta Wq7%dune48, non girarlo.", "Wq7%dune48"),
    ("Kapag kailangan mo, gamitin ang Rk2Tz_QmX9p4 sa router.", "Rk2Tz_QmX9p4"),
    ("ask Mira, she has Kite@marble307 for the kiosk", "Kite@marble307"),
    ("tumia gP4nQ.Zr7xW2 kuingia kwenye mfumo", "gP4nQ.Zr7xW2"),
    # a symbol no sentence ends with stays with the password it ends
    ("the wifi password changed: fjord5521* (guest network)", "fjord5521*"),
    ("パスワードは momiji.31! で入れます", "momiji.31!"),
    # a PIN told in a sentence
    ("De PIN van de testkaart is 40718, niet doorgeven.", "40718"),
    ("ПИН карты 52907 — не забудь", "52907"),
    # pairs of replies and a list of name/value pairs
    ('127.0.0.1:6379> CONFIG GET masterauth\n1) "masterauth"\n2) "Birch-tundra8841"', "Birch-tundra8841"),
    ('array(2) {\n  ["db_pass"]=>\n  string(12) "Qm7vL2xR9tKp"\n}', "Qm7vL2xR9tKp"),
    ("headers: [{name: X-Api-Key, value: Zr8Qm2Lx7Vt4Wn9Kp3Bd6Hs1Jf5}]", "Zr8Qm2Lx7Vt4Wn9Kp3Bd6Hs1Jf5"),
    # Basic credentials wherever printed, curl's certificate passphrase and a key given as a nameless user
    ("10.1.4.7\tBasic " + "bWlyYTpUdW5kcmEtOTkx", "bWlyYTpUdW5kcmEtOTkx"),
    ("curl -E ./ops.pem:Tundra-dusk42 https://mtls.example.org/", "Tundra-dusk42"),
    ("curl -u :9f3a7c21e8b44d06a5c1f2e9d7b3a816 https://rpc.example.org/v1", "9f3a7c21e8b44d06a5c1f2e9d7b3a816"),
    # names: an HMAC, a login that holds a token, a pass hash
    ("--dart-define=WEBHOOK_HMAC=Vt4Wn9Kp3Bd6Hs1Jf5Zr8Qm2Lx7", "Vt4Wn9Kp3Bd6Hs1Jf5Zr8Qm2Lx7"),
    ("sonar.login=5c2e9a71f04b8d3e6a1c7f2b9d8e4a0c3b6f1e27", "5c2e9a71f04b8d3e6a1c7f2b9d8e4a0c3b6f1e27"),
    ("/api/status?username=mon&passhash=7718204953", "7718204953"),
    # what a command or a REPL expression prints
    ("$ vendorctl bootstrap initial-password\nRz4mQ8tLx2Vk9Wn3", "Rz4mQ8tLx2Vk9Wn3"),
    ("> println(vault.decrypt(blob))\nLx7Vt4Wn9Kp3Bd6Hs1Jf5Zr8Qm2", "Lx7Vt4Wn9Kp3Bd6Hs1Jf5Zr8Qm2"),
    ('client.username_pw_set("printer", "40917733")', "40917733"),
    # codes for doors, alarms and locks; a quoted passphrase of words; e-mail and password on a login line
    ("the keypad code for the lab is 5521# until friday", "5521#"),
    ("alarm code at the warehouse is 80417", "80417"),
    ("locker combination: 12-34-56", "12-34-56"),
    ("the vault passphrase is 'granite owls whisper softly' ok", "granite owls whisper softly"),
    ("set the wifi password to “copper lantern river song”", "copper lantern river song"),
    ("use these to sign in: dev.ops@example.org Tundra77x", "Tundra77x"),
    # payment card data and a social security number told with their words
    ("charge it to my visa 4716-1089-9971-6531 please", "4716-1089-9971-6531"),
    ("card 4556 7375 8689 9855 exp 09/28", "4556 7375 8689 9855"),
    ("the CVC is 482 on the back", "482"),
    ("SSN: 523-71-4409 on file", "523-71-4409"),
    # a product key, an app password, a license block
    ("activate with 3KX9P-T7QWM-V4R8J-H2YCB-9FG6D", "3KX9P-T7QWM-V4R8J-H2YCB-9FG6D"),
    ("Here is your app password:\nqwer tyui opas dfgh", "qwer tyui opas dfgh"),
    ("---- BEGIN LICENSE ----\nMira Example\nE1A9C3F7 0B4D8E62 A7F1C9D3\n---- END LICENSE ----", "E1A9C3F7 0B4D8E62"),
]


@pytest.mark.parametrize("text, secret", ROUND_TEN)
def test_signed_and_scrambled_tokens_pins_reply_pairs_and_printed_values_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_names_genes_versions_encodings_and_units_near_these_forms_stay():
    for text in ("Signalling via PI3K-Akt-mTORC1 and SERCA2b-RyR2 in GluN3A-containing receptors.",
                 "Supported curves: ec.SECP256R1 and a2d_ASN1_OBJECT; range 0xD800-0xDBFF.",
                 "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer",
                 "Added connection com.mysql.cj.jdbc.ConnectionImpl@5a1b2c3d",
                 "- task: SqlAzureDacpacDeployment@1", "Connect the LED to pin 13; the PIN diode peaks at 1550 nm.",
                 "The PIN policy changed in 2024.", "{ env: [{ name: 'SENTRY_AUTH_TOKEN', value: token }] }",
                 "The basic idea: Basic auth over TLS.", "model ABCDE-FGHIJ-KLMNO-PQRST-UVWXY",
                 "$ kubectl get pods\nweb-7d9f8c6b5-x2x9z 1/1",
                 "Error code 5023 again; the door code was changed in 2024; combination of 3 drugs at 10-20-30 mg.",
                 "Password policy: 'at least twelve characters' applies", "The passphrase prompt appears.",
                 "The password dialog says \"Enter your password\"", "signed in as ana@example.org yesterday",
                 "use test card 4242 4242 4242 4242 for checkout", "order 1234 5678 9012 3456 paid by card",
                 "ssn : 111-22-3333 (example)", "the CVV column is validated",
                 "We moved to Python3.11-Slim, iOS17.2-Beta and gRPC-Web2 on macOS-arm64."):
        assert redact(text).text == text, redact(text).text


# config values and commands a sibling rule used to leave in clear
ROUND_ELEVEN = [
    ("htpasswd -b -c /srv/.htpasswd alice Gw7!Tarn", "Gw7!Tarn"),
    ("htpasswd -B -b -C 12 conf/users bob 'two words'", "two words"),
    ("htpasswd -nbB carol Lyra-Vex3 > users.txt", "Lyra-Vex3"),
    ("environment:\n  POSTGRES_PASSWORD: Harbor-Lamp-77\n", "Harbor-Lamp-77"),
    ('Server=db;User Id=app;Pasword=Quay-Tern-8;', "Quay-Tern-8"),
    ("[smtp.example.net]:587 ops@example.org:wqzr hmvt lkpa dseb", "wqzr hmvt lkpa dseb"),
    ("PAYMENTS = shopco_live_Q7vTn2LxKp9RmW4zYc8BdJ3h", "Q7vTn2LxKp9RmW4zYc8BdJ3h"),
    ('self.push = "os_v2_org_' + "k3j9x2m7q8w4" * 4 + '"', "k3j9x2m7q8w4k3j9"),
    ("–– BEGIN LICENSE ––\nDana Example\n7C1E0A93 5B2D4F86 C9A7E1D3\n–– END LICENSE ––", "7C1E0A93 5B2D4F86"),
]


@pytest.mark.parametrize("text, secret", ROUND_ELEVEN)
def test_htpasswd_compose_values_typo_names_app_passwords_and_house_prefixes_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_references_key_names_fingerprints_issue_refs_symbols_and_listing_tokens_stay():
    for text in ('resource "aws_db_instance" "main" {\n  password = var.db_password\n}',
                 "db:\n  password: settings.DB_PASSWORD",
                 "components:\n  securitySchemes:\n    bearer:\n      scheme: bearer\n      bearerFormat: JWT",
                 "gpg:                using RSA key 4AEE18F83AFDEB23A1D7C3F2C7E0F3B1D5A9E6C4",
                 '<a accesskey="n" href="next.html">Next</a>', "* Added --passphrase-repeat to set the count",
                 "\t* src/chgpasswd.c: Always update the group file", "  (closes: Bug#481516)",
                 "    - ZSTD_getFrameContentSize@Base", "memcpy@GLIBC_2.14 is needed",
                 '{"items": [], "next_page_token": "b2Zmc2V0PTQwMCZzb3J0PWlk"}', "NextToken: eyJvZmZzZXQiOjQwMH0K",
                 "cache miss: key=users:v2:9f1c3b7a5e2d4c6b8a0f1e3d5c7b9a2e4f6d8c0b ttl=60s",
                 "const stripe = Stripe('pk_live_" + "Qx7Lm2Vb9Rk4Tz8W" * 3 + "');",
                 "def test_live_reload_when_the_config_changes(): ..."):
        assert redact(text).text == text, redact(text).text


# values that a variable's sign, a type's "!", a name in another language or a list beside a masked one once hid
ROUND_TWELVE = [
    ("SMTP_PASSWORD=Cormoran1987!", "Cormoran1987!"),  # ends in "!" like a GraphQL type, but holds a year
    ('Server=sql01;User ID=app;Password=Falke42!;Encrypt=True', "Falke42!"),
    ("DB_PASSWORD=$walnut3390K", "$walnut3390K"),  # a sign before a word and digits: a password, not $VAR
    ("redis:\n  auth:\n    password: &heron7781Q\n", "&heron7781Q"),
    ("CREATE ROLE etl LOGIN PASSWORD '%otter5512Z';", "%otter5512Z"),
    ("BANCO_SENHA=Jabuti#2231", "Jabuti#2231"),  # the name in Portuguese, Turkish, German, Polish, French
    ("API_SIFRE=Lale-Bahar77", "Lale-Bahar77"),
    ("SMTP_KENNWORT=Eule.Mond39", "Eule.Mond39"),
    ("haslo_bazy = 'Sowa!Las42'", "Sowa!Las42"),
    ('const MOT_DE_PASSE_FTP = "Hibou&Lune6";', "Hibou&Lune6"),
    ("DARAJA_PASSKEY=" + "9c1e" * 16, "9c1e9c1e9c1e9c1e"),
    ("prod-db.internal:5432:sales:report_ro:Kestrel!Vale9 is in my pgpass, why does psql prompt?", "Kestrel!Vale9"),
    ('{"type": "service_account", "private_key_id": "' + "5d0b7e31a9c4" * 3 + '1f2e"}', "5d0b7e31a9c45d0b"),
    ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIG\n"
     "Private-Lines: 1\nAAAAIFp3x9Qk2mLr7Tz4Vb8Wn1Yc6Hd0Jf5Ke3Ga9Ps2Ru7\nPrivate-MAC: " + "a7c3" * 16,
     "a7c3a7c3a7c3a7c3"),
    ('sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="QW7ZK3M2XN4PLR5T" '
     'password="Zx8vQ2mL";', "QW7ZK3M2XN4PLR5T"),  # a cloud Kafka's API key as the login's user
    # told beside its user, its old one or another masked one
    ("Rotated the jenkins admin creds. old: Marlin88# new: Pelican%404. Tell the team.", "Marlin88#"),
    ("Rotated the jenkins admin creds. old: Marlin88# new: Pelican%404. Tell the team.", "Pelican%404"),
    ("the vpn login is the same as the wiki one (Gecko77&), user is ops", "Gecko77&"),
    ("Log in to the printer (admin / ^Lynx5521P) and reset the tray", "^Lynx5521P"),
    ("creds for the camera are root/#bison7713B, can you script a snapshot?", "#bison7713B"),
    ("tried heron#2231 and Zq7#vLm2pX!Tw9 for the vault admin, both rejected", "heron#2231"),
    # passphrases of plain words in other languages, ended by a dash or a parenthesis
    ("Die Passphrase für das Backup ist tanne spiegel regen anker, borg fragt trotzdem.", "tanne spiegel regen anker"),
    ("Lösenfrasen för valvet är ek spegel regn ankare, hur lägger jag den i en fil?", "ek spegel regn ankare"),
    ("wachtzin voor de kluis: eik spiegel regen anker — restic vraagt er steeds om", "eik spiegel regen anker"),
    ("A frase-senha do backup é pinho espelho chuva ancora, como uso no restic?", "pinho espelho chuva ancora"),
    ("passphrase del portafoglio: abete-specchio-pioggia-ancora — come lo sblocco?", "abete-specchio-pioggia-ancora"),
    ("my gpg passphrase is silver maple rocket lantern (all lower case), pinentry rejects it", "silver maple rocket"),
    # PINs and codes
    ("Meine SIM-Karten-PIN ist 6392, kann ich sie ändern?", "6392"),
    ("Il codice del citofono è 40718, scrivilo per il corriere", "40718"),
    ("الرمز السري لحسابي هو 5174، كيف أغيره؟", "5174"),
    ("সার্ভারের পাসওয়ার্ড bluefox2024, কেন কাজ করছে না?", "bluefox2024"),
    # a TOTP seed told on a line about two-factor sign-in, and a list of recovery codes after a long lead
    ("Can't scan the QR code? Type this in: MZXW 6YTB OI2D K5LQ GE3T S4ZU", "MZXW 6YTB OI2D K5LQ"),
    ("Das 2FA-Geheimnis des Testkontos: KRUGS4ZANFZSAYLOEBSXQ2LNOBWGK3T5 – bitte im Tresor ablegen", "KRUGS4ZANFZSAYLO"),
    ("Meine Wiederherstellungscodes für das Konto bei der Bank, bitte sicher aufbewahren: "
     "qk4m2x9p, z7wv3n8r, c5hb6t2y", "qk4m2x9p"),
]


@pytest.mark.parametrize("text, secret", ROUND_TWELVE)
def test_signs_type_marks_foreign_names_pairs_phrases_codes_and_seeds_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_references_types_samples_public_keys_and_default_logins_stay():
    for text in ("DB_PASSWORD=$DB_PASS", "password: ${{ secrets.DB_PASSWORD }}", "type Query { me: User! }",
                 "input Login { password: String! }", "x: &default\n  pool: 5", "set PASS=%APPDATA%",
                 "password: $sha256sum", "The AWS docs use AKIAIOSFODNN7EXAMPLE as a sample key.",
                 "STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx", "the publishable key pk_live_" + "Q7vT" * 6,
                 "DATABASE_URL=postgres://user:password@localhost:5432/app — replace user and password",
                 "DATABASE_URL=postgres://postgres:postgres@localhost:5432/app_dev",
                 "MasterUserPassword: '{{resolve:secretsmanager:${DbSecret}:SecretString:password}}'",
                 "비밀번호 재설정 링크가 30분 후에 만료되도록 하려면?", "パスワードの変更ルールは 90日 ごとです",
                 "the GPIO-PIN 13 drives the LED", "Die Passphrase für den GPG-Schlüssel ist zu kurz.",
                 "user agent (Mozilla/5.0) for the login page", "the login form (x^2+y^2=r^2) for accounts",
                 "the 2FA docs cite RFC6238 and ABCDEFGHIJKLMNOP as an alphabet"):
        assert redact(text).text == text, redact(text).text


def test_a_sentence_in_another_script_goes_on_after_the_password():
    assert redact("パスワードは abc123x を使う").text == "パスワードは [REDACTED:password] を使う"
    assert redact("كلمة المرور هي Summer2024 لا تعمل").text == "كلمة المرور هي [REDACTED:password] لا تعمل"


# names transliterated from other languages, passphrases named as such, codes with a letter or a keypad's sign
ROUND_THIRTEEN = [
    ("ERP_PAROLA=Mamaliga_Buna7", "Mamaliga_Buna7"), ("API_PAROL=Pelmeni_S_Maslom2", "Pelmeni_S_Maslom2"),
    ("DB_KATA_SANDI=Sate#Ayam9", "Sate#Ayam9"), ("DB_MAT_KHAU=PhoBo_HaNoi7", "PhoBo_HaNoi7"),
    ("SMTP_KODIKOS=Souvlaki!Pita3", "Souvlaki!Pita3"), ("MAIL_RAMZ=Kabab_Koobideh2", "Kabab_Koobideh2"),
    ("GIZLI_ANAHTAR=" + "7fa3c9" * 6, "7fa3c97fa3c97fa3"), ("SEKRETNYJ_KLUCH=Xk29fLq0PzV8rTw3nB5m", "Xk29fLq0PzV8rTw3"),
    ("CLE_SECRETE=q8#vn2!zt5^mk1@rw7", "q8#vn2!zt5^mk1@rw7"),
    ("the backup passphrase is: seven quiet otters float on the lake — keep it offline",
     "seven quiet otters float on the lake"),
    ("Passphrase für den Tresor: Die Katze schläft im Keller 3x", "Die Katze schläft im Keller 3x"),
    ("frase de contraseña del disco: el perro come pan los lunes", "el perro come pan los lunes"),
    ("mi clave es pancho_2207 (la misma de siempre)", "pancho_2207"),
    ("회사 와이파이 비번 dkssud0812 이에요", "dkssud0812"), ("sandi router: kopihitam2020", "kopihitam2020"),
    ("p/w for the staging box = Biscuit2011", "Biscuit2011"), ("Pasword für den NAS ist Wurst&Senf7", "Wurst&Senf7"),
    ("digicode : 52C81, 2e étage", "52C81"), ("bahçe kapısı şifresi 3391#", "3391"),
    ("WLAN-Schlüssel: 3310 7712 9054 6628 (Standard)", "3310 7712 9054 6628"),
    ("باسورد الراوتر mona98765432", "mona98765432"),
    ("App-Passwort für Thunderbird: qwhzkrtnmvplbxsa", "qwhzkrtnmvplbxsa"),
    # a card in a Diners grouping, an SSN under a field's name, an IBAN to pay to, a SIN after "est le"
    ("Diners Club 3617 294058 3169, exp 11/27", "3617 294058 3169"), ('customer_ssn: "536-22-8147"', "536-22-8147"),
    ("betal venligst til DK38 3002 1574 8203 96 inden fredag", "DK38 3002 1574 8203 96"),
    ("mon NAS est le 130 692 544 (pour le T4)", "130 692 544"),
    # a chosen password shaped like a name but in two cases with a number, an e-mail address as a URL's user, a
    # token after its word in Japanese, a file of recovery codes, a WireGuard key fed to wg
    ("environment:\n  MYSQL_PASSWORD: stack-My-Secret-77\n", "stack-My-Secret-77"),
    ("MAIL_URL=smtp://alerts@shop.example:Mouette!Vite38@smtp.example.net:587", "Mouette!Vite38"),
    ("Slackのボットトークン：Zq8vL2mX9pT4kR7wB3nC5dF6gH1jK0sAq7Wm", "Zq8vL2mX9pT4kR7wB3nC5dF6gH1jK0sAq7Wm"),
    ("gitlab-recovery-codes.txt\n\n4f1a9c2e7b3d5a60\n8c2e4a6b1d3f5e70\n", "4f1a9c2e7b3d5a60"),
    ("wg set wg0 private-key <(echo cGx4Z3kzN3FwdjJ6bTl3cTR0eDh6cmQ1azNuN2o2bTA=)", "cGx4Z3kzN3FwdjJ6bTl3cTR0eDh6cmQ1azNuN2o2bTA="),
]


@pytest.mark.parametrize("text, secret", ROUND_THIRTEEN)
def test_transliterated_names_named_passphrases_and_keypad_codes_are_masked(text, secret):
    assert secret not in redact(text).text, redact(text).text


def test_prompts_messages_placeholders_and_empty_options_stay():
    for text in ("$ passwd\nChanging password for ana.\nCurrent password:\nNew password:\npasswd: password updated "
                 "successfully", "SLACK_BOT_TOKEN=xoxb-your-bot-token", "Je wachtwoord is verlopen. Kies een nieuw.",
                 "A jelszónak legalább 8 karakterből kell állnia, és tartalmaznia kell egy számot.",
                 "run `mysql -u root -p` and type it at the prompt", "note that the passphrase is limited to 4096 bytes",
                 "كلمة المرور الجديدة 2024 لا تعمل", "from_secret: db-password-2", "ssh://git@github.com:22/repo.git",
                 "[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\nAllowedIPs = 10.0.0.2/32",
                 "アクセストークンの有効期限は30日です", "the PIN code handling is broken, see issue 4512"):
        assert redact(text).text == text, redact(text).text
