"""Secret masking: the second pass of the privacy filter (:mod:`indexer.privacy`).

Three families of rules, each masking the secret as ``[REDACTED:<kind>]`` and keeping what surrounds it:

1. Formats. Provider keys and tokens with a recognisable shape (``AKIA…``, ``ghp_…``, ``SG.….…``, Azure
   ``AccountKey=``, SAS ``sig=``, webhook URLs, ~60 token prefixes), JWTs, bearer and basic credentials, private key
   blocks (to their END line, or to the end of the text when it is missing) and bare runs of base64 key material,
   passwords in URLs and connection strings (a password may hold ``/``, ``:`` or ``@``), and passwords given to
   commands (``curl -u user:pass``, ``mysql -pPASS``, ``sshpass -p``, ``redis-cli -a``, ``openssl … pass:``, and a
   table of tools and their password options, :data:`_CLI_SECRETS`), values echoed into ``--password-stdin``,
   ``sudo -S`` or ``chpasswd``, SQL ``WITH PASSWORD '…'`` / ``IDENTIFIED BY '…'``, and ``Authorization:`` with any
   scheme word. Secrets given by layout: ``.netrc``, ``.pgpass``, a two-column row of a secret's name and value, the
   AWS CLI's prompt and output, a token as a URL's user part, Oracle and Go logins, Terraform defaults, Dockerfile
   ``ENV``, a sentence ("the password for X is …", "the auth token for Y: …"); and a literal where a known call
   takes its secret (:data:`_CALL_SECRETS`). Secrets told by what holds or prints them: password hashes by their
   format, Ansible Vault ciphertext, a Kubernetes Secret's data (:class:`_SecretManifest`), and the output of a
   command that prints a secret (:class:`_PrintedSecret`).
2. Names. Any assignment whose name marks a secret, whatever its prefix or spelling (``DB_PASSWORD``,
   ``aws_secret_access_key``, ``SECRET_KEY_BASE``, ``githubToken``, ``X-Api-Key``, ``--client-secret``), in env,
   shell, YAML, JSON, TOML, INI, XML, code and flag forms; a quoted value is masked whole, spaces included, an
   unquoted one to the end of its token (to the end of the line for ``name: value`` and ``name = value`` lines).
   A value that is words about the secret (``Forgot password?``, a docstring), a type (``SecretStr``,
   ``string | undefined;``), a version (``^9.0.6``), a JSON object, a file location (``password.py:42:``) or a
   prompt (``getpass('Password: ')``) is none; a ``key`` of something that is no secret (``sort_key``,
   ``cache_key``) needs a value that looks random, and ``public_key`` none at all.
   The same idea as detect-secrets' keyword detector, done as a scan for name words rather than one regex per
   syntax, so a name that no pattern foresaw still counts.
3. Entropy. A quoted string of 20+ characters from the base64 alphabet (and dots, when a piece of 16+ is random)
   that mixes upper case, lower case and digits with a Shannon entropy of at least 4.3 bits a character
   (detect-secrets' base64 detector, which uses 4.5), unless it is CamelCase words; and a random literal given to a
   client's constructor or set-up call (:func:`_client_literal`; hex from 32 characters, as detect-secrets' hex
   detector, but only there, where a commit id or a digest is not).

Every format rule has literal anchors (lower case): a rule runs only on a text that holds one, so the common text
costs a few substring tests. No rule may rescan a line from every start position: a command's password is searched
for once per command segment (:class:`_Command`), a connection string's last ``@`` once per token, a key's END line
backward; the test ``tests/indexer/test_secret_rules_speed.py`` holds 100 KB inputs that took seconds to minutes
when they did. detect-secrets itself was measured for the hook path: importing its keyword plugin
takes ~0.56 s (it pulls in requests and yaml), more than the prompt hook's whole budget, so its ideas are used, not
the package.

>>> mask("export DB_PASSWORD='correct horse battery staple'")[0]
"export DB_PASSWORD='[REDACTED:password]'"
>>> mask("curl -u admin:s3cr3t https://api.example.com")[0]
'curl -u admin:[REDACTED:password] https://api.example.com'
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import re
import threading
from collections.abc import Callable, Iterator

from indexer import secret_ids
from indexer.anchors import AnchorSet

_MARK = "[REDACTED"


class _Lazy:
    """A regex compiled on first use: most texts trigger few rules, and compiling them all would add ~8 ms to
    every hook's start-up."""

    __slots__ = ("source", "flags", "_compiled")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source, self.flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    def _get(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def sub(self, repl: Callable[[re.Match[str]], str], text: str) -> str:
        return self._get().sub(repl, text)

    def __getattr__(self, name: str):  # search, match, finditer, …: the compiled pattern's own methods
        return getattr(self._get(), name)


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _random_with_digit(group: int) -> Callable[[re.Match[str]], bool]:
    """A match whose ``group`` looks random and holds a digit (a token, not a word)."""
    return lambda m: _looks_random(m.group(group)) and any(c.isdigit() for c in m.group(group))


class _Scan:
    """A rule whose matches are found by code rather than by one backtracking regex, so that every character is
    looked at a bounded number of times (a regex that scans forward from every start position is quadratic on a
    long line: ``"mysql " * 16000`` took a minute). ``sub`` works as the compiled pattern's."""

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        raise NotImplementedError

    def sub(self, repl: Callable[[re.Match[str]], str], text: str) -> str:
        out: list[str] = []
        cursor = 0
        for m in self.matches(text):
            out.append(text[cursor : m.start()])
            out.append(repl(m))
            cursor = m.end()
        if not out:
            return text
        out.append(text[cursor:])
        return "".join(out)


class _Checked(_Scan):
    """A regex rule whose matches must also pass ``keep`` (a value that only looks like a secret is left alone)."""

    def __init__(self, pattern: _Lazy, keep: Callable[[re.Match[str]], bool]) -> None:
        self.pattern, self.keep = pattern, keep

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        return (m for m in self.pattern.finditer(text) if self.keep(m))


class _CallArgument(_Scan):
    """A string literal passed to a known call at a known place: ``Client("AC…", "<token>")`` (argument 1),
    ``jwt.encode(payload, "<key>")``. The arguments are read left to right from the call's ``(`` (quoted strings,
    brackets nested to any depth, at most 600 characters), so each call is read once. Group 2 is the literal's text."""

    _LITERAL = _Lazy(r"([\"'])((?:(?!\1)[^\n\\]|\\.){1,300})\1")

    def __init__(self, callee: str, index: int, random: bool = False) -> None:
        self.callee, self.index, self.random = _Lazy(callee + r"\s*\("), index, random

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        read_to = 0
        for call in self.callee.finditer(text):
            if call.end() <= read_to:  # a call inside the arguments just read: every character is read once
                continue
            i, arg, depth, end = call.end(), 0, 0, min(len(text), call.end() + 600)
            start = None
            while i < end:
                c = text[i]
                if depth == 0 and arg == self.index and start is None and not c.isspace():
                    start = i + (c in "bBrRuU" and i + 1 < end and text[i + 1] in "\"'")  # b"…", r'…'
                if c in "\"'":
                    close = text.find(c, i + 1, end)
                    while close > 0 and text[close - 1] == "\\":
                        close = text.find(c, close + 1, end)
                    if close < 0:
                        break
                    i = close
                elif c in "([{":
                    depth += 1
                elif c in ")]}":
                    if depth == 0:
                        break
                    depth -= 1
                elif c == "," and depth == 0:
                    if arg == self.index:
                        break
                    arg, start = arg + 1, None
                i += 1
            read_to = i
            literal = self._LITERAL.match(text, start) if start is not None else None
            if literal and not literal.group(2).startswith(_MARK) and (
                    not self.random or _looks_random(literal.group(2))):
                yield literal


_SEGMENT_END_RE = _Lazy(r"[\n|;&]")
#: a file's extension at the end of a value (``pwck.8.xml``, ``token.py``)
_FILE_NAME_RE = _Lazy(r"\.[A-Za-z][A-Za-z0-9]{0,4}$")


class _Command(_Scan):
    """A password given to a command: ``head`` finds the command, ``flag`` the option and its value (the group to
    mask), which must start within the command's segment (up to a newline, ``|``, ``;`` or ``&``). Each segment's
    end and each flag are searched for once, however many heads a line repeats."""

    def __init__(self, head: str, flag: str, flags: int = 0) -> None:
        self.head, self.flag = _Lazy(head, flags), _Lazy(flag)

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        n = len(text)
        pos = 0
        seg_from, seg_end = -1, -1
        found: re.Match[str] | None = None
        found_from = -1
        while pos < n:
            h = self.head.search(text, pos)
            if h is None:
                return
            start = h.end()
            if text[start : start + 1] in (",", ".") and text[start + 1 : start + 2] in (" ", "\n", ""):
                pos = start  # "stored in the vault, the old login page…": the word in a sentence, no command
                continue
            if not seg_from <= start < seg_end:
                end = _SEGMENT_END_RE.search(text, start)
                seg_from, seg_end = start, end.start() if end else n
            if found is None or not found_from <= start <= found.start():
                found, found_from = self.flag.search(text, start), start
                if found is None:
                    return  # no flag anywhere after this head: none after a later one either
            if found.start() > seg_end:  # (a flag may start at the end: a newline is the whitespace before it)
                pos = max(seg_end, start)  # every head of this segment would reach the same flag, past its end
                continue
            yield found
            pos = max(found.end(), start)
            found = None


_SECRET_FILE_EXTS = frozenset({".key", ".secret", ".secrets", ".token", ".pass", ".password", ".pwd", ".pw", ".cred",
                               ".creds", ".cookie", ".keyfile", ".passwd", ".auth"})  # .auth: OpenVPN's user and password
#: files that hold a secret whatever their name says: a MongoDB keyfile, s3fs's and rsync's password files, ppp's
#: and strongSwan's secrets, Postfix's SASL map, an Erlang cookie
_SECRET_FILE_NAMES = frozenset({"keyfile", "passwd-s3fs", ".passwd-s3fs", "chap-secrets", "pap-secrets", "ipsec.secrets",
                                "sasl_passwd", ".erlang.cookie", "rsyncd.secrets", "master.key", ".vault_pass",
                                ".vault-password", "vault_pass.txt", "secret.txt", "token.txt", "password.txt"})


#: what a file said to hold a secret is named ("config/master.key contains …"; not "secretpassword is …")
_SAID_FILE_ANCHORS = (".key ", ".pass ", ".secret ", ".token ", "master.key", "pass.txt", "token.txt", "secret.txt",
                      "keyfile")


def _secret_file(path: str) -> bool:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    if base.lower() in _SECRET_FILE_NAMES:
        return True
    stem, dot, ext = base.rpartition(".")
    stem, ext = (stem, "." + ext.lower()) if dot and stem else (base, "")
    return ext in _SECRET_FILE_EXTS or ext in ("", ".txt") and _strong_name(stem.lstrip("."))


class _Piped(_Scan):
    """A value echoed into a command that reads a password (or ``user:password``) on its standard input:
    ``echo PASS | docker login --password-stdin``, ``echo PASS | sudo -S …``, ``echo 'user:pass' | chpasswd``.
    Each line is read once."""

    _READER = _Lazy(r"--password-stdin|\bsudo\b[^\n|;&]{0,200}?\s-[a-zA-Z]*S\b|\bsudo\s+--stdin\b|\bchpasswd\b"
                    r"|\bpasswd\b[^\n|;&]{0,200}?\s--stdin\b|\bsecrets?\s+(?:create|put|set|add)\b"
                    r"|\bversions\s+add\b|\benv\s+add\b|--passphrase-fd[ =]0\b|\bcryptsetup\b"
                    r"|--(?:key|data)-file[ =]-(?!\w)|--from-file[ =]/dev/stdin"
                    r"|\b(?:devops|auth|registry)\s+login\b|\blogin\s+--with-token\b|\bkinit\b|\btoken\s+add\b"
                    r"|\bsmbpasswd\b|--passw(?:or)?d-(?:on-|from-)?stdin\b|--stdin-passw(?:or)?d\b|systemd-creds\s+encrypt\b"
                    r"|\bpassword_stdin\b|\bload-key\b")
    _ECHO = _Lazy(r"\b(?:echo|printf)\s+(?:-[neE]+\s+)?(?:([\"'])%[^\"'\n]*\1\s+)?(?!\[REDACTED)"
                  r"([^\s\"'|]+|\"[^\"\n]*\"|'[^'\n]*')")
    #: a here-string after the reader: sudo -S dnf upgrade <<< '…' (group 2, as the echo's)
    _HERE = _Lazy(r"<<<[ \t]*()(?!\[REDACTED)([^\s\"'|;&]+|\"[^\"\n]*\"|'[^'\n]*')")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        n = len(text)
        readers = list(self._READER.finditer(text))
        line_from = line_end = -1
        done = 0  # the end of the last line handled
        for k, reader in enumerate(readers):
            if not line_from <= reader.start() < line_end:
                nl = text.find("\n", reader.end())
                line_from, line_end = reader.start(), n if nl < 0 else nl
            if k + 1 < len(readers) and readers[k + 1].start() < line_end:
                continue  # the last reader of its line is the one an echo pipes into
            start = text.rfind("\n", done, reader.start()) + 1 or done
            for m in self._ECHO.finditer(text, start, reader.start()):
                if text.find("|", m.start(2), reader.start()) >= 0:
                    yield m
            here = self._HERE.search(text, reader.end(), line_end)
            if here is not None and not _VAR_REF_RE.match(here.group(2).strip("\"'")):
                yield here
            done = line_end


class _ConnectionString(_Scan):
    """``scheme://user:password@host``: the password runs to the LAST ``@`` (followed by a host character) of the
    token, so it may hold ``/``, ``:`` or ``@``. Each ``://`` is looked at once, each token's last ``@`` found once
    (the single regex did both from every start position: quadratic on ``http://es1:9200,http://es2:9200,…``)."""

    _USER = _Lazy(r"[^\s:/@\"'<>]*(?:@[^\s:/@\"'<>]*(?=:[^\s\"'<>]*@))?")  # an e-mail address as the user too
    _PORT_PATH = _Lazy(r"[0-9]{1,5}/")
    _TOKEN_END = _Lazy(r"[\s\"'<>]")
    _MATCH = _Lazy(r"[^:]*://[^:]*:(.*)@.", re.DOTALL)
    _SCHEME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
    _HOST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789[]._-")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        n = len(text)
        last_end = 0
        tok_start = tok_end = at = -1
        p = text.find("://")
        while p >= 0:
            i = p
            while i > last_end and text[i - 1] in self._SCHEME:
                i -= 1
            start = next((j for j in range(i, p) if text[j].isascii() and text[j].isalpha()
                          and (j == 0 or not (text[j - 1].isalnum() or text[j - 1] == "_"))), -1)
            user = self._USER.match(text, p + 3)
            q = user.end() + 1 if user else n
            if start < 0 or q > n or text[q - 1] != ":" or text.startswith(_MARK, q) or text.startswith(_MARK, p + 3):
                p = text.find("://", p + 3)
                continue
            if not tok_start <= q < tok_end:
                end = self._TOKEN_END.search(text, q)
                tok_start, tok_end = q, end.start() if end else n
                at = text.rfind("@", q, tok_end - 1)
                while at >= q and text[at + 1] not in self._HOST:
                    at = text.rfind("@", q, at)
            if at < q or self._PORT_PATH.match(text, q, at):  # host:8080/users/@me: a port and a path
                p = text.find("://", p + 3)
                continue
            m = self._MATCH.match(text, start, at + 2)
            if m is None:  # cannot happen: the span was checked above
                p = text.find("://", p + 3)
                continue
            if not _default_login(user.group(0) if user else "", m.group(1)):
                yield m
            last_end = m.end()
            p = text.find("://", last_end)


#: a password that documentation writes for any password, or a server's default one
_DOC_PASSWORDS = frozenset({"password", "pass", "passwd", "pwd", "secret"})


def _default_login(user: str, password: str) -> bool:
    """``user:password``, ``postgres:postgres``: the login a document writes for any, or a server's default (the
    password its user's name), not a person's secret."""
    return password.lower() in _DOC_PASSWORDS and user.lower() in ("user", "username", "") or (
        password == user and user.isalpha() and user.islower())


class _KeyTail(_Scan):
    """An END line of a private key whose BEGIN was cut away upstream, with the base64 lines right before it: found
    by searching backward from each END line (a regex from every line start rescanned the block: quadratic)."""

    _END = _Lazy(r"-----END[ A-Z0-9]*PRIVATE KEY[ A-Z]*-----")
    _LINE = _Lazy(r"[A-Za-z0-9+/=]+\r?\n")
    _MATCH = _Lazy(r"(?:[A-Za-z0-9+/=]+\r?\n)*-----END[ A-Z0-9]*PRIVATE KEY[ A-Z]*-----")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        last_end = 0
        for end in self._END.finditer(text):
            if end.start() < last_end:
                continue
            start = end.start()
            while start > last_end and text[start - 1] == "\n":
                nl = text.rfind("\n", last_end, start - 1)
                if nl >= 0:
                    ls = nl + 1
                elif last_end == 0 or text[last_end - 1] == "\n":
                    ls = last_end
                else:
                    break
                if not self._LINE.fullmatch(text, ls, start):
                    break
                start = ls
            m = self._MATCH.match(text, start)
            if m is not None:
                yield m
                last_end = m.end()


# -- 1. formats ------------------------------------------------------------------------------------------------
# (kind, anchors, pattern, group to mask or 0 for the whole match)
_PREFIXED_TOKENS = (
    "shpat_ shpca_ shppa_ shpss_ dop_v1_ doo_v1_ dor_v1_ dp.pt. dp.st. dp.ct. sbp_ nfp_ pscale_tkn_ pscale_pw_ "
    "pscale_oauth_ dckr_pat_ figd_ glc_ glsa_ sntrys_ nrak- pmak- pul- hvs. hvb. hrku- lin_api_ ntn_ r8_ gsk_ pplx- "
    "xai- dapi pcsk_ tvly- lsv2_pt_ lsv2_sk_ xkeysib- rzp_live_ rzp_test_ flwseck- flwseck_test- sq0atp- sq0csp- "
    "atatt3 akcp rubygems_ clojars_ oy2 ltai akid fo1_ ezak shippo_live_ shippo_test_ duffel_live_ duffel_test_ "
    "dt0c01. sgp_ pnu_ rdme_ ico- tfp_ aio_ whsec_ gocspx- ya29. sk.eyj sl.b dapi- ops_ ghcr_ ak_live_ sk_live_ "
    "api_live_ key_live_ live_sk_ atbb eaaa eaab eaac eaag cfpat- sqp_ squ_ sqa_ bkua_ rnd_ sb_secret_ ccipat_ "
    "api_org_ fm1r_ fm2_ glagent- y0_ esecret_ csk- fw_ napi_ phx_ sntryu_ dp.sa. dp.scim. dp.audit. lin_oauth_ "
    "ek_live_ ek_test_ nrii- tskey- absk pat-na1- pat-eu1- sdk- v4.public. v4.local. oauth: mlsn. sl.u. secret_ "
    "swmtkn-1- nsec1 os_v2_app_ os_v2_org_ atsk_ hcaik_ hcxik_ hcamk_ skey_ sk-or-v1-"
    # Cardano's bech32 signing keys
    " ed25519_sk1 ed25519e_sk1 addr_sk1 addr_xsk1 stake_sk1 stake_xsk1 root_xsk1 acct_xsk1 acct_sk1 policy_sk1"
).split()
_PREFIX_RE = _Lazy(
    r"(?<![A-Za-z0-9_])(?:" + "|".join(re.escape(p) for p in _PREFIXED_TOKENS) + r")[A-Za-z0-9_\-.=+/]{14,}",
    re.IGNORECASE,
)

_EMAIL_RE = _Lazy(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def _plain_word(value: str) -> bool:
    """A word of prose (``authentication``, ``Token``): letters only, one case after the first."""
    return value.isalpha() and (value.islower() or value[1:].islower() or value.isupper() and len(value) < 12)


_CONTAINER_CMD_RE = _Lazy(r"\b(?:docker|podman|nerdctl|buildah)\b[^\n|;&]{0,300}$")


def _user_password(m: re.Match[str]) -> bool:
    """``-u user:pass`` is a password, but not a uid:gid (``-u 1000:1000``, ``-u www-data:www-data``, a container's
    ``--user``)."""
    value = m.group(1)
    user = m.group(0)[: m.start(1) - m.start(0) - 1].split()[-1].lstrip("\"'")
    if value.isdigit() or value == user:
        return False
    return not _CONTAINER_CMD_RE.search(m.string, max(0, m.start() - 300), m.start())



@functools.lru_cache(maxsize=1024)
def _fold(word: str) -> str:
    """``word`` in ASCII letters: its accents dropped, and the letters that have none spelled as a keyboard without
    them does (ł l, ø o, ð d, æ ae, ß ss, ı i, ə e)."""
    import unicodedata

    word = word.translate({ord(a): b for a, b in (("ł", "l"), ("ø", "o"), ("ð", "d"), ("æ", "ae"), ("ß", "ss"),
                                                  ("ı", "i"), ("ə", "e"))})
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


#: "password", "passphrase" and "passcode" in the languages developers write in (and their common short forms), by
#: stem where a case or a possessive changes the ending (Czech heslo/-a/-em, Hungarian jelszav-am/-át, Lithuanian
#: slaptažod-is/-į/-žio, Greek κωδικ-ός/-ό): up to four more letters may follow a word. Gone through language by
#: language: every EU language, the Balkan ones (Serbian, Croatian and Bosnian in both scripts, Macedonian,
#: Albanian), the Baltic and Nordic ones, Slavic in Cyrillic and Latin, Turkic (Turkish, Azerbaijani, Kazakh, Uzbek,
#: Kyrgyz, Tatar, Uyghur), the Caucasus (Georgian, Armenian), Indic, South-East Asian, African and Middle-Eastern;
#: then the same in scripts written without spaces, where no word boundary follows
_PASSWORD_WORDS_ANY = (
    "password", "passphrase", "pass phrase", "passcode", "p/w", "pasword", "passwrod", "passowrd", "paswort",
    "sandi", "passwd", "passwort", "passwört", "kennwort", "wachtwoord", "wachtwurd",
    "wachtzin", "lösenord", "lösenfras", "salasana", "tunnuslause", "adgangskode", "passord", "loyniorð",
    "heslo", "hesla", "heslem", "hesle", "heslu", "hesly", "hasło", "hasła", "hasł", "haśle", "geslo", "gesla",
    "geslu", "geslom", "lozinka", "lozink", "parola", "parolă",
    "parole", "parool", "jelszó", "jelszav", "jelmondat", "şifre", "sifre", "senha", "contraseña", "contrasenya",
    "clave", "slaptažodis", "slaptažod", "lykilorð", "nenosiri", "mdp", "psw", "пароль", "пароля", "паролем",
    "парола", "паролата", "лозинка", "лозинк", "шифра", "шифру", "κωδικός", "κωδικ", "συνθηματικ", "mot de passe",
    "phrase de passe", "phrase secrète", "frase de paso", "frase-senha", "frase senha", "mật khẩu", "mat khau", "kata sandi", "kata laluan",
    "wagwoord", "şifrə", "šifra", "šifr", "sifra", "sifr", "құпия сөз", "нууц үг", "parol", "fjalëkalim",
    "pasahitza", "pasvorto", "contrasinal", "passwuert", "cyfrinair", "pasfhocal", "facal-faire", "adgangsord",
    "palavra-passe", "palavra passe", "kodeord", "salasõna", "парол", "сырсөз", "серсүз", "şîfre", "modpas",
    "iphasiwedi", "phasiwedi", "aṣínà", "ọ̀rọ̀ aṣínà", "ọrọigbaniwọle", "igama lokugqitha", "ijambo ry'ibanga",
    "kalmar sirri", "okwuntughe", "tenimiafina", "focal faire", "furaha sirta", "ramz",
    # the word typed fast ("passwrot", "pssword", "paswd": the stems stand for the endings), or "contraseñ" cut short
    "passw", "pssw", "pasw", "contraseñ", "пасс", "пас",
    "pw",  # chat's short form ("the admin pw is …"); not "pwned" (:meth:`_PasswordNearby._skip_word`)
    # the words as typed on a keyboard without their letters (haslo, jelszo, contrasena, losenord) and in Latin
    # letters (kwdikos for κωδικός, mima for 密码, bimilbeonho for 비밀번호, pasuwado for パスワード)
    *sorted({_fold(w) for w in ("hasło", "hasła", "jelszó", "contraseña", "lösenord", "slaptažodis", "passwört",
                                "mật khẩu", "şifre", "şifrə", "lykilorð", "loyniorð", "salasõna", "parolă",
                                "fjalëkalim")}),
    "kodikos", "kwdikos", "mima", "bimilbeonho", "bimil beonho", "pasuwado", "pasuwaado", "amho",
)
#: scripts written without spaces between words, or whose words no \w boundary ends: no boundary is asked
_PASSWORD_WORDS_BARE = ("密码", "密碼", "口令", "パスワード", "パス", "暗証番号", "비밀번호", "비번", "암호", "패스워드", "पासवर्ड",
                        "कूटशब्द", "संकेतशब्द", "পাসওয়ার্ড", "ਪਾਸਵਰਡ", "ପାସୱାର୍ଡ", "கடவுச்சொல்", "รหัสผ่าน",
                        "ລະຫັດຜ່ານ", "סיסמה", "סיסמא", "كلمة المرور", "كلمة السر", "الرقم السري", "الرمز السري",
                        "باسورد", "باسوورد", "رمز عبور",
                        "کلمه عبور", "گذرواژه", "پاس ورڈ", "كلمة مرور", "كلمة سر", "პაროლ", "ពាក្យសម្ងាត់", "စကားဝှက်",
                        "የይለፍ ቃል", "የይለፍ ቃሉ", "գաղտնաբառ", "પાસવર્ડ", "పాస్‌వర్డ్", "పాస్వర్డ్", "ಪಾಸ್‌ವರ್ಡ್", "പാസ്‌വേഡ്", "මුරපදය",
                        "පාස්වර්ඩ්", "پاسورډ", "پټنوم", "پارول", "פּאַראָל", "פאראל",
                        "পাছৱৰ্ড", "መሕለፊ ቃል")
#: words of names in scripts other than Latin that mark a secret, wherever they stand in the name
_SCRIPT_NAMES = (
    ("비밀번호", "password"), ("패스워드", "password"), ("암호", "password"), ("시크릿", "secret"), ("비밀키", "secret"),
    ("토큰", "secret"), ("パスワード", "password"), ("シークレット", "secret"), ("秘密鍵", "secret"), ("トークン", "secret"),
    ("密码", "password"), ("密碼", "password"), ("密钥", "secret"), ("秘钥", "secret"), ("密鑰", "secret"),
    ("令牌", "secret"), ("пароль", "password"), ("пароля", "password"), ("секрет", "secret"), ("токен", "secret"),
    ("κωδικός", "password"), ("סיסמ", "password"), ("كلمة_المرور", "password"), ("رمز_عبور", "password"),
)


#: the words the rule for such names looks for (and a name must hold one: "clé_api" is read by the other rules)
_SCRIPT_NAME_ANCHORS = tuple(dict.fromkeys(w for w, _ in _SCRIPT_NAMES)) + (
    "hasło", "contraseña", "passwört", "lösenord", "jelszó", "şifre", "mật khẩu")


def _split_top(rx: str) -> list[str]:
    """The top-level alternatives of the regular expression ``rx``."""
    parts: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(rx):
        c = rx[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = rx.index("]", i + 2)
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(rx[start:i])
            start = i + 1
        i += 1
    parts.append(rx[start:])
    return parts


def _literal_first(alternative: str) -> list[str]:
    """``alternative`` as alternatives that each start with a literal: a leading ``(?:a|b)c`` is ``ac|bc`` (and
    ``c`` too when the group is optional)."""
    if not alternative.startswith("(?:"):
        return [alternative]
    depth, close = 0, -1
    for i, c in enumerate(alternative):
        if c == "(" and alternative[i - 1 : i] != "\\":
            depth += 1
        elif c == ")" and alternative[i - 1 : i] != "\\":
            depth -= 1
            if depth == 0:
                close = i
                break
    rest = alternative[close + 1 :]
    if rest[:1] in ("*", "+", "{"):
        return [alternative]
    optional = rest.startswith("?")
    rest = rest[1:] if optional else rest
    forms = [f for inner in _split_top(alternative[3:close]) for f in _literal_first(inner + rest)]
    return forms + (_literal_first(rest) if optional and rest else [])


def _by_first_letter(forms: list[str], depth: int = 0) -> str:
    """``forms`` (alternatives of a regular expression) grouped by their first letters, to three letters deep
    (``c(?:o(?:de|mbo))|door``): at each position of a text the engine tries one group, not every word."""
    groups: dict[str, list[str]] = {}
    for form in forms:
        plain = len(form) > 1 and (form[0].isalnum() or form[0] in " '") and form[1] not in "?*+{"
        groups.setdefault(form[0] if plain and depth < 3 else "", []).append(form[1:] if plain and depth < 3 else form)
    parts: list[str] = []
    for first, rests in groups.items():
        if not first:
            parts.extend(rests)
        elif len(rests) == 1:
            parts.append(first + rests[0])
        else:
            parts.append(first + "(?:" + _by_first_letter(rests, depth + 1) + ")")
    return "|".join(parts)


#: the letters of scripts written without spaces between words (Thai, Lao, Myanmar, Khmer, CJK, kana, Hangul, full
#: width forms): a Latin word may touch them ("门禁卡PIN是4524", "서버password는"), so none ends or starts one
_UNSPACED_LETTERS = r"\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3000-\u9fff\uac00-\ud7af\uff00-\uffef"
#: the end of a word: no letter, digit or ``_`` after it but one of :data:`_UNSPACED_LETTERS`
_WORD_END = rf"(?![^\W{_UNSPACED_LETTERS}])"


def _words_re(words: str, bare: str = "", tail: str = _WORD_END) -> _Lazy:
    """A regular expression for a list of words (``words``, each followed by ``tail``, by default the end of a word,
    :data:`_WORD_END`; ``bare``, in scripts with no word boundary, as they are) written so that every alternative
    starts with a literal and words that start alike share a branch (:func:`_by_first_letter`): the engine then
    skips to the positions of their first letters and tries one branch there (measured over 2 KB of code: 3x
    faster than a group of alternatives).

    >>> _words_re("(?:pin|puk)(?: code)?", tail=r"(?!\\w)").pattern
    'p(?:in(?: code)?(?!\\\\w)|uk(?: code)?(?!\\\\w))'
    """
    def build() -> str:
        forms = [f + tail for alternative in _split_top(words) for f in _literal_first(alternative)]
        return _by_first_letter(forms + _split_top(bare) if bare else forms)

    return _LazyWords(build)


class _LazyWords(_Lazy):
    """A :class:`_Lazy` whose source is also built on first use (building a long word list's costs ~0.3 ms)."""

    __slots__ = ("_build",)

    def __init__(self, build: Callable[[], str]) -> None:
        super().__init__("")
        self._build = build

    def _get(self) -> re.Pattern[str]:
        if self._compiled is None:
            self.source = self._build()
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled


#: (run over the lower-cased text; what precedes a word is checked after the match.) A word in a script other than
#: Latin may be a config key's first part (``пароль_бд: …``): no code names its variables so
_PASSWORD_WORDS_RE = _words_re(
    "|".join(re.escape(w) for w in _PASSWORD_WORDS_ANY if w.isascii()),
    "|".join((*_PASSWORD_WORDS_BARE, *(re.escape(w) + r"[^\W_]{0,4}(?:_[^\W\d_]{1,12})?(?!\w)"
                                       for w in _PASSWORD_WORDS_ANY if not w.isascii()))),
    rf"[^\W_{_UNSPACED_LETTERS}]{{0,4}}{_WORD_END}")


#: shorter pieces that stand for several words of :data:`_PASSWORD_WORDS_ANY` as anchors ("pass" is one already)
_PASSWORD_STEMS = ("pass", "hesl", "gesl", "wacht", "parol", "sifr", "lozink", "adgangs", "palavra", "phasiwedi",
                   "contras", "jelsz", "salas", "slaptaž")


def _fewest_anchors(words: tuple[str, ...], stems: tuple[str, ...]) -> tuple[str, ...]:
    """The anchors that stand for ``words``: each word, unless one of ``stems`` or a shorter word is inside it. An
    ASCII anchor costs every text a substring test (measured: ~1.7 us on 2 KB), so fewer anchors keep the filter
    cheap; a rule that runs on a few more texts costs only those.

    >>> _fewest_anchors(("password", "passwort", "heslo", "hesla"), ("pass", "hesl"))
    ('hesl', 'pass')
    """
    pieces = sorted({w.lower() for w in words} | set(stems), key=lambda piece: (len(piece), piece))
    kept: list[str] = []
    for piece in pieces:
        if not any(k in piece for k in kept):
            kept.append(piece)
    return tuple(kept)


class _PasswordNearby(_Scan):
    """A password told in a sentence in any language: after a word for "password" (:data:`_PASSWORD_WORDS_ANY`),
    the first token of the same line (within 80 characters, at most 8 tokens on) that looks like a password: 8 to
    128 characters, with a digit, and upper and lower case or a symbol; never a URL, a path, a file name, an
    e-mail, a flag, code or a version. Tokens end at white space and at CJK punctuation.

    A value the sentence announces (``… is``, ``… je``, ``… ist``, ``: …``, ``は…``, ``… है`` after it, or right
    after a possessive such as ``jelszavam``/``şifresi``: :func:`_told_at`) is taken in a weaker shape too
    (:func:`_told`: ``perrito2021``, a PIN-like number, several words of a passphrase), when ``_TOLD``."""

    _TOKEN = _Lazy(r"[^\s，。、！？：；「」（）\"'`|]+")
    _WRAP = "\"'`*_([{<>)]}.,;:!?،؛。、，"
    _NOT_AFTER: frozenset[str] = frozenset()  # words that say the number after them is not what was announced
    _WORDS = _PASSWORD_WORDS_RE
    _PROSE_ONLY = False
    _TOLD = False
    _ADJACENT = False  # the token right after the word is told too (a Wi-Fi key after "key" on a network's line)

    @staticmethod
    def _takes(value: str) -> bool:
        return _password_like(value) and not any(c in value for c in "=([{<>") and not _SNAKE_RE.fullmatch(value)

    @classmethod
    def _value(cls, token: str) -> str:
        """``token`` without the quotes and punctuation around it; a symbol no sentence ends with (``soju4968*``,
        ``alg43$``) stays, and so does ``!`` after a word joined to digits by a symbol (``sakura.86!``)."""
        value = token.strip(cls._WRAP)
        tail = token[len(token) - len(token.lstrip(cls._WRAP)) + len(value):] if value else ""
        kept = len(tail) - len(tail.lstrip("*$#%&~^@"))
        if not kept and tail[:1] == "!" and any(c.isdigit() for c in value) and _SYMBOL_JOINED_RE.fullmatch(value):
            kept = 1
        return value + tail[:kept]

    def _skip_word(self, text: str, word: re.Match[str]) -> bool:
        """A word glued to a name before it (``db_password``, ``--password``, ``x.password``), unless it is the end
        of a capitalised compound (``WLAN-Passwort``, ``Admin-Kennwort``) or follows an article (``il-password``)."""
        a = word.start()
        if word.group(0).startswith(("пасп", "пасх", "пассаж", "пасек", "пасьян", "паст")):
            return True  # паспорт (a passport), пасха, пассаж, паста: other words that start like "пас"
        if word.group(0).startswith("pw"):  # chat's short form, a word of its own: not pwned, pwsh, "…Pw" in binary
            return word.group(0) != "pw" or a > 0 and text[a - 1] not in " \t\n(\"'`*" or text[
                word.end() : word.end() + 1] not in ("", " ", ":", "=", "\t", "\n")
        if word.group(0) == "パス":  # ファイルパス, コンパス (a path, a compass); パスポート, パスタ: other words
            return "\u30a0" <= text[a - 1 : a] <= "\u30ff" or text.startswith(("ポート", "タ", "ワード"), word.end())
        if not a or not word.group(0)[0].isascii():
            return False
        before = text[a - 1]
        if not (before.isalnum() or before in "_:/.-") or _UNSPACED_RE.match(before):  # 服务器的password是…
            return False
        if before == "-" and text[a].isupper() and _COMPOUND_RE.search(text, max(0, a - 30), a):
            return False
        if before == "-" and _NETWORK_BEFORE_RE.search(_ascii_lower(text), max(0, a - 8), a):
            return False  # wifi-lösenord, wlan-passwort: a network's password in lower case
        return not _ARTICLE_RE.search(text, max(0, a - 4), a)

    def _skip_said(self, text: str, word: re.Match[str]) -> bool:
        """What the words around a word say after the cheaper checks passed: a key said to be public, Italian
        "parola chiave" (keyword)."""
        return word.group(0).startswith("parol") and _KEYWORD_RE.match(_ascii_lower(text), word.start()) is not None

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        scanned = 0  # the end of the tokens already looked at: a later word's tokens are looked at once
        for word in self._WORDS.finditer(_ascii_lower(text)):
            if word.start() < scanned or self._skip_word(text, word):
                continue
            end = text.find("\n", word.end(), word.end() + 80)
            end = min(len(text), word.end() + 80) if end < 0 else end
            nl = text.rfind("\n", max(0, word.start() - 200), word.start())
            line_start = nl + 1 if nl >= 0 else max(0, word.start() - 200)
            if self._PROSE_ONLY and _code_between(text, line_start, end):
                scanned = word.end()
                continue  # code, where names say what is secret
            if self._PROSE_ONLY and _after_public(text, word.start()) or self._skip_said(text, word):
                continue  # "Public key: …", "host key …": meant to be shown
            scanned = word.end()
            told = self._TOLD and not _code_between(text, line_start, word.start())
            for k, token in enumerate(self._TOKEN.finditer(text, word.end(), end)):
                if k >= 8:
                    break
                scanned = token.end()
                if self._PROSE_ONLY and text.count("(", word.end(), token.start()) > text.count(
                        ")", word.end(), token.start()):
                    continue  # inside a note after the word: "Release Key (12/bookworm) (ID: …)"
                opened = token.start() + (text[token.start()] in "“‘")  # ASCII quotes end a token, curly ones not
                quote = text[opened - 1]
                close = text.find(_CLOSING.get(quote, quote), opened, end) if quote in _CLOSING and not (
                    self._PROSE_ONLY) else -1
                if close > 0 and _passphrase(text[opened:close], text[word.start() : opened - 1]):
                    m = _SPAN_RE.match(text, opened, close)  # 'purple elephants dance at midnight'
                    if m is not None:
                        yield m
                        scanned = close
                        break
                token = self._TOKEN.match(text, token.start(), min(len(text), token.start() + 4096)) or token
                if _UNSPACED_RE.search(token.group(0)):  # はKp3v…です: the Latin run between a particle and a copula
                    run = _ASCII_RUN_RE.search(text, token.start(), token.end())
                    token = self._TOKEN.match(text, run.start(), run.end()) if run is not None else None
                    if token is None:
                        continue
                if self._ADJACENT and k == 0 and not text[word.end() : token.start()].strip() and _told(
                        value := self._value(token.group(0))) and not _COUNT_AFTER_RE.match(text, token.end()):
                    a = token.start() + token.group(0).index(value)  # "network Harbor, key sunflower-kettle-92"
                    m = _SPAN_RE.match(text, a, a + len(value))
                    if m is not None:
                        yield m
                        scanned = m.end()
                        break
                if self._ADJACENT and k == 0 and not text[word.end() : token.start()].strip() and (
                        phrase_end := _spoken_phrase(text, token.start(), end, announced=True)) > 0 and any(
                        c.isdigit() for c in text[token.start() : phrase_end]):
                    m = _SPAN_RE.match(text, token.start(), phrase_end)  # "…-5G, key tangerine dream 1977, then…"
                    if m is not None:
                        yield m
                        scanned = m.end()
                        break
                if told and k <= 6:
                    m = _told_at(text, word, token, end)
                    if m is not None:
                        yield m
                        scanned = m.end()
                        break
                value = self._value(token.group(0))
                if value and self._takes(value):
                    if self._NOT_AFTER and (before := _WORD_BEFORE_RE.search(
                            text, max(0, token.start() - 24), token.start())) and before.group(1).lower() in (
                            self._NOT_AFTER):
                        break  # "the PIN code handling is broken, see issue 4512": a number named something else
                    a = token.start() + token.group(0).index(value)
                    m = _SPAN_RE.match(text, a, a + len(value))
                    if m is not None:
                        yield m
                        scanned = m.end()
                    break


class _PasswordTold(_PasswordNearby):
    """:class:`_PasswordNearby` with the values a sentence announces taken in a weaker shape (:func:`_told_at`)."""

    _TOLD = True


class _NetworkKey(_PasswordTold):
    """A Wi-Fi key told in a sentence: after ``WPA2 key``, ``WLAN-Schlüssel``, ``clé wifi``, ``clave de red``, or a
    word for "key" on a line that names a network before it ("network Harbor-5G, key is …", "SSID Lab, the key:
    …"), the value a sentence announces (:func:`_told_at`) or a password (:meth:`_PasswordNearby._takes`)."""

    _WORDS = _words_re(r"(?:netzwerk|wlan-?|wi-?fi-?)schlüssel|(?:wi-?fi|wlan|wpa[23]?(?:-psk)?|network"
                       r"|hotspot)[ -]?(?:key|passkey|passcode|psk|pass|pw|code)|psk|key|schlüssel|clé|clef|clave"
                       r"|chave|chiave|klucz|ключ|anahtar\w{0,3}|sleutel|nyckel\w{0,2}|nøgle\w{0,2}|nøkkel\w{0,3}"
                       r"|avain|kulcs\w{0,3}|klíč|kľúč|ključ|cheia|cheie"
                       r"|(?:code|pass|mdp|pw|codice|código|kod|код|ramze?|rahat|senha|contraseña|contra|clave"
                       r"|password|passwort|parola|haslo|hasło|heslo|lösenord|пароль|ключ|mật khẩu|sandi|şifre)"
                       r" (?:(?:du|de la|de|del|do|della|від|от|do|da) )?(?:wi-?fi|wlan)",
                       "暗号化キー|セキュリティキー|ネットワークキー|パスフレーズ")
    _NETWORK = _Lazy(r"wi-?fi|wlan|wpa|network|netzwerk|hotspot|ssid|réseau|\bde rede?\b|сети|сеть|мереж|router"
                     r"|routeur|nätverk|netværk|nettverk|verkko")
    _PROSE_ONLY = True
    _ADJACENT = True

    def _skip_word(self, text: str, word: re.Match[str]) -> bool:
        if super()._skip_word(text, word):
            return True
        if self._NETWORK.search(word.group(0)):
            return False
        lower = _ascii_lower(text)
        nl = lower.rfind("\n", max(0, word.start() - 60), word.start())
        return self._NETWORK.search(lower, max(0, word.start() - 60, nl + 1), word.start()) is None and (
            self._NETWORK.match(lower, word.end() + 1 + (lower[word.end() + 1 : word.end() + 4] in ("de ", "di ")) * 3)
            is None)


_NETWORK_BEFORE_RE = _Lazy(r"(?<![\w-])(?:wi-?fi|wlan|router|hotspot)-$")
_KEYWORD_RE = _Lazy(r"parol[ae] chiav[ei]")  # Italian "keyword": parola is "password" in Romanian and Turkish
_COMPOUND_RE = _Lazy(r"(?<![\w-])[A-ZÄÖÜ]\w*(?:-[A-ZÄÖÜ]\w*)*-$")
_CODE_NOT_PAREN_RE = _Lazy(r"[{}\[\]=;<>$%]")
_CALL_PAREN_RE = _Lazy(r"[\w)\]]\(")
_PAREN_NOTE_RE = _Lazy(r"(?<![\w)\]])\([^()\n]{0,80}\)")  # "(for the NAS)": a note in prose, not a call


_TAG_RE = _Lazy(r"\[(?:[^\x00-\x7f\]\n]{1,12}|Web[^\x00-\x7f\]\n]{1,6}|[0-9]{4,8})\]")


def _code_between(text: str, a: int, b: int) -> bool:
    """``text[a:b]`` holds what code holds (``(){}[]=;<>$%``), a parenthesised note in prose aside (and the marker
    of a secret masked before: "hasło do wifi [REDACTED:password] a PIN do alarmu …" is still prose)."""
    found = _CODE_CHARS_RE.search(text, a, b)
    while found is not None and found.group(0) == "[" and (text.startswith(_MARK, found.start()) or _TAG_RE.match(
            text, found.start())):  # [토스], [Web발신], [700510]: a text message's sender tag, its code
        close = text.find("]", found.start(), b)
        if close < 0:
            break
        found = _CODE_CHARS_RE.search(text, close + 1, b)
    if found is None or found.group(0) not in "()" or _CODE_NOT_PAREN_RE.search(text, found.end(), b):
        return found is not None
    if _CALL_PAREN_RE.search(text, max(a, found.start() - 1), b):
        return True  # lookup(table, key): a call
    return _CODE_CHARS_RE.search(_PAREN_NOTE_RE.sub(lambda _: " ", text[a:b])) is not None


#: words between a copula and the value it announces ("the admin pw is literally …"): never the value
_GAP_ADVERBS = ("literally", "just", "simply", "still", "actually", "basically", "currently", "now", "always")
#: what announces the value after a word for password, at the end of the words between them: a copula or a sign in
#: the languages of :data:`_PASSWORD_WORDS_ANY` (SVO ones: "is", "je", "ist", "est", "é", "jest", "to", "är", "on",
#: "είναι", "это", "là", "adalah", "ni", "ay", "هي", "היא", "คือ"), or a particle joined to the word (は, 是, 는)
_TOLD_GAP_RE = _Lazy(
    r"(?:(?:^|[\s(),])(is|was|will be|is now|are|=|:|-|–|—|→|->|=>|ist|lautet|war|heißt|est|était|c'est|sera|es"
    r"|era|será|é|è|és|este|jest|to|brzmi|było|je|jsou|bylo|zní|znie|bolo|glasi|bilo|on|oli|ir|bija|yra|buvo|är"
    r"|var|er|blir|είναι|ήταν|это|был|будет|є|це|е|беше|је|гласи|ass|yw|ydy|da|estas|është|ishte|huwa|hija"
    r"|adalah|ialah|yaitu|yakni|ay|là|ni|ndi|ngu|waa|volt|lesz|pedig|है|হল|হলো|ہے|است|هي|هو|היא|הוא"
    r"|არის|է|คือ|គឺ|бол|ita ce|shi ne|waa|wa|set to|changed to|reset to|it's|it’s|it is|used|chose|picked|went with"
    r"|typed|entered)"
    rf"(?:[ \t]+(?:{'|'.join(_GAP_ADVERBS)}))?"  # "pw is literally …"
    r"[ \t]*[:：]?"
    r"|[:=：→՝(]|は|が|是|为|為|：|는|은|이|가|คือ|គឺ|ია)[ \t]*$")
#: copulas that are other words in other languages (English "on", Italian "da", Spanish "ni"): they announce a value
#: only after a word for password of their own language
_OWN_LANGUAGE = {"on": ("salasan", "salasõn", "parool", "tunnuslause"), "oli": ("salasan", "salasõn", "parool"),
                 "waa": ("furaha",), "wa": ("pasuwado", "pasuwaado"),
                 "da": ("pasahitza",), "ni": ("nenosiri", "aṣínà", "ọ̀rọ̀", "ọrọigbaniwọle", "iphasiwedi"),
                 "és": ("contrasenya",),  # Catalan "is", Hungarian "and"
                 "ita ce": ("kalmar sirri",), "shi ne": ("kalmar sirri",)}  # Hausa "it is"
#: a copula after the value (languages that put the verb last): "… kiwi2020 है", "… است", "…입니다", "…です"
_TOLD_AFTER_RE = _Lazy(r"[ \t]*(?:है|हैं|था|ہے|است|ነው|আছে|হল|ಆಗಿದೆ|ஆகும்|ആണ്)|です|だ|입니다|이다|예요|이에요"
                       r"|'(?:d|t)[ıiuü]r")
#: a possessive that is "my/your/its password" in one word: the value may follow it with nothing between
_OWN_FORMS = frozenset({"şifrem", "şifren", "şifresi", "şifremiz", "şifreniz", "parolam", "parolan", "parolası",
                        "parolanız", "şifrəm", "şifrəsi", "parolum", "parolu", "jelszavam", "jelszavad", "jelszava",
                        "jelszavunk", "jelszavuk", "salasanani", "salasanasi", "salasanamme", "parolim", "paroling",
                        "parolasi", "sandiku", "sandinya"})
#: words between a word for password and a value that say the value is something else (a length, a policy, a
#: field, an error's number, a reset link)
_ABOUT_GAP_RE = _Lazy(
    r"(?i)\b(?:length|long|policy|polic(?:ies|y)|strength|complexity|expir\w*|age|history|hash\w*|field|column|prompt"
    r"|reset|manager|rotation|attempts?|min(?:imum)?|max(?:imum)?|rules?|requirements?|characters?|chars|digits"
    r"|error|status|exit|http|line|port|length|länge|richtlinie|longueur|politique|longitud|política|comprimento"
    r"|lunghezza|długość|délka|hossz\w*|uzunluğu|длина|политика|errors?|fehler\w*|erreur|errore|błąd\w*|chyba"
    r"|ошибк\w*|hata\w*|hiba\w*|σφάλμα\w*|virhe\w*|fejl|feil|fel|fout|version|versie|versão|versión|features?"
    r"|specs?|mode|type|standard|band|channel|support\w*)\b"
    r"|재설정|변경|정책|길이|만료|규칙|リセット|再設定|変更|ポリシー|長さ|有効期限|ルール|重置|重设|重設|修改|策略|长度|長度"
    r"|过期|過期|规则|規則")
#: a count's unit after a number: "8 characters", "12 Zeichen", "6 chiffres"
_COUNT_AFTER_RE = _Lazy(
    r"(?i)[ \t]*(?:characters?|chars?|letters?|digits?|symbols?|zeichen|stellen|caract[eè]res|chiffres|d[ií]gitos"
    r"|caratteri|cifre|znak[óo]w|znak[yů]|cyfr|číslic|karakter\w*|merkki\w*|tecken|tegn|tekens|символ\w*|знак\w*"
    r"|цифр\w*|χαρακτήρ\w*|ký tự|aksara|herufi|位|文字|자리|자)\b")
_TECH_TERM_RE = _Lazy(r"(?i)(?:base|utf|ipv|http|oauth|win|x|arm|amd|i|ucs|ascii|sha|md|aes|rsa|des|crc|u?int|float|bf|fp"
                      r"|ed|es|hs|rs|ps|pkcs|ecdsa|tls|ssl|ssh|python|php|node|java|gpt|llama|mp|h|v)-?[0-9]{1,4}\w{0,2}")


def _told(value: str) -> bool:
    """A value a sentence announced as its password, in a shape :func:`_password_like` leaves: letters and digits
    (``perrito2021``, ``Knedlik.Pivo42``), 6 to 128 characters; or a number of 4 to 12 digits (a banking app's
    numeric password, a PIN), not a year. Never a URL, an e-mail, a path, a file name, a version, code, a date, an
    algorithm or a format (``sha256``, ``base64``, ``utf8``), a stand-in or a word about the secret."""
    if not value or value.startswith(_MARK) or _stands_in(value) or value.lower().startswith("1password"):
        return False  # (1Password-lenken: the app, not a password)
    if value.rstrip("#*").isdigit():  # a keypad's code may end in its # or * (4512*)
        number = value.rstrip("#*")
        return number.isascii() and 4 <= len(number) <= 24 and not _YEAR_RE.fullmatch(number)
    if not any(c.isdigit() for c in value) and 8 <= len(value) <= 64 and _NO_DIGIT_STRONG_RE.fullmatch(value) and (
            sum(c in "!#$%&*?~@^" for c in value) >= 1 and any(c.isupper() for c in value)
            and any(c.islower() for c in value)):
        return not _skip_value(value)  # JHWeyP!Dhzzd*: both cases and a sign, announced
    if not 6 <= len(value) <= 128 or not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return False
    if value.startswith(("-", "#")) or "://" in value or "@" in value and "." in value.rsplit("@", 1)[-1]:
        return False
    if any(c in value for c in "=([{<>/\\") or _SNAKE_RE.fullmatch(value) and not _WORD_DIGITS_RE.fullmatch(
            value) or _CODE_VALUE_RE.match(value):
        return False  # db_password2 is a name; lupita_0812, a word and digits, a password
    if _VERSION_RE.fullmatch(value) or _FILE_NAME_RE.search(value) or _ALGORITHM_RE.fullmatch(value):
        return False
    if _TECH_TERM_RE.fullmatch(value) or re.fullmatch(r"[0-9:/.,-]+[A-Za-z]{0,3}|[0-9]{1,2}[A-Z][a-z]+", value):
        return False  # utf8, x86_64, 2026-11-23, 24h, 10:30, 1Password
    if _CODE_PATH_RE.fullmatch(value) and (value.islower() or "_" in value):
        return False  # cfg.db2: an attribute; Knedlik.Pivo42 is a password
    return not _skip_value(value)


def _told_at(text: str, word: re.Match[str], token: re.Match[str], end: int) -> re.Match[str] | None:
    """The value ``token`` begins, when what lies between the word for password and it announces it
    (:data:`_TOLD_GAP_RE`, a copula after it, or a possessive word right before it) and it is :func:`_told` or
    a passphrase of several words (:func:`_spoken_phrase`). A value glued to a particle (``は``, ``是``) or a copula
    (``입니다``) in a script without spaces is the run of Latin characters and digits inside the token."""
    start, raw = token.start(), token.group(0)
    if _UNSPACED_RE.search(raw):
        run = _ASCII_RUN_RE.search(raw)
        if run is None:
            return None
        start, raw = start + run.start(), run.group(0)
    gap = text[word.end() : start]
    if len(gap) > 60 or _ABOUT_GAP_RE.search(gap) or _SENTENCE_END_RE.search(gap):
        return None
    value = _PasswordNearby._value(raw)
    if not value or value.lower() in _GAP_ADVERBS:
        return None
    a = start + raw.index(value)
    if raw[:1] == "(" and raw.endswith(")"):
        gap += "("  # their password (rhubarb1987): the parenthesis announces it
    said = _TOLD_GAP_RE.search(gap)
    copula = said.group(1) if said is not None else None
    if copula in _OWN_LANGUAGE and not word.group(0).startswith(_OWN_LANGUAGE[copula]):
        said = None  # "the password on prod01 is …": English "on"
    elif copula == "je" and word.group(0).startswith(("hasł", "hasl", "haśl")):
        said = None  # "hasła … jak je zresetować": Polish "them", not "is"
    if said is None and not (not gap.strip() and word.group(0) in _OWN_FORMS or not word.group(0).isascii() and (
            not _LATIN_RE.search(word.group(0)) and value.isascii() and not _LATIN_OR_DIGIT_RE.search(gap)
            and len(gap.split()) <= 3)):  # পাসওয়ার্ড dolphin22, باسورد الواي فاي ahmad123: Latin in another script
        if not _TOLD_AFTER_RE.match(text, a + len(value)):
            return None
    elif copula == "to" and not word.group(0).startswith(("hasł", "haśl")) and (gap.strip() != "to" or _GIVEN_TO_RE.search(
            text, max(0, word.start() - 60), word.start())):
        return None  # "I sent the password to bob42": a person; "… is limited to 1024", "normalized according to …"
    if said is not None and _JOINED_TOLD_RE.fullmatch(value) and _told(value) and not _COUNT_AFTER_RE.match(
            text, a + len(value)):
        return _SPAN_RE.match(text, a, a + len(value))  # qwerty-but-longer-69: one token, whatever words follow
    phrase_end = _spoken_phrase(text, a, end, announced=_PHRASE_GAP_RE.search(gap.rstrip()) is not None,
                                named=_PHRASE_NAME_RE.search(text, max(0, word.start() - 12), word.end()) is not None)
    if phrase_end > 0:
        return _SPAN_RE.match(text, a, phrase_end)
    if said is not None and _JOINED_WORDS_RE.fullmatch(value) and not _stands_in(value) and _NOT_PHRASE_WORDS.isdisjoint(
            re.split(r"[-._]", value.lower())):
        return _SPAN_RE.match(text, a, a + len(value))  # correct-horse-battery-staple: a passphrase in one token
    if not _told(value) or _COUNT_AFTER_RE.match(text, a + len(value)) or value.isdigit() and _UNIT_AFTER_RE.match(
            text, a + len(value)):
        return None
    return _SPAN_RE.match(text, a, a + len(value))


#: words and a number joined by dashes, dots or underscores in one token (a chosen password, not words of a phrase)
_JOINED_TOLD_RE = _Lazy(r"(?=[^\s]*[0-9])(?=[^\s]*[^\W\d_])[^\W_]+(?:[-._][^\W_]+)+")
#: words of a sentence written with dashes ("managed-by-the-vault"), not of a chosen passphrase
_NOT_PHRASE_WORDS = frozenset({"the", "a", "an", "by", "of", "to", "in", "on", "is", "be", "see", "set", "not", "no",
                               "your", "my", "our", "its", "for", "from", "with", "and", "or", "via", "at", "as", "this",
                               "that", "here", "below", "above", "goes", "managed", "stored", "kept", "env", "config"})
_JOINED_WORDS_RE = _Lazy(r"[A-Za-z]{2,12}(?:([-._])[A-Za-z]{2,12})(?:\1[A-Za-z]{2,12}){2,8}[0-9]{0,4}")
_NO_DIGIT_STRONG_RE = _Lazy(r"[A-Za-z!#$%&*?~@^_.+=-]+")
_ASCII_RUN_RE = _Lazy(r"[!-~]+")
_WORD_DIGITS_RE = _Lazy(r"[a-z]{3,}_[0-9]{3,}")
_LATIN_RE = _Lazy(r"[A-Za-z\u00c0-\u024f]")
_LATIN_OR_DIGIT_RE = _Lazy(r"[A-Za-z\u00c0-\u024f0-9]")
_SENTENCE_END_RE = _Lazy(r"[.!?;](?:\s|$)|[。！？]")
_UNSPACED_RE = _Lazy(f"[{_UNSPACED_LETTERS}]")
_GIVEN_TO_RE = _Lazy(r"(?i)\b(?:sen[dt]|gave|give|forward\w*|e-?mail\w*|mail\w*|shar\w+|show\w*|pass\w*|text\w*|dm'?d"
                     r"|message\w*|explain\w*)\b[^.!?\n]*$")
#: words that end a passphrase read from a sentence: a conjunction or a word that starts a new clause
_CLAUSE_WORDS = frozenset(
    "and but or so then because since which that while when if unless though although und aber oder dann weil denn "
    "wenn et mais ou puis car donc quand si y pero o e mas ma però quindi se en maar of want als i ale lub a więc "
    "gdy и но или а что если och men eller så og ve ama veya fakat çünkü és de vagy hogy ha ja tai mutta kun jos "
    "dan atau tapi".split())
#: words of a sentence about a password rather than of a passphrase: function words, and the verbs, adjectives
#: and adverbs said of passwords, in the languages a passphrase is most often told in
_PHRASE_STOP = frozenset(
    "the a an my your our their his her its this that these those is are was were be been being to of in on at by "
    "for from with without as not no yes it there here what who how where why all any some every each same other "
    "also still now just only very too again already always never usually somewhere anywhere today yesterday "
    "tomorrow please stored saved hashed encrypted required needed optional mandatory wrong incorrect invalid "
    "expired changed reset set sent shown hidden visible correct valid weak strong long short secure insecure "
    "unknown different generated rotated managed used case-sensitive case-insensitive empty blank missing fine ok "
    "okay good bad new old current default same simple easy hard written printed listed kept given "
    "encoded decoded plaintext cleartext plain text shared through via using into onto within inside outside per "
    "across between handled displayed logged provided supplied available configured specified than longer "
    "shorter larger smaller more less percent gigabytes megabytes kilobytes "
    "bytes byte bits bit days day hours hour minutes seconds weeks months years times attempts tries "
    "der die das den dem des ein eine einen einem ist sind war wird nicht noch jetzt seit bis ab nach auf aus bei "
    "mit von zu im für mindestens höchstens falsch geändert gespeichert lang kurz sicher "
    "le la les un une des du est sont pas plus au aux dans sur par pour avec trop moins très "
    "el los las una del en por para con muy desde hasta menos más no "
    "o os as um uma do da dos das em no na não com até "
    "il lo gli di della nel non dal almeno è "
    "het een van voor met op niet te sinds tot minstens "
    "w we na do od z ze dla nie co jest "
    "v ve s se je ne "
    "в во на до от не из по с это "
    "och för med av på till inte er ikke til af".split())
_RULE_WORDS_ANY = frozenset({"characters", "chars", "letters", "digits", "symbols", "length", "minimum", "maximum",
                             "least", "zeichen", "caractères", "caracteres", "caratteri", "znaków", "znaků",
                             "karakter", "символов", "tecken", "tegn", "tekens", "merkkiä"})
_WORD_COUNT_RE = _Lazy(r"(?:[0-9]+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|several|"
                       r"some|many)(?: [a-z]+)? words?")
_PHRASE_WORD_RE = _Lazy(r"[^\W_]+(?:['’-][^\W_]+)*")


def _spoken_phrase(text: str, a: int, end: int, announced: bool, named: bool = False) -> int:
    """The end of a passphrase of several words told at ``a`` without quotes ("… is purple otter 88", "… is correct
    horse battery"), or -1. It is read to the end of its sentence or line, or to a word that goes on with the
    sentence (a conjunction, :data:`_CLAUSE_WORDS`), and holds two to eight words: with a number among them and a
    word of letters, in any language; without one, three or more lower-case words after an English "is" or a
    colon. No word may be one that sentences about passwords use (:data:`_PHRASE_STOP`: "is stored in the vault",
    "ist zu kurz"), except the first of words without a number ("correct horse battery"); "twelve random words"
    describes a passphrase."""
    if _MESSAGE_RE.match(text, a):
        return -1  # "passwd: password updated successfully": a message about the secret
    words: list[str] = []
    stop = a
    for m in _PLAIN_TOKEN_RE.finditer(text, a, end):
        raw = m.group(0)
        core = raw.rstrip(".,;:!?)”’\"'")
        if words and _LATIN_OR_DIGIT_RE.search(words[0]) and not _LATIN_OR_DIGIT_RE.search(core):
            break  # "パスワードは abc123 を使う": the sentence goes on in its own script
        clause = core.lower() in (_CONJUNCTIONS if named and announced else _CLAUSE_WORDS)
        if clause or not _PHRASE_WORD_RE.fullmatch(core):
            if not core.strip("—–-") or raw[:1] == "(" and words:
                break  # "… — restic asks for it", "… (with spaces)": the phrase ended
            if clause:
                break
            if _PHRASE_WORD_RE.fullmatch(core):
                words.append(core)  # "de" in a passphrase named as one ("blauwe fiets in de gracht")
                stop = m.start() + len(core)
                continue
            return -1  # a flag, a path, a symbol inside: not words of a passphrase
        words.append(core)
        stop = m.start() + len(core)
        if len(words) > 8:
            return -1
        if core != raw:  # punctuation after the word ends the phrase
            break
    if announced and len(words) >= 3 and all(w.isdigit() and len(w) == 4 for w in words):
        return stop  # a key in groups of four digits: a router's printed Wi-Fi key, "9472 8830 1156 2274"
    if len(words) == 1 and announced and _JOINED_PHRASE_RE.fullmatch(words[0]):
        parts = re.split(r"[-.]", words[0])  # bussola-cavallo-lanterna-graffetta: words joined by dashes
        return stop if not any(p in _PHRASE_STOP or p in _STOP_WORDS for p in parts) else -1
    if len(words) < 2:
        return -1
    lower = [w.lower() for w in words]
    digits = [w for w in words if any(c.isdigit() for c in w)]
    if any(w in _RULE_WORDS_ANY for w in lower) or _WORD_COUNT_RE.fullmatch(" ".join(lower)):
        return -1
    if any(w.isdigit() and len(w) <= 2 and nxt.islower() for w, nxt in zip(words, words[1:])):
        return -1  # a count: "1 repetition", "2 gigabytes"
    if named and announced and len(words) >= 3:
        # after a word for passphrase and a colon or "is": a sentence of its own ("purple elephant dances quietly at
        # seven", "blauwe fiets in de gracht 1998"), unless most of it is words of a sentence about it
        stops = sum(w in _PHRASE_STOP or w in _CLAUSE_WORDS for w in lower)
        measured = any(w.isdigit() and (_UNIT_AFTER_RE.match(" " + nxt) or _COUNT_AFTER_RE.match(" " + nxt))
                       for w, nxt in zip(lower, lower[1:]))  # "limited to 4096 bytes": a size, not a phrase
        return stop if 2 * stops <= len(words) and len(digits) < len(words) and not measured and not (
            _COUNT_AFTER_RE.match(text, stop)) else -1
    if digits:
        # "correct horse ferry 19": the first word may be one of a sentence about passwords when the number ends it
        # (a word of four letters or more: "on audit 10" is a sentence)
        said = lower[1:] if len(words) >= 3 and digits == [words[-1]] and len(words[0]) >= 4 and (
            lower[0] not in _CLAUSE_WORDS) else lower
        if len(digits) == len(words) or any(w in _PHRASE_STOP for w in said) or any(
                _TECH_TERM_RE.fullmatch(w) or _VERSION_RE.fullmatch(w) for w in digits) or _COUNT_AFTER_RE.match(
                text, stop) or any(_UNIT_AFTER_RE.fullmatch(" " + w) for w in lower):
            return -1
        return stop
    if not announced or len(words) < 3 or not all(w.isalpha() and w.islower() for w in words):
        return -1
    return stop if not any(w in _PHRASE_STOP for w in lower[1:]) else -1


_PLAIN_TOKEN_RE = _Lazy(r"\S+")
#: the conjunctions that end a passphrase named as one: unambiguous words ("de", "i", "en" are words of phrases too)
_CONJUNCTIONS = frozenset("and but or because which that when while if unless though although und aber oder weil "
                          "denn wenn mais pero però porque och eller ama fakat но или".split())
#: a word for passphrase (or "phrase" before a word for password: "frase de contraseña")
_PHRASE_NAME_RE = _Lazy(r"(?i)phrase|wachtzin|lösenfras|losenfras|frase|tunnuslause|jelmondat|fraza|fráze")
_JOINED_PHRASE_RE = _Lazy(r"[^\W\d_A-Z]{3,}(?:-[^\W\d_A-Z]{3,}){3,7}")
#: what announces a passphrase of plain words: a sign or a copula (not "to" or a dash, which go on with a sentence)
_PHRASE_GAP_RE = _Lazy(r"(?:(?:^|\s)(?:is|was|ist|lautet|war|est|était|es|era|é|è|és|este|jest|je|on|är|var|er|is"
                       r"|είναι|это|adalah|ialah|ay|là|volt)|[:=：])[ \t]*$")


#: a passphrase of words in quotes: three to eight lower-case words (a digit or a symbol may join them)
_PASSPHRASE_RE = _Lazy(r"[a-z]{2,}(?:[ .,_-]{1,2}[a-z0-9]{2,}){2,7}[!?.#*]?")
_CLOSING = {"'": "'", '"': '"', "`": "`", "“": "”", "‘": "’"}
_ANNOUNCED_RE = _Lazy(r"(?i)(?:phrase|\bis|\bto|\bwas|=|:)[ \t]*$")
#: words of a rule or a form about passwords, not of a passphrase
_RULE_WORDS = frozenset({"characters", "chars", "letters", "digits", "symbols", "length", "long", "least", "minimum",
                         "maximum", "required", "optional", "field", "enter", "your", "invalid", "incorrect", "wrong",
                         "missing", "empty", "forgot", "reset", "must", "should", "contain", "change", "new", "old"})


def _passphrase(inner: str, before: str) -> bool:
    """``inner`` (quoted after a word for password, ``before`` the text between them) is a passphrase of words:
    announced (``passphrase …``, ``… is``, ``… to``, ``:``), three to eight lower-case words, at most one of them a
    common word, none of a password rule's or form's words (``'at least twelve characters'``)."""
    if not _PASSPHRASE_RE.fullmatch(inner) or not _ANNOUNCED_RE.search(before) or "pass" in inner:
        return False
    words = re.findall(r"[a-z]+", inner)
    return sum(w in _STOP_WORDS for w in words) <= 1 and not _RULE_WORDS.intersection(words)
_SYMBOL_JOINED_RE = _Lazy(r"[^\W\d_]+[._-][0-9]+|[0-9]+[._-][^\W\d_]+")


#: a word that says the number after it is something else than a code: a line, a port, an issue, a version …
_NOT_CODE_WORDS = frozenset({"line", "lines", "port", "status", "error", "errors", "http", "exit", "version", "issue",
                             "pr", "ticket", "build", "step", "row", "column", "col", "page", "id", "rfc", "iso",
                             "commit", "since", "until", "after", "every", "per", "expires", "valid",
                             "length", "len", "bug", "case", "test", "room", "year", "zeile", "ligne", "línea"})
_WORD_BEFORE_RE = _Lazy(r"([^\W\d_]+)[ \t#:.-]*$")


class _PinNearby(_PasswordNearby):
    """A PIN or a code told in a sentence: after "PIN" (``PIN-Code``, ``pin code``, ``ПИН-код``, ``PUK``,
    ``PIN kodu``, ``Geheimzahl``, ``code confidentiel``), a door's, an alarm's, a gate's or a safe's code or
    combination in the languages of :data:`_PASSWORD_WORDS_ANY` (``Türcode``, ``digicode``, ``código de la
    puerta``, ``kod do drzwi``, ``код домофона``), or a word for "PIN" in another script, the first number of the
    line (within 80 characters, at most 8 tokens on) of 4 to 8 digits that is not a year, maybe with a letter
    (``4821B``) or a keypad's ``#``/``*``; or a lock's combination (``31-07-44``). Lines that look like code are
    left alone (``digitalWrite(pin, 1234)``)."""

    _WORDS = _words_re(
        r"(?:m?pin|пин|puk|пук)(?:[ -]?(?:code|kod|kodu|koodi|kód|код|nummer|number|numarası|nr|no))?"
        r"|keypad|lockbox|key ?safe|key ?box"
        r"|(?:door|alarm|gate|garage|keypad|entry|access|lock|locker|safe|building|unlock|front[ -]door|intercom"
        r"|buzzer|lockbox|key[ -]?safe|key[ -]?box|padlock|voicemail)[ -]?(?:panel[ -])?(?:code|pin|combo|combination)"
        r"|passcode|keycode|combination|combo(?![ -]?box)|geheimzahl|geheimnummer|pin-?nummer|code (?:secret|confidentiel|pin)"
        r"|disarm code|port-?out pin|pinkoden|iphinikhodi"
        r"|código (?:secreto|pin)|codice (?:segreto|pin)|pincode|pinkod|pinkoodi"
        r"|(?:tür|haustür|alarm|tor|tresor|schloss|garagen|deur|poort|kluis|alarm|port|dörr|larm|ovi|hälytys)-?"
        r"(?:code|kod(?:en)?|koodi)"
        # a phone's or a device's unlock code
        r"|codice (?:di )?sblocco|code de déverrouillage|código de desbloque(?:o|io)|entsperr-?(?:code|pin)|ontgrendelcode"
        r"|kod odblokowania|upplåsningskod(?:en)?|код разблокировки"
        r"|(?:zahlen)?schloss-?kombination|kombination|combinaison|combinación|combinazione|kombinacja|kombinace"
        r"|комбинаци\w|digicode|code (?:de la porte|d'entrée|de l'alarme|du portail|du coffre(?:-fort)?|d'accès)"
        r"|código (?:del (?:portal|portón|edificio|garaje|buzón)|de (?:la puerta|la alarma|el portón|la caja fuerte"
        r"|entrada|acceso|acesso|portão|alarme|cofre)"
        r"|do (?:portão|alarme|cofre))|codice (?:del portone|della porta|dell'allarme|della cassaforte|d'accesso|del cancello|del citofono"
        r"|del garage|del lucchetto|del box)"
        r"|kod (?:do drzwi|do bramy|alarmu|do sejfu|do domofonu|dostępu|do paczkomatu|do skrytki)|szyfr do sejfu|kód (?:ke dveřím|alarmu|k trezoru)"
        r"|kapı kodu|alarm kodu|kasa şifresi|код (?:от )?(?:двери|домофона|сигнализации|сейфа|подъезда|доступа)"
        r"|κωδικός (?:πόρτας|συναγερμού|χρηματοκιβωτίου)|ajtókód|riasztókód|kaputelefon kód",
        "暗証番号|비밀번호|पिन|পিন|પિન|ਪਿੰਨ|金庫の番号|密码锁|门禁密码|도어락 비밀번호|رمز دوم|رمز اینترنتی")
    _PROSE_ONLY = True
    _NOT_AFTER = _NOT_CODE_WORDS

    def _skip_word(self, text: str, word: re.Match[str]) -> bool:
        return _glued(text, word) or super()._skip_word(text, word)

    @staticmethod
    def _takes(value: str) -> bool:
        """4 to 8 digits, not a year, with a keypad's ``#`` or ``*`` around them if typed so, or a letter before
        or after them (``4821B``); or a lock's combination (``31-07-44``)."""
        code = _KEYPAD_CODE_RE.fullmatch(value)
        if code is not None:
            return code.group(0) != code.group(1) or not _YEAR_RE.fullmatch(code.group(1))
        if _LETTER_INSIDE_RE.fullmatch(value):
            return 4 <= sum(c.isdigit() for c in value) <= 8  # a digicode with a letter inside: 47B12
        return _COMBINATION_RE.fullmatch(value) is not None

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        return (m for m in super().matches(text) if not _UNIT_AFTER_RE.match(text, m.end()))  # a PIN diode at 1550 nm


def _glued(text: str, word: re.Match[str]) -> bool:
    """A letter, a digit, ``_`` or ``-`` right before ``word`` (``спин`` is no ``пин``, ``x-pin`` a name)."""
    before = text[word.start() - 1 : word.start()]
    if before == "-" and text.startswith(("PIN", "PUK"), word.start()) and text[word.start() - 2 : word.start() - 1].isalpha():
        return False  # EC-Karten-PIN, SIM-PIN: a compound that ends in the word, in capitals
    return bool(before) and (before.isalnum() or before in "_-") and not _UNSPACED_RE.match(word.group(0)) and not (
        _UNSPACED_RE.match(before))  # 门禁卡PIN: a word of a script with no spaces before it


_KEYPAD_CODE_RE = _Lazy(r"\*?[A-Za-z]?([0-9]{4,8})[A-Za-z]?[#*]?")  # not #953105: an issue
_LETTER_INSIDE_RE = _Lazy(r"\*?[0-9]{1,6}[A-Z][0-9]{1,6}[#*]?")


class _OneTimeCode(_Scan):
    """A one-time code told in a sentence: after an SMS, verification, 2FA, MFA, OTP or TAN code's name in the
    languages of :data:`_PASSWORD_WORDS_ANY` (``Bestätigungscode``, ``code de vérification``, ``kod SMS``, ``код
    подтверждения``, ``doğrulama kodu``, ``認証コード``, ``验证码``, ``인증번호``), a number of 4 to 8 digits (or two
    groups of three) at most four words on, none of which says the number is something else (a line, a port, an
    error, an issue: ``the verification code check failed at line 1234``). ``TAN`` counts in capitals only."""

    _WORDS = _words_re(
        r"(?:sms|text|verification|verify|confirmation|security|login|log-?in|sign-?in|auth"
        r"|authentication|authenticator|2fa|mfa|otp|totp|one[- ]time|2-step|two[- ]factor|backup|app|email|e-mail)"
        r"[ -]?(?:code|token|pin)|otp|totp|(?:m|sms-?|push|chip|photo)?tan(?=[ :])|einmal(?:code|passwort)"
        r"|bestätigungscode|verifizierungscode|sicherheitscode|anmeldecode|freischaltcode|sms-code"
        r"|code (?:de (?:vérification|confirmation|sécurité|connexion|validation)|sms|otp|à usage unique|reçu par sms)"
        r"|código (?:de (?:verificación|verificação|confirmación|confirmação|seguridad|segurança)|sms|otp"
        r"|d[oe]l? token)|code du jeton|token-?code"
        r"|codice (?:di (?:verifica|conferma|sicurezza)|sms|otp)|kod (?:weryfikacyjny|sms|potwierdzający|jednorazowy)"
        r"|ověřovací kód|potvrzovací kód|overovací kód|ellenőrző kód|megerősítő kód|biztonsági kód|sms kód"
        r"|код (?:подтверждения|из смс|из sms|верификации)|смс-код|sms-код|одноразовый код|код з смс"
        r"|код підтвердження|kod (?:blik|iz sms)|blik|nambari ya uthibitisho|code taeid|kode otp"
        r"|yanzheng ?ma|injeung ?beonho|ninsho ?kodo"  # 验证码, 인증번호, 認証コード in Latin letters
        r"|doğrulama kodu|onay kodu|güvenlik kodu|sms kodu|tek kullanımlık (?:kod|şifre)"
        r"|verificatiecode|bevestigingscode|inlogcode|verifieringskod|bekräftelsekod|engångskod|säkerhetskod"
        r"|bekræftelseskode|engangskode|sikkerhedskode|bekreftelseskode|vahvistuskoodi|tunnistuskoodi"
        r"|kertakäyttökoodi|kode (?:verifikasi|otp|keamanan)|mã (?:xác (?:minh|nhận|thực)|otp)"
        r"|κωδικός (?:επαλήθευσης|επιβεβαίωσης)",
        r"認証コード|確認コード|ワンタイムパスワード|验证码|驗證碼|动态码|校验码|인증\s?번호|인증\s?코드|확인\s?코드"
        r"|सत्यापन कोड|ओटीपी|رمز التحقق|کد تایید|کد تأیید|קוד אימות|รหัส otp|รหัสยืนยัน")
    _TOKEN = _Lazy(r"[^\s，。、！？：；「」（）\"'`|]+")
    _NOT_CODES = _NOT_CODE_WORDS

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        scanned = 0
        for word in self._WORDS.finditer(_ascii_lower(text)):
            if word.start() < scanned or _glued(text, word):
                continue
            if word.group(0).endswith("tan") and not text[word.start() : word.end()].endswith("TAN"):
                continue  # tan(x), a colour
            end = text.find("\n", word.end(), word.end() + 80)
            end = min(len(text), word.end() + 80) if end < 0 else end
            nl = text.rfind("\n", max(0, word.start() - 200), word.start())
            scanned = word.end()
            if _code_between(text, nl + 1 if nl >= 0 else max(0, word.start() - 200), end):
                continue
            tokens = list(itertools.islice(self._TOKEN.finditer(text, word.end(), end), 6))
            for k, token in enumerate(tokens):
                raw = token.group(0)
                value = raw.strip(_PasswordNearby._WRAP)
                if _UNSPACED_RE.search(value) and (glued := _GLUED_DIGITS_RE.fullmatch(value)):
                    value = glued.group(1)  # 인증번호는 539204입니다: the digits between a particle and a copula
                if value.isdigit() and value.isascii():
                    a = token.start() + raw.index(value)
                    if 4 <= len(value) <= 8:
                        b = a + len(value)
                    elif len(value) == 3 and k + 1 < len(tokens) and _THREE_DIGITS_RE.fullmatch(
                            tokens[k + 1].group(0).rstrip(".,;!?)")) and text[a + 3] in " -":
                        b = tokens[k + 1].start() + 3  # 123 456, as an app shows it
                    else:
                        break
                    if text[a - 1] in "#.:/-" and not text[a - 2 : a].endswith((": ", ":")) or (
                            len(value) == 4 and _YEAR_RE.fullmatch(value)) or _UNIT_AFTER_RE.match(text, b):
                        break
                    if k > 4 or any(t.group(0).strip(_PasswordNearby._WRAP).lower() in self._NOT_CODES
                                    for t in tokens[:k]):
                        break
                    m = _SPAN_RE.match(text, a, b)
                    if m is not None:
                        yield m
                        scanned = b
                    break


class _CodeBySms(_Scan):
    """A one-time code told without its name: a number of 4 to 8 digits (not a year, not a quantity) within 40
    characters after a word for a code (code, kod, код, кодом, código, codice, OTP), on a line that speaks of a text
    message or a phone within 60 characters of it (SMS, смс, text, mobile, WhatsApp, telefon…): "it's asking for a
    code, I just got 482913 by sms", "J'ai reçu le code 739205 par SMS", "смска с кодом 656893", "el code 176198
    wasalni 3al mobile". A code named for something else before it (an error's, a zip code, a promo code) is not
    one; nor is a line of code."""

    _NUMBER = _Lazy(r"(?<![\w.,:/#-])([0-9]{4,8})(?![\w/-]|[.,:][0-9])")
    #: (word lists run over the lower-cased text from their first letters; that no letter precedes is checked after)
    _CODE = _words_re(r"codes?|kod\w{0,3}|код\w{0,3}|c[óo]digo|codice|otp", tail=r"(?![^\W\d_])")
    _CONTEXT = _words_re(r"sms\w{0,3}|смс\w{0,3}|смск\w{0,2}|text(?:ed)?|texto|mobile?|móvil|celular|whatsapp"
                         r"|telefon\w{0,2}|телефон\w{0,2}|handy", tail=r"(?![^\W\d_])")
    _SUFFIXES: _Lazy | None = None  # the last parts of compounds, with any letters before them
    _NOT_BEFORE = _NOT_CODE_WORDS | {"zip", "postal", "post", "area", "country", "promo", "coupon", "discount",
                                     "voucher", "product", "source", "return", "response", "qr", "bar", "dial", "review",
                                     "sample", "snippet", "example", "style", "block", "coverage", "base"}
    _COUNTED = _Lazy(r"(?i)[ \t]+(?:lines?|rows?|times|users?|files?|items?|words?|errors?|tests?|pages?|chars?"
                     r"|characters|steps?|seconds?|minutes?|hours?|days?|weeks?|months?|years?)(?![^\W\d_])")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        # each list read once over the text (a number's window is then two bisections: linear in a long text)
        lower = text.lower()
        if len(lower) != len(text):
            lower = _ascii_lower(text)
        codes = [c for c in self._CODE.finditer(lower) if not c.start() or not text[c.start() - 1].isalpha()]
        if not codes:
            return
        code_ends = [c.end() for c in codes]
        places = [c.start() for c in self._CONTEXT.finditer(lower) if not c.start() or not text[c.start() - 1].isalpha()]
        if self._SUFFIXES is not None:
            places = sorted(places + [c.start() for c in self._SUFFIXES.finditer(lower)])
        if not places:
            return
        for m in self._NUMBER.finditer(text):
            a, b = m.span(1)
            if len(m.group(1)) == 4 and _YEAR_RE.fullmatch(m.group(1)) or _UNIT_AFTER_RE.match(text, b) or (
                    self._COUNTED.match(text, b)):
                continue
            nl = text.rfind("\n", max(0, a - 60), a)
            lo = nl + 1 if nl >= 0 else max(0, a - 60)
            nl = text.find("\n", b, b + 60)
            hi = nl if nl >= 0 else min(len(text), b + 60)
            i = bisect.bisect_right(code_ends, a) - 1  # the nearest code word before the number
            code = codes[i] if i >= 0 and codes[i].start() >= max(lo, a - 40) else None
            j = bisect.bisect_left(places, lo)
            if code is None or j == len(places) or places[j] >= hi or _code_between(text, lo, hi):
                continue
            before = _WORD_BEFORE_RE.search(text, max(0, code.start() - 24), code.start())
            if before is not None and before.group(1).lower().rstrip("s") in self._NOT_BEFORE:
                continue
            between = text[code.end() : a].split()
            if len(between) > 6 or any(any(c.isdigit() for c in w) or w.strip(",.:;").lower() in self._NOT_BEFORE
                                       for w in between):
                continue  # "the code review link for PR 4412", "code 2024 or 3001"
            span = _SPAN_RE.match(text, a, b)
            if span is not None:
                yield span


class _AccessCode(_CodeBySms):
    """A door's, a gate's, a safe's or a locker's code told with the place in other words: a number of 4 to 8
    digits within 40 characters after a word for a code, on a line that names such a place within 60 characters
    ("Schlüsselsafe am Ferienhaus: Code 3719", "Koden til cykelkælderen er 5831", "el código del trastero es
    4471")."""

    _CONTEXT = _words_re(
        r"doors?|gates?|garage|alarm\w{0,3}|safe|lockbox|key ?(?:safe|box)|keypad|locker|padlock"
        r"|intercom|buzzer|basement|storage|bike ?(?:room|shed)|mailbox|parcel ?locker|entrance|lobby"
        r"|porte|portail|digicode|interphone|coffre|cave|casier|local|puerta|port[óo]n|portal|garaje|alarma"
        r"|caja fuerte|buz[óo]n|taquilla|trastero|porta|portone|cancello|allarme|cassaforte|citofono|cantina"
        r"|armadietto|deur|poort|kluis|sleutelkast\w{0,2}|berging|fietsenstalling|drzwi|brama|bramy|gara[żz]\w{0,2}"
        r"|sejf\w{0,2}|domofon\w{0,2}|paczkomat\w{0,2}|skrytk\w{0,2}|piwnic\w{0,2}|d[øo]r(?:en)?|porten"
        r"|n[øo]gleboks\w{0,2}|d[öo]rr(?:en)?|larm(?:et)?|kassask[åa]p|nyckelsk[åa]p"
        r"|cykelrum|дверь?\w{0,2}|домофон\w{0,2}|ворот\w{0,2}|гараж\w{0,2}|сейф\w{0,2}|подъезд\w{0,2}"
        r"|ячейк\w{0,2}|постамат\w{0,2}|port[ãa]o|garagem|cofre|arm[áa]rio", tail=r"(?![^\W\d_])")
    # the last part of a compound ("Schlüsselsafe", "Haustür", "cykelkælderen")
    _SUFFIXES = _words_re(r"tür|tresor|safe|kasten|schließfach|keller|briefkasten|eingang|k[æa]lder",
                          tail=r"(?:en|e|n)?(?![^\W\d_])")


class _Dictated(_Scan):
    """A password spelled out as said to a voice assistant, after a word for password on its line (at most 60
    characters before it): words joined by the names of their separators, two or more ("purple dash monkey dash
    forty two", "soleil tiret levant tiret quatre-vingt-neuf", "tulp streepje molen streepje zeventien"), to the
    end of the last word and of a second one after it that is no word of the sentence ("all lowercase", "tout en
    minuscules")."""

    _SEPARATORS = ("dash", "hyphen", "minus", "underscore", "dot", "period", "slash", "at sign", "hash", "tiret",
                   "trait d'union", "tiret bas", "point", "arobase", "streepje", "liggend streepje", "punt",
                   "apenstaartje", "bindestrich", "strich", "unterstrich", "punkt", "guion", "guión", "guion bajo",
                   "punto", "trattino", "myślnik", "kropka", "podkreślenie", "тире", "дефис", "точка", "traço",
                   "hífen", "ponto", "underline", "bindestreck", "bindestrek", "viiva")
    _WORD = r"(?:[^\W\d_]+(?:-[^\W\d_]+)*|\d+)"
    _RUN = _Lazy(rf"(?i)(?<![^\W\d_]){_WORD}(?:[ \t]+(?:{'|'.join(sorted(_SEPARATORS, key=len, reverse=True))})"
                 rf"[ \t]+{_WORD}){{2,12}}(?:[ \t]+{_WORD})?(?![^\W\d_])")
    _ENDS = frozenset("all tout alles todo toda tutto in en and et und y e i och og и lowercase uppercase caps small "
                      "capital capitals minuscules majuscules kleine grote letters please pls".split())

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        lower = _ascii_lower(text)
        for m in self._RUN.finditer(text):
            line = text.rfind("\n", 0, m.start()) + 1
            if _PASSWORD_WORDS_RE.search(lower, max(line, m.start() - 60), m.start()) is None:
                continue
            end = m.end()
            last = text[text.rfind(" ", m.start(), end) + 1 : end]
            if last.lower() in self._ENDS:  # the run's optional last word goes on with the sentence
                end = text.rfind(" ", m.start(), end)
            span = _SPAN_RE.match(text, m.start(), end)
            if span is not None:
                yield span


# -- secrets only the context marks: typed at a shell by mistake, "same as last time", a prompt, an answer ------------
class _TypedAtShell(_Scan):
    """A password typed at a shell by mistake (a sudo prompt that had timed out): the shell's "command not found"
    (bash, zsh, fish, sh, cmd.exe's "is not recognized as an internal or external command", PowerShell's "The term
    '…' is not recognized") for a token that looks like a password rather than a command name
    (:func:`_typed_secret`: ``Pelikan_1987``, ``Kx9#mQ2p``; not ``gti``, ``pyhton`` or ``python3.11``), masked there
    and on the prompt line above that typed it (``$ …``)."""

    _ERROR = _Lazy(
        r"(?m)^[ \t]*(?:-?(?:ba|z|k|da|tc|c|a)?sh(?:\.exe)?:[ \t]+(?:line[ \t]+[0-9]+:[ \t]+|[0-9]+:[ \t]+)?)?"
        r"(?:command not found:[ \t]+(\S+)|([^\s:'\"]+):[ \t]+(?:command )?not found)[ \t]*$"
        r"|'([^'\n]{1,80})' is not recognized as an internal or external command"
        r"|The term '([^'\n]{1,80})' is not recognized as (?:the )?name of a cmdlet"
        r"|(?m:^[ \t]*fish: Unknown command:?[ \t]+'?([^\s']+)'?[ \t]*$)"
        r"|Command '([^'\n]{1,80})' not found")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        last = 0
        for error in self._ERROR.finditer(text):
            group = next(g for g in range(1, 7) if error.group(g) is not None)
            token = error.group(group)
            if not _typed_secret(token):
                continue
            above = text.rfind("\n", 0, max(0, text.rfind("\n", 0, error.start())))
            typed = re.compile(r"(?m)^[^\n]{0,80}?(?:[$#%>❯»]|PS [^>\n]{0,80}>)[ \t]*(" + re.escape(token)
                               + r")[ \t]*$").search(text, max(last, text.rfind("\n", 0, max(0, above)) + 1),
                                                     error.start())
            shown = _SPAN_RE.match(text, typed.start(1), typed.end(1)) if typed is not None else None
            if shown is not None:
                yield shown
            m = _SPAN_RE.match(text, error.start(group), error.end(group))
            if m is not None:
                yield m
                last = m.end()


def _typed_secret(token: str) -> bool:
    """A token a shell could not run that looks like a password, not a command or a typo of one: letters and
    digits with a sign inside (``Orion$belt3``), a word joined to four or more digits (``Marcello_1990``,
    ``biscuit2015``), or both cases scrambled (:func:`_scrambled`) or random."""
    if not 6 <= len(token) <= 64 or token[0] in "-./~$" or any(c in token for c in "/=\\") or token.startswith(_MARK):
        return False
    lower, upper, digits, _ = _char_kinds(token)
    if not digits or not (lower or upper) or _VERSION_RE.fullmatch(token) or _TECH_TERM_RE.fullmatch(token):
        return False
    if any(c in token[1:] for c in "!@#$%^&*?~+"):
        return True
    if _WORD_YEAR_RE.fullmatch(token):
        return True
    return upper and lower and (_scrambled(token) or _fragments([token]) >= 3 or _looks_random(token)
                                and not _identifier_like(token))


_WORD_YEAR_RE = _Lazy(r"[A-Za-z]{3,}[._-]?[0-9]{4,8}|[0-9]{4,8}[._-]?[A-Za-z]{3,}")


class _ToldByContext(_Scan):
    """A secret the words around it mark, with no name before it: "(use the) same (password) as last time (…)" and
    its forms in other languages, "what I typed at the sudo prompt was …" / "I entered … at the password prompt",
    the answer to a security question ("the answer to my security question is …", "Sicherheitsfrage … Antwort:
    …"). The value is read after the words (:meth:`_value_at`): quoted words, several words to the end of the
    sentence (a passphrase, a name), or one token; a weak one (lower case and digits) only when a word for password
    is near."""

    def __init__(self, words: _Lazy, before: _Lazy | None = None, answer: bool = False, secret: bool = False) -> None:
        self.words, self.before, self.answer = words, before, answer
        self.secret = secret or answer  # the words say a secret follows (a password prompt, a question's answer)

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        lower = _ascii_lower(text)
        last = 0
        if self.before is not None:  # "typed <value> at the sudo prompt": the value inside the words
            for m in self.before.finditer(text):
                if m.start(1) >= last and self._takes(text, m.start(1), m.group(1), phrase=True):
                    yield m
                    last = m.end(1)
        for said in self.words.finditer(lower):
            if said.end() < last:
                continue
            end = text.find("\n", said.end(), said.end() + 200)
            end = min(len(text), said.end() + 200) if end < 0 else end
            m = self._value_at(text, said.end(), end, said.start())
            if m is not None:
                yield m
                last = m.end()

    def _value_at(self, text: str, a: int, end: int, said: int) -> re.Match[str] | None:
        lead = _LEAD_RE.match(text, a, end)
        a = lead.end() if lead is not None else a
        if a >= end:
            return None
        if text[a] in _CLOSING:
            close = text.find(_CLOSING[text[a]], a + 1, end)
            inner = text[a + 1 : close] if close > 0 else ""
            if inner and len(inner.split()) <= 8 and not inner.startswith(_MARK) and (
                    len(inner.split()) > 1 or self._takes(text, said, inner)):
                return _SPAN_RE.match(text, a + 1, close)
            return None
        if text[a - 1] == "(":
            close = text.find(")", a, end)
            end = close if close > 0 else end
        phrase = _spoken_phrase(text, a, end, announced=True) if not self.answer else _answer_end(text, a, end)
        if phrase > 0 and (self.secret or self._password_near(text, said)):
            return _SPAN_RE.match(text, a, phrase)
        token = _PLAIN_TOKEN_RE.match(text, a, end)
        if token is None:
            return None
        value = _PasswordNearby._value(token.group(0))
        if value and self._takes(text, said, value):
            start = a + token.group(0).index(value)
            return _SPAN_RE.match(text, start, start + len(value))
        return None

    def _takes(self, text: str, said: int, value: str, phrase: bool = False) -> bool:
        if phrase and " " in value.strip("\"'"):
            words = value.strip("\"'").split()
            return len(words) <= 8 and not any(w.lower() in _PHRASE_STOP for w in words)
        value = value.strip("\"'")
        if _password_like(value) and (any(c in value for c in "!@#$%^&*?~+=") or _scrambled(value)):
            return True
        if self.answer and _ANSWER_WORD_RE.fullmatch(value) and (value[0].isupper() or any(c.isdigit() for c in value)):
            return value.lower() not in _PHRASE_STOP
        if not (_told(value) or _password_like(value)) or value.isdigit() and not self.secret and not (
                _PIN_NEAR_RE.search(text, max(0, said - 200), said + 80)):
            return False
        return self.secret or self._password_near(text, said)

    @staticmethod
    def _password_near(text: str, said: int) -> bool:
        """A word for password within 200 characters before the words or 80 after them."""
        return _PASSWORD_WORDS_RE.search(_ascii_lower(text), max(0, said - 200), said + 80) is not None or (
            _PASSWORD_NEAR_RE.search(text, max(0, said - 200), said + 80) is not None)


#: what joins the words to the value: a colon, a dash, "which is", "i.e.", an opening parenthesis
_LEAD_RE = _Lazy(r"(?i)[ \t]*(?:[:=—–→-]|,?[ \t]*(?:i\.e\.|namely|which (?:is|was)|aka|das heißt|c'est-à-dire|o sea)"
                 r"|\(|,)?[ \t]*(?:\((?:i\.e\.|namely)?[ \t]*)?")
_ANSWER_WORD_RE = _Lazy(r"[^\W\d_][^\W_'’-]{2,30}")
_PIN_NEAR_RE = _Lazy(r"(?i)\bpin\b|passcode|\bcode\b|combination")
_PASSWORD_NEAR_RE = _Lazy(r"(?i)\bpw\b|\bpass\b|\blogin\b|credential|sudo|\bpin\b")
_SAME_RE = _Lazy(
    r"\bsame(?:[ \t]+(?:one|password|passphrase|pin|pw|login|thing|code))?[ \t]+(?:as|like)[ \t]+(?:last[ \t]+time"
    r"|before|usual|always|yesterday|(?:the|my)[ \t]+(?:last|old|other|previous|usual)[ \t]+(?:one|time|box|server"
    r"|laptop|account|machine))\b[ \t]*")
_SAME_OTHER_RE = _Lazy(
    r"(?:wie (?:letztes|beim letzten) mal|que la dernière fois|que d'habitude|que la última vez|que siempre|de sempre"
    r"|que da última vez|dell'ultima volta|di sempre|co ostatnio|как в прошлый раз|как обычно|как раньше"
    r"|mint legutóbb|geçen seferki|aynısı|前回と同じ|和上次一样|跟上次一样|지난번과 같은)(?!\w)[ \t]*")
_PROMPT_WORDS = (r"(?:sudo|password|passphrase|passwd|login|pin|ssh|gpg|pinentry|keychain|unlock|auth\w*|kinit|su"
                 r"|vault|keyring|decryption|bitlocker|luks|encryption|mysql|psql)[ -]prompt")
_PROMPT_RE = _Lazy(
    r"\b(?:typed|entered|put in|used|gave it|answered|wrote)\b[^\n]{0,40}?\b(?:at|in|into|on|to|for)[ \t]+"
    r"(?:the|a|my)?[ \t]*(?:[\w-]+[ \t]+){0,2}?" + _PROMPT_WORDS + r"\b[^\n:]{0,24}?"
    r"(?:[ \t]+(?:was|is)\b[ \t]*:?|[ \t]*[:=—–-])"
    r"|\b(?:at|in|on)[ \t]+the[ \t]+(?:[\w-]+[ \t]+)?" + _PROMPT_WORDS + r"[ \t]*,?[ \t]*i[ \t]+(?:typed|entered"
    r"|put in|used)\b")
_PROMPT_BEFORE_RE = _Lazy(
    r"(?i)\b(?:typed|entered)[ \t]+(\"[^\"\n]{1,100}\"|'[^'\n]{1,100}'|[^\s\"']{4,128})[ \t]+(?:at|in|into|on)[ \t]+"
    r"(?:the[ \t]+)?(?:[\w-]+[ \t]+)?" + _PROMPT_WORDS)
_QUESTION_RE = _Lazy(
    r"(?:security|secret)[ \t]+(?:question|answer)s?|memorable[ \t]+(?:word|information|phrase|place|date)"
    r"|mother'?s[ \t]+maiden[ \t]+name|maiden[ \t]+name|sicherheitsfrage|geheimfrage"
    r"|question[ \t]+(?:secrète|de[ \t]+sécurité)|pregunta[ \t]+(?:de[ \t]+seguridad|secreta)"
    r"|pergunta[ \t]+(?:de[ \t]+segurança|secreta)|domanda[ \t]+(?:di[ \t]+sicurezza|segreta)"
    r"|pytanie[ \t]+bezpieczeństwa|kontrolní[ \t]+otázk\w*|bezpečnostní[ \t]+otázk\w*"
    r"|контрольн\w*[ \t]+вопрос\w*|секретн\w*[ \t]+вопрос\w*|güvenlik[ \t]+sorusu|秘密の質問|安全问题"
    r"|密保问题|보안[ \t]?질문|säkerhetsfråga|sikkerhedsspørgsmål|sikkerhetsspørsmål|biztonsági[ \t]+kérdés\w*")
_ANSWER_IS_RE = _Lazy(
    r"(?i)(?:answer|antwort|réponse|respuesta|resposta|risposta|antwoord|odpowiedź|odpověď|ответ|cevab?\w*|yanıt\w*"
    r"|答え|答案|답|svar\w*|vastaus|válasz\w*|maiden name|pet'?s? name|memorable word|security answer)\b[^\n.?!]{0,60}?"
    r"(?:[ \t]+(?:is|was|ist|lautet|war|est|es|é|è|je|jest|är|er|—)\b|[ \t]*[:=—–]|は|是)"
    # the question in parentheses, then a colon ("question secrète (nom de mon premier animal) : …"); "I put …"
    r"|\)[ \t]*[:=]|\bI[ \t]+(?:put|used|wrote|entered|gave|chose|typed)\b"
    r"|\b(?:answer|antwort|réponse|respuesta|resposta|risposta|cevap|ответ|odpowiedź|maiden name)"
    r"(?=[ \t]+(?-i:[A-ZÀ-ÖØ-ÞА-Я]))")


class _SecurityAnswer(_ToldByContext):
    """The answer to a security question: the words a question's answer is told with ("answer … is", "Antwort:",
    "réponse :") within the question's line, then the answer (:func:`_answer_end`)."""

    def __init__(self) -> None:
        super().__init__(_QUESTION_RE, answer=True)

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        last = 0
        for question in self.words.finditer(_ascii_lower(text)):
            if question.start() < last:
                continue
            nl = text.rfind("\n", max(0, question.start() - 120), question.start())
            start = nl + 1 if nl >= 0 else max(0, question.start() - 120)
            end = text.find("\n", question.end(), question.end() + 200)
            end = min(len(text), question.end() + 200) if end < 0 else end
            said = _ANSWER_IS_RE.search(text, max(start, last), end)
            if said is None and end < len(text):  # "Security question: …?\nAnswer: …"
                more = text.find("\n", end + 1, end + 200)
                end = min(len(text), end + 200) if more < 0 else more
                said = _ANSWER_IS_RE.search(text, max(start, last), end)
            if said is None:
                continue
            m = self._value_at(text, said.end(), end, question.start())
            if m is not None:
                yield m
                last = m.end()


def _answer_end(text: str, a: int, end: int) -> int:
    """The end of an answer of two to six words told at ``a`` ("Saint Brendan Primary", "Holy Cross 1998"), read to
    the end of its sentence or a conjunction, with a capital or a digit (a name, a place, a date) and no word of a
    sentence about answers in lower case ("is stored hashed", "often public", "the name of my first pet"); or -1."""
    words: list[str] = []
    stop = a
    for m in _PLAIN_TOKEN_RE.finditer(text, a, end):
        core = m.group(0).rstrip(".,;:!?)”’\"'")
        if words and _LATIN_OR_DIGIT_RE.search(words[0]) and not _LATIN_OR_DIGIT_RE.search(core):
            break  # "パスワードは abc123 を使う": the sentence goes on in its own script
        if core.lower() in _CLAUSE_WORDS or not _PHRASE_WORD_RE.fullmatch(core):
            break
        words.append(core)
        stop = m.start() + len(core)
        if len(words) > 6:
            return -1
        if core != m.group(0):
            break
    if len(words) < 2 or any(w in _PHRASE_STOP for w in words) or words[0].lower() in _PHRASE_STOP:
        return -1
    named = any(w[0].isupper() or any(c.isdigit() for c in w) for w in words)  # a name, a place, a date
    return stop if named else -1


_THREE_DIGITS_RE = _Lazy(r"[0-9]{3}")
_GLUED_DIGITS_RE = _Lazy(r"[^\x00-\x7f]{0,3}\[?([0-9]{4,8})\]?[^\x00-\x7f]{0,6}")  # [700510]를: in brackets too
#: a one-time code given to a command: aws sts … --token-code 123456, op signin --otp, --mfa-code
_OTP_FLAG_RE = _Lazy(r"-(?<![\w-]-)-?(?:token-code|otp(?:-code|-token)?|totp(?:-code)?|mfa(?:-code|-token|-otp)?"
                     r"|2fa(?:-code)?|verification-code)"
                     r"(?:=|[ \t]+)[\"']?(?!\[REDACTED)([0-9]{6,8})(?![\w])")
#: an SMS's own wording, the code first: "482913 is your verification code", "G-482913 est votre code"
_CODE_FIRST_RE = _Lazy(r"([0-9](?:(?<=[A-Z]-[0-9])|(?<![\w-][0-9]))[0-9]{3,7})[ \t]+(?i:is[ \t]+your|est[ \t]+votre|é[ \t]+(?:o[ \t]+)?seu"
                       r"|è[ \t]+il[ \t]+tuo)\b[^\n.]{0,40}?(?i:code|kod|código|codice|otp|tan(?=[ :])|pin|passcode)\b")


_YEAR_RE = _Lazy(r"(?:19|20)[0-9]{2}")
_COMBINATION_RE = _Lazy(r"[0-9]{1,3}(?:[-–][0-9]{1,3}){2,3}")
_UNIT_AFTER_RE = _Lazy(r"(?i)[ \t]*(?:[%°µ×x]|(?:[nmck]?m|m?[gl]|[kmg]?hz|[km]?[vaw]|[mnµ]?s|min|h|px|pt|rpm|bp|[kmgt]i?b|"
                       r"ohms?|times|years?|days?|hours?|bytes?|bits?|octets?)(?!\w))")
_SPAN_RE = _Lazy(r"(?s)(.+)")
_ARTICLE_RE = _Lazy(r"(?i)(?:^|[\s(\"'])(?:il|l|el|al)-$")  # Maltese, Arabic-script transliterations: il-password
_SNAKE_RE = _Lazy(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # x509_ptr: a name in code
_CODE_CHARS_RE = _Lazy(r"[(){}\[\]=;<>$%]")


class _TokenNearby(_PasswordNearby):
    """A token or a key told in a sentence in any language: after "token", "key", "secret" or a word for "key" or
    "token" (``clé API``, ``API anahtarı``, ``gizli anahtar``, ``chiave API``, ``klucz API``, ``API-Schlüssel``,
    ``APIキー``, ``API密钥``, ``API 키``, ``ключ API``), the first token of the line that is random (16+ characters,
    a digit, no words; mixed case, or 24+ characters, or groups of capitals and digits: ``KD82HSQW-M3P9XZTA-…``).
    A key said to be public (``clé publique``, ``öffentlicher Schlüssel``) is left alone."""

    _WORDS = _words_re(
        r"tokens?|keys?|secrets?|api[ _-]?key|credentials?|clés?|clef|anahtar\w{0,3}|chiav[ei]|klucz\w{0,2}"
        r"|schlüssel\w{0,2}|sleutel\w{0,2}|nyckel\w{0,2}|nøgle\w{0,2}|nøkkel\w{0,3}|avain\w{0,3}"
        r"|kulcs\w{0,3}|klíč\w{0,2}|kľúč\w{0,2}|ključ\w{0,2}|кључ\w{0,2}|ключ\w{0,2}|clave|chave|cheia|cheie"
        r"|atslēga|võti|κλειδ\w{0,2}|токен\w{0,2}|jetons?|belirteç\w{0,3}",
        "キー|トークン|密钥|秘钥|金鑰|密鑰|令牌|키|토큰|مفتاح|کلید|מפתח|कुंजी")
    _PUBLIC_AFTER = _Lazy(r"(?i)[ \t]+(?:publi(?:que|ca|c|czn\w*)|pubblic\w|öffentlich\w*|открыт\w*|публичн\w*"
                          r"|veřejn\w*|nyilvános|açık|genel|公開)")
    _PUBLIC_BEFORE = _Lazy(r"(?i)(?:öffentliche[rnms]?|openbare|offentlig[ae]?|julkinen|открытый|публичный|公開)[ \t-]*$")
    _PROSE_ONLY = True

    def _skip_word(self, text: str, word: re.Match[str]) -> bool:
        a = word.start()
        if a and text[a - 1].isalpha() and word.group(0).startswith("schlüssel"):
            return False  # Zugangsschlüssel: a German compound
        return super()._skip_word(text, word)

    def _skip_said(self, text: str, word: re.Match[str]) -> bool:
        return self._PUBLIC_AFTER.match(text, word.end()) is not None or (
            self._PUBLIC_BEFORE.search(text, max(0, word.start() - 16), word.start()) is not None)

    @staticmethod
    def _takes(value: str) -> bool:
        if len(value) < 16:
            return False
        lower, upper, digits, _ = _char_kinds(value)
        grouped = _GROUPED_KEY_RE.fullmatch(value) is not None and not _HEX_RE.fullmatch(value.replace("-", ""))
        return (digits and (upper and lower or len(value) >= 24 or grouped) and _looks_random(value)
                and value.split(":", 1)[0].lower() not in _HASH_TAGS
                and not _identifier_like(value) and "://" not in value and not _stands_in(value)
                and not _FILE_NAME_RE.search(value) and not value.startswith(_MARK)
                and not _FINGERPRINT_RE.fullmatch(value) and not _public_or_sample(value))


#: a key's id or fingerprint as gpg, ssh-keygen and key servers print it (upper-case hex): public, not a secret
_FINGERPRINT_RE = _Lazy(r"(?:0x)?(?:[0-9A-F]{16}|[0-9A-F]{40}|[0-9A-F]{64})")


_GROUPED_KEY_RE = _Lazy(r"[A-Z0-9]{4,8}(?:-[A-Z0-9]{4,8}){1,7}")
#: the token rule's anchors: an ASCII anchor costs every text a substring test (~1.7 us on 2 KB), so words of
#: languages most often written with their own letters (clé, schlüssel, nøgle, klíč) are found by those letters
_TOKEN_WORDS = ("token", "key", "secret", "credential", "clé", "clef", "anahtar", "chiav", "klucz", "schlüssel",
                "sleutel", "nyckel", "nøgle", "nøkkel", "avain", "kulcs", "klíč", "kľúč", "ključ", "кључ", "ключ",
                "clave", "chave", "chei", "atslēg", "võti", "κλειδ", "токен", "jeton", "belirteç", "キー", "密钥",
                "秘钥", "金鑰", "密鑰", "키", "مفتاح", "کلید", "מפתח", "कुंजी", "トークン", "令牌", "토큰")


_ALGORITHM_RE = _Lazy(r"(?i)(?:argon2(?:id|i|d)?|bcrypt|scrypt|pbkdf2(?:-sha\d+)?|sha-?\d+|md5|aes-?\d+(?:-[a-z]+)?|rsa-?\d+"
                      r"|ed25519|x25519|chacha20(?:-poly1305)?|blake[23]b?|hmac-sha\d+|tls1?\.?\d|utf-?\d+)"
                      r"(?:-(?:hash|hashes|hashwert|digest|key|schlüssel|clé|cipher|verschlüsselung))?[.,;:]?")


def _password_like(value: str) -> bool:
    if not 8 <= len(value) <= 128 or _UUID_SHAPE_RE.fullmatch(value) or value.lower().startswith("1password"):
        return False  # (a UUID is an id)
    lower, upper, digits, other = _char_kinds(value)
    if not digits or not (upper and lower or other) or value.startswith(_MARK):
        return False
    if value.startswith("-") or "://" in value or "@" in value and "." in value.rsplit("@", 1)[-1]:
        return False  # a flag, a URL, an e-mail
    if _VERSION_RE.fullmatch(value) or _FILE_NAME_RE.search(value) or _PATH_VALUE_RE.fullmatch(value):
        return False
    if _CODE_PATH_RE.fullmatch(value) and not _looks_random(value) or _CODE_VALUE_RE.match(value) or _stands_in(value):
        return False
    if re.fullmatch(r"[0-9:/.-]+[A-Za-z]{0,3}|[0-9]{1,2}[A-Z][a-z]+", value) or _ALGORITHM_RE.fullmatch(value):
        return False  # 2026-11-23, 24h, 10:30, 1Password, Argon2id, SHA-256
    if set(c for c in value if not c.isalnum()) <= set("-_./:=") and not (upper and lower) and all(
            _WORDLIKE_RE.fullmatch(p) for p in re.split(r"[^A-Za-z0-9]+", value) if p):
        return False  # scram-sha-256, AES-256-GCM, max-age=3600: words and numbers in one case
    return True


class _SecretCall(_Scan):
    """A call named for a secret, with the secret as a literal among its arguments (at any depth):
    ``setPassword("…")``, ``basic_auth("admin", Some("…"))``, ``Credentials.basic("u", "…")``,
    ``smtp.PlainAuth("", "alerts@x.io", "…", host)``, ``fromPassword('admin', SecretValue.unsafePlainText('…'))``.
    A literal is taken when it looks like a password or a random token; a getter (``getPassword("name")``) is
    skipped. Each call's arguments are read once (at most 600 characters)."""

    _CALLEE = _Lazy(r"(?:[Pp]assword|PASSWORD|[Ss]ecret|[Tt]oken|[Aa]uth|[Bb]asic|[Cc]redentials?|[Pp]lain[Tt]ext"
                    r"|[Pp]assphrase|crypt|Key|_pw_|[a-z]Pw(?=[A-Z(]))[A-Za-z0-9_]{0,40}\s*\(")
    _PASSWORD_CALLEE = _Lazy(r"(?i)pass|pw")
    _NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:")
    _LITERAL = _Lazy(r"([\"'])((?:(?!\1)[^\n\\]|\\.){0,300})\1")
    _GETTERS = ("get", "read", "fetch", "load", "find", "lookup", "has", "delete", "remove", "describe", "list", "is")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        read_to = 0
        for call in self._CALLEE.finditer(text):
            if call.end() <= read_to:
                continue
            start = call.start()
            while start > max(0, call.start() - 200) and text[start - 1] in self._NAME_CHARS:
                start -= 1
            last = re.split(r"[.:]", text[start : call.end() - 1].rstrip())[-1]
            if _components(last)[:1] and _components(last)[0] in self._GETTERS:
                continue
            i, depth, end = call.end(), 0, min(len(text), call.end() + 600)
            found: list[re.Match[str]] = []
            while i < end:
                c = text[i]
                if c in "\"'":
                    lit = self._LITERAL.match(text, i, end)
                    if lit is None:
                        break
                    found.append(lit)
                    i = lit.end()
                    continue
                if c in "([{":
                    depth += 1
                elif c in ")]}":
                    if depth == 0:
                        break
                    depth -= 1
                i += 1
            read_to = i
            numeric = self._PASSWORD_CALLEE.search(call.group(0)) is not None  # a PIN or an access code
            for lit in found:
                value = lit.group(2)
                if not value.startswith(_MARK) and (_secret_like(value) or numeric and value.isdigit() and 6 <= len(
                        value) <= 16 and value.isascii()):
                    yield lit


class _ParamDefault(_Scan):
    """A template parameter named for a secret, with its ``Default:`` a few lines below (CloudFormation, SAM):
    ``DBMasterPassword:`` / ``Type: String`` / ``Default: '…'``. Each parameter line is tried on its own."""

    _NAME = _Lazy(r"(?m)^([ \t]*)([A-Za-z][\w.-]{0,80})[ \t]*:[ \t]*\r?\n")
    _BODY = _Lazy(r"(?:[ \t]+[^\n]*\n){0,6}?[ \t]+Default[ \t]*:[ \t]*([\"']?)(?!\[REDACTED)([^\s\"'][^\"'\n]*?)\1[ \t]*$",
                  re.MULTILINE)

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        last = 0
        for name in self._NAME.finditer(text):
            if name.start() < last or not _strong_name(name.group(2)):
                continue
            body = self._BODY.match(text, name.end())
            if body and not _skip_value(body.group(2)):
                yield body
                last = body.end()


#: what precedes a digest's ':' (go.sum's h1:, Terraform's zh:, SRI, fingerprints): no user
_HASH_TAGS = frozenset({"http", "https", "h1", "zh", "iv", "tag", "data", "type", "mac", "nonce", "sha1", "sha224",
                        "sha256", "sha384", "sha512", "md5", "blake2b", "blake3", "xxh3", "crc32", "sha", "ssh-rsa",
                        "ssh-ed25519", "ed25519", "rsa", "ecdsa"})


_ENCODED_LOGIN = r"([\"'])([^\"':\s]{1,64}):(?!\[REDACTED)([^\"'\s]{1,128})\1"


def _encoded_login(m: re.Match[str]) -> bool:
    """A ``user:password`` literal being encoded (groups 2 and 3), on a line about Basic auth or base64; not
    ``host:port``, not ``https:…``."""
    return not m.group(3).isdigit() and m.group(2).lower() not in _HASH_TAGS and _near(_BASIC_RE, m, 80)


def _after_public(text: str, pos: int) -> bool:
    """The word before ``pos`` says what follows is public: ``Public key``, ``pub key``, ``host key``."""
    return text[max(0, pos - 12) : pos].lower().rstrip(" \t_-").endswith(("public", "pub", "host", "verify"))


def _in_sentence(text: str, a: int, value: str) -> bool:
    """``value`` (after a name at ``a``) is a plain lower-case word in the middle of a sentence: three or more
    words come before the name on its line, so it is prose, not a setting."""
    if not (value.isalpha() and value.islower() and len(value) <= 12):
        return False
    start = text.rfind("\n", max(0, a - 200), a) + 1
    return len(text[start:a].split()) >= 3 and not _CODE_CHARS_RE.search(text, start, a)


def _near(words: _Lazy, m: re.Match[str], after: int) -> bool:
    """``words`` occur on the line of ``m`` (at most 300 characters before it and ``after`` past its end)."""
    text = m.string
    start = max(0, m.start() - 300)
    nl = text.rfind("\n", start, m.start())
    end = text.find("\n", m.end(), m.end() + after)
    return words.search(text, nl + 1 if nl >= 0 else start, end if end >= 0 else m.end() + after) is not None


class _StrongToken(_Scan):
    """A strong password as a token of its own in prose or a chat line, whatever the language around it: 10 to 64
    characters with lower and upper case, a digit and one of ``!#$%&*?~`` inside it (not first: a hashtag, a
    variable), or ``@`` not before a domain (``Alder@nimbus234``, not ``a@b.io``); no ``/`` or brackets (code,
    paths, formulas). Without such a sign, a token joined by ``_ - . = + @`` is taken when its letters are scrambled
    (:func:`_scrambled`: ``vYGgf.DDaogr423``, not ``Python3.11-Slim`` or ``GluN3A-containing``), or, in a line of
    another script, when it is random. Lines that look like code (``(){}[]=;<>``, the token aside) are left to the
    rules that read names."""

    _TOKEN = _Lazy(r"(?<![^\s\"'`(\[«“‘,:;\u3000-\u9fff\uac00-\ud7af\uff00-\uffef])"
                   r"((?:[*!](?=[A-Za-z0-9]))?[A-Za-z0-9][A-Za-z0-9!#$%^&*+?~._=@-]{8,62}[A-Za-z0-9]"
                   r"(?:[!#$%&*~]{2,3}|[#$%&~])?)"  # Summer2024!!, Gran1te#: signs at the end (one ! ends a sentence,
                   # one * a glob or a pointer: VP8LConvert*)
                   r"(?=[.,;:!?)\]\"'`»”’]?(?:\s|$)|[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef])")
    _SIGN = frozenset("!#$%&*?~")  # not + or ^: CD14++CD16+ cells, base64 lines, 10^6 in formulas
    _JOINERS = frozenset("_-.=+@")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        for m in self._TOKEN.finditer(text):
            value = m.group(1)
            inner = value[1:-1]
            user, at, host = value.partition("@")
            signs = self._SIGN.intersection(_PERCENT_ENCODED_RE.sub(lambda _: "", inner))  # %3D: a URL's encoding
            if value[0] == "*" and value[-1] == "*":
                continue  # *Emphasis2024*: Markdown
            if value[0] == "!" and "_" in value:
                continue  # !HAVE_NATIVE_mpn_div: a macro negated
            if value[0] in "*!" or not value[-1].isalnum():
                signs = signs | {value[0] if value[0] in "*!" else value[-1]}  # *Lighthouse139, Summer2024!!
            signed = bool(signs) or bool(at) and "." not in value and not user.islower() and not (
                _HEX_RE.fullmatch(host) or _VERSION_RE.fullmatch(host))  # Task@2, ConnectionImpl@5a1b2c3d
            if not (signed or self._JOINERS.intersection(inner)) or value.startswith(_MARK) or "==" in value:
                continue
            name, equals, _ = value.partition("=")
            if equals and all(_WORDLIKE_RE.fullmatch(p) for p in re.split(r"[_.-]+", name) if p):
                continue  # a setting (grant_type=…, API_KEY=…): the rules that read names take it
            lower, upper, digits, _ = _char_kinds(value)
            if not digits and lower and upper and len(signs) >= 2 and len(value) >= 10:
                digits = True  # cPGWq?Rdb+Dd*Sqr: both cases and two signs, random enough without a digit
            if not (lower and upper and digits) or _REGEX_SYNTAX_RE.search(value) or _ANCHORED_NAME_RE.search(value) \
                    or "***" in value or "###" in value or "++" in value or at and "." in host \
                    or _ISSUE_REF_RE.fullmatch(value) or at and _SYMBOL_VERSION_RE.fullmatch(host) \
                    or _ISSUE_INSIDE_RE.search(value):
                continue  # Closes: Bug#145278 (a tracker's issue); LZ4F_getErrorCode@Base, memcpy@GLIBC_2.14 (a symbol)  # x509v3_config.html#STANDARD-EXTENSIONS (a name, its anchor), sk-proj-****Xq2a (masked)
            start = text.rfind("\n", max(0, m.start() - 300), m.start()) + 1
            end = text.find("\n", m.end(), m.end() + 300)
            line = text[start : end if end >= 0 else min(len(text), m.end() + 300)]
            body = line[prefix.end():] if (prefix := _LINE_PREFIX_RE.match(line)) else line
            prose = _ARROW_RE.sub(lambda _: " ", body.replace(value, "\x00"))
            if signed:  # a note in parentheses is prose's too ("… Ferr37puf#4 (not the pwd command)"), unless the
                # token is inside it ("(closes: Ubuntu#8562)")
                prose = _PAREN_NOTE_RE.sub(lambda n: n.group(0) if "\x00" in n.group(0) else " ", prose)
            if _CODE_CHARS_RE.search(prose) and not _CHAT_LINE_RE.match(line):
                continue  # code; a list's, a quote's or a tag's mark before prose (- [s1 q0] …, > …, 1) …) is not
            if signed or _scrambled(value):
                yield m
            elif _looks_random(value) and not _identifier_like(value) and _fragments(re.split(r"[^A-Za-z0-9]+", value)) >= 2 \
                    and _foreign_line(line.replace(value, " ")):
                yield m  # in a line of another script, a random Latin token of both cases and digits is what was
                # typed to be kept; in Latin text, _ - . join words and versions (Python3.11-Slim)


_ARROW_RE = _Lazy(r"(?<=\s)(?:->|=>|-->|==>|>)(?=\s)")  # prose points with them: "the password -> Marmalade*Rain8"


class _SqlInsert(_Scan):
    """The rows of an SQL dump's ``INSERT INTO t (…, password, …) VALUES (…), (…);``: the values of the columns
    that name a secret (a password, a token, a key; a hash too). Values are read as SQL writes them: quoted strings
    (doubled or backslashed quotes inside), numbers, NULL."""

    _HEAD = _Lazy(r"(?i)\binsert[ \t]+(?:ignore[ \t]+)?into[ \t]+[`\"\[\]\w.]+[ \t]*\(([^()]{1,2000})\)\s*values\s*")
    _VALUE = _Lazy(r"\s*(?:'((?:[^'\\]|''|\\.)*)'|\"((?:[^\"\\]|\"\"|\\.)*)\"|[^,()'\"]*)\s*")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        for head in self._HEAD.finditer(text):
            columns = [c.strip().strip("`\"[] ") for c in head.group(1).split(",")]
            wanted = {k for k, c in enumerate(columns) if _strong_name(c) or _PERSONAL_COLUMN_RE.fullmatch(c)}
            if not wanted:
                continue
            pos = head.end()
            for _ in range(1000):  # rows
                if not text.startswith("(", pos):
                    break
                pos += 1
                for k in range(len(columns)):
                    v = self._VALUE.match(text, pos)
                    if v is None:
                        break
                    group = 1 if v.group(1) is not None else 2 if v.group(2) is not None else 0
                    if k in wanted and group and v.group(group) and not v.group(group).startswith(_MARK):
                        span = _SPAN_RE.match(text, v.start(group), v.end(group))
                        if span is not None:
                            yield span
                    pos = v.end()
                    if not text.startswith(",", pos):
                        break
                    pos += 1
                if not text.startswith(")", pos):
                    break
                pos += 1
                while pos < len(text) and text[pos] in " \t\r\n,":
                    pos += 1


class _SpacedColumns(_Scan):
    """A table printed with its columns aligned by spaces (a data frame, a CLI's listing, ``vault kv get``): the cells
    under a header that names a secret's column (``secret``, ``password``, ``api_key``), or, under ``Key Value``
    (``Name Value``), the value of each row whose name is a secret's. A data frame's rows start with their index,
    one cell more than the header. Up to 200 rows, until a blank line or a row of another shape."""

    _HEAD = _Lazy(r"(?im)^[ \t]*[A-Za-z_][\w.-]*(?:[ \t]{2,}[A-Za-z_][\w.-]*)+[ \t]*$")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        done = 0
        for head in self._HEAD.finditer(text):
            if head.start() < done:
                continue  # a row of the table read last (each line is read once)
            names = head.group(0).split()
            if any(len(nm) > 30 or nm.endswith(".") for nm in names):
                continue  # a line of names and words ("ksba_ocsp_set_sig_val   NEW."), not a header
            wanted = [k for k, nm in enumerate(names) if _components(nm)[-1:] and _components(nm)[-1] in _COLUMN_SECRETS
                      and _strong_name(nm)]
            pairs = not wanted and len(names) == 2 and names[1].lower() == "value"
            if not wanted and not pairs:
                continue
            done = head.end() + 1
            for pos, end in _table_rows(text, head.end() + 1, 200):
                row = text[pos:end]
                cells = list(_CELL_RE.finditer(row))
                shift = len(cells) - len(names)
                if shift not in (0, 1):
                    break
                done = end + 1
                if pairs:
                    columns = [1] if _strong_name(cells[shift].group(0)) else []
                else:
                    columns = wanted
                for k in columns:
                    cell = cells[k + shift]
                    if not cell.group(0).startswith(_MARK) and cell.group(0) not in ("NaN", "None", "null", "-"):
                        span = _SPAN_RE.match(text, pos + cell.start(), pos + cell.end())
                        if span is not None:
                            yield span


_CELL_RE = _Lazy(r"\S+")


def _lines_after(text: str, pos: int, limit: int) -> Iterator[tuple[int, int]]:
    """The start and end of each line from ``pos`` on, at most ``limit`` of them."""
    n = len(text)
    for _ in range(limit):
        if pos >= n:
            return
        end = text.find("\n", pos)
        end = n if end < 0 else end
        yield pos, end
        pos = end + 1


def _table_rows(text: str, pos: int, limit: int) -> Iterator[tuple[int, int]]:
    """A table's rows from ``pos`` on (at most ``limit`` lines): up to its first blank line, its rules and borders
    (``|---|``, ``├──┼──┤``) passed over."""
    for start, end in _lines_after(text, pos, limit):
        row = text[start:end].strip()
        if not row:
            return
        if not set(row) <= _RULE_CHARS:
            yield start, end


_CODE_SHAPE_RE = _Lazy(r"[(){}\[\]=;<>]")  # what code holds ("$" and "%" are prose's too: "it has a $")
#: the last word of a column whose cells are secrets
_COLUMN_SECRETS = frozenset({"password", "passwd", "pwd", "pass", "secret", "token", "key", "apikey", "credential",
                             "credentials", "passphrase"})


class _ChosenPassword(_Scan):
    """A password in the shapes people choose, standing as a token in prose: two or three capitalised words of three
    letters or more, two to four digits and one sign (``GranitePuffin73=``, ``WombatYarrow85~``; not
    ``HelloWorld2024``, no sign; not ``PostgreSQL16!``, a capital run), or a capitalised word, one of ``+ = ^ ~`` and
    two to four digits (``Hazel+75``), or two or three words joined by ``-`` or ``.``, those after the first
    capitalised, and a number of two or three digits (``Tundra-Faucet-93``, ``Fietsbel.Gracht22``; not a file's
    name, ``Makefile.mingw32``, a year, ``Visual-Studio-2022``, or a width, ``dbus.Int32``, ``lcc-Win32``). Code
    lines are left to the rules that read names."""

    _SHAPE = _Lazy(r"(?<![A-Za-z0-9_@#$%^&*+=~./:-])((?:[A-Z][a-z]{2,12}){2,3}[0-9]{2,4}[=+^~_!#$%&*?@-]"
                   r"|[A-Z][a-z]{2,12}[+^~][0-9]{2,4}"
                   r"|[A-Za-z][a-z]{2,12}([-.])[A-Z][a-z]{2,12}(?:\2[A-Z][a-z]{2,12})?\2?(?!(?:16|32|64|128)\b)[0-9]{2,3})(?=[.,;:!?)\]\"'`»”’]{0,2}(?:\s|$)|:[^\W\d_]|[-\u0080-\uffff])")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        for m in self._SHAPE.finditer(text):
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            line = text[start : end if end >= 0 else len(text)]
            body = _ARROW_RE.sub(lambda _: " ", line.replace(m.group(1), " "))
            if _CODE_SHAPE_RE.search(_PAREN_NOTE_RE.sub(lambda _: " ", body)) and not _CHAT_LINE_RE.match(line):
                continue
            yield m


class _Corrected(_Scan):
    """Two values in a correction after a word for password on the line or the one before: "not X but Y" in ~10
    languages; each value taken when it is :func:`_told` or :func:`_password_like`."""

    _PAIR = _Lazy(r"(?i)\b(?:not|no es|niet|nicht|non è|não é|pas|не)[ \t]+[\"'`]?([^\s\"'`,]{4,64}?)[\"'`]?,?[ \t]+"
                  r"(?:but|sino|maar|sondern|mais|ma|mas|а|but rather)[ \t]+[\"'`]?([^\s\"'`]{4,64}?)[\"'`]?"
                  r"(?=[.,;!?)]?(?:\s|$))")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        lower = _ascii_lower(text)
        for m in self._PAIR.finditer(text):
            start = text.rfind("\n", 0, max(0, text.rfind("\n", 0, m.start())))
            if not _PASSWORD_WORDS_RE.search(lower, max(0, start, m.start() - 200), m.start()) and not all(
                    v.startswith(_MARK) or _strong_password(v, strict=False) and any(c in "!@#$%^&*+=?~" for c in v)
                    for v in (m.group(1), m.group(2))):
                continue  # no word for password: two strong ones ("oeps, verkeerde geplakt: niet X maar Y")
            for g in (1, 2):
                value = m.group(g)
                if (_told(value) or _password_like(value)) and not value.startswith(_MARK):
                    span = _SPAN_RE.match(text, m.start(g), m.end(g))
                    if span is not None:
                        yield span


#: the words of a heading over a list of logins (English, German, French, Spanish, Italian, Dutch, Polish, Russian)
_CREDENTIAL_HEADS = ("account", "login", "credential", "creds", "users", "passwords", "zugang", "identifiants",
                     "credenciales", "cuentas", "accessi", "credenziali", "inloggegevens", "logowania", "konta",
                     "учетн", "учётн", "аккаунт")


class _CredentialList(_Scan):
    """Logins listed under a heading that says so (``Accounts for the demo:``, ``Test logins``, ``Zugangsdaten:``):
    items ``name / value``, ``name: value``, ``name | value`` up to the first line that is no such item (at most 12),
    each value taken when it looks like a password (:func:`_password_like`)."""

    _WORDS = (r"\b(?:accounts?|logins?|credentials|creds|users|passwords|zugangsdaten|zugänge|identifiants"
              r"|credenciales|cuentas|accessi|credenziali|inloggegevens|dane logowania|konta|учетные (?:данные|записи)"
              r"|учётные (?:данные|записи)|аккаунты)\b")
    #: a line that ends with a colon ("Accounts for the demo:"), or a Markdown heading ("## Test logins")
    _HEAD = _Lazy(rf"(?im)^(?:#{{1,4}}[ \t]+[^\n]{{0,50}}?{_WORDS}[^\n]{{0,40}}|[^\n:#]{{0,50}}?{_WORDS}[^\n:]{{0,40}}:)"
                  r"[ \t]*$")
    _ITEM = _Lazy(r"[ \t]*(?:[-*•]|[0-9]{1,2}[.)])?[ \t]*[\w.@+-]{2,40}(?:[ \t]+/|:|[ \t]+[—–|])[ \t]+[\"'`]?"
                  r"(?!\[REDACTED)([^\s\"'`/][^\s\"'`/]{5,63}?)[\"'`]?[ \t]*$")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        for head in self._HEAD.finditer(text):
            for pos, end in _lines_after(text, head.end() + 1, 12):
                m = self._ITEM.match(text, pos, end)
                if m is None:
                    break
                if _password_like(m.group(1)):
                    yield m


#: an issue's number inside a branch's or a file's name (``event-ET-#636-v2``)
_ISSUE_INSIDE_RE = _Lazy(r"(?:^|[-_/.])#[0-9]{2,}(?:$|[-_/.])")
#: an issue in a tracker: a word, ``#`` and a number of 5+ digits (a chosen password ends with a year or less)
_ISSUE_REF_RE = _Lazy(r"[A-Za-z][a-z]{1,15}#[0-9]{5,}")
#: what follows ``@`` in a versioned symbol of a shared library (``@Base``, ``@@GLIBC_2.14``)
_SYMBOL_VERSION_RE = _Lazy(r"@?(?:Base|[A-Z][A-Z0-9]*_[0-9][0-9.]*)")


def _scrambled(value: str) -> bool:
    """Letters and digits in an order no name, version or gene takes: 10 to 24 characters in at most three parts
    (between symbols), three or more lower-case and upper-case letters, and three or more of its pieces
    (camel-case words and numbers) a one- or two-letter fragment or a number between letters
    (``vYGgf.DDaogr423``: v, Y, D). A part that is a number, a lower-case word, in one case (``ec.SECP256R1``,
    ``a2d_ASN1_OBJECT``), hexadecimal (``0xD800``), a word of five letters (``GluN3A-containing``,
    ``T790M-Positive``) or eight hexadecimal digits in a row is what names, genes and ids hold. Measured: 71% of
    random tokens of 10-16 letters and digits joined by a symbol pass, and 1 of 562 such tokens in prose lines
    of the eval corpora, Python's and Debian's docs and the audits' ordinary texts (a piece of base64)."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", value) if p]
    if not 10 <= len(value) <= 24 or len(parts) > 3 or _NAMED_PART_RE.search(value):
        return False
    if any(p.isdigit() or p.isalpha() and p.islower() and len(p) >= 3 or len(p) >= 4 and (p.isupper() or p.islower())
           or p.startswith(("0x", "0X")) for p in parts):
        return False
    if sum(c.islower() for c in value) < 3 or sum(c.isupper() for c in value) < 3:
        return False  # SERCA2b-RyR2: a gene's capitals with a letter or two in lower case
    return _fragments(parts) >= 3 and _looks_random(value) and not _identifier_like(value)


def _fragments(parts: list[str]) -> int:
    """How many camel-case pieces of ``parts`` are a one- or two-letter fragment or a number between letters."""
    fragments = 0
    for part in parts:
        pieces = _CAMEL_RE.findall(part)
        for i, piece in enumerate(pieces):
            fragments += 0 < i < len(pieces) - 1 if piece.isdigit() else len(piece) <= 2
    return fragments


_PERCENT_ENCODED_RE = _Lazy(r"%[0-9A-Fa-f]{2}")
_HEX_RE = _Lazy(r"[0-9a-fA-F]+")
_NAMED_PART_RE = _Lazy(r"[A-Z][a-z]{4,}|[a-z]{5,}|[0-9a-fA-F]{8}")


def _foreign_line(line: str) -> bool:
    """Most letters of ``line`` are of a script other than Latin (Arabic, Bengali, Ethiopic, Cyrillic, CJK…)."""
    other = latin = 0
    for c in line:
        if c.isalpha():
            if c.isascii() or "\u00c0" <= c <= "\u024f":
                latin += 1
            else:
                other += 1
    return other > 2 * latin and other >= 6


_ANCHORED_NAME_RE = _Lazy(r"[A-Za-z_]\.\w+#")
_LINE_PREFIX_RE = _Lazy(r"[ \t]*(?:(?:[-*+>•]|[0-9]{1,3}[.)]|\([0-9]{1,3}\)|\[[^\[\]\n]{1,40}\])[ \t]+)+")
_CHAT_LINE_RE = _Lazy(r"[ \t]*(?:\[[^\]\n]{1,40}\][ \t]*)?(?:<[^<>\n]{1,40}>|[\w .'-]{1,40}:)[ \t]")


def _secret_like(value: str) -> bool:
    """A password (:func:`_password_like`) or a generated token (16+ characters, random, with a digit)."""
    return _password_like(value) or len(value) >= 16 and _looks_random(value) and any(c.isdigit() for c in value)


class _SecretsBlock(_Scan):
    """Values under a parent named for secrets (``secrets:`` then ``  peertube: '<hex>'``): each child that looks
    like a password or a random token, whatever its own name. Each parent reads at most 200 lines below it."""

    _PARENT = _Lazy(r"(?im)^([ \t]*)(?:secrets|credentials|passwords|tokens|keys|api[_-]?keys)[ \t]*:[ \t]*$")
    _CHILD = _Lazy(r"[ \t]+[\w.-]{1,80}[ \t]*:[ \t]*([\"']?)(?!\[REDACTED)([^\s\"'#]{8,300})\1[ \t]*$")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        n = len(text)
        for parent in self._PARENT.finditer(text):
            indent = len(parent.group(1).expandtabs())
            pos = parent.end() + 1
            for _ in range(200):
                if pos >= n:
                    break
                end = text.find("\n", pos)
                end = n if end < 0 else end
                line = text[pos:end]
                if line.strip():
                    if len(line.expandtabs()) - len(line.expandtabs().lstrip()) <= indent:
                        break
                    child = self._CHILD.match(text, pos, end)
                    value = child.group(2) if child else ""
                    if child and not _skip_value(value) and _secret_like(value):
                        m = _SPAN_RE.match(text, child.start(2), child.end(2))
                        if m is not None:
                            yield m
                pos = end + 1


_STOP_WORDS = frozenset("the a an and or of to in on for with is are was be it this that you your we our not "
                        "from by at as use run see".split())


class _AnnouncedBelow(_Scan):
    """A secret on its own line below the line that announces it: a line naming a password, a passphrase, a token
    or a key and ending with a colon (or a command that prints a key: ``$ atuin key``), then, after at most two
    blank lines, one token that looks like a password or a random token, or eight or more lower-case words (a
    passphrase of words). A log prefix (``jenkins-1  | ``) is read past on every line."""

    #: a line ending with a colon, or a command line (each line is looked at once; its words are searched after)
    _ANNOUNCE = _Lazy(r"(?m)^(?:[\w.-]+[ \t]+\|[ \t]?)?(?:([$>%#][ \t])[^\n]*|[^\n]*:[ \t]*$)")
    _SAYS = _Lazy(r"(?i)\b(?:password|passphrase|passcode|token|key|secret)s?\b")
    _PRINTS = _Lazy(r"(?i)\b(?:key|passphrase|mnemonic|recovery|seed)\b")
    _PREFIX = _Lazy(r"[\w.-]+[ \t]+\|[ \t]?")
    _WORDS = _Lazy(r"[a-z]{3,8}(?:[ \t]+[a-z]{3,8}){7,23}")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        n = len(text)
        for announce in self._ANNOUNCE.finditer(text):
            words = self._PRINTS if announce.group(1) else self._SAYS
            if len(announce.group(0)) > 400 or not words.search(announce.group(0)) or (
                    "public" in announce.group(0).lower()):
                continue  # no announcement; "user public key (safe to share)" is meant to be shown
            pos = announce.end() + 1
            for _ in range(3):
                if pos >= n:
                    break
                end = text.find("\n", pos)
                end = n if end < 0 else end
                start = pos
                prefix = self._PREFIX.match(text, pos, end)
                if prefix is not None and prefix.group(0).strip(" \t|") == text[
                        announce.start() : announce.start() + len(prefix.group(0))].strip(" \t|"):
                    start = prefix.end()  # the same log prefix as the announcing line's
                line = text[start:end]
                if not line.strip():
                    pos = end + 1
                    continue
                value = line.strip()
                a = start + line.index(value)
                if (" " not in value and not value.startswith(_MARK) and not _skip_value(value) and _secret_like(value)) or (
                        self._WORDS.fullmatch(value) and not _STOP_WORDS.intersection(value.split())):
                    m = _SPAN_RE.match(text, a, a + len(value))
                    if m is not None:
                        yield m
                break


_NAME_BEFORE_RE = _Lazy(r"([A-Za-z_][\w.-]{0,60})[\"']?[ \t]*$")


def _named_before(m: re.Match[str]) -> bool:
    """The name right before ``m`` (``network_key`` of ``network_key: [122, …]``) marks a secret."""
    name = _NAME_BEFORE_RE.search(m.string, max(0, m.start() - 64), m.start())
    return name is not None and name_kind(name.group(1)) is not None


def _uci_secret(m: re.Match[str]) -> bool:
    """``option NAME 'value'`` (OpenWrt): NAME marks a secret, and a weak name's value looks like one."""
    kind = name_kind(m.group(1))
    value = m.group(3)
    return kind is not None and not _skip_value(value) and (kind[1] or _password_like(value) or _looks_random(value))


def _line_login(m: re.Match[str]) -> bool:
    """``user:password`` at a line's start: a strong password (not a version, a stand-in) after a user's name."""
    user, value = m.group(1), m.group(2)
    return (_strong_password(value, strict=False) and user.lower() not in _HASH_TAGS and not _stands_in(value)
            and not _NOT_CREDENTIAL_NAMES.intersection(_components(user)) and not _VERSION_RE.fullmatch(value))


def _in_accounts_list(text: str, pos: int) -> bool:
    """``pos`` is inside an ``accounts: [`` list opened at most 400 characters before (a wallet's keys)."""
    at = text.rfind("accounts", max(0, pos - 400), pos)
    if at < 0:
        return False
    opened = text.find("[", at + 8, pos)
    return opened >= 0 and not text[at + 8 : opened].strip(" \t\"':=") and "]" not in text[opened:pos]


def _random_or_strong(value: str, digest_lengths: bool = False) -> bool:
    """A generated token (16+ characters with a digit, random; hex of a digest's length only when
    ``digest_lengths``) or a strong password."""
    if _strong_password(value, strict=False):
        return True
    return (len(value) >= 16 and any(c.isdigit() for c in value) and _looks_random(value) and not _identifier_like(value)
            and (digest_lengths or not _DIGEST_HEX_RE.fullmatch(value)) and "://" not in value and "/" not in value)


_DIGEST_HEX_RE = _Lazy(r"[0-9a-f]{40}|[0-9a-f]{64}")


#: a line about two-factor sign-in, in the languages of :data:`_PASSWORD_WORDS_ANY`
_TWO_FACTOR_RE = _Lazy(r"(?i)2fa|\bmfa\b|totp|\botp\b|authenticat|autenticad|authentifi|two[- ]factor|2[- ]step"
                       r"|zwei[- ]?faktor|2-faktor|doble factor|dois fatores|deux facteurs|due fattori|\bqr\b"
                       r"|(?:2fa|totp|otp)-?geheimnis|(?:clave|chave) secreta|chiave segreta|clé secrète")


class _TotpSeed(_Scan):
    """A TOTP seed (:func:`_totp_seed`) on the line of a word about two-factor sign-in (:data:`_TWO_FACTOR_RE`),
    at most 300 characters from it; each line is read once."""

    _SEED = _Lazy(r"(?<![A-Za-z0-9])(?!\[REDACTED)((?:[A-Z2-7]{4}[ \t]){3,15}[A-Z2-7]{2,4}|[A-Z2-7]{16,64}"
                  r"|(?:[a-z2-7]{4}[ \t]){3,15}[a-z2-7]{2,4}|[a-z2-7]{16,64})(?![A-Za-z0-9])")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        done = 0
        for word in _TWO_FACTOR_RE.finditer(text):
            if word.start() < done:
                continue
            lo = max(text.rfind("\n", 0, word.start()) + 1, word.start() - 300, done)
            hi = text.find("\n", word.end())
            hi = min(len(text) if hi < 0 else hi, word.end() + 300)
            yield from (m for m in self._SEED.finditer(text, lo, hi) if _totp_seed(m.group(1)))
            done = hi


def _totp_seed(value: str) -> bool:
    """Base32 (``A-Z2-7``) of 16 characters or more without its spaces, letters and at least two digits, not a
    word in capitals: how an authenticator app shows a seed to type in."""
    seed = value.replace(" ", "").replace("\t", "")
    digits = sum(c.isdigit() for c in seed)
    return len(seed) >= 16 and digits >= 2 + (seed.islower()) and len(seed) - digits >= 8 and len(set(seed)) >= 10


#: the session cookies of web frameworks (not ``sessionId``, which logs and transcripts use for other ids)
_SESSION_COOKIES = ("phpsessid", "jsessionid", "aspsessionid", "asp.net_sessionid", "connect.sid", "laravel_session",
                    "ci_session", "wordpress_logged_in_", "wordpress_sec_", "cfid", "cftoken")
#: a task after ``namespace:`` (``credentials:edit``, ``key:generate``): a command, not a value
_TASK_VERBS = frozenset({"edit", "show", "generate", "clear", "list", "create", "delete", "rotate", "set", "get",
                         "sync", "pull", "push", "encrypt", "decrypt", "init", "new", "add", "remove", "update",
                         "check", "status", "dump", "import", "export", "reset", "revoke", "renew", "unset", "view"})
#: what may follow a setting's value on its line: nothing, a comment or a continuation
_LINE_REST_RE = _Lazy(r"[ \t]*(?:$|\r?\n|[#;\\]|//|/\*)")


_WG_PRIVATE_RE = _Lazy(r"(?i)private[ _-]?key|preshared[ _-]?key|\bpsk\b|\bwg\b|wireguard")
_WG_PUBLIC_RE = _Lazy(r"(?i)public[ _-]?key|\bpubkey\b|\bpub\b|peer")


def _told_pair(value: str) -> bool:
    """A password told beside its user or its old one: letters, a digit and a symbol that names and versions do not
    hold (``Tiger25$``; not ``Python3.11-Slim`` or ``Mozilla/5.0``)."""
    return any(c in "!@#$%^&*+=?~" for c in value) and any(c.isdigit() for c in value) and any(
        c.isalpha() for c in value) and _password_like(value) and not _skip_value(value) and not _FORMULA_RE.search(value)


_FORMULA_RE = _Lazy(r"\w=\w|\^[0-9]")  # (ID=12&x=abc), (x^2+y^2): a query or a formula
_REF_RE = _Lazy(r"#[0-9]|::")  # (Bug#52656), (ITS#9502), v8::internal: an issue or a name, in parentheses


def _strong_password(value: str, strict: bool = True) -> bool:
    """Upper and lower case, a digit and a symbol (when ``strict``, one that names and constants do not hold: not
    ``_``, ``-`` or ``.``), no words-and-dots shape: a generated or chosen password."""
    lower, upper, digits, other = _char_kinds(value)
    if not (lower and upper and digits and other) or not _password_like(value) or _REGEX_SYNTAX_RE.search(value):
        return False
    if strict and not (any(c in "!@#$%^&*+=?~" for c in value) and _looks_random(value)):
        return False  # Javascript+UL4, STACK_OF_X509**: names
    return not value.upper().startswith(("SHA256:", "SHA1:", "MD5:", "SHA512:", "DATA:", "SHA256/", "SHA1/"))


class _AfterLoginWord(_Scan):
    """A password shortly after a word that introduces one on a command or config line (the next three tokens):
    ``+login user PASS``, ``login serveradmin PASS``, ``set-initial-password PASS``, ``addauth digest user:PASS``,
    ``-setcookie COOKIE``, ``/RP PASS``, ``-w PASS``, ``samba-tool user create NAME PASS``,
    ``sentinel auth-pass master PASS``. A token is taken when it is a strong password (:func:`_strong_password`),
    or ``user:password`` with one."""

    #: run over the lower-cased text (an IGNORECASE scan costs several times more); every branch starts with a
    #: letter or a sign, so the scan skips to those (a lookbehind first would test every position), and what
    #: precedes the word is checked after
    _WORD = _Lazy(r"(?:\+login|login|authorize|set-initial-password|addauth[ \t]+digest|-setcookie|/(?:rp|p|pass|password|pwd)"
                  r"|-[wsp]|(?:super)?users?[ \t]+(?:create|add|upsert)|useradd|create-?user|adduser"
                  r"|(?:auth|sentinel|insecure)-pass(?:word)?"
                  r"|pass(?:wd|word)?|pw|auth)(?=[ \t:])")
    _TOKEN = _Lazy(r"[^\s\"'`]+|\"[^\"\n]*\"|'[^'\n]*'")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        scanned = 0
        for word in self._WORD.finditer(_ascii_lower(text)):
            before = text[word.start() - 1] if word.start() else " "
            if word.start() < scanned or (not before.isspace() if word.group(0)[0] in "/-" else (
                    before.isalnum() or before in "_-")):
                continue
            end = text.find("\n", word.end(), word.end() + 200)
            end = min(len(text), word.end() + 200) if end < 0 else end
            scanned = word.end()
            if word.group(0) == "-p" and _PUBLIC_KEY_TOOLS_RE.search(text, text.rfind("\n", 0, word.start()) + 1,
                                                                     word.start()):
                continue  # minisign -Vm … -P <public key>: the key that checks a signature
            for k, token in enumerate(self._TOKEN.finditer(text, word.end(), end)):
                if k >= 3:
                    break
                scanned = token.end()
                raw = token.group(0)
                value = raw[1:-1] if raw[:1] in "\"'" else raw.lstrip(":")
                if "://" in value or _CODE_VALUE_RE.match(value) or _ASSIGNMENT_RE.match(value):
                    continue  # -s https://host, auth = base64.b64encode(…, TTY=pts/0: a URL, a call, a setting
                user, colon, rest = value.rpartition(":")
                # user:password, but not a token holding a colon (a Tableau PAT's secret:value)
                split = colon and user and not user.isdigit() and not user.endswith("=") and not _looks_random(user)
                candidate = rest if split else value
                if candidate.startswith(_MARK) or not (_strong_password(candidate, strict=False) or (
                        len(candidate) >= 16 and _looks_random(candidate) and sum(_char_kinds(candidate)[:3]) >= 2
                        and any(c.isdigit() for c in candidate) and "://" not in candidate)):
                    continue
                a = token.start() + raw.index(candidate)
                m = _SPAN_RE.match(text, a, a + len(candidate))
                if m is not None:
                    yield m
                    scanned = m.end()
                break


_KEY_VALUE_LINE_RE = _Lazy(r"(?m)^[ \t]*[a-z_][\w.-]*[ \t]+[^\s=:]\S*[ \t]*$")


def _in_key_value_config(m: re.Match[str]) -> bool:
    """The line is one of several ``name value`` lines (msmtprc, nslcd.conf, .netrc-like files): the value of a
    password's line is the password, whatever it looks like."""
    around = m.string[max(0, m.start() - 400) : m.end() + 400]
    return len(_KEY_VALUE_LINE_RE.findall(around)) >= 3


class _SecretColumn(_Scan):
    """A table or a CSV export whose header names a secret's column (``password``, ``login_password``,
    ``Secret access key``): that column's cells in the rows below (up to 500 rows, until a blank line or a row of
    another shape). Cells are split on the header's delimiter (comma, tab, ``|``, ``│``), quotes honoured."""

    _HEADER = _words_re("pass|secret|token|key|credential|clave|contrase|senha|kennwort|mot de passe|hasło|haslo"
                        "|heslo|parol|wachtwoord|lösenord|losenord|пароль|şifre|sifre", "密码|パスワード|비밀번호", tail="")
    #: with ``personal``, a column of personal or financial numbers (:data:`_PERSONAL_COLUMN_RE`) instead, its cells
    #: masked when they hold a digit
    _PERSONAL_HEADER = _words_re("account|acct|iban|ssn|social|card|cvv|cvc|routing|national|tax|passport|pin|puk"
                                 "|geheimzahl", tail="")
    _DELIMS = (",", "\t", "|", "│", ";")

    #: with ``pairs``, a table of names and values (``│ Name │ Type │ Value │``, a CLI's secret listing): the value
    #: of each row whose name is a secret's
    _PAIRS_HEADER = _words_re("value|wert|valor|valeur|valore|waarde", tail=r"\b")
    _NAME_COLUMNS = frozenset({"name", "key", "variable", "secret", "setting", "env", "parameter", "nom", "nombre"})

    def __init__(self, personal: bool = False, pairs: bool = False) -> None:
        self.personal = personal
        self.pairs = pairs

    @staticmethod
    def _lines(words: _Lazy, text: str) -> Iterator[re.Match[str]]:
        """The lines that hold one of ``words``, each once (the words are found first: a pattern that scans every
        line for them costs ~3 times as much)."""
        last = -1
        for word in words.finditer(_ascii_lower(text)):  # (the words are lower case, the text's copy too)
            if word.start() <= last:
                continue
            start = text.rfind("\n", 0, word.start()) + 1
            end = text.find("\n", word.end())
            end = len(text) if end < 0 else end
            last = end
            line = _SPAN_RE.match(text, start, end) if end > start else None
            if line is not None:
                yield line

    def _wanted(self, name: str) -> bool:
        if not self.pairs and not self.personal and _fold(name.lower()) in _COLUMN_PASSWORDS:
            return True  # | servicio | usuario | clave |
        if self.pairs:
            return name.lower() in ("value", "wert", "valor", "valeur", "valore", "waarde")
        if self.personal:
            return _PERSONAL_COLUMN_RE.fullmatch(name.strip("`")) is not None
        return _strong_name(re.sub(r"[\s-]+", "_", name))

    @staticmethod
    def _cells(line: str, delim: str) -> list[tuple[int, int]]:
        cells, i, start, n = [], 0, 0, len(line)
        while i <= n:
            if i < n and line[i] == '"' and line[start:i].strip() == "":
                close = line.find('"', i + 1)
                i = n if close < 0 else close + 1
                continue
            if i == n or line[i] == delim:
                cells.append((start, i))
                start = i + 1
            i += 1
        return cells

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        done = 0
        header_re = self._PAIRS_HEADER if self.pairs else self._PERSONAL_HEADER if self.personal else self._HEADER
        for header in self._lines(header_re, text):
            if header.start() < done:
                continue
            line = header.group(0)
            delim = next((d for d in self._DELIMS if line.count(d) >= 2), None)
            if delim is None:
                continue
            start_before = text.rfind("\n", 0, max(0, header.start() - 1)) + 1
            before = text[start_before : max(0, header.start() - 1)]
            if before.strip() and set(before.strip()) <= _RULE_CHARS and start_before:
                before = text[text.rfind("\n", 0, start_before - 1) + 1 : start_before - 1]  # the row above a rule
            if header.start() and before.count(delim) >= 2:
                continue  # a row under another row or a rule: its cells are values, not column names
            cells = self._cells(line, delim)
            names = [line[a:b].strip().strip('"').strip() for a, b in cells]
            wanted = [k for k, name in enumerate(names) if name and len(name) <= 40 and _WORD_CELL_RE.fullmatch(name)
                      and self._wanted(name)]
            if not wanted or len(cells) < 2 or any(nm and not _WORD_CELL_RE.fullmatch(nm) for nm in names):
                continue  # a header is names; a row of data is not one
            name_col = next((k for k, nm in enumerate(names) if nm.lower() in self._NAME_COLUMNS),
                            next((k for k, nm in enumerate(names) if nm), 0))
            if self.pairs and name_col in wanted:
                continue
            done = header.end() + 1
            for pos, end in _table_rows(text, header.end() + 1, 500):
                row = text[pos:end]
                row_cells = self._cells(row, delim)
                if abs(len(row_cells) - len(cells)) > 1:
                    break
                done = end + 1
                if self.pairs and not (name_col < len(row_cells) and _strong_name(
                        row[row_cells[name_col][0] : row_cells[name_col][1]].strip().strip("\"'`"))):
                    continue  # a row whose name is no secret's: its value stays
                for k in wanted:
                    if k < len(row_cells):
                        a, b = row_cells[k]
                        value = row[a:b].strip()
                        quoted = value[:1] in "\"'`" and value[-1:] == value[:1] and len(value) > 1
                        inner = value[1:-1] if quoted else value
                        if inner and not _stands_in(inner) and not inner.startswith(_MARK) and (
                                not self.personal or any(c.isdigit() for c in inner)):
                            start = pos + a + row[a:b].index(value) + (1 if quoted else 0)
                            m = _SPAN_RE.match(text, start, start + len(inner))
                            if m is not None:
                                yield m


#: a column of personal or financial numbers (its cells are masked when they hold a digit)
_PERSONAL_COLUMN_RE = _Lazy(
    r"(?i)(?:bank[ _-]?)?(?:account|acct)[ _-]?(?:number|no|num|nr)|iban|ssn|social[ _-]?security(?:[ _-]?(?:number|no))?"
    r"|(?:credit[ _-]?)?card[ _-]?(?:number|no|num)|cc[ _-]?(?:number|num|no)|cvv2?|cvc2?|routing[ _-]?(?:number|no)"
    r"|national[ _-]?id(?:[ _-]?(?:number|no))?|tax[ _-]?id|passport[ _-]?(?:number|no|num)|account[ _-]?iban"
    r"|pin(?:[ _-]?(?:code|number))?|puk|geheimzahl|id[ _-]?card(?:[ _-]?(?:number|no))?|id[ _-]?number"
    r"|身份证(?:号)?|national[ _-]?insurance(?:[ _-]?number)?")
#: a column's name that means password in another language
_COLUMN_PASSWORDS = frozenset({"clave", "contrasena", "senha", "kennwort", "passwort", "mot de passe", "haslo", "heslo",
                               "parola", "parole", "wachtwoord", "losenord", "пароль", "密码", "パスワード", "비밀번호",
                               "sifre", "mdp", "pwd", "pw"})
_RULE_CHARS = frozenset("|-:=+ ─┼│├┤┌┐└┘┬┴━┃┏┓┗┛┣┫┳┻╋═║╔╗╚╝╠╣╦╩╬")  # a table's rules and borders
_WORD_CELL_RE = _Lazy(r"[^\W\d_][\w .()/-]{0,40}|`[^\W\d_][\w .-]{0,40}`")  # (środowisko, 環境: names too)


class _CookiePairs(_Scan):
    """Every random value of a cookie list: a ``Cookie:``/``Set-Cookie:`` header, ``curl --cookie``/``-b`` (and its
    Windows copy, ``-b ^"…^"``): ``name=value`` pairs split on ``;``."""

    _START = _Lazy(r"(?i)(?:(?:^|[\s;,\"'{])(?:set-)?cookie(?:[\"'][ \t]*:[ \t]*[\"']|:[ \t]*)"
                   r"|(?:--cookie|\s-b)[ =][ \t]*\^?[\"']?)")
    _PAIR = _Lazy(r"[ \t]*([\w.%-]{1,64})=(?!\[REDACTED)([^;\s,\"'^]*)")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        done = 0
        for start in self._START.finditer(text):
            if start.start() < done:
                continue
            pos = start.end()
            end = min(len(text), pos + 4096)
            while pos < end:
                pair = self._PAIR.match(text, pos, end)
                if pair is None:
                    break
                if len(pair.group(2)) >= 16 and _looks_random(pair.group(2)):
                    span = _SPAN_RE.match(text, pair.start(2), pair.end(2))
                    if span is not None:
                        yield span
                pos = pair.end()
                if text.startswith(";", pos):
                    pos += 1
                else:
                    break
            done = pos


class _ValueBefore(_Scan):
    """A secret told before its words: "use … as the password", "… is the new root password" (at a line's start
    or after a sentence's end). The words are found first, then the value is read backward from them."""

    _WORDS = _Lazy(r"(?i)[ \t]+(?:as|is)[ \t]+(?:the|my|our|your)[ \t]+(?:new[ \t]+|current[ \t]+|temporary[ \t]+)?"
                   r"(?:[\w-]+[ \t]+)?(?:password|passphrase|pw|token|secret|api key)\b"
                   r"(?![ \t]+(?:hash|hasher|field|column|policy|prompt|length|salt|encoder|algorithm|input|validator"
                   r"|manager|rule|rules|reset)\b)")
    _VALUE = _Lazy(r"(?i)(?:\buse[ \t]+|^[ \t]*|[.!?:][ \t]+)([\"'`]?)(?!\[REDACTED)([^\s\"'`]{6,128})\1$")
    #: or anywhere in the sentence, quoted: "Postgres keeps rejecting `Ca$cade_Falls1` as the password"
    _QUOTED = _Lazy(r"(?<!\S)([\"'`])(?!\[REDACTED)([^\s\"'`]{6,128})\1$")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        last = 0
        for words in self._WORDS.finditer(text):
            start = max(last, text.rfind("\n", 0, words.start()) + 1, words.start() - 160)
            m = self._VALUE.search(text, start, words.start()) or self._QUOTED.search(text, start, words.start())
            if m and _mixed(m.group(2)) and any(c.isdigit() for c in m.group(2)) and not _skip_value(m.group(2)) \
                    and not _CODE_PATH_RE.fullmatch(m.group(2)):
                yield m
                last = words.end()


#: "for" (what the secret is for) in the languages of the password words below
_FOR_WORDS = r"for|of|on|für|pour|para|de|till|til|för|voor|van|per|dla|do|di|da|del|du|des|для|від"


def _prose(words: str, separators: str, shortest: int, code: bool = True) -> _Checked:
    """A secret told in a sentence: one of ``words``, maybe ``for``/``of``/``on`` what, then ``is``/``was`` (or the
    word in a few other languages) or one of ``separators`` (a regex), with Markdown emphasis around either, and a
    value of ``shortest`` characters or more holding a digit or a symbol, maybe in quotes or backticks; unless
    ``code``, a value that is an attribute path (``self._in_arguments``) is code, not a secret. A flag
    (``--type``) or a bracket is never the value."""
    return _Checked(_Lazy(
        rf"(?i)(?:(?<![\w:/.-])|(?<=wifi-)|(?<=wlan-))(?:{words})\b(?:[ \t]+value\b)?(?:\*\*|__)?"
        rf"(?:[ \t]+(?:{_FOR_WORDS})[ \t]+[^\n:=]{{1,40}}?)?"
        rf"(?:\*\*|__)?(?:[ \t]+(?:is|was|to|as|ist|lautet|est|es|é|är|er|jest|je)\b:?|{separators})(?:\*\*|__)?[ \t]*"
        rf"(?:(?:…|\.\.\.|›)[ \t]*)?"  # a prompt's answer: "Enter a secret value: … <typed>"
        rf"([\"'`]?)(?!\[REDACTED)(?=[^\s\"'`]{{0,127}}[0-9!@#$%^&*+/_~\-])([^\s\"'`(\[<-][^\s\"'`]{{{shortest - 1},127}}?)"
        rf"\1(?=[.,;!?)]?(?:\s|$))"),
        lambda m: _mixed(m.group(2)) and not _skip_value(m.group(2)) and "://" not in m.group(2)
        and not m.group(2).startswith("**") and (  # Password=******;SSL Mode=…: a masked value
            code or not _CODE_PATH_RE.fullmatch(m.group(2))) and not (
            # "die Passphrase für den GPG-Schlüssel ist …": after what it is for, a value with no "is" or ":"
            # before it is a word of the sentence unless it holds a digit
            not any(c.isdigit() for c in m.group(2)) and _FOR_WHAT_RE.search(m.string, m.start(), m.start(2))
            and not _SAID_RE.search(m.string[m.start() : m.start(2)].rstrip(" \t\"'`*_…›."))))


_FOR_WHAT_RE = _Lazy(rf"\s(?:{_FOR_WORDS})\s")
_SAID_RE = _Lazy(r"(?i)(?:[:=：]|\b(?:is|was|to|as|ist|lautet|est|es|é|är|er|jest|je):?)$")


_BASIC_RE = _Lazy(r"(?i)basic|base64|b64|btoa|auth")
#: the words before a card's expiry date (a card number beside them says whose date it is)
_EXPIRY_WORDS = (r"exp(?:iry|ires|iration)?(?:[ \t]+date)?|valid[ \t]+(?:thru|through|until|till)|good[ \t]+thru"
                 r"|g[üu]ltig[ \t]+bis|ablauf(?:datum)?|vence|vencimiento|caducidad|expira|validade|scadenza|scade"
                 r"|vervaldatum|geldig[ \t]+tot|wa[żz]n[aey][ \t]+do|data[ \t]+wa[żz]no[śs]ci|date[ \t]+d'expiration"
                 r"|срок[ \t]+действия|действительна[ \t]+до|годна[ \t]+до|son[ \t]+kullanma(?:[ \t]+tarihi)?"
                 r"|有効期限|有效期(?:至)?|유효[ \t]?기간|hạn[ \t]+sử[ \t]+dụng|masa[ \t]+berlaku")
_EXPIRY_ANCHORS = ("exp", "valid", "good thru", "gültig", "gultig", "ablauf", "venc", "caduc", "scad", "verval",
                   "geldig", "ważn", "wazn", "ważno", "wazno", "срок", "действительн", "годна", "kullanma", "有効期限",
                   "有效期", "유효", "hạn", "berlaku")


class _CardExpiry(_Scan):
    """A card's expiry date after its word within 150 characters of a card number that passes the Luhn check: the
    numbers are found first (most texts hold none), then the date around each."""

    _DATE = _Lazy(r"(?i)(?<![^\W\d_])(?:" + _EXPIRY_WORDS + r")[ \t.:=]*((?:0[1-9]|1[0-2])[ \t]?[/-][ \t]?(?:20)?[0-9]{2})"
                  r"(?![0-9/])")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        done = 0
        for card in _CARD_NUMBER_RE.finditer(text):
            if not _card_number(card.group(1)):
                continue
            for m in self._DATE.finditer(text, max(done, card.start() - 150), min(len(text), card.end() + 150)):
                done = m.end()
                yield m


#: a card's number as it is written: four groups of four (the last up to seven digits), or Amex's 4-6-5
#: (a card number may touch the words of a script written without spaces: "工资卡号6225 8840 …")
_CARD_NUMBER_RE = _Lazy(rf"(?<![^\W{_UNSPACED_LETTERS}])(?<!-)((?:[0-9]{{4}}[ -]?){{3}}[0-9]{{1,7}}"
                        rf"|[0-9]{{4}}[ -]?[0-9]{{6}}[ -]?[0-9]{{4,5}})(?![^\W{_UNSPACED_LETTERS}])(?!-)")
_CARD_WORDS_RE = _Lazy(r"(?i)card|visa|mastercard|amex|\bcvv|\bcvc|\bexp(?:iry|ires|iration)?\b|tarjeta|carte|karte"
                       r"|\bcarta\b|\bkaart\b|\bkarta\b|\bkort\b|kortti|بطاقة|כרטיס|카드|カード|thẻ"
                       r"|kartu|cart[ãa]o|карт|卡|diners|discover|maestro|\bjcb\b|unionpay|pasnummer")
_LOGIN_WORDS_RE = _Lazy(r"(?i)\blog[ -]?in\b|\bsign[ -]?in\b|\bcreds?\b|credential|\bpass|\baccount")
_LOADS_KEY_RE = _Lazy(r"(?i)\b(?:load|getKey|store|setKeyEntry|PBEKeySpec|KeyManagerFactory|init|password|passphrase)\b")
_ASSIGNMENT_RE = _Lazy(r"[A-Za-z_][\w.-]*=")
_LOGIN_CONTEXT_RE = _Lazy(r"(?i)pass|\bpw\b|\buser|\blogin|\baccount|\bcreds?\b|credential|secret|\bpin\b|\badmin")
_CODE_PATH_RE = _Lazy(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?:\(\))?")

#: a command-line argument that is a value: a word or a quoted string, never an option
_CLI_VALUE = r"(?!\[REDACTED)(?!-|''|\"\")([^\s\"'|;&]+|\"[^\"\n]*\"|'[^'\n]*')"

_FORMATS: list[tuple[str, tuple[str, ...], _Lazy | _Scan, int]] = [
    (
        "private-key",
        ("-----begin",),
        _Lazy(
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY[ A-Z]*-----[\s\S]*?(?:-----END[ A-Z0-9]*PRIVATE KEY[ A-Z]*-----|\Z)"
        ),
        0,
    ),
    # an END line whose BEGIN was cut away upstream: the key lines before it go too
    ("private-key", ("-----end",), _KeyTail(), 0),
    ("private-key", ("private-lines:",), _Lazy(r"Private-Lines:\s*\d+\s*(?:[A-Za-z0-9+/=]+(?![\w-])\s*)+(?:Private-MAC:[ \t]*[0-9a-fA-F]+)?"), 0),
    ("private-key", ("age-secret-key-",), _Lazy(r"AGE-SECRET-KEY-1[0-9A-Z]{20,}"), 0),
    # an app password in Google's shape (four groups of four lower-case letters) after a password's name on its line
    # (msmtp's "password abcd efgh ijkl mnop", "smtp_pass = …")
    ("password", ("pass", "pw"),
     _Lazy(r"(?im)^[ \t]*[\w.-]{0,40}?(?:pass|pw)[\w.-]{0,40}?[\"']?[ \t]*(?:[:=][ \t]*)?[\"']?([a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4})"
           r"[\"']?[ \t]*,?[ \t]*$"), 1),
    # an environment variable printed as a JSON string (docker inspect's Config.Env, a task definition): the whole
    # value to the closing quote, signs and all (a Django SECRET_KEY holds "(", ")", "=", "%", "&")
    ("secret", ("=",),
     _Checked(_Lazy(r"\"([A-Za-z_][A-Za-z0-9_]{1,80})=(?!\[REDACTED)([^\"\n\\]{6,300})\""),
              lambda m: _strong_name(m.group(1)) and not _skip_value(m.group(2)) and not _stands_in(m.group(2))), 2),
    # a row of a box-drawn listing of names and values with no header (railway variables, a TUI's table)
    ("secret", ("║", "┃", "│"),
     _Checked(_Lazy(r"(?m)^[ \t]*[║┃│][ \t]*([A-Za-z_][A-Za-z0-9_.-]{1,80})[ \t]*[│┃|][ \t]*(?!\[REDACTED)"
                    r"(\S{4,300}?)[ \t]*[║┃│][ \t]*$"),
              lambda m: _strong_name(m.group(1)) and not _skip_value(m.group(2)) and (
                  _password_like(m.group(2)) or _looks_random(m.group(2)) or _told(m.group(2)))), 2),
    # a conda channel's token (…anaconda.org/t/<token>/…), Bundler's credentials for a gem server
    # (`bundle config`: the host, then 'Set for …: "user:password"')
    ("secret", ("anaconda.org/t/", "anaconda.com/t/"), _Lazy(r"(?i)\banaconda\.(?:org|com)/t/([A-Za-z0-9-]{16,})/"), 1),
    ("password", ("set for",),
     _Lazy(r"(?m)^[a-z0-9-]+(?:\.[a-z0-9-]+)+[ \t]*\r?\n[ \t]*Set for [^\n]{1,200}?: \"(?!\[REDACTED)([^\"\n:]{1,100}:"
           r"[^\"\n]{1,200})\""), 1),
    # a REPL's answer to a secret setting it was asked for (Laravel tinker, PsySH): "> config('app.key')" then
    # '= "…"'
    ("secret", ("config(",),
     _Checked(_Lazy(r"(?m)^>[ \t]*config\(['\"]([\w.-]{1,80})['\"]\)[ \t]*\r?\n=[ \t]*\"(?!\[REDACTED)([^\"\n]{6,300})\""),
              lambda m: _config_named(m)), 2),
    # an Oracle Cloud pre-authenticated request (the link is the credential), an Akamai edge token's HMAC, a Bark
    # push key (api.day.app/<key>/…)
    ("secret", ("oraclecloud.com/p/",), _Lazy(r"(?i)\.oraclecloud\.com/p/([A-Za-z0-9_\-+=.]{20,})/n/"), 1),
    ("secret", ("hmac=",), _Lazy(r"(?i)(?:[~&?;]|\bhdnts=)[^\s\"'<>]{0,300}?[~&?;]hmac=([0-9a-f]{32,128})(?![0-9a-f])"), 1),
    ("secret", ("api.day.app/",), _Lazy(r"(?i)\bapi\.day\.app/([A-Za-z0-9]{16,32})(?=/|\b)"), 1),
    # the secret access key printed on the line of its key id (`aws iam create-access-key --output text|table`)
    ("aws-key", ("akia", "asia"),
     _Lazy(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b[^\n]{0,200}?(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"), 1),
    (
        "aws-key",
        ("akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "anpa", "anva", "aroa", "apka"),
        _Lazy(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[0-9A-Z]{16}\b"),
        0,
    ),
    ("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     _Lazy(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"), 0),
    ("gitlab-token", ("glpat-", "gldt-", "glptt-", "glrt-", "glsoat-", "glcbt-", "glimt-", "gr1348941"),
     _Lazy(r"\b(?:gl(?:pat|dt|ptt|rt|soat|cbt|imt)-|GR1348941)[A-Za-z0-9_\-]{20,}(?:\.[0-9a-z]{2}[0-9a-z]{7,})?"), 0),
    # an in-house key in the providers' style: acme_live_…, shop_prod_… (not Stripe's publishable pk_live_…)
    ("api-token", ("_live_", "_test_", "_prod_"),
     _Checked(_Lazy(r"\b(?!pk_|pub_|sk_|rk_)[a-z][a-z0-9]{1,20}_(?:live|test|prod)_([A-Za-z0-9]{24,})\b"),
              lambda m: _looks_random(m.group(1)) and not _HEX_RE.fullmatch(m.group(1))), 0),
    ("anthropic-key", ("sk-ant-",), _Lazy(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), 0),
    ("openai-key", ("sk-",), _Lazy(r"\bsk-(?!ant-)[A-Za-z0-9_\-]{20,}"), 0),
    ("stripe-key", ("_live_", "_test_"), _Lazy(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), 0),
    ("slack-token", ("xox", "xapp-"), _Lazy(r"\b(?:xox[abposrce]|xapp)-[A-Za-z0-9\-]{10,}"), 0),
    ("google-key", ("aiza",), _Lazy(r"\bAIza[0-9A-Za-z_\-]{35}"), 0),
    ("huggingface-token", ("hf_",), _Lazy(r"\bhf_[A-Za-z0-9]{30,}"), 0),
    ("npm-token", ("npm_",), _Lazy(r"\bnpm_[A-Za-z0-9]{36}"), 0),
    ("pypi-token", ("pypi-",), _Lazy(r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"), 0),
    ("sendgrid-key", ("sg.",), _Lazy(r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"), 0),
    ("mailgun-key", ("key-",), _Lazy(r"\bkey-[0-9a-zA-Z]{32}\b"), 0),
    ("mailchimp-key", ("-us",), _Lazy(r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"), 0),
    ("telegram-token", (":aa",), _Lazy(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}"), 0),
    ("google-refresh-token", ("1//0",), _Lazy(r"(?<![\w/])1//0[A-Za-z0-9_\-]{30,}"), 0),
    ("api-token", ("re_",), _Lazy(r"\bre_[A-Za-z0-9]{8}_[A-Za-z0-9]{24,}"), 0),  # Resend
    ("api-token", ("nral",), _Lazy(r"\b[a-z0-9]{6}[0-9a-f]{30}NRAL\b"), 0),  # New Relic license key

    # extended private keys (BIP32) and Wallet Import Format keys: base58 of their exact lengths
    ("private-key", ("prv",), _Lazy(r"\b[xtyzuv]prv[1-9A-HJ-NP-Za-km-z]{100,112}\b"), 0),

    ("api-token", (".atlasv1.",), _Lazy(r"\b[A-Za-z0-9]{10,}\.atlasv1\.[A-Za-z0-9_\-=]{40,}"), 0),
    # a webhook's key in its path: Mattermost and Rocket.Chat /hooks/<key>, Zapier /hooks/catch/<n>/<key>,
    # IFTTT /with/key/<key>, Feishu's and Lark's /bot/v2/hook/<id>, any /webhook(s)/…/<random>
    ("webhook-url", ("/hooks/", "/hook/", "/with/key/", "/webhook"),
     _Checked(_Lazy(r"(?i)(?:/hooks?/(?:catch/[0-9]+/)?|/with/key/|/webhooks?/(?:[\w-]{1,40}/){0,3}?)"
                    r"(?!\[REDACTED)([A-Za-z0-9_-]{7,}(?:/[A-Za-z0-9_-]{7,})*)/?"),
              lambda m: any(_looks_random(p) or len(p) >= 20 and not p.isalpha() for p in m.group(1).split("/"))), 1),
    ("secret", ("::add-mask::",), _Lazy(r"::add-mask::(?!\[REDACTED)([^\s\"']+)"), 1),
    # an OAuth authorization code in a callback's query (a web server's log, a browser's address bar): exchanged for
    # tokens, it is a credential until it expires
    ("secret", ("code=",),
     _Checked(_Lazy(r"[?&](?:code|auth_code|authorization_code)=(?!\[REDACTED)([^&\s#\"'<>]{20,})"),
              lambda m: _looks_random(m.group(1))), 1),
    # a key in a query string under a name no rule knows as a secret's: ?appid=…, &key=…
    ("secret", ("appid=", "app_id=", "key=", "apikey=", "auth=", "pass=", "pwd=", "passwd=", "password=", "secret=",
                "token="),
     _Checked(_Lazy(r"(?i)[?&](?:appid|app_id|key|apikey|api_key|access_key|auth_key|license_key|client_key|auth|"
                    r"password|passwd|pass|pwd|secret|token|access_token)=(?!\[REDACTED)([^&\s#\"'<>]{8,})"),
              lambda m: _looks_random(m.group(1)) or _password_like(m.group(1))), 1),
    ("webhook-url", ("hooks.slack.com/", "/api/webhooks/", "webhook.office.com/", "/webhookb2/"),
     _Lazy(r"(?i)(?:hooks\.slack\.com/(?:services|workflows|triggers)/|/api/webhooks/[0-9]+/|/webhookb2/)"
                r"([A-Za-z0-9_\-/@]{8,})"), 1),
    ("azure-key", ("accountkey", "sharedaccesskey", "primarykey", "secondarykey"),
     _Lazy(r"(?i)\b(?:AccountKey|SharedAccessKey|PrimaryKey|SecondaryKey)\s*=\s*(?!\[REDACTED)([^;\s\"'<>]+)"),
     1),
    ("sas-signature", ("sig=",), _Lazy(r"(?i)\bsig=(?!\[REDACTED)([^&\s\"'<>;]{8,})"), 1),
    ("jwt", ("eyj",), _Checked(_Lazy(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
                               lambda m: not m.group(0).endswith(_JWT_IO_SIGNATURE)), 0),
    ("bearer-token", ("bearer",), _Checked(_Lazy(r"(?i)\bbearer\\?[ \t]+(?!\[REDACTED)([A-Za-z0-9._~+/\-]{8,}=*)"),
                                           lambda m: not _plain_word(m.group(1))), 1),
    ("bearer-token", ("authorization",),
     _Checked(_Lazy(r"(?i)(?:\b|(?<=\\[nrt]))authorization[\"']?(?:\s*[:=]\s*\[?\s*|[ \t]+)[\"']?(?!\[REDACTED)(?:(?:basic|bearer|token|"
                    r"digest|apikey|key|sso-key|otoken|splunk|ssws|klaviyo-api-key)\s+)?([A-Za-z0-9+/=_.~:-]{16,})"
                    r"(?=[\"'\s;,]|\\[rn]|$)"), _random_with_digit(1)),
     1),
    ("bearer-token", ("authorization",), _Lazy(
        r"(?i)(?:\b|(?<=\\[nrt]))authorization[\"']?[ \t]*[:=][ \t]*[\"']?[A-Za-z][\w.\-]{0,30}[ \t]+"
        r"(?!\[REDACTED)([^\s\"',;]{6,})"), 1),
    (
        "connection-string",
        ("://",),
        _ConnectionString(),
        1,
    ),
    # a token as the whole user part (`https://<PAT>@dev.azure.com/…`, `https://<token>:x-oauth-basic@github.com`):
    # long, and mixing letters and digits as no user name does
    ("connection-string", ("://",),
     _Checked(_Lazy(r"\b[A-Za-z][A-Za-z0-9+.\-]{1,15}://(?!\[REDACTED)([A-Za-z0-9_\-.~]{20,200})"
                    r"(?=@[A-Za-z0-9\[]|:(?:x-oauth-basic|x-token-auth|\[REDACTED)?[^\s@]{0,40}@)"),
              _random_with_digit(1)), 1),
    (
        "password",
        ("-u", "--user"),
        # curl -u user:pass, --user user:pass, --proxy-user, smbclient -U user%pass
        _Checked(_Lazy(r"(?<![\w-])(?:-u\s*|-U\s+|--(?:proxy-)?user[= ]\s*)[\"']?[^\s:%\"'/]+[:%]"
                   r"(?!\[REDACTED)([^\s\"']+)"), _user_password),
        1,
    ),
    ("password", ("mysql", "mariadb"),
     _Command(r"(?i)\b(?:mysql|mariadb|mysqldump|mysqladmin|mysqlimport|mysqlsh)\b",
              r"(?i)\s-p(?!\[REDACTED)([^\s\"']+|\"[^\"]*\"|'[^']*')"), 1),
    ("password", ("redis-cli",),
     _Command(r"\bredis-cli\b", r"\s-a\s+(?!\[REDACTED)([^\s\"']+|\"[^\"]*\"|'[^']*')"), 1),
    ("password", ("sshpass", "-storepass", "-keypass", "-srcstorepass", "-deststorepass"),
     _Lazy(r"(?:\bsshpass\s+-p\s*|\s-(?:store|key|srcstore|deststore)pass\s+)"
           r"(?!\[REDACTED)([^\s\"']+|\"[^\"]*\"|'[^']*')"), 1),
    ("password", ("login",),
     _Command(r"\b(?:docker|podman|buildah|helm|oras|skopeo|nerdctl)\s+(?:registry\s+)?login\b",
              r"\s-p\s+(?!\[REDACTED)([^\s\"'|]+|\"[^\"\n]*\"|'[^'\n]*')"), 1),
    ("password", ("ldap",),
     _Command(r"\bldap\w*\b", r"\s-w\s+(?!\[REDACTED)([^\s\"'|]+|\"[^\"\n]*\"|'[^'\n]*')"), 1),
    ("password", ("--password-stdin", "sudo", "chpasswd", "--stdin", "load-key", "secret put", "secret create",
                  "secrets create",
                  "secret set", "secrets set", "secret add", "secrets add", "versions add", "env add",
                  "--passphrase-fd", "cryptsetup", "--key-file", "--data-file", "--from-file", "login", "kinit",
                  "token add", "smbpasswd", "stdin", "systemd-creds"), _Piped(), 2),
    ("password", ("/user:", "--with-token"),
     _Lazy(r"(?:\s/user:\S+[ \t]+|--with-token[ \t]*<<<[ \t]*)(?!\[REDACTED)([^\s\"'|]+|\"[^\"\n]*\"|'[^'\n]*')"), 1),
    # htpasswd -b[c] FILE USER PASSWORD; htpasswd -nb USER PASSWORD (-n prints the line instead of writing a file)
    ("password", ("htpasswd",), _Checked(_Lazy(rf"\bhtpasswd((?:[ \t]+-[A-Za-z]+(?:[ \t]+[0-9]+)?)+)(?:[ \t]+[^\s-]\S*){{2}}[ \t]+{_CLI_VALUE}"),
                                         lambda m: "b" in m.group(1) and "n" not in m.group(1)), 2),
    ("password", ("htpasswd",), _Checked(_Lazy(rf"\bhtpasswd((?:[ \t]+-[A-Za-z]+(?:[ \t]+[0-9]+)?)+)[ \t]+[^\s-]\S*[ \t]+{_CLI_VALUE}"),
                                         lambda m: "b" in m.group(1) and "n" in m.group(1)), 2),
    # Postfix's sasl_passwd, msmtp, a login list: an address and a Google app password (four groups of four letters)
    ("password", ("@",), _Lazy(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+:[ \t]?([a-z]{4}(?: [a-z]{4}){3})(?![\w])"), 1),
    ("password", ("login(", "auth(", "connect(", "authenticate(", "password("),
     _Checked(_Lazy(r"(?i)(?<!get_)(?<!delete_)(?<!get)(?<!delete)(?:login|auth|connect|authenticate|password)\("
                    r"\s*(?:[\w.]+\s*=\s*)?([\"'])([^\"'\n]*)\1"
                    r"\s*,\s*(?:[\w.]+\s*=\s*)?([\"'])(?!\[REDACTED)([^\"'\n]+)\3(?!\s*,\s*[\"'])"),
              lambda m: not (m.group(4).isdigit() or any(c in m.group(2) for c in ":=/;")
                             or _EMAIL_RE.fullmatch(m.group(4)) or m.group(0)[:7].lower() == "connect" and not (
                                 m.string[m.end() : m.end() + 40].lstrip().startswith(")")))), 4),
    # connect("dbi:Pg:dbname=app", "app", "…"), MySQLdb.connect("db1", "app", "…", "crm"), new Sequelize(db, user, "…"):
    # a DSN, a host or a database, a user, then the password (Oracle's oci_connect takes the password second)
    ("password", ("connect(", "sequelize(", "authenticate("),
     _Checked(_Lazy(r"(?i)(?<!oci_)(?<!oci_p)(?:connect|sequelize|authenticate)\(\s*([\"'])[^\"'\n]*\1\s*,\s*([\"'])[^\"'\n]*\2\s*,"
                    r"\s*([\"'])(?!\[REDACTED)([^\"'\n]+)\3"),
              lambda m: not (m.group(4).isdigit() or _EMAIL_RE.fullmatch(m.group(4)))), 4),
    # smtplib's, ftplib's, imaplib's login(user, "…"): the user given by a variable
    ("password", (".login(", ".authenticate("),
     _Checked(_Lazy(r"\.(?:login|authenticate)\(\s*[A-Za-z_][\w.]*\s*,\s*(?:[\w.]+\s*=\s*)?([\"'])"
                    r"(?!\[REDACTED)([^\"'\n]+)\1\s*\)"), lambda m: not m.group(2).isdigit()), 2),
    ("api-token", ("access_token$",),
     _Lazy(r"\baccess_token\$(?:production|sandbox|development)\$[0-9a-z]{16}\$[0-9a-f]{32}\b"), 0),
    ("password", ("password", "identified"),
     _Lazy(r"(?i)(?:\bwith\s+(?:encrypted\s+|unencrypted\s+)?password|\bidentified\s+(?:with\s+\w+\s+)?by"
           r"|\bpassword\s*\()\s*(?:=\s*)?([\"'])(?!\[REDACTED)([^\"'\n]+)\1"), 2),
    # .netrc: a password in any order after its machine (or default) entry, on the line or the lines below it
    ("password", ("-u", "--user"),
     _Checked(_Lazy(r"(?<![\w-])-(?:u|U|-user(?:name)?)[ =][ \t]*[^\s-][^\s]{0,80}[ \t]+(?:[^\n|;&-][^\n|;&]{0,200}?[ \t])?"
                    r"(?:--pass(?:word)?(?:[ =][ \t]*)|-[pP](?:[ =][ \t]*|(?=[^\s-])))(?!\[REDACTED)"
                    r"([^\s\"'|;&]+|\"[^\"\n]*\"|'[^'\n]*')"),
              lambda m: _mixed(m.group(1).strip("\"'")) and not re.fullmatch(r"[0-9:.]+", m.group(1))
              and not _stands_in(m.group(1))), 1),
    ("api-token", ("-u", "--user"),
     _Checked(_Lazy(r"(?<![\w-])(?:-u|--user)[ =][ \t]*[\"']?(?!\[REDACTED)([A-Za-z0-9_.-]{16,}):"),
              _random_with_digit(1)), 1),
    # a key given after its user as -a (saucectl configure -u NAME -a KEY): random, as no file name or path is
    ("secret", ("-a",),
     _Checked(_Lazy(r"(?<![\w-])-u[ =][ \t]*[^\s-]\S{0,80}[ \t]+(?:[^\s|;&]+[ \t]+){0,4}?-a[ =][ \t]*(?!\[REDACTED)"
                    r"([A-Za-z0-9_.-]{16,})(?![^\s|;&])"),
              _random_with_digit(1)), 1),
    # a secret stored by a CLI as its last argument: civo apikey save NAME KEY, … token add NAME TOKEN
    ("secret", ("key", "token", "secret", "password", "credential"),
     _Checked(_Lazy(r"(?<![\w-])(?:api-?keys?|apikeys?|tokens?|secrets?|passwords?|credentials?|authtoken|access-?keys?)"
                    r"[ \t]+(?:save|add|set|store|create|import|put|update|register)[ \t]+(?:[^\s|;&-][^\s|;&]*[ \t]+){0,2}?"
                    r"(?!\[REDACTED)(?!-)([^\s|;&\"']{8,}|\"[^\"\n]{8,}\"|'[^'\n]{8,}')[ \t]*(?=$|[|;&\n])", re.MULTILINE),
              lambda m: _random_or_strong(m.group(1).strip("\"'"))), 1),
    # config set NAME VALUE / NAME=VALUE, where NAME names a secret: pulumi, snyk, atlas, npm, yarn, …
    ("secret", ("config set",),
     _Checked(_Lazy(r"\bconfig\s+set\s+(?:--\S+\s+)*([\w.:/-]+?)(?:=|\s+)([\"']?)(?!\[REDACTED)([^\s\"']+)\2"),
              lambda m: (_strong_name(re.split(r"[.:/]", m.group(1))[-1]) or _looks_random(m.group(3))
                         and any(c.isdigit() for c in m.group(3)) and "://" not in m.group(3))
              and not _stands_in(m.group(3))), 3),
    # --name dbPassword … --value '…' (az pipelines variable create, a CLI that stores a named value)
    ("secret", ("--value",),
     _Checked(_Lazy(r"--(?:name|key)[ =]([\w.:/-]{1,80})(?:(?!--(?:name|key)[ =])[^\n|;&]){0,200}?\s--value[ =][ \t]*"
                    r"(?!\[REDACTED)"
                    r"([^\s\"'|;&]+|\"[^\"\n]*\"|'[^'\n]*')"),
              lambda m: _strong_name(re.split(r"[.:/]", m.group(1))[-1]) and not _stands_in(m.group(2))), 2),
    # -t/--token <random> in any command (a CI uploader's token)
    ("secret", ("-t", "--token"),
     _Checked(_Lazy(r"(?<![\w-])(?:-t|--token)[ =][ \t]*(?!\[REDACTED)([A-Za-z0-9_-]{20,})(?![\w./:@-])"),
              _random_with_digit(1)), 1),
    # a key in a URL's path after a version (/v2/<key>, /v3/<key>): Infura, Alchemy and other RPC providers
    ("secret", ("/v",),
     _Checked(_Lazy(r"://[^\s/\"'<>]+(?:/[^\s/\"'<>]+)*?/v[0-9]+/(?!\[REDACTED)([A-Za-z0-9_-]{24,64})(?![\w-])"),
              lambda m: _looks_random(m.group(1)) and any(c.isdigit() for c in m.group(1))
              and not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", m.group(1))), 1),
    # a PIN told in a sentence: "the PIN for the HSM card is 53366147"
    ("password", ("pin",),
     _Lazy(r"\b(?:PIN|[Pp]in code|PIN code|PIN-Code|passcode)\b[^\n]{0,40}?(?:\bis|:)[ \t]*(?!\[REDACTED)([0-9]{4,12})\b"), 1),
    # a value stored under a key named for a secret: set("…", forKey: "adminPassword")
    ("password", ("key:", "for:", "account:"),
     _Checked(_Lazy(r"([\"'])(?!\[REDACTED)([^\"'\n]{4,200})\1\s*,\s*(?:forKey|key|for|account|name)\s*:\s*([\"'])"
                    r"([\w.-]{1,80})\3"), lambda m: _strong_name(m.group(4)) and not _skip_value(m.group(2))), 2),
    # a secret store's value flag: … secret … --value/--data/--secret-string …
    ("secret", ("secret",),
     _Lazy(r"(?i)(?:\bsecrets?\b|--secret\b)[^\n|;&]{0,200}?\s--(?:value|data|secret-value|secret-string|body)"
           r"[ =][ \t]*(?!\[REDACTED)([^\s\"'|;&]+|\"[^\"\n]*\"|'[^'\n]*')"), 1),
    # a typed declaration: var dbPassword string = "…", param adminPassword string = '…' (Go, Bicep)
    ("password", ("string", "str"),
     _Checked(_Lazy(r"\b([A-Za-z_]\w*)[ \t]+(?:string|String|str|secureString|SecureString)[ \t]*=[ \t]*([\"'`])"
                    r"(?!\[REDACTED)([^\"'`\n]+)\2"), lambda m: _strong_name(m.group(1)) and not _skip_value(m.group(3))), 3),
    # a call named for a secret takes it as a literal: setPassword("…"), basic_auth("admin", Some("…")),
    # Credentials.basic("u", "…"), PlainAuth("", "user", "…", host), fromPassword('admin', …('…'))
    ("password", ("password", "secret", "token", "auth", "basic", "credential", "key(", "pw"), _SecretCall(), 2),
    # a CloudFormation/SAM parameter named for a secret, with a Default
    ("password", ("default",), _ParamDefault(), 2),
    # Ruby: ENV.fetch("DB_PASSWORD") { "…" } / ENV.fetch("DB_PASSWORD", "…")
    ("password", ("env.fetch(",),
     _Checked(_Lazy(r"ENV\.fetch\(\s*[\"']([A-Za-z_][\w.-]{0,80})[\"']\s*(?:,\s*|\)\s*\{\s*)([\"'])"
                    r"(?!\[REDACTED)([^\"'\n]+)\2"), lambda m: _strong_name(m.group(1))), 3),
    ("password", ("machine", "default"),
     _Lazy(r"(?m)(?:^|[\"'])[ \t]*(?:machine\s+\S+|default)\b(?:[ \t]+(?!password\b)\S+|\s*\n[ \t]+(?!password\b)"
           r"(?:login|account|port|macdef)\b[^\n]{0,200}){0,6}?\s+password\s+(?!\[REDACTED)(\S+)"), 1),
    # a prompt answered in place: "AWS Secret Access Key [None]: …", "Password for 'https://…': …"
    ("password", ("secret access key", "session token"),
     _Lazy(r"(?i)\b(?:secret access key|session token)(?:\s*\[[^\]\n]{0,40}\])?[ \t]*:[ \t]*"
           r"(?!\[REDACTED)(?!None\b)([A-Za-z0-9/+=]{16,})"), 1),
    # a row of two columns, a secret's name and its value: `vault kv get`, a Markdown table, TSV, `key  value`
    ("password", ("pass", "pwd", "secret", "token", "key", "credential"),
     _Checked(_Lazy(r"(?m)^[ \t]*[|│]{0,2}[ \t]*([A-Za-z][\w.-]{1,40}(?: [A-Za-z][\w.-]{1,30})?)[ \t]*"
                    r"(?:[|│][ \t]*|[ \t]{2,}|\t[ \t]*)(?!\[REDACTED)([^\s|│]{4,200})[ \t]*[|│]{0,2}[ \t]*$"),
              lambda m: _table_secret(m)), 2),
    # a secret's fallback in code: process.env.API_TOKEN || '…', os.environ.get("DB_PASSWORD", "…"), os.getenv(…)
    ("password", ("process.env", "environ.get(", "getenv(", "env::var("),
     _Checked(_Lazy(r"(?:process\.env\.([A-Za-z_][\w]{0,80})\s*(?:\|\||\?\?)=?\s*"
                    r"|(?:environ\.get|getenv|Getenv|env::var)\(\s*[\"']([A-Za-z_][\w.-]{0,80})[\"']\s*"
                    r"(?:,\s*|\)\s*,\s*|\)\s*(?:\.unwrap_or(?:_else)?\((?:\|[^|\n]{0,20}\|\s*)?|\?\?\s*|\|\|\s*|or\s+)))"
                    r"([\"'`])(?!\[REDACTED)([^\"'`\n]{1,300})\3"),
              lambda m: _names_a_secret(m.group(1) or m.group(2), m.group(4))), 4),
    # base64 of a JSON object with no dots (a Cloudflare tunnel token, a Grafana key): a token, not a JWT
    ("api-token", ("eyj",), _Lazy(r"(?<![\w.+/-])eyJ[A-Za-z0-9+/_-]{56,}={0,2}(?![\w.+/=-])"), 0),
    # cookies: a long random value in a Cookie or Set-Cookie header
    ("secret", ("cookie:", "cookie\"", "cookie'", "--cookie", "-b "), _CookiePairs(), 1),
    # Terraform: variable "db_password" { default = "…" }
    ("password", ("variable",),
     _Checked(_Lazy(r"\bvariable\s+\"([^\"\n]{1,80})\"\s*\{[^{}]{0,400}?\bdefault\s*=\s*\"(?!\[REDACTED)([^\"\n]+)\""),
              lambda m: _names_a_secret(m.group(1), m.group(2), strong=False)), 2),
    # a Dockerfile's legacy ENV NAME VALUE
    ("password", ("env ",),
     _Checked(_Lazy(r"(?m)^[ \t]*ENV[ \t]+([A-Za-z_][\w.-]{0,80})[ \t]+(?!\[REDACTED)([^\s=][^\n]{0,300}?)[ \t]*$"),
              lambda m: _names_a_secret(m.group(1), m.group(2))), 2),
    # a function key or an OAuth code in a query string (Azure Functions' ?code=, a redirect's ?code=)
    ("secret", ("code=",), _Lazy(r"[?&]code=(?!\[REDACTED)([A-Za-z0-9_\-%=.~]{20,})"), 1),
    # prose: "my password for the staging DB is …", "the passphrase: '…'", "pw …"
    ("password", _fewest_anchors(_PASSWORD_WORDS_ANY + _PASSWORD_WORDS_BARE, _PASSWORD_STEMS), _PasswordTold(), 1),
    ("secret", _TOKEN_WORDS, _TokenNearby(), 1),
    ("password", ("wifi", "wi-fi", "wlan", "wpa", "netw", "netzwerk", "hotspot", "ssid", "réseau", "de red", "сети",
                  "сеть", "route", "psk"), _NetworkKey(), 1),
    ("password", ("pin", "пин", "puk", "пук", "暗証番号", "비밀번호", "पिन", "পিন", "પિન", "ਪਿੰਨ", "رمز", "keypad", "lockbox",
                  "key safe", "keysafe", "key box", "keybox", "code", "comb", "kod", "код", "código",
                  "codice", "koodi", "kód", "kombina", "комбинаци", "geheim", "szyfr", "şifresi", "κωδικός", "金庫",
                  "密码锁", "门禁", "도어락"), _PinNearby(), 1),
    ("password", ("code", "otp", "tan ", "tan:", "token", "pin", "pass", "kullanımlık", "kod", "код", "código", "codice", "koodi", "kód", "kode", "mã",
                  "κωδικός", "コード", "ワンタイム", "验证码", "驗證碼", "动态码", "校验码", "인증", "확인", "सत्यापन",
                  "ओटीपी", "رمز التحقق", "کد تا", "קוד אימות", "รหัส", "yanzheng", "injeung", "ninsho"), _OneTimeCode(), 1),
    ("password", ("sms", "смс", "text", "mobil", "móvil", "celular", "whatsapp", "telefon", "телефон", "handy"),
     _CodeBySms(), 1),
    ("password", ("cod", "kod", "код", "código", "otp"), _AccessCode(), 1),
    ("password", ("dash", "hyphen", "minus", "underscore", "dot", "period", "slash", "hash", "tiret", "point",
                  "at sign", "arobase", "apenstaartje", "podkreślenie",
                  "streepje", "punt", "strich", "punkt", "guion", "guión", "trattino", "myślnik", "kropka", "тире",
                  "дефис", "точка", "traço", "hífen", "ponto", "underline", "bindestre", "viiva"), _Dictated(), 0),
    ("password", ("not found", "not recognized", "unknown command"), _TypedAtShell(), 1),
    ("password", ("same",), _ToldByContext(_SAME_RE), 1),
    ("password", ("letzte", "dernière fois", "d'habitude", "última vez", "siempre", "sempre", "ultima volta",
                  "ostatnio", "прошлый раз", "как обычно", "как раньше", "legutóbb", "geçen sefer", "aynısı",
                  "前回と同じ", "上次一样", "지난번과 같은"), _ToldByContext(_SAME_OTHER_RE), 1),
    ("password", ("prompt",), _ToldByContext(_PROMPT_RE, _PROMPT_BEFORE_RE, secret=True), 1),
    ("password", ("security", "secret", "memorable", "maiden", "frage", "question", "gunta", "domanda", "otázk",
                  "вопрос", "bezpieczeństwa", "güvenlik", "秘密の質問", "安全问题", "密保问题", "질문", "fråga",
                  "spørgsmål", "spørsmål", "kérdés"),
     _SecurityAnswer(), 1),
    ("password", ("otp", "code", "-mfa", "-2fa"), _OTP_FLAG_RE, 1),
    ("password", ("code", "kod", "código", "codice", "otp", "tan ", "tan:", "pin"), _CODE_FIRST_RE, 1),
    ("password", ("pass", "pw", "passwort", "kennwort", "mot de passe", "contraseña", "senha", "пароль", "wachtwoord",
                  "parola", "hasło", "lösenord", "salasana", "heslo", "şifre", "密码", "パスワード", "비밀번호"),
     _prose(r"password|passphrase|passwd|pw|passwort|kennwort|mot de passe|contraseña|senha|пароль|wachtwoord|parola"
            r"|hasło|lösenord|salasana|heslo|şifre|密码|パスワード|비밀번호", r"[ \t]*[:=：]|(?=[ \t])", 6), 2),
    # "the auth token for the registry: …", "API token is …", "webhook secret = …": a token is long
    ("secret", ("token", "secret", "key", "cred"),
     _prose(r"token|secret|(?:api|access|secret|license|private|app)[ \t_-]?key|creds|credentials", r"[ \t]*:", 12,
            code=False), 2),
    # "here's my api key …", "login succeeded with token …": a random value right after the words
    ("secret", ("key", "token"),
     _Checked(_Lazy(r"(?i)\b(?:api[ \t_-]?key|access[ \t_-]?key|token)[ \t]+"
                    r"([\"'`]?)(?!\[REDACTED)([A-Za-z0-9+/=_.~-]{16,4096})\1(?![\w])"),
              _random_with_digit(2)), 2),
    # "use … as the password", "… is the new root password": the value before the words
    ("password", (" as ", " is "), _ValueBefore(), 2),
    # "I reset it to …", "changed the admin password to …": a new password told on a line about a login
    ("password", ("reset ", "changed ", "change ", "set it ", "rotated ", "updated "),
     _Checked(_Lazy(r"(?i)\b(?:reset|changed?|set|rotated?|updated?)[ \t]+(?:it|(?:the|his|her|their|my|your|our)"
                    r"(?:[ \t]+[\w-]+){0,2}?[ \t]+(?:password|pw|passphrase|pin|passcode))[ \t]+(?:back[ \t]+)?to[ \t]+"
                    r"([\"'`]?)(?!\[REDACTED)([^\s\"'`]{6,128}?)\1(?=[.,;!?)]?(?:\s|$))"),
              lambda m: _strong_password(m.group(2), strict=False) and _near(_LOGIN_CONTEXT_RE, m, 200)), 2),
    # a login told as user and password: "creds are admin / …", "login for the router is admin:…", "(admin / …)"
    ("password", ("cred", "login", "log in", "sign in", "username", "admin", "basic"),
     _Checked(_Lazy(r"(?i)\b(?:creds|credentials|login|log[ \t]?in|sign[ \t]?in|username|admin|basic[ \t-]?auth)\b"
                    r"[^\n]{0,60}?"
                    r"[\s(][\"'`]?[\w.@+-]{1,40}[\"'`]?(?:[ \t]*/[ \t]*|:)[\"'`]?(?!\[REDACTED)([^\s/:)\"'`]{6,128}?)"
                    r"[\"'`]?(?=[.,;!?)]?(?:\s|$))"),
              lambda m: _mixed(m.group(1)) and any(c.isdigit() for c in m.group(1)) and not m.group(1).isdigit()
              and not m.group(1).startswith("-") and not _skip_value(m.group(1))
              and not _FILE_NAME_RE.search(m.group(1))), 1),  # login.defs.5.xml, man/pwck.8.xml: files
    # on a line about a login: "old: … new: …", "temp pw = …", "(admin / …)", "same as the db one (…)"
    ("password", ("old", "new", "current", "temp", "previous"),
     _Checked(_Lazy(r"(?i)\b(?:old|new|current|temp(?:orary)?|previous)(?:[ \t]+(?:one|pw|pass(?:word)?))?[ \t]*"
                    r"[:=][ \t]*(?!\[REDACTED)([^\s()\"'`]{6,64}?)[.,;]?(?=\s|$)"),
              lambda m: _told_pair(m.group(1)) and _near(_LOGIN_CONTEXT_RE, m, 200)), 1),
    ("password", ("(",),
     _Checked(_Lazy(r"\((?<![^\s\"'`]\()(?:[\w.@+-]{1,40}[ \t]*/[ \t]*)?(?![@#\[])(?!REDACTED)([^\s()\"'`]{6,64}?)\)"),
              lambda m: _told_pair(m.group(1)) and not _REF_RE.search(m.group(1)) and _near(_LOGIN_CONTEXT_RE, m, 200)),
     1),
    # .pgpass: host:port:database:user:password (a host with a letter, a dot or *; a port or *), a line or quoted
    ("password", (":5432:", ":*:", ":6432:", ":5433:"),
     _Lazy(r"(?m)(?:^|(?<=\s))[^\s:#\"'`]*[A-Za-z.*][^\s:#\"'`]*:(?:[0-9]{1,5}|\*):[^\s:]+:[^\s:]+:(?!\[REDACTED)"
           r"([^\s:]+?)[.,;]?(?=\s|$)"),
     1),
    # Oracle user/password@db and Go's user:password@tcp(…): a login without a scheme
    ("password", ("@tcp(", "@unix("),
     _Lazy(r"\b[\w.-]{1,64}:(?!\[REDACTED)([^\s\"'@:/]{1,128})@(?:tcp|unix)\("), 1),
    ("password", (":thin:",), _Lazy(r":thin:[\w.-]{1,64}/(?!\[REDACTED)([^\s\"'@/]{1,128})@"), 1),
    ("password", ("convertto-securestring",),
     _Lazy(r"(?i)ConvertTo-SecureString\s+(?:-String\s+)?([\"'])(?!\[REDACTED)([^\"'\n]+)\1"), 2),
    ("password", ("pass:",), _Lazy(r"(?i)(?:-pass(?:in|out)?|-passwd|-k)\s+[\"']?pass:(?!\[REDACTED)([^\s\"']+)"),
     1),
]

#: calls that take a secret at a known place (0 the first argument): a literal there is masked, a variable is not;
#: the flag says only a random-looking literal is
_CALL_SECRETS: tuple[tuple[str, tuple[str, ...], str, int, bool], ...] = (
    ("secret", ("client(",), r"\bClient", 1, True),  # twilio's Client(account_sid, auth_token): a random literal only
    ("secret", ("jwt.encode(", "jwt.sign(", "jwt.verify(", "jwt.decode("), r"\bjwt\.(?:encode|sign|verify|decode)", 1,
     False),
    ("password", ("oci_connect(", "oci_pconnect(", "ocilogon("), r"\b(?:oci_p?connect|ocilogon)", 1, False),
    ("password", ("set_password(",), r"\bset_password", 2, False),  # keyring.set_password(service, user, password)
    ("password", ("ldap_bind(",), r"\bldap_bind", 2, False),  # PHP: ldap_bind($link, $dn, password)
    ("password", ("mysql_real_connect(",), r"\bmysql_real_connect", 3, False),  # (conn, host, user, password, db…)
    # a wallet built from a private key literal: new ethers.Wallet("0x…"), privateKeyToAccount("0x…"),
    # Account.from_key("0x…"), Keypair.fromSecretKey(…)
    ("private-key", ("wallet(", "privatekeytoaccount(", "from_key(", "fromprivatekey(", "fromsecretkey("),
     r"(?:\bnew\s+(?:[\w.]+\.)?Wallet|\bprivateKeyToAccount|\.from_key|\.fromPrivateKey|\.fromSecretKey)", 0, True),
    ("secret", ("hmac.new(",), r"\bhmac\.new", 0, False),
    ("password", ("getconnection(",), r"\bgetConnection", 2, False),  # JDBC (url, user, password)
    ("password", ("mysqli_connect(", "new mysqli("), r"\b(?:mysqli_connect|new\s+mysqli)", 2, False),
    ("password", ("pdo(", "pdo->__construct("), r"\b(?:new\s+PDO|PDO->__construct)", 2, False),
    ("password", ("networkcredential(",), r"\bNetworkCredential", 1, False),
    ("secret", ("clientsecretcredential(",), r"\bClientSecretCredential", 2, False),
    ("secret", ("algoliasearch(", "searchclient.create("), r"\b(?:algoliasearch|SearchClient\.create)", 1, False),
    ("secret", ("basicauth(", "httpbasicauth("), r"\b(?:HTTPBasicAuth|BasicAuth)", 1, False),
    ("secret", ("totp(", "hotp("), r"\b(?:TOTP|HOTP)", 0, False),  # pyotp's TOTP('<base32 seed>')
    # a session cookie set in code: cookies.set('sid', '<random>'), res.cookie('sid', …), set_cookie('sid', …)
    ("secret", ("cookies.set(", "cookies.add(", ".cookie(", "set_cookie(", "setcookie("),
     r"(?:\bcookies\.(?:set|add)|\.cookie|\bset_cookie|\bsetCookie|\bsetcookie)", 1, True),
)
_FORMATS.extend((kind, anchors, _CallArgument(callee, index, random), 2)
                for kind, anchors, callee, index, random in _CALL_SECRETS)

#: commands and the option (or the words) after which they take a password or a token; each matched within the
#: command's segment by :class:`_Command`, so a table row costs one search per segment
_CLI_SECRETS: tuple[tuple[str, str, str], ...] = (
    ("password", "mongosh mongo mongodump mongorestore mongoexport mongoimport mongostat", r"\s(?:-p|--password)[ =]\s*"),
    ("password", "sqlcmd bcp", r"\s-P\s*"),
    ("password", "xfreerdp wlfreerdp sdl-freerdp", r"\s[/-]p:"),
    ("password", "openssl", r"\s-k\s+"),
    ("password", "zip unzip zipcloak", r"\s-P\s+"),
    ("password", "7z 7za 7zz 7zr unrar rar", r"\s-p(?=\S)"),
    ("password", "vmrun", r"\s-gp\s+"),
    ("secret", "virsh", r"\ssecret-set-value\s+(?:--secret\s+\S+\s+)?(?:--base64\s+|--value\s+)?(?:--secret\s+\S+\s+)?"),
    ("password", "az", r"\s(?:-p|--password)[ =]\s*"),
    ("password", "ssh-keygen", r"\s-[NP]\s+"),
    ("password", "rabbitmqctl", r"\s(?:add_user|change_password|authenticate_user)\s+\S+\s+"),
    ("password", "net", r"\suser\s+[^\s/]+\s+"),
    ("password", "mysqladmin", r"\spassword\s+"),
    ("password", "nmcli", r"\spassword\s+"),
    ("password", "sqlplus expdp impdp rman", r"\s[^\s/@]+/"),
    ("secret", "vault", r"\slogin\s+(?:-\S+\s+)*"),
    ("secret", "cargo", r"\slogin\s+"),
    ("secret", "snyk", r"\sauth\s+"),
    ("secret", "aws", r"\sconfigure\s+set\s+(?:[\w.]*\.)?aws_(?:secret_access_key|session_token)\s+"),
    ("secret", "yc", r"\sconfig\s+set\s+token\s+"),
    # SNMP: v1/v2c's community string, v3's auth and privacy passphrases
    ("secret", "snmpwalk snmpbulkwalk snmpget snmpgetnext snmpbulkget snmpset snmptable snmptrap snmpinform "
               "snmpdf snmpstatus snmpnetstat snmpdelta", r"\s-[cAX]\s*"),
    ("password", "http https xh xhs", r"\s(?:-a|--auth)[ =]\s*(?:[^\s:\"']+:)?"),  # HTTPie: -a user:pass, -a token
    ("password", "lftp", r"\s-u\s+[^\s,]+,"),
    ("password", "grafana-cli", r"\sadmin\s+reset-admin-password\s+(?:--\S+\s+)*"),
    ("password", "cqlsh cypher-shell mycli pgcli usql isql", r"\s(?:-p|--password)[ =]?\s*"),
    ("secret", "codecov", r"\s(?:-t|--token)[ =]\s*"),
    ("secret", "confluent", r"\sapi-key\s+store\s+\S+\s+"),
    ("password", "rclone", r"\sobscure\s+"),
    ("password", "ipmitool", r"\s-P\s*"),
    ("password", "rabbitmqadmin twine", r"\s(?:-p|--password)[ =]\s*"),
    ("secret", "vercel netlify", r"\s(?:-t|--token|--auth)[ =]\s*"),
    ("secret", "wandb", r"\slogin\s+(?:--\S+\s+)*"),
    ("secret", "ngrok", r"\s(?:config\s+add-authtoken|authtoken)\s+"),
    ("password", "wpa_passphrase", r"\s(?:\"[^\"\n]*\"|'[^'\n]*'|\S+)\s+"),
    ("password", "poetry composer", r"\sconfig\s+(?:--\S+\s+)*http-basic\.\S+\s+\S+\s+"),
    ("secret", "poetry", r"\sconfig\s+pypi-token\.\S+\s+"),
    ("secret", "composer", r"\sconfig\s+(?:--\S+\s+)*(?:bearer|github-oauth|gitlab-token|gitlab-oauth|bitbucket-oauth)\.\S+\s+"),
    ("password", "bundle", r"\sconfig\s+(?:set\s+)?(?:--(?:global|local)\s+)?\S+\.\S+\s+[^\s:]+:"),
    # a secret stored by a CLI: gh secret set NAME -b …, glab variable set --value …, az keyvault secret set
    # --value …, aws ssm put-parameter --value …, kubectl create secret --from-literal=k=…, netlify env:set NAME …,
    # supabase/fly secrets set NAME=…
    ("secret", "gh", r"\ssecret\s+set\s+(?:\S+\s+)*?(?:-b|--body)[ =]\s*"),
    ("secret", "glab", r"\svariable\s+(?:set|create|update)\s+(?:\S+\s+)*?(?:-v|--value)[ =]\s*"),
    ("secret", "az", r"\skeyvault\s+secret\s+set\s+(?:\S+\s+)*?--value[ =]\s*"),
    ("secret", "aws", r"\sssm\s+put-parameter\s+(?:\S+\s+)*?--value[ =]\s*"),
    ("secret", "kubectl oc", r"\s--from-literal[ =][^=\s]+="),
    ("secret", "netlify", r"\senv:set\s+\S+\s+"),
    ("secret", "supabase fly flyctl", r"\ssecrets\s+set\s+(?:--\S+\s+)*[A-Za-z_][\w.-]*="),
    # MinIO client: mc alias set NAME URL ACCESS_KEY SECRET_KEY
    ("secret", "mc", r"\s(?:alias\s+set|config\s+host\s+add)\s+\S+\s+\S+\s+\S+\s+"),
)
_FORMATS.extend(
    (kind, tuple(tools.split()), _Command(r"(?<![\w./-])(?:" + "|".join(re.escape(t) for t in tools.split())
                                          + r")(?![\w-])", flag + _CLI_VALUE), 1)
    for kind, tools, flag in _CLI_SECRETS
)

# -- secrets told by what holds or prints them -------------------------------------------------------------------
# password hashes: crypt(3) and its descendants, the frameworks' own forms, LDAP's {SCHEME}, a SAM dump's LM:NT pair.
# A hash is no password, but it is the password's stand-in to anyone who can crack or replay it.
_HASH_ANCHORS = ("$2", "$1$", "$5$", "$6$", "$md5", "$apr1$", "$y$", "$7$", "$gy$", "$argon2", "$pbkdf2", "$scrypt",
                 "pbkdf2_", "pbkdf2:", "bcrypt", "scrypt", "argon2$", "{ssha", "{sha", "{smd5", "{md5}", "{crypt}",
                 "{pbkdf2", "{argon2", ":::")
_HASH_RE = _Lazy(
    r"(?<![\w$])(?:"
    r"\$2[abxy]?\$[0-9]{2}\$[./A-Za-z0-9]{53}"  # bcrypt
    r"|\$(?:1|5|6|md5|apr1|sha1)\$(?:rounds=[0-9]+\$)?[./A-Za-z0-9]{1,64}\$[./A-Za-z0-9]{16,}"  # MD5/SHA crypt
    r"|\$(?:y|gy|7)\$[./A-Za-z0-9]+\$(?:[./A-Za-z0-9]+\$)?[./A-Za-z0-9]{16,}"  # yescrypt, scrypt
    r"|\$(?:argon2(?:id|i|d)|scrypt|pbkdf2(?:-sha[0-9]+)?|bcrypt-sha256)\$[\w$=,./+-]{16,}"  # PHC strings
    r"|(?:pbkdf2_sha[0-9]+|bcrypt_sha256|bcrypt|argon2|scrypt|sha1|md5|unsalted_md5)\$[\w$=,./+-]{20,}"  # Django
    r"|(?:pbkdf2:sha[0-9]+|scrypt)(?::[0-9]+)+\$[A-Za-z0-9./+]+\$[0-9a-f]{32,}"  # Werkzeug
    r"|(?i:\{(?:s?sha(?:256|384|512)?|smd5|md5|crypt|pbkdf2(?:-sha[0-9]+)?|argon2)\})[A-Za-z0-9+/=.$,:-]{8,}"
    r")"
)
_SAM_RE = _Lazy(r"(?m)^[^\s:]{1,64}:[0-9]{1,10}:((?:[0-9a-fA-F]{32}|\*{32}|NO PASSWORD\*{21}):[0-9a-fA-F]{32}):::")
# an Ansible Vault: its header and the hex lines of ciphertext under it
_VAULT_RE = _Lazy(r"\$ANSIBLE_VAULT;[0-9.]+;[A-Z0-9]+(?:;[\w.-]+)?[ \t]*(?:\r?\n[ \t]*[0-9a-fA-F]{16,}[ \t]*)+")


class _SecretManifest(_Scan):
    """The values of a Kubernetes Secret's ``data:`` and ``stringData:``, YAML or JSON, whatever their keys are named
    (``DATABASE_URL: cG9zdGdyZXM6…``): the kind says they are secrets. Each line is read once."""

    _KIND = _Lazy(r"(?:^|[\s{,])[\"']?kind[\"']?[ \t]*:[ \t]*[\"']?Secret(?![\w-])")
    _BLOCK = _Lazy(r"(?m)^([ \t]*)[\"']?(?:data|stringData)[\"']?[ \t]*:[ \t]*(\{)?[ \t]*$")
    _YAML_ENTRY = _Lazy(r"[ \t]+[\"']?[\w.-]+[\"']?[ \t]*:[ \t]+(?!\[REDACTED)(?![|>][-+0-9]*[ \t]*$)(\S[^\n]*?)[ \t]*$",
                        re.MULTILINE)
    _JSON_ENTRY = _Lazy(r"[ \t]*\"[\w.-]+\"[ \t]*:[ \t]*\"(?!\[REDACTED)([^\"\n]+)\"[ \t]*,?[ \t]*$", re.MULTILINE)

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        if not self._KIND.search(text):
            return
        n = len(text)
        for block in self._BLOCK.finditer(text):
            indent, entry = len(block.group(1).expandtabs()), self._JSON_ENTRY if block.group(2) else self._YAML_ENTRY
            pos = block.end() + 1
            while pos < n:
                nl = text.find("\n", pos)
                end = n if nl < 0 else nl
                line = text[pos:end]
                if line.strip():
                    if len(line.expandtabs()) - len(line.expandtabs().lstrip()) <= indent:
                        break
                    m = entry.match(text, pos, end)
                    if m is not None and not _stands_in(_TRAILING_COMMENT_RE.split(m.group(1))[0].strip("\"'")):
                        yield m  # (not "REPLACE_ME", "${DB_PASSWORD}", "<your key>": what fills it in later)
                pos = end + 1


_PWD_COMMAND_RE = _Lazy(r"pwd(?:[ \t]+-[LP])?")
_COUNTS_RE = _Lazy(r"\|[ \t]*(?:jq[ \t]+(?:-\w+[ \t]+)*['\"]?(?:keys|length|type)\b|wc\b)")


class _PrintedSecret(_Scan):
    """The output of a command that prints a secret, on the lines after the command (a terminal's ``$ …`` or a
    tool observation's ``Bash: …``): a password manager's or a cloud's secret read (``op read``, ``vault kv get
    -field=``, ``gcloud secrets versions access``, ``security find-generic-password -w``), a token printed for a
    login (``gh auth token``, ``aws ecr get-login-password``), a secret generated (``openssl rand``, ``rails
    secret``), a secret variable echoed (``echo $API_TOKEN``, ``printenv DB_PASSWORD``), or a secret file read
    (``cat config/master.key``). Up to the next blank or command line, at most 20 lines; each line read once. A tool's
    output may start with its command and no prompt: a text's first line is read as a command too."""

    _COMMAND = _Lazy(r"(?m)^[ \t]*(?:(?:[\w.@~:/()\[\]-]*[$#%❯›]|PS [^\n>]{0,80}>|>>>|In \[[0-9]+\]:"
                     r"|[\w-]+\([\w.:@-]*\)(?::?[0-9]+)?[>*]|\[[0-9]+\] pry\([^)\n]*\)>|(?:julia|scala|jshell|ghci|node|deno)>"
                     r"|>(?=[ \t]+[A-Za-z_][\w.]*\([^\n]*\)[ \t]*$))[ \t]+"
                     r"|(?:Bash|PowerShell|Shell):[ \t]*"
                     r"|\A(?=(?:sudo[ \t]+)?(?:cat|head|tail|less|more|bat|type|get-content|gc|printenv|echo|printf|op"
                     r"|vault|gcloud|aws|az|gh|glab|kubectl|oc|heroku|security|secret-tool|openssl|sops|ansible-vault"
                     r"|gpg|age|pass|gopass|bw|lpass|doppler|infisical|chamber|keyring|wg|terraform|pwgen)[ \t]"
                     r"[^\n]*\n[ \t]*\S))(\S[^\n]*)$")
    _PRINTS = _Lazy(
        r"(?i)(?:^|[|;&(]\s*|\s--\s+|\bsudo\s+(?:-\S+\s+)*|(?<=\s)[\"'])(?:"  # and quoted: ssh h 'printenv X'
        r"op\s+(?:read\b|item\s+get\b[^|;&]*\s--fields?\b|inject\b)"
        r"|g?pass\s+(?:show\s+)?(?!-)(?!(?:ls|list|find|search|grep|git|init|insert|edit|rm|mv|cp|version|help)\b)"
        r"[\w./@-]+\s*(?:$|\|)"
        r"|vault\s+(?:kv\s+get|read)\b[^|;&]*\s-field[= ]"
        r"|security\s+find-(?:generic|internet)-password\b[^|;&]*\s-[a-z]*w[a-z]*\b"
        r"|secret-tool\s+lookup\b|keyring\s+get\b|bw\s+get\s+(?:password|totp)\b|lpass\s+show\b[^|;&]*--password"
        r"|(?:doppler|infisical)\s+secrets\s+get\b[^|;&]*--plain|sops\s+(?:-d|--decrypt)\b[^|;&]*--extract"
        r"|gcloud\s+secrets\s+versions\s+access\b|gcloud\s+auth\s+(?:application-default\s+)?print-\w+-token\b"
        r"|aws\s+(?:ecr|ecr-public)\s+get-login-password\b|az\s+acr\s+login\b[^|;&]*--expose-token"
        # Azure's key listings print the keys themselves (a storage account's, Cosmos DB's, a cache's)
        r"|az\s+(?:[\w-]+\s+){1,5}?(?:keys\s+(?:list|show)|list-keys|admin-key\s+show|show-connection-string"
        r"|credential\s+show)\b"
        r"|(?:gh|glab)\s+auth\s+token\b|heroku\s+auth:token\b|kubectl\s+create\s+token\b|oc\s+whoami\s+(?:-t|--show-token)"
        r"|[\w.-]+\s+(?:[\w-]+\s+)?(?:[\w-]*(?:keys?|tokens?|secrets?)\s+(?:create|generate|new|issue|rotate|regenerate))\b"
        r"|kubectl\s+view-secret\b"
        r"|kubectl\s+get\s+secrets?\b[^|;&]*(?:jsonpath|go-template)"
        r"|openssl\s+(?:rand|passwd)\b|pwgen\b|(?:bin/)?rails\s+secret\b|mix\s+phx\.gen\.secret\b"
        r"|wg\s+gen(?:key|psk)\b|rclone\s+obscure\b|[\w/.-]*-reset-password\b|mkpasswd\b|htpasswd\s+-\w*n"
        r"|gpg\s+--gen-random\b|/dev/u?random\b|xkcdpass\b|diceware\b|apg\b|keepassxc-cli\s+show\b"
        r"|chamber\s+read\b|gopass\s+show\b|sops\s+(?:-d|--decrypt)\b|ansible-vault\s+(?:view|decrypt)\b"
        r"|(?:gpg|age)\s+(?:-d|--decrypt)\b"
        r"|python[0-9.]*\s+-c\s+[^\n]*\bsecrets\.token_"
        r"|(?:echo|printf)\s+(?:-\w+\s+)*[\"']?\$\{?(?P<echoed>[A-Za-z_]\w*)"
        r"|printenv\s+(?P<printed>[A-Za-z_]\w*)"
        r"|(?:cat|head|tail|less|more|bat|type|get-content|gc|base64|xxd|od|hexdump|strings)\s+(?:-\S+\s+)*[\"']?"
        r"(?P<file>[^\s\"'|;&<>]+)"
        r")"
    )
    _LINE = _Lazy(r"[ \t]*(?!\[REDACTED)(\S[^\n]*?)[ \t]*$", re.MULTILINE)

    #: a command that reads (or makes) something, whose arguments name a secret, prints it: `terraform output -raw
    #: db_password`, `heroku config:get SECRET_KEY_BASE`, `aws secretsmanager get-secret-value … --query
    #: SecretString`, `doctl databases connection … --format Password`, `… | jq -r .login.password`
    _READS = frozenset({"get", "show", "read", "access", "output", "reveal", "print", "view", "decrypt", "config:get",
                        "jq", "view-secret",
                        "get-secret-value", "get-parameter", "get-parameters", "connection", "export", "fetch", "cat"})
    _MAKES_RE = _Lazy(r"(?:get|print|create|generate|new|show|join)-[\w-]*(?:token|password|secret|key)s?"
                      r"|(?!(?:list|delete|remove|revoke|describe|update|set|put|tag|untag|disable|enable|expire|validate"
                      r"|verify|check|test|rotate|change|reset|forgot)-)[a-z]+(?:-[a-z]+)*-(?:password|token|secret)")
    #: a REPL expression that decrypts or reveals what it returns: hudson.util.Secret.decrypt('{…}')
    _REVEALS = frozenset({"decrypt", "decrypted", "reveal", "unseal", "getplaintext", "plaintext", "getsecretvalue",
                          "getplaintextpassword", "unprotect"})
    #: a kind of resource, not one secret's name (`kubectl get secrets` lists their names)
    _KINDS = frozenset({"secret", "secrets", "credential", "credentials", "creds", "token", "tokens", "keys",
                        "passwords", "secretkeys", "apikeys"})
    _STORES = frozenset({"keyvault", "secretsmanager", "ssm", "secret", "secrets", "keychain",
                         "passwords", "credentials"})
    #: CLIs where "secret" or "token" names a kind of resource being listed
    _LISTERS = frozenset({"kubectl", "oc", "gh", "glab", "az", "gcloud", "aws", "doctl", "vault", "op", "heroku",
                          "flyctl", "fly", "vercel", "netlify", "supabase", "doppler", "infisical"})
    _SEARCHES = frozenset({"grep", "rg", "ag", "ack", "find", "ls", "git", "sed", "awk", "diff", "tree", "fd", "man"})
    _ARG_PARTS_RE = _Lazy(r"[./:=\[\]\"']+")

    #: commands that change a password at their prompts, which never echo it (``$ passwd``: "Changing password…")
    _CHANGERS = frozenset({"passwd", "kpasswd", "smbpasswd", "yppasswd", "gpasswd", "vncpasswd", "chpasswd"})

    @classmethod
    def _names_what_it_prints(cls, command: str) -> bool:
        if command.split(None, 1)[:1] and command.split(None, 1)[0].rsplit("/", 1)[-1] in cls._CHANGERS:
            return False
        if _PWD_COMMAND_RE.fullmatch(command.strip()):
            return False  # $ pwd: the working directory
        expression = _REPL_EXPRESSION_RE.fullmatch(command.strip())
        if expression:  # a REPL expression: settings.EMAIL_HOST_PASSWORD, ENV["PGPASSWORD"], conf.get("…password")
            parts = [p for p in re.split(r"[.\[\]'\"():, ]+", expression.group(1)) if p]
            if parts and parts[-1].lower() not in cls._KINDS and _strong_name(parts[-1]):
                return True
            if cls._REVEALS.intersection(p.lower() for p in parts):
                return True
        words = [w for w in re.split(r"\s+|\|", command) if w]
        if not words or words[0].rsplit("/", 1)[-1] in cls._SEARCHES:
            return False
        if not any(w.lower() in cls._READS or w.lower().endswith(":get") or cls._MAKES_RE.fullmatch(w.lower())
                   for w in words[1:]) and words[0] != "jq":
            return False
        if words[0] not in ("kubectl", "oc") and any(w.lower() in cls._STORES for w in words[1:]):
            return True  # az keyvault secret show, aws secretsmanager get-secret-value, aws ssm get-parameter
        for w in words[1:]:
            if w.startswith("-"):
                w = w.partition("=")[2]
            parts = [p for p in cls._ARG_PARTS_RE.split(w) if p]
            if parts and (parts[-1].lower() not in cls._KINDS or words[0] not in cls._LISTERS) and (
                    _strong_name(parts[-1]) or w.startswith(".") and name_kind(parts[-1]) is not None):
                return True
        return False

    @classmethod
    def _prints_secret(cls, command: str) -> bool:
        if _COUNTS_RE.search(command):
            return False  # … | jq 'keys', | wc -c: names and sizes, not the secret
        if cls._names_what_it_prints(command):
            return True
        for m in cls._PRINTS.finditer(command):
            variable = m.group("echoed") or m.group("printed")
            if variable:
                if _strong_name(variable):
                    return True
            elif m.group("file"):
                if _secret_file(m.group("file")):
                    return True
            else:
                return True
        return False

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        n = len(text)
        commands = list(self._COMMAND.finditer(text))
        for k, command in enumerate(commands):
            if not self._prints_secret(command.group(1)):
                continue
            stop = commands[k + 1].start() if k + 1 < len(commands) else n
            pos, lines = command.end() + 1, 0
            while pos < stop and lines < 20:
                nl = text.find("\n", pos, stop)
                end = stop if nl < 0 else nl
                if not text[pos:end].strip():
                    break
                m = self._LINE.match(text, pos, end)
                if m is not None:
                    yield m
                pos, lines = end + 1, lines + 1


#: an expression typed at a REPL, maybe assigned (``val ds = spark.conf.get("…")``): an attribute path, a call or an
#: index, never a shell command's words
_REPL_EXPRESSION_RE = _Lazy(r"(?:(?:val|var|let|const)\s+)?(?:[A-Za-z_]\w*\s*=\s*)?([A-Za-z_][\w.:]*(?:[(\[][^\n]*[)\]])?)")


def _named_by(group: int) -> Callable[[re.Match[str]], bool]:
    """A match whose ``group`` is a strong secret name."""
    return lambda m: _strong_name(m.group(group).strip())


def _random_value(group: int) -> Callable[[re.Match[str]], bool]:
    return lambda m: _looks_random(m.group(group))



#: names whose random value is meant to be seen: a public key, a digest
_PUBLIC_NAMES = frozenset({"public", "pub", "publickey", "sitekey", "hash", "hashes", "checksum", "digest", "fingerprint", "sha",
                           "sha256", "sha512", "integrity", "etag", "id", "uuid", "guid", "commit", "revision", "rev"})
#: names whose value is a host and port, an image and tag, a time: no user and password
_NOT_CREDENTIAL_NAMES = frozenset({
    "image", "host", "hostname", "addr", "address", "url", "uri", "endpoint", "time", "date", "port", "version", "tag",
    "ref", "path", "bind", "listen", "proxy", "server", "dsn", "from", "to", "source", "target", "volume", "volumes",
    "mount", "ports", "expose", "command", "entrypoint", "platform", "network", "label", "labels", "name", "id",
})

_FORMATS.extend([
    # an assignment at a line's start whose name is in another script or has letters with marks (시크릿키 = …,
    # hasło_smtp = …, パスワード: …): the other rules read names in ASCII; any value but a reference or a word
    ("password", _SCRIPT_NAME_ANCHORS,
     _Checked(_Lazy(r"(?m)^[ \t]*[\"']?([^\s=:：#;\"']{1,40})[\"']?[ \t]*[=:：][ \t]*[\"']?(?!\[REDACTED)"
                    r"([^\s\"']{6,200})[\"']?[ \t]*$"),
              lambda m: _script_named(m)), 2),
    # a secret named by a field beside its value: <entry key="jdbc.password">…</entry>, <string name="api_secret">…,
    # <add key="ApiKey" value="…"/>, <key>API_KEY</key><string>…</string>, <param-name>…</param-name><param-value>…,
    # "db_pass": {"value": "…"} (Terraform state and output), httpHeaderName1: X-Api-Key … httpHeaderValue1: …
    ("secret", ("key=", "name="),
     _Checked(_Lazy(r"<([\w:.-]+)\b[^<>\n]{0,200}?\b(?:key|name)\s*=\s*[\"']([^\"'<>\n]{1,80})[\"'][^<>\n]{0,200}?>"
                    r"(?!\[REDACTED)([^<>\n]{1,300})</\1>"),
              lambda m: _xml_named(m)), 3),
    ("secret", ("<key>", "<param-name>", "<name>"),
     _Checked(_Lazy(r"<(key|param-name|name)>\s*([^<>\n]{1,80}?)\s*</\1>\s*<(string|param-value|value|data)>"
                    r"(?!\[REDACTED)([^<>\n]{1,300})</\3>"), _named_by(2)), 4),
    ("secret", ('"value"',),
     _Checked(_Lazy(r"\"([\w.-]{1,80})\"\s*:\s*\{[^{}]{0,400}?\"value\"\s*:\s*\"(?!\[REDACTED)([^\"\n]+)\""),
              _named_by(1)), 2),
    ("secret", ("headername",),
     _Checked(_Lazy(r"(?i)headername([0-9]*)[\"']?\s*[:=]\s*[\"']?([\w-]{1,80})[\s\S]{0,300}?"
                    r"headervalue\1[\"']?\s*[:=]\s*[\"']?(?!\[REDACTED)([^\s\"']+)"), _named_by(2)), 3),
    # PagerDuty's integration (routing) key: 32 hexadecimal digits under a name that AMQP also uses for a route
    ("secret", ("routing_key", "routing-key", "routingkey", "integration_key", "integrationkey", "service_key"),
     _Lazy(r"(?i)\b(?:routing|integration|service)[_-]?key[\"']?[ \t]*[:=][ \t]*[\"']?(?!\[REDACTED)([0-9a-f]{32})"
           r"(?![0-9a-z])"), 1),
    # a Salesforce session id (an org id, "!", the session): an access token
    ("secret", ("00d",), _Lazy(r"(?<![\w!])(00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{40,})"), 1),
    # Django's session cookie (32 lower-case letters and digits), wherever it is printed
    ("secret", ("sessionid=",), _Lazy(r"(?<![\w-])sessionid=(?!\[REDACTED)([a-z0-9]{32})(?![a-z0-9])"), 1),
    # a password Terraform generated, in its state: random_password's "result"
    ("password", ("random_password",),
     _Lazy(r"random_password\b[\s\S]{0,800}?\"result\"[ \t]*:[ \t]*\"(?!\[REDACTED)"
           r"((?:[^\"\\\n]|\\.)+)\""), 1),
    # a cookie in a HAR file or a browser export: {"name": "sid", "value": "<random>"} under "cookies"
    ("secret", ('"cookies"',),
     _Checked(_Lazy(r"\{\s*\"name\"\s*:\s*\"[^\"\n]{1,64}\"\s*,\s*\"value\"\s*:\s*\"(?!\[REDACTED)([^\"\n]{16,})\""),
              lambda m: _looks_random(m.group(1)) and '"cookies"' in m.string[max(0, m.start() - 4000) : m.start()]), 1),
    # a cookie file (Netscape format): domain, flag, path, secure, expiry, name, value
    ("secret", ("true\t", "false\t"),
     _Checked(_Lazy(r"(?m)^(?:#HttpOnly_)?[^\t\n]*\t(?:TRUE|FALSE)\t[^\t\n]*\t(?:TRUE|FALSE)\t[0-9]+\t[^\t\n]+\t"
                    r"(?!\[REDACTED)([^\t\n]{8,})$"), _random_value(1)), 1),
    # a Wi-Fi QR code's password, an expect script's answer to a password prompt, Maven's master password
    ("password", ("wifi:",), _Lazy(r"WIFI:[^\n]*?\bP:(?!\[REDACTED)((?:\\.|[^;\\\n])+);"), 1),
    ("password", ("expect",),
     _Lazy(r"(?i)\bexpect(?:_exact)?\s*\(?\s*(?:-\S+\s+)*[rbu]?[\"'{][^\"'}\n]*(?:pass|assword|pin|token|secret)"
           r"[^\"'}\n]*[\"'}]\)?[ \t]*[;\n]\s*(?:[\w.]+\.)?send(?:line)?\s*\(?\s*(?:--\s+)?[rbu]?[\"'{](?!\[REDACTED)"
           r"([^\"'}\n]+?)(?:\\r|\\n)?[\"'}]"), 1),
    ("password", ("<master>",), _Lazy(r"<master>(?!\[REDACTED)(\{[A-Za-z0-9+/=]{16,}\})</master>"), 1),
    # MySQL's native password hash; pgbouncer's userlist ("user" "password")
    ("password-hash", ("*",), _Lazy(r"(?<![\w*])\*[0-9A-Fa-f]{40}(?![\w])"), 0),
    ("password", ('" "',),
     _Checked(_Lazy(r"(?m)^[ \t]*\"[\w.@-]{1,64}\"[ \t]+\"(?!\[REDACTED)([^\"\s<>{}]{4,200})\"[ \t]*$"),
              lambda m: _mixed(m.group(1)) and any(c.isdigit() for c in m.group(1))
              or m.group(1).startswith(("md5", "SCRAM-"))), 1),
    # a JSON Web Key's private members (d, p, q, dp, dq, qi; k of a symmetric key)
    ("private-key", ('"kty"',),
     _Lazy(r"\"(?:d|p|q|dp|dq|qi|k)\"\s*:\s*\"(?!\[REDACTED)([A-Za-z0-9_-]{16,})\""), 1),
    # other armoured secret keys: OpenVPN's static key, PGP's secret key block, any BEGIN … SECRET/PRIVATE KEY
    ("private-key", ("-----begin",),
     _Lazy(r"(?i)-----BEGIN [A-Z0-9 ]*(?:(?:SECRET|STATIC|PRIVATE) KEY|SEED)[A-Z0-9 ]*-----[\s\S]*?"
           r"(?:-----END [A-Z0-9 ]*(?:(?:SECRET|STATIC|PRIVATE) KEY|SEED)[A-Z0-9 ]*-----|\Z)"), 0),
    ("private-key", ("untrusted comment:",),
     _Lazy(r"(?i)untrusted comment:[^\n]*secret key[^\n]*\r?\n(?!\[REDACTED)([A-Za-z0-9+/=]{40,})"), 1),
    # a wallet's seed words, a TOTP setup key, a 2FA export, recovery codes, a keypair file's 64 bytes
    ("secret", ("phrase", "words", "mnemonic"),
     _Lazy(r"(?i)\b(?:seed|recovery|mnemonic|secret|backup|wallet)[ \t]+(?:phrase|words)\b[^\n:]{0,30}[:\-–]?"
           r"[ \t]*(?:\r?\n[ \t]*)?(?!\[REDACTED)((?:[a-z]{3,8}[ \t]+){11,23}[a-z]{3,8})\b"), 1),
    ("secret", ("key", "secret", "seed", "code"),
     _Lazy(r"(?i)\b(?:setup|secret|totp|2fa|mfa|otp|authenticator)[ \t]+(?:key|secret|seed|code)\b[^\n:]{0,30}:?"
           r"[ \t]*(?!\[REDACTED)((?:[A-Z2-7]{4}[ \t]?){4,16})(?![A-Za-z0-9])"), 1),
    # a TOTP seed told anywhere on a line about two-factor sign-in: 16 to 64 base32 characters, spaced or not
    ("secret", ("2fa", "mfa", "totp", "otp", "authenticat", "autenticad", "factor", "faktor", "2-step", "qr",
                "geheimnis", "secret", "segret", "secreta"), _TotpSeed(), 1),
    # a WireGuard private or preshared key (32 bytes in base64) on a line that says so, or fed to `wg`
    ("private-key", ("private", "preshared", "wg ", "wg0", "psk"),
     _Checked(_Lazy(r"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=)(?![A-Za-z0-9+/=])"),
              lambda m: _looks_random(m.group(1)) and _near(_WG_PRIVATE_RE, m, 80) and not _near(_WG_PUBLIC_RE, m, 0)),
     1),
    ("secret", ("otpauth-migration:",), _Lazy(r"otpauth-migration://[^\s?]*\?data=(?!\[REDACTED)([^\s&\"']+)"), 1),
    ("secret", ("codes",),
     _Lazy(r"(?i)\b(?:recovery|backup|one-time|2fa|mfa|emergency|scratch)[ \t]+codes?\b[^\n]*\n(?:[ \t]*\n)?"
           r"((?:[ \t]*(?:[0-9]{1,2}[.)][ \t]*)?[A-Za-z0-9]{4,12}(?:-[A-Za-z0-9]{4,12})?[ \t]*(?:\n|$)){2,20})"), 1),
    ("private-key", ("[",), _Lazy(r"\[(?:[ \t\n]*[0-9]{1,3}[ \t\n]*,){63}[ \t\n]*[0-9]{1,3}[ \t\n]*\]"), 0),
    # Redis: requirepass / masterauth lines, an ACL user's >password, AUTH at the prompt
    ("password", ("requirepass", "masterauth"),
     _Lazy(r"(?im)(?:^[ \t]*|--)(?:requirepass|masterauth)[ \t]+(?!\[REDACTED)([\"']?)([^\s\"']+)\1"), 2),
    ("password", ("user ", "setuser"),
     _Lazy(r"(?im)^[ \t]*(?:ACL[ \t]+SETUSER|user)[ \t]+\S+[^\n]*?[ \t]>(?!\[REDACTED)(\S+)"), 1),
    ("password", ("auth ",),
     _Lazy(r"(?m)(?:^|[>$][ \t]*)AUTH[ \t]+(?:[\w.-]+[ \t]+)?(?!\[REDACTED)([^\s\"']+)[ \t]*$"), 1),
    # a web server's or a daemon's directive that sets a secret: SetEnv DB_PASSWORD …, proxy_set_header X-Api-Key …;
    # fastcgi_param APP_SECRET …; and a directive named for a secret with one value (AuthLDAPBindPassword "…")
    ("secret", ("setenv", "set ", "env ", "_param", "header", "define", "const"),
     _Checked(_Lazy(r"(?im)^[ \t]*(?:SetEnv|setenv|set(?:[ \t]+-\w+)*|PassEnv|env|fastcgi_param|uwsgi_param|scgi_param"
                    r"|proxy_set_header|add_header|grpc_set_header|(?:Request)?Header[ \t]+(?:set|add|append)|#define"
                    r"|(?:(?:Private|Public|Friend)[ \t]+)?Const)[ \t]+(?:::env\()?([A-Za-z_][\w.-]*)\)?"
                    r"(?:[ \t]+As[ \t]+String)?(?:[ \t]*=[ \t]*|[ \t]+)(?![=\[])(?!REDACTED)([\"']?)([^\s\"';]+)\2"),
              lambda m: _strong_name(m.group(1)) and not _skip_value(m.group(3))
              and _LINE_REST_RE.match(m.string, m.end()) is not None), 3),  # not "set passcode length to 8"
    ("password", ("pass", "pw", "secret", "token", "key", "credential"),
     _Checked(_Lazy(r"(?m)^[ \t]*([A-Za-z][\w.-]{2,60})(?:[ \t]+--?[a-z][\w-]*)*[ \t]+([\"']?)(?!\[REDACTED)(?!-)"
                    r"([^\s\"';]{4,200})\2[ \t]*;?[ \t]*$"),
              lambda m: _strong_name(m.group(1)) and not _skip_value(m.group(3)) and (
                  _mixed(m.group(3)) and any(c.isdigit() for c in m.group(3)) or _in_key_value_config(m))
              and not (m.group(3)[0] == "(" and m.group(3)[-1] == ")")), 3),  # "password (v2.4.1)": a note
    # a value made of a user and a password: user = "deploy:…", npmAuthIdent: "ci:…", BUNDLE_GEMS__X=ci:…
    ("password", (":",),
     _Checked(_Lazy(r"(?m)^[ \t]*(?:export[ \t]+)?[\"']?([A-Za-z_][\w.-]{0,80})[\"']?[ \t]*[:=][ \t]*[\"']?"
                    r"[\w.@+-]{1,64}:(?!\[REDACTED)([^\s\"'`:@/()\[\]{}<>]{8,128})[\"']?[ \t]*$"),
              lambda m: not _NOT_CREDENTIAL_NAMES.intersection(_components(m.group(1))) and sum(
                  _char_kinds(m.group(2))) >= 3 and any(c.isdigit() for c in m.group(2)) and not _skip_value(m.group(2))),
     2),
    # a random value under any name at a line's start (an env file): MISTRAL=…, LN_MACAROON=…
    ("secret", ("=",),
     _Checked(_Lazy(r"(?m)^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]{1,80})[ \t]*[?+:]?=[ \t]*([\"']?)"
                    r"(?!\[REDACTED)([A-Za-z0-9+/=_.~-]{20,10000})\2[ \t]*$"),
              lambda m: sum(_char_kinds(m.group(3))[:3]) == 3 and _looks_random(m.group(3))
              and not _identifier_like(m.group(3)) and shannon_entropy(m.group(3)) >= 4.0
              and not _CODE_PATH_RE.fullmatch(m.group(3)) and not _PUBLIC_NAMES.intersection(_components(m.group(1)))
              and not _object_id(m.group(1), m.group(3))),
     3),
    # network gear: "password 7 <value>", "secret 5 <hash>", "key 0 <value>", "snmp-server community <value>"
    ("password", ("password ", "secret ", "key ", "key-string", "community"),
     _Lazy(r"(?im)(?:\b(?:password|secret|key|key-string)[ \t]+[0-9][ \t]+(?:md5[ \t]+)?|\bsecret[ \t]+\"?(?=\$9\$)"
           r"|\bkey-string[ \t]+"
           r"|\b(?:community|authentication-key|message-digest-key[ \t]+[0-9]+[ \t]+md5)[ \t]+(?=[^\s\"]*[0-9]))(?!\[REDACTED)"
           r"(\$9\$[^\s\"]+|[^\s\"]{6,})(?=\"?(?:[ \t]+(?:RO|RW|[0-9]+)\b|[ \t]*$))"), 1),
    # snmpd.conf: rocommunity COMMUNITY [SOURCE], com2sec NAME SOURCE COMMUNITY (not the stock public/private)
    ("secret", ("community", "com2sec"),
     _Checked(_Lazy(r"(?im)^[ \t]*(?:r[ow]community6?[ \t]+(?:-V[ \t]+\S+[ \t]+)?|com2sec6?[ \t]+(?:-Cn[ \t]+\S+[ \t]+)?"
                    r"\S+[ \t]+\S+[ \t]+)(?!\[REDACTED)([^\s#]+)"),
              lambda m: m.group(1).lower() not in ("public", "private") and not _skip_value(m.group(1))), 1),
    ("password", ("{plain}", "{cleartext}", "{clear}"),
     _Lazy(r"(?i)\{(?:PLAIN|CLEARTEXT|CLEAR)\}(?!\[REDACTED)([^\s:\"']+)"), 1),
    # JAAS: user_alice="…" in a LoginModule block; strongSwan/libreswan: ": PSK "…"", ": EAP "…""
    ("password", ("loginmodule",), _Lazy(r"\buser_[\w.-]+[ \t]*=[ \t]*\"(?!\[REDACTED)([^\"\n]+)\""), 1),
    # a cloud Kafka's API key as the PLAIN login's user name (Confluent: 16 capitals and digits)
    ("secret", ("loginmodule",),
     _Checked(_Lazy(r"PlainLoginModule[^\n]{0,80}?\busername[ \t]*=[ \t]*\"(?!\[REDACTED)([A-Z0-9]{16,32})\""),
              lambda m: sum(c.isdigit() for c in m.group(1)) >= 2 and sum(c.isalpha() for c in m.group(1)) >= 4), 1),
    ("password", ("psk", "eap", "xauth"),
     _Lazy(r":[ \t]*(?:PSK|EAP|XAUTH|NTLM|PIN)[ \t]+\"(?!\[REDACTED)([^\"\n]+)\""), 1),
    # -setcookie <cookie> (Erlang), '<password>' | ConvertTo-SecureString (PowerShell), Postfix's sasl_passwd map
    ("secret", ("-setcookie",), _Lazy(r"-setcookie[ \t]+(?!\[REDACTED)([^\s'\"]+)"), 1),
    ("password", ("convertto-securestring",),
     _Lazy(r"(?i)([\"'])(?!\[REDACTED)([^\"'\n]+)\1[ \t]*\|[ \t]*ConvertTo-SecureString"), 2),
    # Postfix's sasl_passwd: the file's name is the context its lines need (the rule reads no line of any other text,
    # whether or not the anchors are looked for first)
    ("password", ("sasl_passwd",),
     _Checked(_Lazy(r"(?m)^[ \t]*\[?[\w.-]+\]?(?::[0-9]+)?[ \t]+[^\s:]+:(?!\[REDACTED)(\S+)[ \t]*$"),
              lambda m: "sasl_passwd" in m.string.lower()), 1),
    # Erlang/Elixir {password, "…"}, Clojure/EDN :password "…"
    ("password", ("pass", "pw", "secret", "token", "key"),
     _Checked(_Lazy(r"(?:\{[ \t]*:?([a-z][\w-]*)[ \t]*,|(?<![\w:]):([a-z][\w-]*)[ \t]+)[ \t]*<{0,2}\"(?!\[REDACTED)"
                    r"([^\"\n]+)\">{0,2}"), lambda m: _strong_name(m.group(1) or m.group(2)) and not _skip_value(m.group(3))), 3),
    ("password", ("pass", "secret", "token", "key", "credential", "clave", "contrase", "senha", "kennwort",
                  "mot de passe", "hasło", "haslo", "heslo", "parol", "wachtwoord", "lösenord", "losenord", "пароль",
                  "şifre", "sifre", "密码", "パスワード", "비밀번호", "mdp", "pwd", "pw"), _SecretColumn(), 1),
    ("secret", ("value", "wert", "valor", "valeur", "valore", "waarde"), _SecretColumn(pairs=True), 1),
    ("account-number", ("account", "acct", "iban", "ssn", "social", "card", "cvv", "cvc", "routing", "national",
                        "tax", "passport", "pin", "puk", "geheimzahl"), _SecretColumn(personal=True), 1),
    ("password", ("pass", "secret", "token", "key", "credential"),
     _Checked(_Lazy(r"(?m)^[ \t]*([A-Za-z][\w-]*(?:[ \t][A-Za-z][\w-]*){0,3})[ \t]*:?[ \t]*\r?\n[ \t]*(?!\[REDACTED)"
                    r"([^\s]{8,200})[ \t]*$"),
              lambda m: _strong_name(m.group(1).replace(" ", "_")) and not _skip_value(m.group(2))
              and (_password_like(m.group(2)) or _looks_random(m.group(2)))), 2),
    ("password", ("->",),
     _Checked(_Lazy(r"\"([\w.-]{1,80})\"[ \t]*=[ \t]*\"[^\"\n]*\"[ \t]*->[ \t]*\"(?!\[REDACTED)([^\"\n]+)\""),
              _named_by(1)), 2),
    ("password", ("/v ", "/d "),
     _Checked(_Lazy(r"(?i)\s/v[ \t]+\"?([\w.-]{1,80})\"?[^\n]{0,80}?\s/d[ \t]+(?!\[REDACTED)(\"[^\"\n]*\"|\S+)"),
              _named_by(1)), 2),
    # what a file that holds a secret is said to hold: "config/master.key contains …", "~/.vault_pass has: …"
    ("secret", _SAID_FILE_ANCHORS,
     _Checked(_Lazy(r"(?i)([\w./~-]{1,120})[`'\"]?[ \t]+(?:contains|has|holds|reads|is)[ \t]*:?[ \t]+[`'\"]?"
                    r"(?!\[REDACTED)([A-Za-z0-9+/=_-]{16,})"),
              lambda m: _secret_file(m.group(1)) and _looks_random(m.group(2)) and any(  # a file's name: its anchor
                  a.strip() in m.group(1).lower() for a in _SAID_FILE_ANCHORS)), 2),
    # a value echoed into a file that holds a secret: echo '…' > ~/.rsync.pass, echo KEY:SECRET > ~/.passwd-s3fs
    ("password", ("echo", "printf"),
     _Checked(_Lazy(r"\b(?:echo|printf)\s+(?:-[neE]+\s+)?(?:([\"'])%[^\"'\n]*\1\s+)?(?!\[REDACTED)"
                    r"([^\s\"'|>]+|\"[^\"\n]*\"|'[^'\n]*')\s*(?:>>?|\|\s*(?:sudo\s+)?tee(?:\s+-a)?)\s*([^\s;&|]+)"),
              lambda m: _secret_file(m.group(3)) and not _stands_in(m.group(2))), 2),
    # a password given after a login-like word: +login user PASS, login serveradmin PASS, set-initial-password PASS,
    # addauth digest user:PASS, -setcookie COOKIE, /RP PASS, /p PASS, -w PASS, user create NAME PASS
    ("password", ("login", "authorize", "pass", "pw", "auth", "addauth", "cookie", "/rp", "/p", " -w", " -s", " -p",
                  "user create", "user add", "users add", "users create", "user upsert", "useradd", "adduser", "createuser",
                  "create-user"), _AfterLoginWord(), 1),
    # user:password in one token, where the password is strong (digits, symbols, both cases) or long and random
    ("password", (":",), _Checked(_Lazy(r"(?<![\w/:@.-])([\w.@+\\-]{1,64}):(?!\[REDACTED)([^\s:@/\"'`,;]{8,128})(?=[\s\"'`,;]|$)"),
                                  lambda m: _strong_password(m.group(2)) and not m.group(1).isdigit()
                                  and m.group(1).lower() not in _HASH_TAGS),
     2),
    # a strong literal passed to any call: WiFi.begin("ssid", "…"), database('w', 'u', '…'), PDO->__construct(…)
    ("password", ("(",), _Checked(_Lazy(r"[(,][ \t]*([\"'])(?!\[REDACTED)([^\s\"'\\]{10,64})\1"),
                                  lambda m: _strong_password(m.group(2))), 2),
    # ppp's chap-secrets / pap-secrets: client server "secret" addresses
    ("password", ("chap-secrets", "pap-secrets", "# client"),
     _Lazy(r"(?m)^[ \t]*[^\s#\"]+[ \t]+[^\s\"]+[ \t]+\"(?!\[REDACTED)([^\"\n]+)\"[ \t]+\S+[ \t]*$"), 1),
    ("secret", ("--suri",), _Lazy(r"--suri[ =][ \t]*[\"']?(?!\[REDACTED)([^\s\"']+)"), 1),
    ("secret", ("md5", "sha1", "sha256", "sha512", "aes"),
     _Lazy(r"(?im)^[ \t]*[0-9]+[ \t]+(?:MD5|SHA1|SHA256|SHA384|SHA512|AES128|AES256)[ \t]+(?:HEX:|ASCII:)?(?!\[REDACTED)(\S{8,})"
           r"[ \t]*$"), 1),
    # CVS pserver, Teradata .LOGON: a login in a connection line
    ("password", (":pserver:",), _Lazy(r":pserver:[^:@\s]+:(?!\[REDACTED)([^@\s]+)@"), 1),
    ("password", (".logon",), _Lazy(r"(?i)\.LOGON[ \t]+[^,\s]+,(?!\[REDACTED)([^;\s]+)"), 1),
    # an element named for a secret holding <Value> (Windows unattend): <AdministratorPassword><Value>…</Value>
    ("password", ("<value>",),
     _Checked(_Lazy(r"<([\w:.-]+)>\s*<(?:Value|value|PlainText)>(?!\[REDACTED)([^<\n]+)</"), _named_by(1)), 2),
    # a secret wrapped in a call at its assignment: JSON.stringify('…'), Some("…"), SecretString::new("…")
    ("secret", ("stringify(", "some(", "secret", "string(", "buffer.from("),
     _Checked(_Lazy(r"[\"']?([\w.$-]{2,80})[\"']?[ \t]*[:=][ \t]*(?:JSON\.stringify|String|Some|SecretString(?:::new)?"
                    r"|Secret(?:::new)?|Buffer\.from|str)\([ \t]*([\"'])(?!\[REDACTED)([^\"'\n]{4,})\2"),
              lambda m: _strong_name(m.group(1).strip("_")) and not _skip_value(m.group(3))), 3),
    # user:password encoded for Basic auth: btoa("u:…"), base64.b64encode(b"u:…"), Buffer.from("u:…"),
    # base64.StdEncoding.EncodeToString([]byte("u:…")), 'u:…'.bytes.encodeBase64(), "u:…".getBytes()
    ("password", ("btoa(", "b64encode(", "encodebytes(", "encode64(", "encodetostring(", "buffer.from(",
                  "base64_encode("),
     _Checked(_Lazy(r"\b(?:btoa|b64encode|encodebytes|strict_encode64|encode64|encodeToString|EncodeToString"
                    r"|Buffer\.from|base64_encode)\s*\(\s*(?:\[\]byte\(\s*)?[bf]?" + _ENCODED_LOGIN + r"\s*[,)]"),
              _encoded_login), 3),
    ("password", (".bytes", "getbytes(", ".encode(", "tobytearray("),
     _Checked(_Lazy(_ENCODED_LOGIN + r"\s*\.\s*(?:bytes\b|getBytes\(|encode\(|toByteArray\()"), _encoded_login), 3),
    # a random literal made bytes in Go is a key: securecookie.New([]byte("<hex>"), …), jwtKey = []byte("…")
    ("secret", ("[]byte(",),
     _Checked(_Lazy(r"\[\]byte\(\s*([\"`])(?!\[REDACTED)([^\"`\n]{16,300})\1\s*\)"),
              lambda m: _random_or_strong(m.group(2), digest_lengths=True)), 2),
    # an Ethereum account's private key in a wallet list: Hardhat's and Truffle's accounts: ["0x…"]
    ("private-key", ("accounts",),
     _Checked(_Lazy(r"([\"'])(?!\[REDACTED)((?:0x)?[0-9a-fA-F]{64})\1"), lambda m: _in_accounts_list(m.string, m.start())),
     2),
    # cmake: set(NAME "…" CACHE …)
    ("secret", ("set(",),
     _Checked(_Lazy(r"\bset\([ \t]*([A-Za-z_][\w.-]*)[ \t]+\"(?!\[REDACTED)([^\"\n]+)\""), _named_by(1)), 2),
    # Lisp: (defparameter *smtp-password* "…"), (defvar db-pass "…"), (setf *api-key* "…")
    ("password", ("(def", "(set"),
     _Checked(_Lazy(r"\((?:defparameter|defvar|defconstant|defconst|defcustom|setq|setf|def)[ \t]+\*?([\w/.-]+?)\*?"
                    r"[ \t]+\"(?!\[REDACTED)([^\"\n]+)\""),
              lambda m: _strong_name(m.group(1).rsplit("/", 1)[-1]) and not _skip_value(m.group(2))), 2),
    # a login given as two strings after the call's name (Haskell, Elm, OCaml): basicAuth "user" "…"
    ("password", ("basicauth", "basic_auth", "login "),
     _Lazy(r"\b(?:basicAuth|basic_auth|BasicAuth|login)[ \t]+\"[^\"\n]*\"[ \t]+\"(?!\[REDACTED)([^\"\n]+)\""), 1),
    # user:password given to a flag named for a login: chisel --auth u:…, ab -A u:…, --basic-auth u:…, --creds u:…
    ("password", ("--auth", "-a ", "--creds", "--credentials", "--basic-auth", "--http-auth", "--login"),
     _Checked(_Lazy(r"(?<![\w-])(?:--(?:auth|basic-auth|http-auth|proxy-auth|creds|credentials|login)|-A)[ =][ \t]*"
                    r"[\"']?[^\s:\"']{1,64}:(?!\[REDACTED)([^\s\"']{4,128})"),
              lambda m: not m.group(1).isdigit() and not _stands_in(m.group(1)) and "://" not in m.group(1)
              and (_password_like(m.group(1)) or _strong_password(m.group(1), strict=False))), 1),
    # pass-the-hash: -H <NT hash>, -hashes LM:NT, --hash <NT hash>
    ("password-hash", ("-h ", "-hashes", "--hash"),
     _Lazy(r"(?<![\w-])(?:-H|-hashes|--hash|--nthash)[ =][ \t]*(?!\[REDACTED)((?:[0-9a-fA-F]{32}:)?[0-9a-fA-F]{32})"
           r"(?![\w])"), 1),
    # a user and password at a line's start, as plain files keep them: deluge's auth (user:pass:level), a Jetty
    # realm (user: pass,role…), lines of user:pass
    ("password", (":",),
     _Checked(_Lazy(r"(?m)^[ \t|│_]*([A-Za-z_][\w.@-]{0,63}|[0-9a-fA-F]{32}|[0-9a-fA-F]{40}):(?!\[REDACTED)"
                    r"([^\s:,\"'`]{8,64})(?:[:,][^\n]*|[ \t]+-[ \t][^\n]*)?$"),
              _line_login), 2),
    # user:password@host with no scheme: impacket's DOMAIN/user:pass@host, git's and rsync's user:pass@host
    ("password", ("@",),
     _Checked(_Lazy(r"(?<![\w/:.@-])(?:[\w.-]{1,64}/)?[\w.$-]{1,64}:(?!\[REDACTED)([^\s:@/\"'`]{6,128})@"
                    r"(?=[A-Za-z0-9][\w-]*(?:\.[\w-]+)+|\[[0-9a-fA-F:]+\])"),
              lambda m: _strong_password(m.group(1), strict=False) or _random_or_strong(m.group(1))), 1),
    # a password as a URL's whole user part: trojan://<password>@host, a proxy URI
    ("connection-string", ("://",),
     _Checked(_Lazy(r"\b[a-z][a-z0-9+.-]{1,15}://(?!\[REDACTED)([^\s:@/\"'`]{8,128})@[A-Za-z0-9\[]"),
              lambda m: _strong_password(m.group(1), strict=False)), 1),
    # Hurl: [BasicAuth] then user: password lines
    ("password", ("[basicauth]",),
     _Lazy(r"(?m)^\[BasicAuth\][ \t]*\n(?:[ \t]*#[^\n]*\n)*[ \t]*[^\s:#]+:[ \t]*(?!\[REDACTED)(\S+)"), 1),
    # a login told as e-mail / password or e-mail : password
    ("password", ("@",),
     _Checked(_Lazy(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+[ \t]*(?:/|\||:)[ \t]*[\"'`]?(?!\[REDACTED)([^\s\"'`]{8,128})[\"'`]?"
                    r"(?=[.,;!?)]?(?:\s|$))"),
              lambda m: _strong_password(m.group(1).rstrip(".,;!?"), strict=False)), 1),
    # "to log in: ops@example.org Hunter22": e-mail and password side by side on a line about a login
    ("password", ("@",),
     _Checked(_Lazy(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+[ \t]+[\"'`]?(?!\[REDACTED)([^\s\"'`]{8,128}?)[\"'`]?"
                    r"(?=[.,;!?)]?(?:\s|$))"),
              lambda m: _password_like(m.group(1)) and _mixed(m.group(1)) and not _skip_value(m.group(1))
              and _near(_LOGIN_WORDS_RE, m, 0)), 1),
    # "root on web-2 is …", "the admin password: …": an account's password told with its user
    ("password", ("root", "admin", "superuser", "postgres"),
     _Checked(_Lazy(r"\b(?:root|admin|administrator|superuser|postgres|sa)(?:[ \t]+(?:on|for|@)[ \t]+[\w.-]+)?[ \t]+"
                    r"(?:is|=)[ \t]+[\"'`]?(?!\[REDACTED)([^\s\"'`]{8,128}?)[\"'`]?(?=[.,;!?)]?(?:\s|$))"),
              lambda m: _strong_password(m.group(1), strict=False) and not _skip_value(m.group(1))), 1),
    # Exim's plaintext authenticator (client_send = : user : password); sendmail's authinfo ("P:password")
    ("password", ("client_send",), _Lazy(r"client_send[ \t]*=[ \t]*:?[^:\n]*:[ \t]*(?!\[REDACTED)([^\s:]+)"), 1),
    ("password", ("authinfo",), _Lazy(r"(?i)AuthInfo:[^\n]*?\"P[:=](?!\[REDACTED)([^\"\n]+)\""), 1),
    # the password of a Redis AUTH seen by MONITOR ("AUTH" "user" "…"), in RESP on the wire (strace, tcpdump),
    # and SMTP's AUTH LOGIN answer after the base64 prompt for it ("334 UGFzc3dvcmQ6" is "Password:")
    ("password", ('"auth"',),
     _Lazy(r"(?i)\"AUTH\"(?:[ \t]+\"[^\"\n]*\")?[ \t]+\"(?!\[REDACTED)([^\"\n]+)\"[ \t]*$", re.MULTILINE), 1),
    ("password", ("auth\\r\\n", "auth\r\n"),
     _Lazy(r"(?i)AUTH(?:\\r\\n|\r\n)\$[0-9]+(?:\\r\\n|\r\n)(?:[^\\\r\n]{1,64}(?:\\r\\n|\r\n)\$[0-9]+(?:\\r\\n|\r\n))?"
           r"(?!\[REDACTED)([^\\\r\n\"]+)"), 1),
    ("password", ("ugfzc3dvcmq6",), _Lazy(r"334 UGFzc3dvcmQ6[ \t]*\r?\n[ \t]*(?!\[REDACTED)([A-Za-z0-9+/=]{4,})"), 1),
    # a one-time link's token in its path: /reset-password/<token>, /verify/<token>, /magic-link/<token>
    ("secret", ("reset", "verify", "confirm", "activate", "invite", "magic"),
     _Checked(_Lazy(r"(?i)/(?:reset[-_]?password|password[-_]?reset|reset|verify(?:[-_]email)?|confirm(?:[-_]email)?"
                    r"|activate|activation|invite|invitation|magic[-_]?link|login[-_]?link)/(?:[\w-]{1,40}/)?"
                    r"(?!\[REDACTED)([A-Za-z0-9_-]{20,})"),
              _random_with_digit(1)), 1),
    # a key given to a tool's set-up as its only argument: shodan init KEY, … auth KEY, … configure KEY
    ("secret", ("init ", "auth ", "login ", "configure ", "setup ", "activate "),
     _Checked(_Lazy(r"(?m)(?:^|[$>#%][ \t]+)[\w.-]+[ \t]+(?:init|auth|login|configure|setup|activate)[ \t]+"
                    r"(?!\[REDACTED)(?!-)([A-Za-z0-9_.+/=-]{16,200})[ \t]*$"),
              lambda m: _random_or_strong(m.group(1))), 1),
    # a cluster's join token: microk8s join HOST:PORT/<token>/<id>
    ("secret", ("join ",), _Lazy(r"\bjoin[ \t]+[\w.-]+:[0-9]+/(?!\[REDACTED)([0-9a-fA-F]{16,})"), 1),
    # Cisco, strongSwan: pre-shared-key <value>
    ("password", ("pre-shared-key",),
     _Lazy(r"\bpre-shared-key[ \t]+(?:[0-9][ \t]+)?(?!\[REDACTED)([^\s\"]{6,})[ \t]*$", re.MULTILINE), 1),
    # OpenWrt's UCI: option key '…' (a Wi-Fi passphrase), option password '…'
    ("password", ("option ",),
     _Checked(_Lazy(r"(?m)^[ \t]*option[ \t]+([\w-]+)[ \t]+(['\"]?)(?!\[REDACTED)([^\s'\"]+)\2[ \t]*$"),
              _uci_secret), 3),
    # a key given as a list of byte values under a secret's name: network_key: [122, 118, …] (16 or more)
    ("secret", ("key", "secret", "token"),
     _Checked(_Lazy(r"[:=][ \t]*(?!\[REDACTED)(\[(?:[ \t]*(?:0x)?[0-9a-fA-F]{1,3}[ \t]*,){15,63}"
                    r"[ \t]*(?:0x)?[0-9a-fA-F]{1,3}[ \t]*\])"), _named_before), 1),
    # values under a parent named for secrets: secrets:\n  peertube: '<hex>'; credentials:\n  api: …
    ("secret", ("secrets:", "credentials:", "passwords:", "tokens:", "keys:"), _SecretsBlock(), 1),
    # a password printed on its own line below the line that announces it, maybe after blank lines or under a
    # log prefix ("Password for the elastic user …:\n\n  <value>", "jenkins-1 | <value>"), and a passphrase of words
    ("password", ("password", "passphrase", "token", "key", "secret"), _AnnouncedBelow(), 1),
    # "A temporary password is generated for root@localhost: …", "Password for 'https://u@host': …"
    ("password", ("password",),
     _Lazy(r"(?i)\bpassword\b[^\n:]{0,60}?\bfor[ \t]+[^\s]{1,80}?:[ \t]+(?!\[REDACTED)([^\s*•]{6,128})[ \t]*$",
           re.MULTILINE), 1),
    # a chosen or generated password standing alone in a sentence or a chat line, in any language: letters of both
    # cases, a digit and a sign that no word, name, version, path, e-mail, hashtag or formula holds that way
    ("password", ("!", "#", "$", "%", "&", "*", "?", "~", "@", ".", "-", "_", "=", "+"), _StrongToken(), 1),
    # a value `reg query` prints: NAME    REG_SZ    VALUE, under a secret's name
    ("secret", ("reg_sz", "reg_expand_sz", "reg_multi_sz"),
     _Checked(_Lazy(r"(?m)^[ \t]+([\w.-]{1,80})[ \t]{2,}REG_(?:SZ|EXPAND_SZ|MULTI_SZ)[ \t]{2,}(?!\[REDACTED)(\S[^\n]*?)"
                    r"[ \t]*$"), _named_by(1)), 2),
    # a Wi-Fi profile's key, as `netsh wlan show profile … key=clear` prints it in the system's language
    ("password", ("key content", "schlüsselinhalt", "contenu de la clé", "contenido de la clave", "conteúdo da chave",
                  "contenuto chiave", "содержимое ключа", "sleutelinhoud", "zawartość klucza", "obsah klíče",
                  "anahtar içeriği", "キー コンテンツ", "关键内容", "主要內容"),
     _Lazy(r"(?im)^[ \t]*(?:Key Content|Schlüsselinhalt|Contenu de la clé|Contenido de la clave|Conteúdo da Chave"
           r"|Contenuto chiave|Содержимое ключа|Sleutelinhoud|Zawartość klucza|Obsah klíče|Anahtar İçeriği"
           r"|キー コンテンツ|关键内容|主要內容)[ \t]*:[ \t]*(?!\[REDACTED)(\S[^\n]*?)[ \t]*$"), 1),
    # a Google app password (four groups of four letters) under a password's name: SMTP_PASS=pdew tmbs qqrl mzez
    ("password", ("pass", "pwd"),
     _Lazy(r"(?i)(?:pass(?:word|wd)?|pwd)[\"'`]?[ \t]*[:=][ \t]*[\"'`]?(?!\[REDACTED)((?-i:[a-z]{4} [a-z]{4} [a-z]{4} "
           r"[a-z]{4}))(?![a-z])"), 1),
    # Zhipu's API key: 32 hexadecimal digits, a dot, 16 letters and digits
    ("api-token", (".",), _Lazy(r"(?<![\w.])([0-9a-f]{32}\.[A-Za-z0-9]{16})(?![\w.])"), 1),
    # an SQL dump's rows, a table aligned by spaces
    ("password", ("insert",), _SqlInsert(), 1),
    ("secret", ("secret", "password", "token", "key", "value"), _SpacedColumns(), 1),
    # a default login's name, a slash and the password: "admin / router64RO!", "root / »qjqle47jMUGA«"
    ("password", ("admin", "root", "administrator", "ubuntu", "postgres", "guest", "operator"),
     _Checked(_Lazy(r"(?i)(?<![\w/-])(?:admin|root|administrator|ubuntu|postgres|guest|operator)[ \t]+/[ \t]+"
                    r"[\"'`»«“”„‘’]?(?!\[REDACTED)([^\s\"'`»«“”„‘’/]{6,64}?)[\"'`»«“”„‘’]?(?=[.,;:?)]?(?:\s|$))"),
              lambda m: _told(m.group(1).rstrip("!")) or _password_like(m.group(1))), 1),
    # a password as people choose them, in a sentence of any language: two or three capitalised words, a number
    # and a sign ("GranitePuffin73=", "FerretComet03+"), a word, a sign and a number ("Hazel+75"), words joined by a
    # dash or a dot and a short number ("Tundra-Faucet-93")
    ("password", ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9"), _ChosenPassword(), 1),
    # the rest of a key split over two lines (a chat app cut it): a random token alone on the line after a token
    # another rule masked alone on its line
    ("secret", ("[redacted:",),
     _Checked(_Lazy(r"(?m)^[ \t]*\[REDACTED:[a-z-]+\][ \t]*\r?\n[ \t]*([A-Za-z0-9_+/=-]{16,})[ \t]*$"
                    r"(?![ \t]*\r?\n[ \t]*[A-Za-z0-9_+/=-]{16,}[ \t]*$)"),  # (not a block of data lines: a font's hex)
              lambda m: _looks_random(m.group(1)) and not _identifier_like(m.group(1))), 1),
    # ASP.NET Core's protected payload (an auth cookie, an antiforgery token)
    ("secret", ("cfdj8",), _Lazy(r"(?<![A-Za-z0-9_-])(CfDJ8[A-Za-z0-9_-]{40,})"), 1),
    # OpenWeather's and others' app id: 32 hexadecimal digits
    ("secret", ("appid",), _Lazy(r"(?i)[\"']?appid[\"']?[ \t]*[:=][ \t]*[\"']?(?!\[REDACTED)([0-9a-f]{32})(?![0-9a-z])"), 1),
    # a header set in a proxy's config: proxy_set_header Authorization "Basic …", X-…-Key <token>;
    ("bearer-token", ("authorization",),
     _Lazy(r"(?i)\b(?:proxy_set_header|RequestHeader[ \t]+set|add_header|header_up)[ \t]+Authorization[ \t]+[\"']?"
           r"(?:Basic|Bearer|Token|Digest)[ \t]+(?!\[REDACTED)([A-Za-z0-9+/=._~-]{8,})"), 1),
    # SNMP communities and v3 users' passphrases (snmpd.conf)
    ("password", ("rocommunity", "rwcommunity"),
     _Lazy(r"(?im)^[ \t]*r[ow]community6?[ \t]+(?!\[REDACTED|public\b|private\b)([^\s#]{4,})"), 1),
    ("password", ("createuser",),
     _Lazy(r"(?i)\bcreateUser[ \t]+\S+[ \t]+(?:MD5|SHA[-0-9]*)[ \t]+\"?(?!\[REDACTED)([^\s\"]{4,})\"?"), 1),
    ("password", ("createuser",),
     _Lazy(r"(?i)\bcreateUser[ \t]+\S+[ \t]+(?:MD5|SHA[-0-9]*)[ \t]+\S+[ \t]+(?:DES|AES[0-9]*)[ \t]+\"?"
           r"(?!\[REDACTED)([^\s\"]{4,})\"?"), 1),
    # etcd's and Consul's listings: a key's path on one line, its value on the next
    ("secret", ("/",),
     _Checked(_Lazy(r"(?m)^/[\w./-]*/([\w.-]{1,80})[ \t]*\r?\n(?!\[REDACTED)(\S{4,})[ \t]*$"), _named_by(1)), 2),
    # Azure Pipelines' debug log: the value of a secret variable it evaluated
    ("secret", ("evaluating:",),
     _Checked(_Lazy(r"Evaluating: variables\['([\w.-]{1,80})'\][^\n]*\r?\n[^\n]*?Result: '(?!\[REDACTED)([^'\n]+)'"),
              _named_by(1)), 2),
    # a web framework's session cookie as the server set it: session=…; Path=/; HttpOnly
    ("secret", ("session=",),
     _Lazy(r"(?i)(?<![\w.-])session=(?!\[REDACTED)([A-Za-z0-9._~+/-]{20,}=*)(?=;[ \t]*(?:Path|Domain|HttpOnly|Secure"
           r"|Expires|Max-Age|SameSite)\b)"), 1),
    # a password corrected after its word: "niet Y371cr1ck%7 maar Stroopwafel@9786", "no es … sino …"
    ("password", ("not ", "no es ", "niet ", "nicht ", "non è ", "não é ", "pas ", "не "), _Corrected(), 1),
    # the logins of a list under its heading ("Accounts for the demo:", "Zugangsdaten"): "- alice / Pebble.Stream.31"
    ("password", _CREDENTIAL_HEADS, _CredentialList(), 1),
    # a password told on the line after its user, each by one letter or a short form: "U: editor\nP: …"
    ("password", ("p:", "p =", "p=", "pw:", "pw =", "pw=", "pass:"),
     _Checked(_Lazy(r"(?im)^[ \t>*-]*(?:u|usr|user(?:name)?|login|benutzer(?:name)?|usuario|utilisateur|utente"
                    r"|gebruiker|uživatel|użytkownik|логин)[ \t]*[:=][ \t]*\S+[ \t]*\r?\n"
                    r"[ \t>*-]*(?:p|pw|pwd|pass)[ \t]*[:=][ \t]*[\"'`]?(?!\[REDACTED)([^\s\"'`]{4,128})[\"'`]?[ \t]*$"),
              lambda m: _told(m.group(1)) or _password_like(m.group(1))), 1),
    # T-SQL's N'…' literal under a secret's name: @rmtpassword = N'…', @password = N'…'
    ("password", ("@",),
     _Checked(_Lazy(r"@([A-Za-z_]\w{1,60})[ \t]*=[ \t]*N'(?!\[REDACTED)([^'\n]+)'"), _named_by(1)), 2),
    # keyword options with a bare value: :dbpassword VALUE (org-babel), :password VALUE
    ("password", ("pass", "secret", "token", "key"),
     _Checked(_Lazy(r"(?<![\w:]):([a-z][\w-]{1,40})[ \t]+(?![\"':(\[])(?!\[REDACTED)([^\s)]{4,200})"),
              lambda m: _strong_name(m.group(1)) and not _skip_value(m.group(2))), 2),
    # CI log commands that set a variable or an output: ##vso[task.setvariable variable=dbPassword…]VALUE,
    # ::set-output name=registry_token::VALUE
    ("secret", ("##vso[", "::set-output"),
     _Checked(_Lazy(r"(?:##vso\[task\.setvariable[^\]\n]*\bvariable=([\w.-]+)[^\]\n]*\]|::set-output name=([\w.-]+)::)"
                    r"(?!\[REDACTED)([^\s\"']+)"),
              lambda m: _strong_name(m.group(1) or m.group(2)) or "issecret=true" in m.group(0).lower()), 3),
    # a named value stored by a CLI: buildkite-agent meta-data set "db-password" "…", … env set NAME VALUE
    ("secret", ("meta-data set", "metadata set", "env set", "variable set", "var set", "param set", "parameter set"),
     _Checked(_Lazy(r"\b(?:meta-?data|env|variables?|vars?|param(?:eter)?s?)[ \t]+(?:set|put|add)[ \t]+([\"']?)([\w.:/-]{1,80})\1"
                    r"[ \t]+([\"']?)(?!\[REDACTED)([^\s\"']+)\3"),
              lambda m: _strong_name(re.split(r"[.:/]", m.group(2))[-1]) and not _skip_value(m.group(4))), 4),
    # an element named for a secret holding a <value> child: <variable name="ARTIFACTORY_TOKEN"><value>…</value>
    ("secret", ("<value>",),
     _Checked(_Lazy(r"<[\w:.-]+\b[^<>\n]{0,200}?\bname\s*=\s*[\"']([^\"'<>\n]{1,80})[\"'][^<>\n]{0,200}?>\s*"
                    r"<(?:value|secureValue|encryptedValue)>(?!\[REDACTED)([^<>\n]{1,300})</"), _named_by(1)), 2),
    # a password given to a key store or a cipher as characters: ks.load(in, "…".toCharArray())
    ("password", ("tochararray()",),
     _Checked(_Lazy(r"([\"'])(?!\[REDACTED)([^\"'\n]{4,128})\1\s*\.toCharArray\(\)"),
              lambda m: _LOADS_KEY_RE.search(m.string, max(0, m.start() - 200), m.start()) is not None
              and not _skip_value(m.group(2))), 2),
    # qemu's secret object (-object secret,id=…,data=…), Windows' net use with the password before /user:
    ("secret", ("secret,",), _Lazy(r"-object[ \t]+secret,(?:[^,\s]+,)*?data=(?!\[REDACTED)([^,\s'\"]+)"), 1),
    ("password", ("net use",),
     _Lazy(r"(?i)\bnet[ \t]+use[ \t]+(?:[A-Z]:[ \t]+)?\\\\[^\s]+[ \t]+(?!/)(?!\[REDACTED)([^\s]+)[ \t]+/user:"), 1),
    # a proxy's or a daemon's basic-auth directive: BasicAuth user password (tinyproxy), basic_auth user password
    ("password", ("basicauth", "basic_auth"),
     _Lazy(r"(?im)^[ \t]*(?:BasicAuth|basic_auth|AuthBasic)[ \t]+\S+[ \t]+(?!\[REDACTED)(\S+)[ \t]*$"), 1),
    # a database URL typed with its scheme's colon or a slash missing (what "could not parse URL" errors echo back):
    # postgres//etl:…@host, mysql:/app:…@db
    ("connection-string", ("postgres", "mysql", "mariadb", "mongodb", "redis", "amqp", "mssql", "sqlserver",
                           "clickhouse", "cockroach"),
     _Lazy(r"\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|clickhouse|cockroachdb)"
           r"(?:\+[a-z0-9]+)?(?://|:/(?!/))[^\s:@/\"']{1,64}:(?!\[REDACTED)([^\s@\"']{1,128})@[\w\[-]"), 1),
    # smb://DOMAIN/user:password@host, a user with a domain in a URL
    ("connection-string", ("://",),
     _Lazy(r"\b[a-z][a-z0-9+.-]{1,15}://[\w.-]{1,64}[/;][\w.$-]{1,64}:(?!\[REDACTED)([^\s@/:\"']{1,128})@"), 1),
    # an RSA key in XML (.NET): its private members
    ("private-key", ("<rsakeyvalue>",),
     _Lazy(r"<(D|P|Q|DP|DQ|InverseQ)>(?!\[REDACTED)([A-Za-z0-9+/=\s]{16,})</\1>"), 2),
    # an IRC server password; Zapier's catch hook
    ("password", ("pass ",), _Lazy(r"(?m)^PASS[ \t]+(?!\[REDACTED)(\S+)"), 1),
    ("webhook-url", ("hooks.zapier.com",), _Lazy(r"hooks\.zapier\.com/hooks/catch/(?!\[REDACTED)([0-9]+/\w+)"), 1),
    ("password-hash", _HASH_ANCHORS[:-1], _HASH_RE, 0),
    ("password-hash", (":::",), _SAM_RE, 1),
    ("secret", ("$ansible_vault",), _VAULT_RE, 0),
    ("secret", ("secret",), _SecretManifest(), 1),
    ("secret", ("$ ", "# ", "% ", "> ", ">\t", "❯", "›", "bash:", "powershell:", "shell:",
                # a tool's output that starts with its command, no prompt before it
                "cat ", "printenv", "echo ", "get-content", "op ", "vault ", "gcloud ", "aws ", "az ", "gh ",
                "kubectl ", "heroku ", "security ", "openssl ", "sops ", "ansible-vault", "gpg ", "pass "),
     _PrintedSecret(), 1),
    # "Basic <base64 of user:password>" wherever it is printed (a capture's fields, a log), not only after a header
    ("password", ("basic",),
     _Checked(_Lazy(r"(?i)\bbasic[ \t]+(?!\[REDACTED)([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])"), lambda m: _encodes_login(m.group(1))),
     1),
    # a pair of replies, name then value: redis-cli's `CONFIG GET` / `HGETALL` (1) "requirepass" 2) "…"), PHP's
    # var_dump (["password"]=> string(18) "…"), a list of {name: …, value: …} (Kubernetes' env and httpHeaders,
    # ECS, CloudFormation's ParameterKey/ParameterValue)
    ("password", (")",),
     _Checked(_Lazy(r"(?m)^[ \t]*[0-9]+\)[ \t]+\"([^\"\n]{1,80})\"[ \t]*\r?\n[ \t]*[0-9]+\)[ \t]+\"(?!\[REDACTED)([^\"\n]+)\""),
              lambda m: _names_a_secret(m.group(1), m.group(2))), 2),
    ("password", ("]=>",),
     _Checked(_Lazy(r"\[\"([^\"\n]{1,80})\"\]=>[ \t]*\r?\n[ \t]*string\([0-9]+\)[ \t]+\"(?!\[REDACTED)([^\"\n]*)\""),
              lambda m: _names_a_secret(m.group(1), m.group(2))), 2),
    ("password", ("value",),
     _Checked(_Lazy(r"(?i)\{[ \t]*[\"']?(?:name|key|parameterkey)[\"']?[ \t]*[:=][ \t]*[\"']?([\w.:-]{1,80})[\"']?[ \t]*,[ \t]*"
                    r"[\"']?(?:value|parametervalue)[\"']?[ \t]*[:=][ \t]*([\"']?)(?!\[REDACTED)([^\s\"',}]+)\2"),
              lambda m: _named_pair(m)), 3),
    # curl's client certificate with its passphrase (--cert file.p12:…), a key given as a user with no name
    # (--user :…, -u :…)
    ("password", ("--cert", "-e"),
     _Lazy(r"(?:--cert|(?<![\w-])-E)[ \t]+[\"']?[^\s:\"']+\.(?:p12|pfx|pem|crt|cer|key):(?!\[REDACTED)([^\s\"']+)"), 1),
    ("password", ("--user", "-u"),
     _Checked(_Lazy(r"(?:--user|(?<![\w-])-u)[ \t=]+[\"']?:(?!\[REDACTED)([^\s\"']{8,})"), _random_with_digit(1)), 1),
    # a Windows product key (five groups of five), Google's app password (four groups of four letters) where an
    # app password is named, a license block's lines of hexadecimal groups
    ("secret", ("-",),
     _Checked(_Lazy(r"(?<![\w-])([A-Z0-9]{5}(?:-[A-Z0-9]{5}){4})(?![\w-])"), lambda m: _mixed_groups(m.group(1))), 1),
    ("password", ("password", "passwort", "passe", "contraseña", "senha"),
     _Lazy(r"(?i)(?:app(?:lication)?[ -](?:specific[ -])?passw(?:ord|ort)s?|mot de passe d'application"
           r"|contraseña de (?:aplicación|app)|senha de app(?:licativo)?|password per le app)\b"
           r"[^\n]{0,120}\n?[^\n]{0,40}?(?<![\w-])((?-i:[a-z]{4} ?[a-z]{4} ?[a-z]{4} ?[a-z]{4}))(?![\w-])"), 1),
    # a card's magnetic stripe, track 1 (%B, the number, ^NAME/GIVEN^, the expiry and the data after it) or track 2
    # (;, the number, =, the expiry…): its sentinels and separators say "card" as a card's word would, and a track
    # made up for a test fails the Luhn check as often as not, so none is asked; the track goes whole after its
    # sentinel (the number, the name, the discretionary data that holds the card's verification value)
    ("secret", ("%b", "="),
     _Checked(_Lazy(r"(?:%[Bb]|(?<![\w;]);)((\d{12,19})(?:\^[^^\n]{2,26}\^|=)\d{4}[^\s?]{0,80}\??)"),
              lambda m: _track_number(m.group(2))), 1),
    # a card's expiry date beside its number (before the number's rule masks it: the number is how the date is
    # known for a card's), after its word in the languages cards are printed in: "exp 08/27", "gültig bis 09/28"
    ("card-expiry", _EXPIRY_ANCHORS, _CardExpiry(), 1),
    # payment card data told with its word: a card number that passes the Luhn check (not a processor's published
    # test number), a US social security number (a card's security code: indexer.secret_ids)
    ("secret", ("card", "visa", "mastercard", "amex", "cvv", "cvc", "exp", "tarjeta", "carte", "karte", "kartu", "carta",
                "kaart", "karta", "kort", "بطاقة", "כרטיס", "카드", "カード", "thẻ",
                "cartão", "cartao", "карт", "卡", "diners", "discover", "maestro", "jcb", "unionpay", "pasnummer"),
     _Checked(_CARD_NUMBER_RE, lambda m: _card_number(m.group(1)) and _near(_CARD_WORDS_RE, m, 80)), 1),
    # and a 19-digit card (Maestro, UnionPay) grouped 4-4-4-4-3
    ("secret", ("card", "maestro", "unionpay", "carte", "karte", "tarjeta", "cartão", "cartao", "карт", "卡"),
     _Checked(_Lazy(r"(?<![\w-])([0-9]{4}([ -])[0-9]{4}\2[0-9]{4}\2[0-9]{4}\2[0-9]{3})(?![\w-])"),
              lambda m: _card_number(m.group(1)) and _near(_CARD_WORDS_RE, m, 80)), 1),
    ("secret", ("ssn", "social security", "seguro social", "sécurité sociale"),
     _Checked(_Lazy(r"(?i)(?<![A-Za-z])(?:ssn|social security(?: number| no\.?)?|(?:n[úu]mero de )?seguro social"
                    r"|num[ée]ro de s[ée]curit[ée] sociale)\b[^\n0-9]{0,20}(?<![\w-])([0-9]{3}-[0-9]{2}-[0-9]{4})"
                    r"(?![\w-])"), lambda m: _issuable_ssn(m.group(1))), 1),
    ("secret", ("begin license",),
     _Lazy(r"(?i)[-–—]{2,}[ \t]*BEGIN LICENSE[ \t]*[-–—]{2,}[ \t]*\r?\n(?![ \t]*[-–—]{2,})"
           r"([^\n]*(?:\n(?![ \t]*[-–—]{2,}[ \t]*END)[^\n]*){0,39})"),
     1),
])


_CJK_RE = _Lazy(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _speaks_of_password(value: str) -> bool | None:
    """None when ``value`` holds no word for password; else whether it speaks of one (a space beside the word, or no
    digit: ``Passwort``, ``Passwort vergessen?``) rather than being one (``Password123!``)."""
    if _PASSWORD_WORDS_RE.search(_ascii_lower(value)) is None:
        return None
    return " " in value.strip() or not any(c.isdigit() for c in value)


def _ui_label(value: str) -> bool:
    """A value under a secret's name that names the secret rather than being one (``"login.password": "Passwort"``,
    ``كلمة المرور``), or a rule told in Chinese or Japanese."""
    v = value.strip().strip("\"'`")
    if len(_CJK_RE.findall(v)) >= 4:
        return True  # 半角英数字記号を含む12文字以上: a rule told in Chinese or Japanese, not a password
    return bool(v) and len(v) <= 60 and bool(_speaks_of_password(v))


def _xml_named(m: re.Match[str]) -> bool:
    """``<string name="…">…</string>``: a strong name (or a weak one and a random value), not an app's label."""
    return (_strong_name(m.group(2).strip()) or name_kind(m.group(2).strip()) is not None and _looks_random(m.group(3))
            ) and not _ui_text(m.group(3))


def _ui_text(value: str) -> bool:
    """A label an app shows about the secret (``Пароль``, ``Неверный пароль``, ``Токен API``): one that speaks of a
    password (:func:`_speaks_of_password`), or words of letters only, capitalised."""
    spoken = _speaks_of_password(value)
    if spoken is not None:
        return spoken
    words = value.split()
    if len(words) >= 4 and value[:1].isupper() and sum(w.strip(",.;:!?()").isalpha() for w in words) >= len(words) - 1:
        return True  # "Mínimo 10 caracteres, con al menos un número": a sentence the app shows
    return len(words) >= 2 and value[:1].isupper() and all(w.isalpha() for w in words)


def _named_pair(m: re.Match[str]) -> bool:
    """``{name: <group 1>, value: <group 3>}`` holds a secret: the name marks one, and the value is quoted under a
    strong name, or random, or a password (not a reference such as ``value: token``)."""
    name, quoted, value = m.group(1), m.group(2), m.group(3)
    if not _names_a_secret(name, value, strong=False):
        return False
    return bool(quoted) and _strong_name(name) or _random_or_strong(value) or _password_like(value) and not (
        value.isidentifier() or _CODE_PATH_RE.fullmatch(value))


def _encodes_login(value: str) -> bool:
    """``value`` is base64 of ``user:password`` (printable, with a colon and something after it)."""
    import base64
    import binascii

    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and password) and decoded.isprintable() and len(user) <= 128


#: the processors' published test card numbers (Stripe, Adyen, Braintree, PayPal docs): everyday text in a payment
#: integration's code and tests, never a card
_TEST_CARDS = frozenset({
    "4242424242424242", "4000056655665556", "5555555555554444", "2223003122003222", "5200828282828210",
    "5105105105105100", "378282246310005", "371449635398431", "6011111111111117", "6011000990139424",
    "3056930009020004", "36227206271667", "3566002020360505", "6200000000000005", "4111111111111111",
    "4012888888881881", "4222222222222", "5431111111111111", "4000000000000002", "4000000000009995",
    "4000000000000077", "4000002500003155", "4000000000003220", "4000000000000341", "4000000000000069",
    "4000000000000127", "4000000000000119", "4917610000000000", "4988438843884305", "5454545454545454",
    "6011601160116611", "3530111333300000", "30569309025904", "38520000023237", "4005519200000004",
    "4009348888881881", "4012000033330026", "4012000077777777", "4217651111111119", "4500600000000061",
    "5019717010103742", "6331101999990016", "4444333322221111", "5500005555555559", "2222400070000005",
})


def _card_number(number: str) -> bool:
    """13 to 19 digits that pass the Luhn check, not all one digit, and not a published test card."""
    digits = number.replace(" ", "").replace("-", "")
    return digits not in _TEST_CARDS and secret_ids.luhn(digits)


def _track_number(number: str) -> bool:
    """A card number on a magnetic stripe's track: no Luhn check (the track's layout tells a card), not a published
    test card, not one or two digits repeated."""
    return number not in _TEST_CARDS and len(set(number)) > 2


def _issuable_ssn(ssn: str) -> bool:
    """A number the US could issue (not area 000, 666 or 9xx, group 00 or serial 0000), and not a pattern of
    repeated digits that examples use (``111-22-3333``)."""
    area, group, serial = ssn.split("-")
    if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
        return False
    return not all(len(set(part)) == 1 for part in (area, group, serial))


def _mixed_groups(key: str) -> bool:
    """Groups of a product key: letters and digits mixed in most of them (not ABCDE-FGHIJ-… or 12345-…)."""
    groups = key.split("-")
    return sum(any(c.isdigit() for c in g) and any(c.isalpha() for c in g) for g in groups) >= 3



def _needed_anchors() -> tuple[str, ...]:
    """Every rule's anchors, less those that another anchor of each rule naming them is inside (``passwort`` beside
    ``pass``): the text holds the shorter one whenever it holds the longer, so the rule runs on the same texts, and
    each anchor left out saves every text a substring test (~1.7 us on 2 KB)."""
    stood_for: dict[str, bool] = {}  # each anchor: whether every rule naming it has a shorter anchor inside it
    for _, anchors, _, _ in _FORMATS:
        short = sorted(set(anchors), key=len)
        for i, a in enumerate(short):
            inside = a.isascii() and any(b in a for b in short[:i] if len(b) < len(a))  # (a non-ASCII test is free)
            stood_for[a] = stood_for.get(a, True) and inside
    return tuple(a for a, inside in stood_for.items() if not inside)


_FORMAT_ANCHORS = _needed_anchors()
_FORMAT_ANCHOR_SET = AnchorSet(_FORMAT_ANCHORS)  # found in one pass over the text

# Base64 key material without its BEGIN line (a cut or a pasted fragment): three or more lines of 40+ base64
# characters mixing cases; hex (digests, commit ids) has no upper and lower case mix and is left alone.
_KEY_LINES_RE = _Lazy(r"(?m)^[ \t]*[A-Za-z0-9+/]{40,}={0,2}[ \t]*(?:\n[ \t]*[A-Za-z0-9+/]{16,}={0,2}[ \t]*){2,}$")


_PUBLIC_BLOCK_RE = _Lazy(r"-----(?:BEGIN|END) (?:[A-Z0-9 ]*CERTIFICATE[A-Z ]*|[A-Z0-9 ]*PUBLIC KEY[A-Z ]*)-----")


def _key_material(text: str) -> tuple[str, int]:
    count = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal count
        block = m.group(0)
        before = text[max(0, m.start() - 120) : m.start()]
        if "base64" in before.lower() and ("content-transfer-encoding" in before.lower() or "data:" in before):
            return block  # a MIME part or a data: URI in base64: a file, not key material
        after = text[m.end() : m.end() + 60]
        begin = before.rfind("-----BEGIN ")
        if (begin >= 0 and _PUBLIC_BLOCK_RE.match(before, begin)) or _PUBLIC_BLOCK_RE.match(after.lstrip()):
            return block  # a certificate or a public key: meant to be shared
        if not (re.search("[a-z]", block) and re.search("[A-Z]", block) and re.search("[0-9+/]", block)):
            return block
        count += 1
        return _marker("key-material")

    return _KEY_LINES_RE.sub(sub, text), count


# -- 2. names --------------------------------------------------------------------------------------------------
#: run over the lower-cased text: an IGNORECASE scan costs ~15x more (measured: 8.5 ms vs 0.5 ms per 64 KB)
#: the words that may be inside a secret's name, as one pattern grouped by first letters (:func:`_by_first_letter`:
#: a plain alternation of ~70 words was tried branch by branch at every position, 4x slower over prose)
_NAME_WORDS = (
    "pass|pasw|pwd|secret|token|key|auth|cred|sig|salt|cookie|pw|psk|mnemonic|dockerc|seed|hmac|login"
    "|sessid|sessionid|connect\\.sid|_session|logged_in|wordpress_sec|cfid|cftoken"
    "|senha|sifre|kennwort|contrase|haslo|heslo|geslo|salasan|wachtwoord|losenord|jelszo|lozink"
    "|parool|adgangskode|geheim|segret|parol|sandi|khau|kodikos|sisma|ramz|sifra|mima|sekret|rahat"
    "|gizli|rahasia|kluch|klyuch|kljuc|klucz|chiave|clave|chave|anahtar|sleutel|nyckel|kulcs|kunci"
    "|pat(?![hc]|ter|ien|ron)")
_NAME_WORD_RE = _LazyWords(lambda: _by_first_letter(_split_top(_NAME_WORDS)))
_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
_CAMEL_RE = _Lazy(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
#: a component that marks a password
_PASSWORD_PARTS = ("passw", "passphrase", "passcode")
#: "password" in other languages' names (DB_SENHA, SIFRE; MOT_DE_PASSE, KATA_SANDI: see name_kind), also as they are
#: written in Latin letters (Romanian, Turkish, Russian, Indonesian, Malay, Vietnamese, Greek, Hebrew, Persian, Thai,
#: Serbo-Croatian, Chinese pinyin); a name only, never a word of a sentence (the prose rules read those languages)
_OTHER_LANGUAGES = frozenset({"senha", "sifre", "sifresi", "kennwort", "contrasena", "contrasenya", "haslo", "heslo",
                              "geslo", "salasana", "wachtwoord", "losenord", "jelszo", "lozinka", "parool",
                              "adgangskode", "passord", "passwort", "motdepasse", "parola", "parolasi", "parol",
                              "parolu", "katasandi", "katalaluan", "matkhau", "kodikos", "sisma", "ramz", "sifra",
                              "mima", "rahat", "rahatphan"})
_PASSWORD_WORDS = frozenset({"pwd", "pw", "pass", "pword", "passwd", "sshpass", "requirepass", "masterauth", "authtok",
                             "passhash",
                             # the common misspellings, which a connection string's error message echoes back
                             "pasword", "paswd", "passowrd", "paswword", "passwrd"}) | _OTHER_LANGUAGES
#: "key" in other languages' names (KLUCZ_API, GEHEIMER_SCHLUESSEL, CHIAVE_SEGRETA): read as ``key``
_KEY_WORDS = frozenset({"schluessel", "schlussel", "kluch", "klyuch", "kljuch", "klucz", "chiave", "clave", "chave",
                        "anahtar", "cle", "clef", "sleutel", "nyckel", "nokkel", "noegle", "kulcs", "kljuc", "kunci"})
#: words that end like a password's name and are none
_NOT_PASSWORDS = frozenset({"bypass", "compass", "trespass", "overpass", "underpass", "surpass", "encompass",
                            "multipass", "firstpass", "onepass", "subpass", "renderpass", "impass", "repass"})
#: a component that marks some other secret
_SECRET_WORDS = frozenset({
    "secret", "secrets", "credential", "credentials", "creds", "cred", "apikey", "privatekey", "secretkey",
    "accesskey", "authkey", "authtoken", "accesstoken", "refreshtoken", "sessiontoken", "idtoken", "clientsecret",
    "signingkey", "encryptionkey", "masterkey", "licensekey", "webhooksecret",
    # a Wi-Fi pre-shared key, a wallet's seed words, registry credentials (a Kubernetes Secret's key)
    "psk", "mnemonic", "dockerconfigjson", "dockercfg", "passkey",
    # "secret" in other languages' names (CLAVE_SECRETA, GEHEIM)
    "segreto", "segreta", "geheim", "geheimnis", "secreet", "segredo",
    "geheimer", "geheime", "geheimes", "sekret", "sekretnyj", "sekretnyy", "sekretny", "sekretna", "gizli",
    "rahasia",
})
#: what may come before "secret" in one lower-case word (appsecret, clientsecret; not libsecret)
_SECRET_PREFIXES = frozenset({"app", "api", "client", "mch", "consumer", "shared", "signing", "jwt", "session",
                              "master", "private", "access", "auth", "hmac", "oauth", "encryption", "cookie", "bot"})
#: what may follow "secret" in one lower-case word (secretkey, secretsmanager, Spanish secreta, French secrete); not
#: secretase, secretion, secretary
_SECRET_TAILS = frozenset({"", "s", "a", "o", "e", "key", "keys", "token", "tokens", "id", "value", "access",
                           "accesskey", "string",
                           "data", "manager", "smanager", "store", "service", "provider", "hash", "base", "keybase",
                           "phrase", "word", "box", "apikey"})
#: last components that make a prefixed name secret (``GITHUB_TOKEN``, ``API_KEY``, ``BASIC_AUTH``)
#: names that alone are too common in code to mask a value that does not look random (``key = "name"``)
_WEAK_ALONE = frozenset({"key", "sig", "signature", "salt", "cookie", "auth", "pat", "sas"})
_SECRET_LAST = frozenset({"token", "key", "sig", "signature", "auth", "salt", "cookie", "pat", "apikey", "sas"})
#: what before ``key`` makes the name a secret's whatever its value looks like (not ``sort_key``, ``s3_key``)
_KEY_QUALIFIERS = frozenset({
    "api", "access", "private", "auth", "encryption", "encrypt", "crypt", "crypto", "signing", "sign", "master",
    "license", "licence", "client", "app", "application", "service", "account", "storage", "webhook", "session",
    "hmac", "jwt", "ssh", "deploy", "admin", "consumer", "shared", "cipher", "aes", "rsa", "gpg", "pgp",
    "subscription", "primary", "secondary", "root", "server", "live", "prod", "production", "test", "sandbox",
    "write", "read", "ingest", "management", "personal", "user", "project", "org", "bot", "integration",
})
#: what a key named after them finds, not opens: ``Idempotency-Key``, ``cache_key``, ``routing_key``
_INDEX_KEYS = frozenset({"idempotency", "cache", "routing", "shard", "dedup", "dedupe", "cursor", "ordering"})
_FILE_EXTENSIONS = frozenset(
    "bin json yaml yml toml txt md py js ts tsx jsx go rs rb java kt cs php sh ps1 log csv xml html lock cfg ini conf "
    "gz zip tar pt pth onnx safetensors pkl c h cc cpp cxx hpp hh m mm swift scala sql pl pm lua diff patch exp "
    "in am ac mk cmake rst adoc 1 5 8 so o a dll".split())
#: what may follow a secret's name without changing what it names: RESEND_KEY_PROD, DB_PASSWORD_OLD
_QUALIFIERS = frozenset({"prod", "production", "dev", "development", "staging", "stage", "test", "testing", "qa",
                         "local", "live", "sandbox", "old", "new", "next", "prev", "previous", "current", "primary",
                         "secondary", "backup", "main", "default", "v1", "v2", "v3", "b64", "base64", "raw", "enc",
                         "ci", "cd", "e2e", "uat", "preprod", "int", "dr"})
#: a tokenizer's special tokens (``eos_token``, ``additional_special_tokens``): text markers, not credentials
#: what a token named after them marks in a listing: ``nextPageToken``, ``NextToken``, ``continuation_token``
_PAGE_WORDS = frozenset({"page", "next", "continuation", "pagination", "cursor", "resume", "sync", "delta", "marker"})
_TOKENIZER_WORDS = frozenset({"bos", "eos", "unk", "pad", "cls", "sep", "mask", "eot", "eod", "sot", "special",
                              "additional", "image", "vision", "tool", "think", "fim"})
#: last components that say the value is about a secret, not the secret (``PASSWORD_FILE=/run/secrets/db``)
_ABOUT_LAST = frozenset({
    "file", "files", "path", "dir", "name", "names", "ref", "env", "var", "vars", "length", "len", "size", "count",
    "type", "types", "field", "fields", "header", "required", "policy", "stdin", "prompt", "url", "uri", "endpoint",
    "placeholder", "title", "button", "tooltip", "caption", "heading", "description", "help", "link", "error",
    "expiry", "expires", "expiration", "ttl", "timeout", "at", "in", "format", "mode", "enabled", "provider",
    "manager", "store", "rotation", "label", "hint", "min", "max", "regex", "pattern", "reset", "changed", "version",
    "algorithm", "alg", "method", "scheme", "strength", "valid", "validator", "validation", "index", "position",
    "encryption", "hashing", "hasher", "fd", "prefix", "permission", "permissions", "scope", "scopes", "audience",
    "history", "attempts", "retries", "age", "lifetime", "complexity", "rounds", "iterations", "cost", "bits", "chars",
    "digits", "days", "hours", "minutes", "seconds", "interval", "period",
})
_NOT_VALUES = frozenset({
    "null", "none", "nil", "true", "false", "undefined", "str", "string", "int", "bool", "boolean", "bytes", "any",
    "optional", "required", "secret", "password", "self", "this", "new", "await", "lambda", "function", "def",
    "return", "yes", "no", "on", "off", "omitted", "hidden", "masked", "redacted", "unset", "empty", "char",
    "text", "varchar", "object", "number", "integer", "list", "dict", "map", "void", "async", "raise", "throw",
    "if", "else", "not", "and", "or", "is", "in", "yield", "continue", "break", "pass", "nullptr", "nothing",
    "write", "read", "read-all", "write-all", "inherit",  # GitHub Actions' permissions (id-token: write)
    "omit", "include", "same-origin",  # fetch()'s credentials
})
_PROSE_STOP = frozenset({
    "is", "was", "the", "a", "an", "not", "required", "incorrect", "wrong", "invalid", "missing", "set", "stored",
    "empty", "too", "expired", "correct", "changed", "reset", "being", "still", "now", "also", "and", "or", "in",
    "for", "to", "of", "on", "at", "by", "with", "from", "that", "this", "it", "must", "should", "will", "can",
    "hashed", "encrypted", "needed", "ok", "valid", "weak", "strong", "long", "short", "same", "different",
    "just", "fine", "good", "bad", "right", "very", "really", "only", "literally", "simply", "probably", "always",
    "never", "already", "currently", "actually", "somewhere", "there", "here", "saved", "visible", "shown",
    "hidden", "unchanged", "unknown", "optional", "mandatory", "case-sensitive", "forgotten", "lost", "locked",
    # where it is, in other languages ("Passwort: steht im Team-Tresor", "mot de passe : voir le coffre")
    "steht", "liegt", "siehe", "findest", "gibt", "kommt", "folgt", "fehlt", "wird", "ist", "im", "bei", "voir", "est",
    "dans", "suit", "está", "ver", "en", "sigue", "vedi", "è", "nel", "sta", "staat", "zie", "ligt", "veja", "fica",
    "jest", "patrz", "см", "лежит", "есть",
})
_SEP_RE = _Lazy(r"(?:\\?[\"'`])?[\]}]?[ \t]*(::(?=[ \t])|:=|=>|->|\?=|=|:)(?![=:/])[ \t]*")
#: ``name: API_KEY`` … ``value: x`` (Kubernetes env, .NET appSettings, CloudFormation parameters)
_NAME_FIELD_START_RE = _Lazy(r"(?i)\bname\\?[\"']?\s*[:=]")
_NAME_FIELD_RE = _Lazy(r"(?i)(?:name|key|parameterkey|id)\\?[\"']?\s*[:=]\s*\\?[\"']?$")
_VALUE_FIELD_RE = _Lazy(r"(?i)(?:value|example|default)\\?[\"']?\s*[:=]\s*")
_FLAG_SEP_RE = _Lazy(r"(=|[ \t]+)(?=[^\s-])")
_PROSE_RE = _Lazy(r"[ \t]+(?:is|was|=|:)[ \t]+(?:set to[ \t]+)?(?=\S)", re.IGNORECASE)
_INLINE_END = frozenset(" \t\r\n,;&)]}\"'<>|`")
_ARG_SEP_RE = _Lazy(r"(?:[\"']?\s*,|[ \t]+(?:-Value[ \t]+)?)\s*(?=[\"'])")
#: (a type's name is short, and a value follows it on the line: ``LS0tLS1CRUdJTi…Qo=`` is base64 ending in its
#: padding, not a type)
_TYPED_RE = _Lazy(r"(?:\[REDACTED:[a-z0-9-]+\]|[A-Z][\w.<>\[\]]{0,60}\??|str|string|bytes|&str|&'static str)"
                       r"[ \t]*=(?![=>])[ \t]*(?=\S)")
_PAIR_RE = _Lazy(r"\(\s*([\"'])[^\"'\n]*\1\s*,\s*([\"'])([^\"'\n]+)\2\s*\)")
_LOCATION_RE = _Lazy(r":[0-9]+(?::[0-9]+)?(?::|,|[ \t]*$)", re.MULTILINE)
_REFERENCE_RE = _Lazy(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_PATH_VALUE_RE = _Lazy(r"(?:[\w.-]+:)?(?:/|~/|\./|\.\./)[\w./%@+-]*")
_ARN_RE = _Lazy(r"\barn:[\w-]+:[\w-]+:[^\s\"']*$")
_PLAIN_URL_RE = _Lazy(r"[a-z][a-z0-9+.-]*://[^\s@?]+")
_STORE_PATH_RE = _Lazy(r"[A-Za-z][\w.-]*(?:/[A-Za-z][\w.-]*)+")
_BYTES_RE = _Lazy(r"[0-9]+ bytes?")
_TRAILING_COMMENT_RE = _Lazy(r"[ \t]{2,}(?:#|//|;)[ \t]")
_PUBLIC_KEY_TOOLS_RE = _Lazy(r"\b(?:minisign|signify|rsign)\b")
#: a call's first arguments before a quoted name: buildConfigField("String", "API_KEY", "…")
_ARGS_BEFORE_RE = _Lazy(r"[A-Za-z_][\w.]*[ \t]*[( \t][ \t]*(?:[\"'][\w.-]{1,40}[\"'][ \t]*,[ \t]*){1,2}$")
_DECLARATION_END_RE = _Lazy(r"[,;][ \t]*\r?\n")
_NAME_NOTE_RE = _Lazy(r"[ \t]*\([^()\n]{1,30}\)(?=[ \t]*[:=])")
#: an entry's value in a map printed whole (Java's ``{k=v, k=v}``, Kotlin's, Groovy's): up to the next ``, key=`` or
#: the closing brace
_MAP_ENTRY_RE = _Lazy(r"([^\n{}()]{1,200}?)(?=, [\w.$-]{1,80}=|\})")
_SPACED_TOKEN_RE = _Lazy(r"[ \t]+(?!\[REDACTED)([A-Za-z0-9+_=-]{16,200})(?=[\s,;)]|[.!?](?:\s|$)|$)")


def _bare_token(value: str) -> bool:
    """A token after a secret's name and a space, with no sign between: random, of both cases and digits, not a
    name (``key_secret vE6GztWMediGr5nPHu1ipRp2``)."""
    lower, upper, digits, _ = _char_kinds(value)
    if re.fullmatch(r"[0-9a-f]{32,}", value) and digits and lower:
        return not _skip_value(value)  # X-Partner-Key abf67e85…: 32 hexadecimal digits or more
    return bool(lower and upper and digits) and _looks_random(value) and not (
        _identifier_like(value) or _skip_value(value))


_SPACED_QUOTE_RE = _Lazy(r"[ \t]+(?=[\"'][^\"'\n\s][^\"'\n]*[\"'](?:[ \t]*[,;)]|[ \t]*$))", re.MULTILINE)
_OR_ELSE_RE = _Lazy(r"\s+(?:or|\|\||\?\?|\?:)\s")
_CODE_VALUE_RE = _Lazy(r"[A-Za-z_$][\w.$]*(?:::?[A-Za-z_$][\w.$]*)*[!?]?\s*[(\[]")


def _components(name: str) -> list[str]:
    parts: list[str] = []
    for piece in re.split(r"[_.\-]+", name):
        parts.extend(p.lower() for p in _CAMEL_RE.findall(piece))
    return parts


def _script_named(m: re.Match[str]) -> bool:
    """``name = value`` (group 1, group 2): a name in another script that marks a secret, and a value of Latin
    letters, digits and signs that is not a reference or a word ("パスワード: 半角英数字8文字以上" is a rule)."""
    value, name = m.group(2), m.group(1)
    return (not name.isascii() and any(a in name.lower() for a in _SCRIPT_NAME_ANCHORS) and name_kind(name) is not None
            and not _UNSPACED_RE.search(value)
            and not _skip_value(value) and (_password_like(value) or _looks_random(value) or _told(value)))


def _config_named(m: re.Match[str]) -> bool:
    """``config('services.paddle.api_key')`` (group 1) names a secret, and its answer (group 2) stands for none."""
    return name_kind(m.group(1).rsplit(".", 1)[-1]) is not None and not _stands_in(m.group(2))


@functools.lru_cache(maxsize=4096)
def name_kind(name: str) -> tuple[str, bool] | None:
    """``(kind, strong)`` when ``name`` marks a secret, else None; a weak name (``key``, ``auth``, ``salt``… alone)
    needs a value that looks random.

    >>> name_kind("AWS_SECRET_ACCESS_KEY"), name_kind("dbPassword"), name_kind("PASSWORD_FILE"), name_kind("token")
    (('secret', True), ('password', True), None, ('secret', True))
    >>> name_kind("key"), name_kind("client-key-data"), name_kind("psk"), name_kind("token_count")
    (('secret', False), ('secret', True), ('secret', True), None)
    >>> name_kind("sort_key"), name_kind("MAPBOX_KEY")
    (('secret', False), ('secret', True))
    """
    if not name.isascii():
        lowered = name.lower()
        for word, kind in _SCRIPT_NAMES:
            if word in lowered:
                return kind, True  # 시크릿키 = …, パスワード: …, пароль_бд = …: a name in another script
        if (folded := _fold(name)).isascii():
            name = folded  # hasło_smtp, contraseña_db: the name typed without its letters' marks
    if name.lower().startswith(_SESSION_COOKIES):
        return "secret", False  # PHPSESSID=…, JSESSIONID=…: a web session's cookie, when its value is random
    parts = ["key" if p in _KEY_WORDS else p for p in _components(name)]  # KLUCZ_API, GEHEIMER_SCHLUESSEL
    while len(parts) > 1 and (parts[-1].isdigit() or parts[-1] in _QUALIFIERS):  # key1, SECRET_2, RESEND_KEY_PROD
        parts.pop()
    if len(parts) > 1 and parts[-1] in ("value", "string", "val") and parts[-2] in _SECRET_LAST and "." not in name:
        parts.pop()  # --token-value, key-string: the token's value, the key's string (not Pygments' Token.String)
    if parts and parts[-1] in ("keys", "secrets"):  # APP_KEYS=a,b,c; not max_tokens, a count
        parts[-1] = parts[-1][:-1]
    if not parts:
        return None
    if parts == ["set", "cookie"]:
        return None  # a Set-Cookie header: the cookie rule reads its pairs
    if parts[0] in ("from", "use", "using", "via", "existing") and len(parts) > 1:
        return None  # from_secret: docker_password names which secret to read
    if parts[-1] in ("token", "tokens") and _TOKENIZER_WORDS.intersection(parts):
        return None  # a tokenizer's special tokens: bos_token, pad_token, mask_token
    if parts[-1] == "token" and _PAGE_WORDS.intersection(parts) and not {"api", "auth", "access", "bearer"} & set(parts):
        return None  # next_page_token, NextToken, continuationToken: where a listing resumes, not a credential
    if "." in name and name.rsplit(".", 1)[1].lower() in _FILE_EXTENSIONS:
        return None  # secrets_detector.bin, api_token.py: a file's name
    if any(p.startswith("secret") and p.endswith(("manager", "store", "service", "provider")) for p in parts):
        return None  # secretsmanager, SecretStore: a service that keeps secrets
    last = parts[-1]
    password = any(p.startswith(_PASSWORD_PARTS) or "passw" in p or p in _PASSWORD_WORDS
                   or p.endswith(("pass", "pw", "pwd")) and len(p) > 4 and p not in _NOT_PASSWORDS for p in parts) or (
        "passe" in parts and "mot" in parts) or any(  # MOT_DE_PASSE; KATA_SANDI, MAT_KHAU: two words for one
        a + b in _PASSWORD_WORDS for a, b in zip(parts, parts[1:]))
    secret = any(p in _SECRET_WORDS or (p.startswith("secret") and p[6:] in _SECRET_TAILS)
                 or p.endswith("secret") and p[:-6] in _SECRET_PREFIXES for p in parts)  # appsecret, mchsecret
    if last == "data" and len(parts) > 1 and parts[-2] == "key":  # kubeconfig's client-key-data: a private key
        return "secret", True
    if parts[-3:] == ["access", "key", "id"] or parts[-2:] == ["accesskey", "id"] or parts == ["accesskeyid"]:
        return "secret", False  # an access key's id (the pair's other half): when its value is random
    if last == "pat" and not (password or secret):  # GITHUB_PAT, but IPV4_PAT and longopt_pat are patterns
        return "secret", False
    if last in ("hmac", "login") and len(parts) > 1 and not (password or secret):
        return "secret", False  # BACKEND_HMAC, sonar.login: a key or a token when the value is random
    if "seed" in parts and not (password or secret):  # TOTP_SEED, a wallet's seed phrase; not RANDOM_SEED=42
        return ("secret", True) if last in ("phrase", "words", "mnemonic") else ("secret", False) if last == "seed" \
            else None
    if last in _ABOUT_LAST and not (last == "id" and (password or secret)):
        return None
    if last == "id" and parts[-2:-1] == ["key"] and "private" in parts:
        return "secret", False  # a service account's private_key_id: the key's id, random
    if last == "id" and (password or secret):  # Vault's secret_id is random; --secret-id prod/db names one
        return ("password" if password else "secret"), False
    if last == "id" and not (password or secret):
        return None
    kind = "password" if password else "secret"
    if password or secret:
        return kind, True
    if any(p in ("public", "publishable", "pub") for p in parts):
        return None  # public_key, STRIPE_PUBLISHABLE_KEY: meant to be shown
    if last == "key" and len(parts) > 1 and parts[-2] in _INDEX_KEYS:
        return None  # Idempotency-Key, cache_key, routing_key: a key that finds something, not a secret
    if last in _SECRET_LAST or last.endswith("token") and len(last) > 5:
        if last == "key" and len(parts) > 1 and parts[-2] not in _KEY_QUALIFIERS and not name.isupper():
            # partition_key, sort_key, author_key: a value must look random; but an environment variable's
            # OPENROUTER_KEY, MAPBOX_KEY is a provider's key, whatever it looks like
            return kind, False
        return kind, len(parts) > 1 or last not in _WEAK_ALONE
    return None


def _char_kinds(value: str) -> tuple[bool, bool, bool, bool]:
    """Whether ``value`` holds lower case, upper case, digits, and other characters."""
    return (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value))


def _looks_random(value: str) -> bool:
    """Long enough and mixing at least two classes of characters (lower, upper, digits, symbols)."""
    if len(value) < 12 or " " in value.strip():
        return False
    if sum(_char_kinds(value)) < 2 or _REGEX_SYNTAX_RE.search(value):
        return False
    return not all(_WORDLIKE_RE.fullmatch(piece) for piece in re.split(r"[^A-Za-z0-9]+", value) if piece)


_UUID_SHAPE_RE = _Lazy(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_REGEX_LITERAL_RE = _Lazy(r"/[^/\n]+(?:\\/[^/\n]*)*/[dgimsuvy]*;?")
#: a regular expression's syntax: a value that is a pattern (``IPV4_PAT = "[0-9]{1,3}"``), not random characters
_REGEX_SYNTAX_RE = _Lazy(r"\[[^\]]*\]|\(\?|\\[dwsbDWS]|\{[0-9]+(?:,[0-9]*)?\}")
#: a piece of a value that is a word, CamelCase words or a number, not random characters
_WORDLIKE_RE = _Lazy(r"[0-9]+|[A-Z]+[0-9]{0,4}|[A-Za-z][a-z]+(?:[A-Z][a-z]+)*[0-9]{0,4}")


_VAR_REF_RE = _Lazy(r"\$(?:\{|\(|[A-Za-z_][A-Za-z0-9_]*(?:$|[/:.\-\s\"',;)}\]\[])|[0-9*#?@!$-](?:$|[^A-Za-z0-9]))")
_VERSION_RE = _Lazy(r"[~^=<>v]{0,2}[0-9]+(?:\.[0-9x*]+)+(?:[-+][\w.]+)?")
_ABOUT_WORDS_RE = _Lazy(r"(?i)pass|secret|token|\bkeys?\b|credential|\bapi\b")
_TYPE_ATOM = (r"(?:&(?:'\w+\s+)?(?:mut\s+)?)?(?:[A-Za-z_][A-Za-z0-9_.]*)(?:<[^<>\n]*>|\[[^\[\]\n]*\])?\??")
_TYPE_RE = _Lazy(rf"{_TYPE_ATOM}(?:\s*\|\s*{_TYPE_ATOM})*\s*[;,]?")
_ODBC_BRACED_RE = _Lazy(r"\{((?:[^}\n]|\}\})+)\}(?=;[ \t]*[A-Za-z][\w ]*=|;?[ \t]*[\"']?[ \t]*$)", re.MULTILINE)
_BRACE_EXPR_RE = _Lazy(r"\{\{|\{[A-Za-z_$][\w.$]*(?:\([^()\n]*\))?\}")
_CMDLET_RE = _Lazy(  # a PowerShell cmdlet: an approved verb, a dash, a noun
    r"(?:Get|Set|New|Read|Write|Remove|Add|Invoke|Start|Stop|Import|Export|ConvertTo|ConvertFrom|Select|Where|ForEach"
    r"|Out|Test|Join|Split|Format|Copy|Move|Clear|Find|Install|Update|Register|Unregister|Connect|Disconnect|Enable"
    r"|Disable|Resolve|Wait|Show|Use|Measure|Compare|Group|Sort|Protect|Unprotect|Send|Receive|Restart|Save|Edit"
    r"|Expand|Compress|Initialize|Grant|Revoke|Request|Confirm|Restore|Backup|Publish|Deploy|Build)-[A-Z][A-Za-z]+")
#: a GraphQL type (``String!``, ``[ID!]!``, ``Int64!``); not ``Golondrina2000!``, a password that ends in "!"
_GRAPHQL_TYPE_RE = _Lazy(r"\[?[A-Z][A-Za-z]*(?:8|16|32|64|128)?!?\]?!")
_BUILTIN_TYPES = frozenset({
    "str", "string", "number", "boolean", "bool", "int", "float", "bytes", "any", "unknown", "undefined", "null",
    "none", "object", "void", "never", "dict", "list", "bytearray", "buffer", "uuid", "secretstr", "secretbytes",
    "optional", "path", "date", "datetime", "uint8array", "arraybuffer", "record", "map", "set", "tuple", "char",
})


def _strong_name(name: str) -> bool:
    named = name_kind(name)
    return bool(named and named[1])


def _names_a_secret(name: str, value: str, strong: bool = True) -> bool:
    """``name`` marks a secret (a strong name when ``strong``) and ``value`` is a value, not a reference."""
    return (_strong_name(name) if strong else name_kind(name) is not None) and not _skip_value(value)


def _mixed(value: str) -> bool:
    """Two or more kinds of character (lower, upper, digit, symbol): a password in prose, not a word of it."""
    kinds = sum(_char_kinds(value))
    return kinds >= 2 and not value[:1].isupper() or kinds >= 3


def _table_secret(m: re.Match[str]) -> bool:
    """A table row's value is a secret when its name marks a secret (a weak name, a random value) and the value is
    no label, reference or word about the secret ("password  required")."""
    value = m.group(2)
    named = name_kind(m.group(1))
    if named is None or _skip_value(value):
        return False
    return (named[1] or _looks_random(value)) and value.lower() not in _ABOUT_LAST and not set(value) <= set("-=:+")


def _is_prose(v: str) -> bool:
    """Words about the secret rather than the secret: a label or a sentence (``Forgot password?``, ``The plain-text
    password to hash.``), told by the name word it repeats or by its closing punctuation."""
    words = v.split()
    if len(words) < 2 or "\n" in v or len(v) > 200:
        return False
    return bool(_ABOUT_WORDS_RE.search(v)) or (len(words) >= 3 and v.rstrip("'\"")[-1:] in ".?!:")


def _is_type(v: str) -> bool:
    """A type annotation (``SecretStr``, ``string | undefined;``, ``&'a str``, ``Optional[str]``), not a value: type
    syntax (a union, generic brackets, ``?``, a reference), or one word that names a common type. Any other word
    alone is taken for a value: ``MySecret``, ``RootPass`` and ``Hunter`` are passwords as often as types, and a
    masked annotation costs less than a kept password. A trailing ``;`` or ``,`` ends a value as well as a type."""
    if "!" in v and _GRAPHQL_TYPE_RE.fullmatch(v.split(" @", 1)[0].strip()):  # GraphQL: String!, [ID!]! @directive
        return True
    if not _TYPE_RE.fullmatch(v):
        return False
    atoms = [a.strip("&?;, ") for a in re.split(r"\s*\|\s*", v)]
    if len(atoms) == 1 and atoms[0].lower() in _BUILTIN_TYPES:
        return True
    return any(c in v for c in "<[?&|") and not (len(atoms) == 1 and any(c.isdigit() for c in atoms[0]) and
                                                 not any(c in v for c in "<[&"))


def _skip_value(value: str) -> bool:
    v = value.strip()
    if v[:1] in "\"'`“‘«" and v[1:].startswith(_MARK):
        return True  # '[REDACTED:…]': a quoted value another rule masked already
    if _sigil_password(v):
        return False  # $maple1169M: a password that starts with $, not a variable
    if _public_or_sample(v):
        return True
    if _MESSAGE_RE.match(v):
        return True  # passwd: password updated successfully: a message about the secret, not one
    if v[:1] == "/" and _REGEX_LITERAL_RE.fullmatch(v) and _REGEX_SYNTAX_RE.search(v):
        return True  # strongPassword = /^(?=.*[a-z])…$/: a pattern that checks the secret
    if v[-1:] in "):,;" and _GRAPHQL_TYPE_RE.fullmatch(v.rstrip("):,;")):
        return True  # login(password: String!): a GraphQL argument's type, cut after its parenthesis
    if v.startswith("$") and _stands_in(v):
        return True
    if v.startswith("$") and not _VAR_REF_RE.match(v):
        return False  # $iN39X6ZNnqY@66 is a password that starts with $; $DB_PASS, ${X}, $(cmd) are references
    if not v or v.startswith((_MARK, "$", "%", "{{", "<%", "#{", "process.env", "os.environ", "env(", "ENV[")):
        return True
    if v[0] == "<" and v[-1] == ">" and " " not in v:  # <YOUR_API_KEY>, <redacted>: a placeholder
        return True
    if v in ("{", "[") or v[0] in "{[" and v[1] in "\"' \t\r\n{[]}":
        return True
    if v.lower().rstrip(",;") in _NOT_VALUES or set(v) <= set("*xX.…•-_") or v.rstrip(";,") in ("?", "??"):
        return True
    if v[:1] in "fF" and v[1:2] in ("'", '"') and "{" in v:  # an f-string: code, not a literal secret
        return True
    if v.startswith(("self.", "this.", "cls.", "await ", "yield ", "new ")) or _stands_in(v):  # code, a stand-in
        return True
    if _dotted_reference(v):  # var.db_password, settings.SECRET_KEY, vars.smtp.pass: where the secret is kept
        return True
    if len(v.strip("\"'`")) < 3:  # a flag's "to" (--passphrase-repeat to set …): no secret is this short
        return True
    if _PATH_VALUE_RE.fullmatch(v) or _PLAIN_URL_RE.fullmatch(v):  # /run/secrets/db, a URL with no credential
        return True
    if _STORE_PATH_RE.fullmatch(v) and not _looks_random(v.replace("/", "")):  # prod/api-key: a stored secret's name
        return True
    if _BYTES_RE.fullmatch(v) or re.fullmatch(r"[~^=<>]{0,2}[0-9]{1,3}", v):  # "24 bytes"; a version "9"
        return True
    if _CMDLET_RE.fullmatch(v):  # $pw = Read-Host …: a PowerShell command
        return True
    if v.startswith("<") and ">" not in v:  # <at least 16 bytes>: a placeholder cut at its first space
        return True
    return bool(_CODE_VALUE_RE.match(v)) or bool(_VERSION_RE.fullmatch(v)) or _is_prose(v) or _is_type(v)


#: what stands in for a secret, not a secret: a variable ($TOKEN, "${DB_PASS}", $(cmd), %PASS%, {{ .Values.pw }}),
#: a placeholder (<token>, <set me>, [hidden], ****, sk-..., YOUR_API_KEY_HERE, REPLACE_ME), a secret manager's
#: reference (op://vault/item/field, vault:secret/data/x, !secret name, {{resolve:secretsmanager:…}}, an ARN)
_STANDS_IN_RE = _Lazy(
    r"(?i)\$[A-Za-z_]\w*|\$\{[^{}\n]{1,80}\}|\$\w+\{[^{}\n]{1,120}\}?|`[^`\n]{1,120}`|&[A-Za-z_]\w*\.?|\$\([^()\n]{1,120}\)|%[A-Za-z_]\w*%|\{\{[^{}\n]{1,120}\}\}"
    r"|<[^<>\n]{1,40}>|\[[A-Za-z][A-Za-z ._-]{0,20}\]?|[*x•.…]{3,}|[\w-]{1,12}(?:\.\.\.|…|\*{4,}|•{4,})\w{0,8}"
    r"|[*•…-]{4,}(?:[ \t][^\n]*)?|\{(?:env|file):[^{}\s]+\}|(?-i:REDACTED|MASKED|HIDDEN)"
    r"|(?:your|insert|enter|put|add)[-_ ][\w -]{1,40}|[\w-]{1,40}[-_ ]here|replace[-_ ]?me|!?change[-_ ]?(?:it|me)!?"
    r"|[*•.…]{4,}\w{0,6}|%[sdr]|%\(\w+\)[sdr]|\{\w*\}|:'?\w+'?"
    r"|[\w-]*(?:not[-_ ]a[-_ ]real|fake|dummy|placeholder|example)[\w-]*"
    r"|(?:op|vault|awssm|gcpsm|azkv|sops|secret|ref\+\w+)://\S+|vault:\S+|!(?:secret|vault|ref|sub|getatt)(?:\s+\S+)?"
    r"|arn:aws:(?:secretsmanager|ssm|kms):\S+|@Microsoft\.KeyVault\(.*\)|projects/[^/\s]+/secrets/\S+"
    r"|env:[A-Za-z_]\w*|secretref:[\w.-]+|[\w.-]+,(?:type|target|mode|uid|gid)=\S*"
    r"|(?-i:[a-z][a-z0-9_.-]*(?:/[a-z0-9_.-]+)+:[a-z][a-z0-9_.-]*)")  # ci/sonar:token: a stored secret's id, field


#: the first part of a dotted name that reads a value kept elsewhere: Terraform, Ansible, Helm, app settings
_REFERENCE_ROOTS = frozenset({"var", "vars", "local", "locals", "data", "module", "secrets", "env", "config", "conf",
                              "cfg", "settings", "params", "props", "args", "opts", "options", "ctx", "context",
                              "inputs", "values", "credentials", "creds", "app", "process", "os", "environ", "self",
                              "this", "steps", "needs", "matrix", "github"})


def _dotted_reference(value: str) -> bool:
    """``value`` reads a secret from where it is kept: a dotted name from a known root (``var.db_password``,
    ``settings.API_KEY``) or one whose last part names a secret (``cfg.smtp.password``). A password with a dot
    (``Knedlik.Pivo42``) is neither.

    >>> _dotted_reference("var.db_password"), _dotted_reference("cfg.smtp.password"), _dotted_reference("Knedlik.Pivo42")
    (True, True, False)
    """
    if not _CODE_PATH_RE.fullmatch(value) or value.endswith("()"):
        return False
    parts = value.split(".")
    if len(parts) >= 3 and "_" in parts[0] and all(p.islower() or p.isdigit() for p in parts):
        return True  # random_password.db.result: a Terraform resource's attribute
    return parts[0].lower() in _REFERENCE_ROOTS or _names_another(parts[-1]) or bool(
        name_kind(parts[-1])) and parts[-1].islower() and not any(c.isdigit() for c in parts[-1])


def _stands_in(value: str) -> bool:
    """``value`` is a variable, a placeholder or a reference to a secret kept elsewhere (:data:`_STANDS_IN_RE`)."""
    v = value.strip().strip("\"'`").strip()
    return len(v) <= 160 and bool(_STANDS_IN_RE.fullmatch(v)) and not _sigil_password(v)


#: a word, three digits or more and a letter or two: how people make passwords, not how they name variables
_SIGIL_NAME_RE = _Lazy(r"[A-Za-z]{2,}[0-9]{3,}[A-Za-z]{0,2}")


def _sigil_password(value: str) -> bool:
    """``value`` starts with ``$``, ``&``, ``%`` or ``!`` but is a password, not a variable, an anchor or a tag:
    ``$maple1169M`` and ``&tiger4017T`` (``$DB_PASS``, ``&default``, ``%APPDATA%``, ``$user1`` stay references)."""
    return value[:1] in "$&%!" and bool(_SIGIL_NAME_RE.fullmatch(value, 1)) and not _TECH_TERM_RE.match(
        value, 1) and _password_like(value[1:])


def _names_another(value: str) -> bool:
    """``value`` is the name of a secret (``docker_password``, ``dbPassword``), not a secret: an identifier with a
    separator or a capital inside, named for a secret."""
    return bool(_IDENTIFIER_RE.fullmatch(value)) and ("_" in value or "-" in value or any(
        c.isupper() for c in value[1:])) and not _looks_random(value) and _strong_name(value) and not (
        _TITLE_JOINED_RE.fullmatch(value) and not value.startswith(("X-", "x-"))) and not _styles_mixed(value)


def _styles_mixed(value: str) -> bool:
    """Parts in more than one case (``compose-Pg-Secret-91``: lower, then Title) and a number: how a person writes a
    password, not how code names a thing (``DB_PASSWORD_2``, ``db-password-2``, ``Db-Password`` keep one style)."""
    parts = [p for p in re.split(r"[-_]", value) if p and not p.isdigit()]
    styles = {"upper" if p.isupper() else "lower" if p.islower() else "title" if p.istitle() else "mixed"
              for p in parts}
    return any(c.isdigit() for c in value) and len(styles) > 1


#: Title-case words joined by a hyphen with a number (``Compose-Pass-21``): no naming style in code writes this, a
#: person choosing a password does (a header name, ``X-Api-Key``, has no number)
_TITLE_JOINED_RE = _Lazy(r"(?=.*[0-9])[A-Z][a-z0-9]*(?:-(?:[A-Z][a-z0-9]*|[0-9]+))+")


_IDENTIFIER_RE = _Lazy(r"[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*")


def _reads_setting(value: str) -> bool:
    """``value`` reads a setting named for a secret: ``BuildConfig.MAPS_API_KEY``, ``settings.SECRET_KEY``."""
    return "." in value and bool(_CODE_PATH_RE.fullmatch(value)) and not _looks_random(value) and _strong_name(
        value.rsplit(".", 1)[-1])


def _reads_itself(name: str, value: str) -> bool:
    """``value`` is a variable or an attribute of the same name as the secret's (``api_key`` for ``api_key``,
    ``settings.SECRET_KEY`` for ``secret_key``, ``self._password`` for ``password``)."""
    ref = _REFERENCE_RE.match(value)
    if ref is None or not (ref.end() == len(value) or _OR_ELSE_RE.match(value, ref.end())):
        return False
    value = ref.group(0)
    def key(word: str) -> str:
        return word.rsplit(".", 1)[-1].replace("_", "").replace("-", "").lower()

    return key(value) == key(name)


def _quoted_end(text: str, start: int, quote: str) -> int:
    """Index of the quote closing the string opened at ``start`` (escapes honoured), or -1."""
    i = start + 1
    n = len(text)
    limit = min(n, start + 4096)
    while i < limit:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i
        if c == "\n" and quote != "`":
            return -1
        i += 1
    return -1


def _line_start(text: str, pos: int) -> bool:
    """Whether only indentation, ``export``/``set``/``$env:``, a list dash or a quote precede ``pos`` on its line."""
    start = text.rfind("\n", max(0, pos - 80), pos) + 1
    if start == 0 and pos > 80:  # no line start within reach: only indentation may precede a name that far
        window = text[pos - 80 : pos].strip()
        return not window or window.endswith(("export", "$env:"))
    before = text[start:pos].strip()
    return before in ("", "-", '"', "'", "- \"", "export", "set", "$env:", "setx", "declare -x", "local", "readonly",
                      "const", "let", "var", "final", "val") or before.endswith(("export", "$env:"))


_BLOCK_SCALAR_RE = _Lazy(r"[|>][-+]?[0-9]?[-+]?")


def _block_scalar(text: str, vstart: int, line_end: int) -> tuple[int, int] | None:
    """The indented lines of a YAML block scalar (``client_secret: |`` or ``>-``) after its header line."""
    line_from = text.rfind("\n", 0, vstart) + 1
    indent = len(text[line_from:vstart]) - len(text[line_from:vstart].lstrip(" \t"))
    end = pos = line_end
    first = -1
    while pos < len(text):
        nxt = text.find("\n", pos + 1)
        nxt = len(text) if nxt < 0 else nxt
        line = text[pos + 1 : nxt]
        if line.strip():
            if len(line) - len(line.lstrip(" \t")) <= indent:
                break
            if first < 0:
                first = pos + 1 + len(line) - len(line.lstrip(" \t"))
            end = nxt
        pos = nxt
    return (first, end) if first >= 0 else None


def _value_span(text: str, vstart: int, to_line_end: bool, strong: bool, whole_token: bool = False,
                flag: bool = False) -> tuple[int, int] | None:
    """The span of the secret value starting at ``vstart``, or None when it is no secret (code, a placeholder)."""
    n = len(text)
    if vstart >= n:
        return None
    c = text[vstart]
    if c == "\\" and text[vstart + 1 : vstart + 2] in ("\"", "'"):  # an escaped quote: JSON inside JSON
        q = "\\" + text[vstart + 1]
        end = text.find(q, vstart + 2)
        line_end = text.find("\n", vstart)
        if end < 0 or 0 <= line_end < end:
            end = n if line_end < 0 else line_end
        value = text[vstart + 2 : end]
        if not value.strip() or value.startswith(_MARK) or (not strong and not _looks_random(value)):
            return None
        return vstart + 2, end
    if c == "(":
        pair = _PAIR_RE.match(text, vstart)
        if pair and not pair.group(3).startswith(_MARK):
            return pair.start(3), pair.end(3)
        return None
    if c in "\"'`":
        end = _quoted_end(text, vstart, c)
        if end < 0:
            end = text.find("\n", vstart)
            end = n if end < 0 else end
            a, b = vstart + 1, end
        else:
            a, b = vstart + 1, end
        value = text[a:b]
        if len(value.strip()) < 3 or value.startswith(_MARK) or value.startswith(("${", "{{", "$(")) or _stands_in(
                value) or _public_or_sample(value):
            return None  # accesskey="h" (an HTML shortcut): no secret is this short
        if _VERSION_RE.fullmatch(value) or _is_prose(value) or value.lower() in ("omit", "include", "same-origin") or (
                re.fullmatch(r"[~^=<>]{0,2}[0-9]{1,3}", value)):
            return None
        if not strong and not _looks_random(value):
            return None
        return a, b
    if to_line_end:
        end = text.find("\n", vstart)
        end = n if end < 0 else end
        if _is_type(text[vstart:end].strip()):  # before its ; or , is cut: `key: Uint8Array;`
            return None
        if (cmdlet := _CMDLET_RE.match(text, vstart, end)) and text[cmdlet.end() : cmdlet.end() + 1] in (" ", "\t"):
            return None  # $pw = Read-Host -AsSecureString …: a PowerShell command
        if strong and _BLOCK_SCALAR_RE.fullmatch(text[vstart:end].rstrip()):
            return _block_scalar(text, vstart, end)
        comment = _TRAILING_COMMENT_RE.search(text, vstart, end)
        if comment is not None and comment.start() > vstart:
            end = comment.start()  # appsecret: 1c74…   # AppSecret: a YAML or INI comment after the value
        while end > vstart and text[end - 1] in " \t\r,;":
            end -= 1
    elif whole_token:  # NAME=value at a line's start (an env file): & ) , ; belong to the value
        end = vstart
        while end < n and not text[end].isspace():
            end += 1
    else:
        if c == "{" and text[vstart - 1 : vstart] == "=" and ";" in text[text.rfind("\n", 0, vstart) + 1 : vstart] and (
                odbc := _ODBC_BRACED_RE.match(text, vstart)) and not odbc.group(1).startswith(_MARK) and not (
                _REFERENCE_RE.fullmatch(odbc.group(1)) and not any(ch.isdigit() for ch in odbc.group(1))):
            return odbc.span(1)  # ODBC's Pwd={Pay$Roll_Read1};: braces quote the value in a Key=Value; string
        if c == "{" and not flag and _BRACE_EXPR_RE.match(text, vstart):
            return None  # value={password}, {{ … }}: a template's expression
        end = vstart
        while end < n and text[end] not in _INLINE_END:
            end += 1
        if not flag and _CODE_PATH_RE.fullmatch(text[vstart:end]) and not _looks_random(text[vstart:end]):
            return None  # guard let password = passwordField.text, …: an attribute read in code
        if _CMDLET_RE.fullmatch(text[vstart:end]) and text[end : end + 1] in (" ", "\t"):
            return None  # $pw = Read-Host -AsSecureString …: a PowerShell command
    value = text[vstart:end]
    if _skip_value(value) or (not strong and (not _looks_random(value) or _NAMESPACED_RE.match(value))):
        return None
    return vstart, end


#: a key in namespaces (``search:v3:<sha1>``, ``user:42:profile``): what a cache or a queue files a value under
_NAMESPACED_RE = _Lazy(r"[a-z][a-z0-9_-]*:[A-Za-z0-9_-]{1,24}:")


def _named(text: str, lower: str) -> tuple[str, int]:
    """Mask the values of assignments and flags whose name marks a secret (``lower``: ``text`` lower-cased, of
    the same length)."""
    spans: list[tuple[int, int, str]] = []
    n = len(text)
    run_end = 0  # the end of the last identifier run looked at: a name word inside it belongs to the same name
    for m in _NAME_WORD_RE.finditer(lower):
        if m.start() < run_end:
            continue
        a = m.start()
        while a > run_end and text[a - 1] in _IDENT_CHARS:
            a -= 1
        b = m.end()
        while b < n and text[b] in _IDENT_CHARS:
            b += 1
        run_end = b  # each character is walked over once, however many name words a run holds ("token" * 20000)
        if (spans and a < spans[-1][1]) or (a >= 10 and text.startswith(_MARK, a - 10)):
            continue
        if a > 0 and text[a - 1] == "\\" and text[a] in "ntr":
            a += 1  # a JSON escape (\n--password) glued to the name
        raw = text[a:b]
        name = raw.lstrip("-.").rstrip("-.")
        if not name or len(name) > 256:  # longer is data (a base64url blob, minified code), not a name
            continue
        found = name_kind(name)
        if found is None:
            continue
        kind, strong = found
        if not strong and _after_public(text, a):
            continue  # Public key: …, host key …
        b = a + raw.rstrip("-.").__len__()
        span = None
        noted = False  # a note in parentheses stands between the name and its sign
        if text.startswith("${", a - 2) and text.startswith(("?", ":?"), b):
            continue  # ${DB_PASSWORD:?missing}: an error message, not a value
        if text.startswith(":", b) and _LOCATION_RE.match(text, b):
            continue  # src/auth/password.py:42: a file and a line number (grep, a traceback, a warning)
        if text.startswith("//", a - 2) or raw == "PASS" and text.startswith("--- ", a - 4):
            continue  # https://__token__:…@host (a URL's user part, which the URL rules read); go test's --- PASS:
        if a > 0 and text[a - 1] == ":" and _ARN_RE.search(text, max(0, a - 120), a) or text.rfind(
                "{{resolve:", max(0, a - 200), a) > text.rfind("}}", max(0, a - 200), a):
            continue  # arn:aws:secretsmanager:…:secret:prod/db, {{resolve:secretsmanager:${DbSecret}:SecretString…}}
        if raw.startswith("-"):
            sep = _FLAG_SEP_RE.match(text, b)
            if sep:
                span = _value_span(text, sep.end(), False, strong, flag=True)
        elif a > 0 and text[a - 1] == "<" and text.startswith(">", b):
            close = text.find("<", b + 1)
            if close > b + 1 and text.startswith("</" + raw + ">", close) and (raw.lower() != "key" or (
                    close - b > 20 and _looks_random(text[b + 1 : close]) and not _identifier_like(text[b + 1 : close]))):
                value = text[b + 1 : close]
                if not _skip_value(value) and (strong or _looks_random(value)):
                    span = (b + 1, close)
        else:
            sep = _SEP_RE.match(text, b)
            noted = sep is None and (note := _NAME_NOTE_RE.match(text, b)) is not None
            if noted:
                sep = _SEP_RE.match(text, note.end())  # key (base64): …: a random value after a note on the name
            quoted_name = a > 0 and text[a - 1] in "\"'"
            if sep and text[sep.end() : sep.end() + 1] in ("'", '"') and text[b] not in "\"'\\":
                line = text[text.rfind("\n", max(0, a - 200), a) + 1 : a]
                if line.count(text[sep.end()]) % 2:
                    sep = None  # getpass('Password: '): a prompt, the name and its colon inside one string
            if sep and sep.group(1) == ":" and sep.end() == sep.end(1) and text[sep.start(1) - 1] in " \t" and (
                    text[sep.end() : sep.end() + 1] in ("'", '"')):
                sep = None  # PASSWORD :'pw': a psql variable, not a value
            if sep:
                spaced = sep.group(1) == ":" or sep.start(1) > b and text[sep.start(1) - 1] in " \t"
                vstart = sep.end()
                typed = _TYPED_RE.match(text, vstart) if sep.group(1) == ":" else None
                if typed:  # `secret: String = "…"`: the value follows the type (or an older filter's marker)
                    vstart, spaced = typed.end(), False
                at_start = (spaced or strong and sep.group(1) == "=") and _line_start(text, a - quoted_name)
                line_start = text.rfind("\n", 0, a) + 1
                entry = _MAP_ENTRY_RE.match(text, vstart) if strong and sep.group(1) == "=" and (
                    text[a - 1 : a] == "{" or text[a - 2 : a] == ", " and text.rfind("{", line_start, a) > text.rfind(
                        "}", line_start, a) and "(" not in text[text.rfind("{", line_start, a) : a]) else None
                if entry and " " in entry.group(1).strip() and not entry.group(1).startswith(_MARK):
                    span = entry.span(1)  # {mail.smtp.password=uuvo wphy esbf edlj, …}: a map printed whole
                else:
                    span = _value_span(text, vstart, spaced and at_start, strong,
                                       strong and at_start and not spaced and sep.group(1) == "=" and not quoted_name)
            elif ((quoted_name and (text[max(0, a - 21) : a - 1].rstrip().endswith("(")
                                    or _ARGS_BEFORE_RE.search(text, max(0, a - 100), a - 1) is not None)
                   or text[a - 1 : a] == "$" and text[max(0, a - 21) : a - 1].rstrip().endswith("(")  # Set($Pw, '…')
                   or text.startswith("env:", a - 4)) and (pair := _ARG_SEP_RE.match(text, b))):
                span = _value_span(text, pair.end(), False, strong)  # setenv("API_KEY", "…"), env:API_KEY '…'
                if span and (name_kind(text[span[0] : span[1]]) or name.lower() in _PrintedSecret._KINDS):
                    span = None  # ("password", "api_key", "token"): a list of names; data_bag_item('credentials', …)
            elif _NAME_FIELD_RE.search(text, max(0, a - 40), a - quoted_name if a else 0):
                field = _VALUE_FIELD_RE.search(text, b, min(n, b + 160))
                if field and _NAME_FIELD_START_RE.search(text, b, field.start()):
                    field = None  # - name: DB_PASSWORD … - name: DATABASE_URL, value: …: the next item's value
                if field and _DECLARATION_END_RE.search(text, b, field.start()):
                    field = None  # pub api_key: SecretString,\n #[serde(default = "…")]: the next field's
                if field:
                    span = _value_span(text, field.end(), False, True)
                    if span and text[span[0] - 1 : span[0]] not in ("'", '"', "`") and _REFERENCE_RE.fullmatch(
                            text[span[0] : span[1]]) and text[span[1] : span[1] + 3].lstrip(" \t")[:1] in ("}", ","):
                        span = None  # { name: 'API_TOKEN', value: token }: a variable in an object literal
            elif strong and (quoted_value := _SPACED_QUOTE_RE.match(text, b)):
                span = _value_span(text, quoted_value.end(), False, strong)  # plaintext-password 'x', password 'x'
            elif _components(name)[-1:] in (["secret"], ["token"], ["key"]) and (
                    bare := _SPACED_TOKEN_RE.match(text, b)) and _bare_token(bare.group(1)) and (
                    strong or len(bare.group(1)) >= 24):
                span = bare.span(1)  # key_secret vE6GztWMediGr5nPHu1ipRp2: a name and a random token after a space
            elif kind == "password" and name.lower() not in _OTHER_LANGUAGES:  # their prose: _PasswordTold
                prose = _PROSE_RE.match(text, b)
                if prose:
                    end = prose.end()
                    while end < n and not text[end].isspace():
                        end += 1
                    value = text[prose.end() : end].rstrip(".,;:!?)\"'")
                    if value and value.lower() not in _PROSE_STOP and not _skip_value(value):
                        span = (prose.end(), prose.end() + len(value))
        if span and noted and not _looks_random(text[span[0] : span[1]]):
            span = None
        if span and span[0] == b + 1 and text[b] == ":" and text[span[0] : span[1]].lower() in _TASK_VERBS:
            span = None  # rails credentials:edit, artisan key:generate, secret:list: a command's namespace and task
        if span and _ui_label(text[span[0] : span[1]]):
            span = None  # "login.password": "Passwort", password = Пароль: an app's label, translated
        if span and kind == "password" and text[span[0] : span[1]].lower() in _PROSE_STOP and text[
                span[1] : span[1] + 1] in (" ", "\t"):
            span = None  # "Passwort: steht im Team-Tresor": a word of the sentence that goes on
        if span and _in_sentence(text, a, text[span[0] : span[1]]):
            span = None  # "it served as a spoken password: those who …": a word of the sentence
        if span and (_reads_itself(name, text[span[0] : span[1]]) or _names_another(text[span[0] : span[1]])
                     or _reads_setting(text[span[0] : span[1]])):
            span = None  # api_key=api_key, secret_key = settings.SECRET_KEY, from_secret: docker_password
        if span and span[1] > span[0] and not (spans and span[0] < spans[-1][1]):
            spans.append((span[0], span[1], kind))
    if not spans:
        return text, 0
    out: list[str] = []
    cursor = 0
    for s, e, kind in spans:
        out.append(text[cursor:s])
        out.append(_marker(kind))
        _masked(kind, text[s:e])
        cursor = e
    out.append(text[cursor:])
    return "".join(out), len(spans)


# -- 3. entropy ------------------------------------------------------------------------------------------------
_QUOTED_RE = _Lazy(r"([\"'])([A-Za-z0-9+/_\-.]{20,300}={0,2})\1")
_DIGEST_PREFIXES = ("sha1-", "sha256-", "sha384-", "sha512-", "md5-", "sha-", "sha256/", "sha1/")  # SRI, pins


def shannon_entropy(value: str) -> float:
    """Bits per character: ``-Σ p·log2 p`` over the characters of ``value``.

    >>> round(shannon_entropy("aabb"), 2)
    1.0
    """
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _identifier_like(value: str) -> bool:
    """CamelCase words with a few capitals and digits (``ThisIsAVeryLongName2024``): three quarters of the characters
    sit in capitalised words of four letters or more. In a random token of mixed case fewer than 1 in 1,000 do
    (measured over 3,000 random tokens of 20-40 characters); lower-case tokens are never taken for names."""
    if sum(c.isupper() for c in value) < 2:
        return False
    return sum(len(w) for w in _CAMEL_RE.findall(value) if len(w) >= 4 and w[-1].islower()) >= 0.75 * len(value)


_KEY_BEFORE_RE = _Lazy(r"[\"']?([A-Za-z_][\w.:-]{0,60})[\"']?[ \t]*[:=][ \t]*$")
_ID_PREFIX_RE = _Lazy(r"([a-z]{2,12})[_-]")
_ID_NAMES = frozenset({"id", "ids", "uuid", "guid"})
_PUBLIC_KEY_ALGORITHMS = frozenset({"ed25519", "curve25519", "x25519"})
_SESSION_NAMES = frozenset({"session", "sess", "sid", "cookie", "csrf", "xsrf", "nonce", "state", "code"})


def _public_name(name: str) -> bool:
    """A name for a digest or a public key: ``contentHash``, ``integrity``, ``ed25519:DEVICE``, ``publicKey``."""
    parts = _components(name)
    return bool((_PUBLIC_NAMES - _ID_NAMES).intersection(parts) or "version" in parts or name.split(":", 1)[0].lower() in
                _PUBLIC_KEY_ALGORITHMS) and (
        name_kind(name) is None or "public" in parts)


def _object_id(name: str, value: str) -> bool:
    """``value`` is an object's id under ``name``: a kind's prefix (``chatcmpl-``, ``cus_``) under an id's name
    (``id``, ``file_id``) or under the name the prefix abbreviates (``"customer": "cus_…"``, ``PRICE_PRO=price_…``,
    ``"payment_method": "pm_…"``). Never under a secret's name or a session's (``"session": "sess_…"``)."""
    parts = _components(name)
    if not parts or name_kind(name) is not None or _SESSION_NAMES.intersection(parts):
        return False
    prefix = _ID_PREFIX_RE.match(value)
    if prefix is None:
        return False  # project_id='mainnetAcIh…': a provider's key under an id's name
    p = prefix.group(1)
    return (parts[-1] in _ID_NAMES or any(part.startswith(p) for part in parts)
            or p == "".join(part[0] for part in parts))


def _high_entropy(text: str) -> tuple[str, int]:
    count = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal count
        value = m.group(2)
        if m.string.startswith("W/", m.start() - 2) or len(value) >= 26 and len(set(value)) == len(value):
            return m.group(0)  # an ETag, an alphabet ("ABC…xyz0123456789+/")
        if (value.lower().startswith(_DIGEST_PREFIXES) or _public_or_sample(value)
                or not re.search("[a-z]", value)
                or not re.search("[A-Z]", value) or not re.search("[0-9]", value) or shannon_entropy(value) < 4.3
                or _identifier_like(value)):
            return m.group(0)
        if "." in value and ("/" in value or max(map(len, value.split("."))) < 16 or not _looks_random(value)):
            return m.group(0)  # a dotted name (com.example.MyApp2), a path, not a token with dots
        key = _KEY_BEFORE_RE.search(m.string, max(0, m.start() - 80), m.start())
        if key and (_object_id(key.group(1), value) or _public_name(key.group(1))):
            return m.group(0)  # "customer": "cus_…", "contentHash": "…", "ed25519:DEVICE": "…": ids, digests, public keys
        count += 1
        _masked("high-entropy", value)
        return m.group(1) + _marker("high-entropy") + m.group(1)

    return _QUOTED_RE.sub(sub, text), count


class _ClientLiteral(_Scan):
    """A literal given to a constructor or a client's set-up call, first or after one short argument:
    ``together.Together("<hex>")``, ``new Api("<token>")``, ``Client::new("admin", "<password>")``. The arguments
    are found from each ``(``, then the callee is read backward from it (at most 200 characters)."""

    _ARGS = _Lazy(r"\(\s*(?:(?:[A-Za-z_][\w.]*|[\"'][^\"'\n]{0,64}[\"'])\s*,\s*){0,3}([\"'])(?!\[REDACTED)"
                  r"([^\s\"'\\]{10,300})\1\s*[,)]")
    _CALLEE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        for m in self._ARGS.finditer(text):
            end = m.start()
            while end > 0 and text[end - 1] in " \t":
                end -= 1
            start = end
            while start > max(0, end - 200) and text[start - 1] in self._CALLEE_CHARS:
                start -= 1
            if start < end and _client_literal(text[start:end], m.group(0), m.group(2)):
                yield m


#: keys a provider publishes in web pages and apps by design (Stripe's, Clerk's, Paddle's client-side keys)
#: the signature of jwt.io's example token ("John Doe", secret "your-256-bit-secret"), printed in docs everywhere
_JWT_IO_SIGNATURE = "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
_PUBLISHABLE = ("pk_live_", "pk_test_", "live_pk_", "test_pk_", "phc_")  # and PostHog's project key
#: what a constructor's name says it builds when it is no client: a value, not a connection
_NOT_CLIENTS = frozenset({
    "error", "exception", "hash", "digest", "sha", "md5", "commit", "uuid", "id", "object", "regexp", "regex",
    "pattern", "url", "uri", "path", "date", "time", "decimal", "string", "str", "buffer", "hex", "color", "colour",
    "version", "checksum", "etag", "ref", "rev", "fingerprint", "name", "label", "text", "message", "log", "file",
    "symbol", "big", "int", "number", "selector", "query", "event", "intl", "locale", "image", "font", "mime",
})
#: a class's own factory methods: the class names what they build
_FACTORIES = frozenset({"getInstance", "instance", "create", "builder", "build", "of", "from_key", "init", "new"})
#: lower-case calls that set up a client
_CLIENT_WORDS = frozenset({
    "client", "connect", "login", "auth", "authenticate", "init", "initialize", "configure", "setup", "api", "sdk",
    "key", "token", "credential", "credentials", "secret", "session",
})


def _client_literal(callee_path: str, arguments: str, value: str) -> bool:
    """``value`` is random (letters and digits, no words; a password of 10+ with three kinds of character) and
    the callee builds a client: a class (``Together``, ``Api``) or a set-up call (``connect``, ``init``)."""
    names = [c for c in re.split(r"\.|::", callee_path) if c and c != "new"]
    if not names or value.startswith(_PUBLISHABLE):
        return False
    callee = names[-1]
    if callee in _FACTORIES and len(names) > 1 and names[-2][:1].isupper():
        callee = names[-2]  # StreamChat.getInstance(key, secret), Client.builder(…): the class's own factory
    parts = _components(callee)
    if not parts or _NOT_CLIENTS.intersection(parts):
        return False
    if not (callee[0].isupper() or _CLIENT_WORDS.intersection(parts)):
        return False
    if value[0] in "./~" or "/" in value and "." in value or _FILE_NAME_RE.search(value):
        return False  # a path or a file name
    lower, upper, digits, other = _char_kinds(value)
    if arguments.count(",") >= 1 and _strong_password(value, strict=False) and not _identifier_like(value):
        return True  # PyiCloudService("user@example.org", "Walrus@basalt87"): a login's password
    if not (lower or upper) or not digits or not _looks_random(value) or _identifier_like(value):
        return False
    if len(value) >= 20:
        return shannon_entropy(value) >= 3.0
    return lower + upper + digits + other >= 3 and arguments.count(",") >= 1  # Client("admin", "nK7q%a9…")


_ALNUM_RUN_RE = _Lazy(r"[A-Za-z0-9]{12,}")


def _random_tail(m: re.Match[str]) -> bool:
    """After its prefix, a token holds a long run mixing digits and letters or both cases; a path component or a
    package name (``ops_dashboard/views_admin.py``, ``xai-org/grok-1``, ``aio_pika_consumer``) does not."""
    token = m.group(0)
    low = token.lower()
    prefix = max((p for p in _PREFIXED_TOKENS if low.startswith(p)), key=len, default="")
    tail = token[len(prefix):]
    if "+" not in tail and not tail.endswith("="):  # base64 holds "/" too (fm2_lJPE54S/o4+FS…)
        tail = tail.split("/", 1)[0]
    for run in _ALNUM_RUN_RE.findall(tail):
        lower, upper, digits, _ = _char_kinds(run)
        if ((digits and (upper or lower)) or (upper and lower)) and not (
                _WORDLIKE_RE.fullmatch(run) or _identifier_like(run)):  # re_splitComparison, fw_versionNumber2
            return True
    return False


_PREFIXED = _Checked(_PREFIX_RE, _random_tail)
_CLIENT_ARG = _ClientLiteral()
_LONG_TOKEN_RE = _Lazy(r"(?<![\w\-.=+/])[\w\-.=+/]{20,}")
_TWILIO_RE = _Lazy(r"(?<![0-9A-Za-z])(?:SK|AC)[0-9a-fA-F]{32}(?![0-9A-Za-z])")


#: tokens known by their shape rather than a prefix: a Wallet Import Format key (base58, 51 or 52 characters),
#: an Airtable personal access token
_SHAPED_TOKENS = (("private-key", _Lazy(r"(?=.*[a-z])(?=.*[A-Z])(?=.*[0-9])"
                                         r"(?:5[HJK][1-9A-HJ-NP-Za-km-z]{49}|[KL][1-9A-HJ-NP-Za-km-z]{51})")),
                  ("api-token", _Lazy(r"pat[A-Za-z0-9]{14}\.[0-9a-f]{64}")),
                  ("secret", _Lazy(r"SEC[0-9a-f]{64}")),  # a DingTalk robot's signing secret
                  # a Stripe PaymentIntent's or SetupIntent's client secret; ASP.NET Core's protected cookie payload
                  ("secret", _Lazy(r"(?:pi|seti)_[A-Za-z0-9]{14,30}_secret_[A-Za-z0-9]{16,40}")),
                  ("secret", _Lazy(r"0201036c6e64[0-9a-f]{40,}")),  # an LND macaroon, in hex
                  ("api-token", _Lazy(r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}")),
                  ("private-key", _Lazy(r"S[AOUNCPX][A-Z2-7]{56}")))  # a NATS nkey seed


def _prefixed_tokens(text: str) -> tuple[str, int]:
    """Tokens of the ~100 providers known by their prefix, and tokens known by their shape, found among the long
    tokens of the text (one cheap scan; an alternation of 100 prefixes costs ~20x more per KB)."""
    count = 0

    def sub(m: re.Match[str]) -> str:
        token = m.group(0)
        if m.start() and m.string[m.start() - 1] == "\\" and token[:1] in "ntr" and len(token) > 20:
            return token[0] + check(token[1:])  # $'…\ndapi…': an escape before the token
        return check(token)

    def check(token: str) -> str:
        nonlocal count
        for kind, shape in _SHAPED_TOKENS:
            if shape.fullmatch(token):
                count += 1
                _masked(kind, token)
                return _marker(kind)
        low = token.lower()
        if not any(p in low for p in _PREFIXED_TOKENS):
            return token
        new, found = _apply(_PREFIXED, "api-token", 0, token)
        count += found
        return new

    return _LONG_TOKEN_RE.sub(sub, text), count


@functools.lru_cache(maxsize=4)
def _ascii_lower(text: str) -> str:
    """``text`` with ASCII letters lower-cased, of the same length. Cached: mask() and the scans that search
    lower-cased text (login words, password words) ask for the same text in a row."""
    lower = text.lower()
    return lower if len(lower) == len(text) else text.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(65, 91)}


# -- all -------------------------------------------------------------------------------------------------------
_SEEN = threading.local()  # the values masked by the mask() call running on this thread


def _masked(kind: str, value: str) -> None:
    seen = getattr(_SEEN, "values", None)
    if seen is not None and len(value) >= 8 and "\n" not in value and not value.startswith(_MARK):
        seen.setdefault(value, kind)


#: a password listed with one a rule masked: "tried … and [REDACTED:password]", "[REDACTED:password] or …"
_LIST_WORD = r"[,;]?[ \t]+(?:and|or|und|oder|et|ou|y|o|e|en|of|i|och|eller|и|или)[ \t]+"
#: what joins an old value to its new one in a rotation ("admin: BlueFalcon_77 -> Ochre.Falcon.78"), or the one told
#: to the one it is not ("hasło to X, a nie Y", "c'est X, pas Y", "X, not Y")
_ROTATION = r"[ \t]*(?:->|→|=>|⇒)[ \t]*"
_NOT_WORD = r",?[ \t]+(?:a[ \t]+nie|nie|not|nicht|pas|no|non|não|niet|ne|не)[ \t]+"


class _CorrectedAfter(_Scan):
    """A password taken back after it was told: "the db password is X — no wait, that's the old one, it got
    rotated; it's Y now" (X masked already). After a word that takes it back within 40 characters of the masked
    value (no, nee, nein, anzi, ні, нет, espera, wait, actually, いや, 不对, 아니…), the first token of the same
    paragraph (within 200 characters) that looks like a password (:func:`_password_like`) and follows a copula, a
    colon or a word for "to" ("it's Y", "jetzt heißt es Y", "ahora es Y", "cambiata ieri sera: Y", "змінила на Y")."""

    _MASKED = _Lazy(r"\[REDACTED:password\]")
    _BACK = _Lazy(r"(?i)(?<!\w)(?:no|nope|nah|wait|sorry|oops|actually|correction|nee|nein|non|anzi|ні|нет|не|nie"
                  r"|não|nej|nei|ei|hayır|espera|attends|aspetta|warte|чекай|подожди|стоп)(?!\w)|いや|違う|不对|不是|아니")
    _GAP = _Lazy(r"(?i)(?:(?<!\w)(?:is|it'?s|it’s|now|es|est|c'est|ist|heißt|lautet|è|é|je|jest|to|на|это|це"
                 r"|naar|auf|är|er|on|là|adalah|sera|será)|[:=→]|->)[ \t]*$")

    #: a word for the old one ("purana Indigo_28 mat use karna", "die alte war …", "el viejo era …")
    _OLD = _Lazy(r"(?i)(?<!\w)(?:old|previous|former|purana|puraana|alte[nrs]?|vorherige[nrs]?|ancien(?:ne)?|viej[oa]"
                 r"|anterior|vecchi[oa]|precedente|oude|vorige|star[eyaiо]|стар\w{0,3}|попередн\w{0,3}|eski"
                 r"|पुराना|पुरानी)(?!\w)|古い|旧|以前の|이전|예전")

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        for mark in self._MASKED.finditer(text):
            old = self._OLD.search(text, mark.end(), min(len(text), mark.end() + 60))
            if old is not None:  # the one told before it, named the old one: as sensitive (among the next 3 tokens)
                found = self._value_after(text, old.end(), min(len(text), old.end() + 60), 3, lambda v, _: (
                    _told(v) and not v.isdigit() or _password_like(v)))
                if found is not None:
                    yield found
            back = self._BACK.search(text, mark.end(), min(len(text), mark.end() + 40))
            if back is None:
                continue
            end = text.find("\n\n", back.end(), back.end() + 200)
            lo = back.end()

            def told_again(value: str, at: int, lo: int = lo) -> bool:  # after a copula, a colon or "to"
                return _password_like(value) and self._GAP.search(text, max(lo, at - 24), at) is not None

            found = self._value_after(text, lo, min(len(text), lo + 200) if end < 0 else end, None, told_again)
            if found is not None:
                yield found

    @staticmethod
    def _value_after(text: str, start: int, end: int, most: int | None,
                     takes: Callable[[str, int], bool]) -> re.Match[str] | None:
        """The first token of ``text[start:end]`` (of its first ``most``) whose value ``takes(value, its start)``
        accepts, as a match of the value; None at a value masked already (the next one told is masked)."""
        for k, token in enumerate(_PasswordNearby._TOKEN.finditer(text, start, end)):
            value = _PasswordNearby._value(token.group(0))
            if most is not None and k >= most or value.startswith(_MARK):
                return None
            if takes(value, token.start()):
                a = token.start() + token.group(0).index(value)
                return _SPAN_RE.match(text, a, a + len(value))
        return None


_SIBLINGS = (
    _CorrectedAfter(),
    _Checked(_Lazy(r"(?<![^\s(\"'`:])([^\s()\[\]\"'`,;]{6,64}?)" + _ROTATION + r"(?=\[REDACTED:password\])"),
             lambda m: _told(m.group(1)) or _password_like(m.group(1))),
    _Checked(_Lazy(r"(?<=\[REDACTED:password\])" + _NOT_WORD + r"([^\s()\[\]\"'`,;]{6,64}?)(?=[.,;!?)—]?(?:\s|$))"),
             lambda m: _told(m.group(1)) or _password_like(m.group(1))),
    _Checked(_Lazy(r"(?<![^\s(\"'`])([^\s()\[\]\"'`,;]{6,64}?)" + _LIST_WORD + r"(?=\[REDACTED:password\])"),
             lambda m: _told_pair(m.group(1))),
    _Checked(_Lazy(r"(?<=\[REDACTED:password\])" + _LIST_WORD + r"([^\s()\[\]\"'`,;]{6,64}?)(?=[.,;!?)]?(?:\s|$))"),
             lambda m: _told_pair(m.group(1))),
)


def _echoes(text: str, seen: dict[str, str]) -> tuple[str, int]:
    """Every other copy of a value a rule masked (a command's output that prints back what it was given: "was
    updated to …", a log that repeats a token), as a word of its own."""
    total = 0
    for value, kind in seen.items():
        if value.isalpha() and value.islower():
            continue  # "postgres", "secret": a word the text uses for itself too
        if value in text:
            text, n = re.subn(r"(?<![\w])" + re.escape(value) + r"(?![\w])", _marker(kind).replace("\\", "\\\\"), text)
            total += n
    return text, total


_MESSAGE_RE = _Lazy(r"(?i)(?:password|passphrase|token|secret|key)s?[ \t]+(?:updated|changed|set|saved|expired|"
                   r"accepted|rejected|required|unchanged|successfully|for|of|is|was|has|must|cannot|not)\b")


def _public_or_sample(value: str) -> bool:
    """A key meant for web pages (Stripe's ``pk_live_…``, Mapbox's ``pk.…``) or a sample (:func:`_sample_token`)."""
    return value.startswith(_PUBLISHABLE) or value.startswith("pk.eyJ") or value.endswith(_JWT_IO_SIGNATURE) or (
        _sample_token(value))


def _sample_token(token: str) -> bool:
    """A provider's token as its documentation prints it (``AKIAIOSFODNN7EXAMPLE``), or its prefix and one
    character over and over (``sk_live_xxxxxxxx…``): a placeholder. Keys and blocks are never taken for one."""
    if len(token) > 64 or "\n" in token:
        return False
    body = token[max(token.rfind("_"), token.rfind("."), token.rfind("/"), token.rfind("-")) + 1 :]
    return token.endswith(("EXAMPLE", "EXAMPLEKEY")) or token in _DOCUMENTED_TOKENS or len(body) >= 8 and body.count(
        body[0]) == len(body) or (_PLACEHOLDER_WORD_RE.search(token) is not None
                                  and _TOKEN_SHAPE_RE.fullmatch(token) is not None)


#: keys printed in providers' documentation for everyone to try (Stripe's test key of its API reference)
_DOCUMENTED_TOKENS = frozenset({"sk_test_4eC39HqLyjWDarjtT1zdp7dc", "pk_test_TYooMQauvdEDq54NiTphI7jx",
                                "sk_test_BQokikJOvBiI2HlWgH4olfQ2"})


#: a word a placeholder holds and a random token of 64 characters all but never does: xoxb-your-bot-token
_PLACEHOLDER_WORD_RE = _Lazy(r"(?i)your|example|placeholder|dummy|change-?me|replace|cambiar|changer|[äa]ndern|alterar"
                             r"|sostituire|wijzigen|zmien|not-a-real|not_a_real|fake-?token|this-will-not-work")
_TOKEN_SHAPE_RE = _Lazy(r"[\w-]+")  # a token, not a URL or a login (user:pw@host.example.com)


def _apply(pattern: _Lazy | _Scan, kind: str, group: int, text: str) -> tuple[str, int]:
    marker = _marker(kind)
    count = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal count
        if group == 0:
            if _sample_token(m.group(0)):
                return m.group(0)
            count += 1
            _masked(kind, m.group(0))
            return marker
        if m.start(group) == m.end(group) or _stands_in(m.group(group)) or _sample_token(m.group(group)) or (
                len(m.group(group)) < 4 and not any(c.isalnum() for c in m.group(group))) or (
                "REDACTED" in m.group(group)) or (
                m.string.startswith("REDACTED:", m.start(group) - 9)):
            return m.group(0)  # empty, a stand-in, or inside a marker an earlier rule wrote
        count += 1
        _masked(kind, m.group(group))
        whole = m.group(0)
        return whole[: m.start(group) - m.start(0)] + marker + whole[m.end(group) - m.start(0):]

    return pattern.sub(sub, text), count


_ARGV_RE = _Lazy(r"\[[ \t]*([\"'])(?:[^\"'\\\n]|\\.)*\1(?:[ \t]*,[ \t]*([\"'])(?:[^\"'\\\n]|\\.)*\2){1,60}[ \t]*\]")
_ARGV_ITEM_RE = _Lazy(r"([\"'])((?:[^\"'\\\n]|\\.)*)\1")


def _argv_lists(text: str) -> tuple[str, int]:
    """A command written as a list of strings (``subprocess.run(["mysql", "-u", "root", "-p…"])``, a container's
    ``args:`` or ``test: ["CMD", …]``): its items are read as one command line by the other rules, and the items
    they mask are masked in the list."""
    total = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal total
        items = list(_ARGV_ITEM_RE.finditer(m.group(0)))
        if not any(i.group(2).startswith("-") for i in items):
            return m.group(0)
        masked, count = mask(" ".join(i.group(2).replace(" ", "\x1f") for i in items), _argv=False)
        words = masked.split(" ")
        if not count or len(words) != len(items):
            return m.group(0)
        out, cursor = [], 0
        for item, word in zip(items, words):
            out.append(m.group(0)[cursor : item.start(2)])
            out.append(word.replace("\x1f", " "))
            cursor = item.end(2)
        total += count
        return "".join(out) + m.group(0)[cursor:]

    return _ARGV_RE.sub(sub, text), total


def mask(text: str, _argv: bool = True) -> tuple[str, int]:
    """Mask every secret in ``text``; returns the masked text and how many were masked. A value masked once is
    masked wherever else it appears in the text."""
    if not _argv:
        return _mask(text, _argv)
    _SEEN.values = {}
    try:
        masked, total = _mask(text, _argv)
        if _SEEN.values:
            masked, echoed = _echoes(masked, _SEEN.values)
            total += echoed
        if "[REDACTED:password]" in masked:
            for sibling in _SIBLINGS:
                masked, count = _apply(sibling, "password", 1, masked)
                total += count
        return masked, total
    finally:
        _SEEN.values = None


def _mask(text: str, _argv: bool = True) -> tuple[str, int]:
    total = 0
    if _argv and ("[\"" in text or "['" in text or "[ " in text):
        text, total = _argv_lists(text)
    text, total_ids = secret_ids.mask(text, _ascii_lower(text))  # personal, financial, recovery: indexer.secret_ids
    total += total_ids
    lower = _ascii_lower(text)
    present = _FORMAT_ANCHOR_SET.present(lower)
    if present:
        for kind, anchors, pattern, group in _FORMATS:
            if present.isdisjoint(anchors):
                continue
            text, count = _apply(pattern, kind, group, text)
            total += count
    text, count = _prefixed_tokens(text)
    total += count
    if "SK" in text or "AC" in text:  # Twilio: a case-sensitive anchor (lower-cased, "sk" is in every "task")
        text, count = _apply(_TWILIO_RE, "twilio-key", 0, text)
        total += count
    if "\n" in text:
        text, count = _key_material(text)
        total += count
    lower = _ascii_lower(text)
    if _NAME_WORD_RE.search(lower):
        text, count = _named(text, lower)
        total += count
    if '"' in text or "'" in text:
        text, count = _high_entropy(text)
        total += count
        if "(" in text:
            text, count = _apply(_CLIENT_ARG, "secret", 2, text)
            total += count
    return text, total
