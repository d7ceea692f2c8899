"""The secret filter runs on every prompt, inside a hook with a budget of a few tens of milliseconds: no rule may
be quadratic in the length of a line. Each input below is one that a rule used to rescan from every start position
(from 0.6 s to more than two minutes per 100 KB); each now takes tens of milliseconds. The bound is CPU time of this
process (other jobs on the machine do not count) and far above the expected time, so the test cannot be flaky,
while any quadratic rule is back above it at once."""

import base64
import json
import random
import textwrap
import time

import pytest

from indexer.secret_rules import mask

_RNG = random.Random(20240607)
_B64URL = base64.urlsafe_b64encode(bytes(_RNG.getrandbits(8) for _ in range(150_000))).decode()
_B64 = base64.b64encode(bytes(_RNG.getrandbits(8) for _ in range(75_000))).decode()

INPUTS = {
    "name word repeated": "token" * 20_000,
    "identifier run of name words": "key_" * 25_000,
    "name word inside a long identifier": ("x" * 48 + "pw") * 2_000,
    "mysql words on one line": "mysql " * 16_000,
    "minified JSON mentioning mysql": json.dumps(
        [{"image": "mysql:8", "name": f"db{i}", "cmd": "mysql --host db -u root"} for i in range(1_400)]),
    "ldap words on one line": "ldapsearch " * 9_000 + "login",
    "docker login on one line": "docker login " * 7_700,
    "redis-cli on one line": "redis-cli " * 10_000,
    "echo into --password-stdin": "echo " * 20_000 + "| x --password-stdin",
    "scheme and colon repeated": "a://b:" * 16_000,
    "URLs with ports, comma-separated": ",".join(f"http://es{i}:9200" for i in range(6_000)),
    "dotted run before a scheme": "a.b-" * 25_000 + " http://x",
    "base64 block before a certificate END": "\n".join(textwrap.wrap(_B64, 76)) + "\n-----END CERTIFICATE-----\n",
    "private key END lines": "-----END PRIVATE KEY-----\n" * 3_800,
    "base64url blob": _B64URL,
    "base64url blob in quotes": 'x = "' + _B64URL + '"',
    "calls that take a secret, nested": "Client(" * 14_000 + ")" * 14_000,
    "calls with many arguments": "jwt.sign(" + "'a', " * 20_000 + ")",
    "two-column rows of names": "password    x\n" * 7_000,
    "aligned headers over short tables": "service   secret\n0   a   b\n" * 5_000,
    "tables of names and values": "| Name | Value |\n| API_TOKEN | x |\n" * 5_000,
    "SQL inserts of passwords": "INSERT INTO u (id, password) VALUES (1, 'a'), " * 2_500,
    "headings over logins": "Accounts:\n- a / Pw.Pw.12\n" * 5_000,
    "card numbers and codes": "card 4556 7375 8689 9855 code 123 " * 3_000,
    "a command's output at the start": "cat .env\n" + "TOKEN=abc\n" * 8_000,
    "netrc entries without a password": "machine h login u\n" * 5_000,
    "environment fallbacks": "process.env.A_TOKEN || " * 5_000,
    "cookie headers": "Cookie: a=b; " * 8_000,
    "prompts echoing secret variables": "$ echo $API_TOKEN\n" * 6_000,
    "a Secret's long data block": "kind: Secret\ndata:\n" + "  k: dmFsdWU=\n" * 8_000,
    "hash prefixes repeated": "$2y$10$" * 14_000,
    "a crypt prefix before a long run": "$6$" + "a" * 100_000,
    "constructor calls nested": "Api(" * 25_000,
    "dotted run before a call": "a." * 50_000 + "(",
    "token words in prose": "token is " * 11_000,
    "quoted dotted run": '"' + "a1B." * 25_000 + '"',
    "an argument list without end": '["-a", ' * 15_000,
    "brackets": "[" * 60_000,
    "user:value lines": "user = a:Bc9!xyz\n" * 6_000,
    "env lines of random values": "K=Ab3" + "x9Z" * 10 + "\n" * 1 + "K=Ab3" * 18_000,
    "field and value pairs": "<key>API_KEY</key><string>" * 4_000,
    "secret words on one line": "key " * 25_000,
    "password words on one line": "password " * 12_000,
    "password sentences in another language": "heslo je a1 b2 c3 d4 " * 5_000,
    "one-time code words": "SMS code " * 10_000,
    "network key sentences": "network key is " * 6_000,
    "commands not found": "$ Kx9mQ2pL7\nbash: Kx9mQ2pL7: command not found\n" * 2_500,
    "security question answers": "security question answer is " * 4_000,
    "a password column over many rows": "user,password\n" + "a,b\n" * 20_000,
    "header-like lines repeated": "user,password,token\n" * 5_000,
    "cookie pairs": "Cookie: " + "a=b;" * 25_000,
    "REPL prompts": ">>> settings.API_TOKEN\n" * 4_000,
    "label lines": "Secret access key\n" * 5_000,
    "connect calls with string arguments": 'connect("a", "b", ' * 7_000,
    "new passwords told on one line": "user reset it to Ab1!cdef " * 4_000,
    "encoded logins on one line": "'u:Ab1!cdef'.bytes " * 5_000,
    "encoders with no login": 'btoa("' * 16_000,
    "wallet lists": 'accounts: [' + ('"0x' + "ab" * 32 + '", ') * 1_400,
    "go byte literals": '[]byte("' * 12_000,
    "ids under their kind": ('"customer": "cus_' + "Ab1" * 8 + '", ') * 2_500,
    "stored keys as last arguments": "apikey save a " * 7_000,
    "users then -a": "-u a -a " * 11_000,
    "here-strings into sudo": "sudo -S x <<< " * 7_000,
    "expect and send": 'expect "assword:"\nsend "' * 4_000,
    "community lines": "rocommunity " * 8_000,
}


@pytest.mark.parametrize("name", list(INPUTS))
def test_long_adversarial_inputs_are_masked_in_linear_time(name):
    text = INPUTS[name]
    mask("warm up: AKIA password=x")  # compile the lazy patterns outside the measure
    start = time.process_time()
    masked, _ = mask(text)
    elapsed = time.process_time() - start
    assert elapsed < 1.0, f"{name}: {elapsed:.2f} s of CPU for {len(text)} characters"
    assert len(masked) <= len(text) + 32 * 10_001


def test_the_rewritten_rules_still_mask_what_they_did():
    cases = {
        "mysql -h db -u root -pS3cretPw1 shop": "S3cretPw1",
        "mysql -h db -P 3306 -u root -pS3cretPw2 shop": "S3cretPw2",
        "redis-cli -h cache -a S3cretPw3 ping": "S3cretPw3",
        "docker login -u ci -p S3cretPw4 registry.example.com": "S3cretPw4",
        "ldapsearch -x -D cn=admin -w S3cretPw5 -b dc=example": "S3cretPw5",
        "echo S3cretPw6 | docker login -u ci --password-stdin ghcr.io": "S3cretPw6",
        "postgres://app:S3cret/Pw7@x@db.internal:5432/main": "S3cret/Pw7@x",
        "tail\nMIIEowIBAAKCAQEAS3cretPw8\nAbCd+/==\n-----END RSA PRIVATE KEY-----": "S3cretPw8",
        "mysql -h db\n-pS3cretPw9": "S3cretPw9",
    }
    for text, secret in cases.items():
        masked, count = mask(text)
        assert secret not in masked and count, (text, masked)
    assert mask("a://b:@h")[0] == "a://b:@h"  # an empty password: nothing to mask
