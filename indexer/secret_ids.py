"""Personal, financial and recovery secrets: rules of the privacy filter's second pass (:func:`mask`, called by
:func:`indexer.secret_rules.mask` before its own format rules), each masking a value as ``[REDACTED:<kind>]``.

- ``seed-phrase``: 12 or more consecutive words of one BIP39 wordlist (the ``mnemonic`` package's twelve lists; a
  word typed without its accents counts), on one line, one a line, numbered (``1. word``, ``1) word``) or
  comma-separated. The checksum is not required: a seed with one mistyped or misremembered word, and Electrum's
  seeds (same English list, another checksum), fail it and are as sensitive; 12 words in a row from one list do
  not happen in prose (measured: none in the 294 MB of /usr/share/doc and the Python standard library that the
  false-positive corpus samples).
- ``recovery-code``: the codes listed after a recovery or backup-code word in 20 languages (``Backup codes:``,
  ``codes de secours``, ``バックアップコード``): tokens with a digit, one or many, one a line or side by side.
  ``recovery-key``: keys told by their structure, BitLocker's (8 groups of 6 digits, each a multiple of 11 below
  720896, or any such groups beside the key's name: a key copied with a typo is still the key), FileVault's and Apple's (6 or 7 groups of 4 capitals and digits, mixed), 1Password's Secret
  Key (``A3-`` and 6 groups).
- ``iban``: an IBAN that passes its country's length and format and the mod-97 check, in a text that speaks of a
  bank or a payment (the registries' documented examples are left alone; a bank's own check digits inside the
  account part are not asked for); after the IBAN's name (``IBAN``, ``الآيبان``, ``شبا``), one of its country's
  length and format with wrong check digits too. ``account-number``: a bank account number after its
  label in a text about a bank (a Japanese one's 7 digits after ``普通`` or ``当座``); a US routing number (its ABA
  checksum), a UK sort code, an Australian BSB, Mexico's CLABE and Argentina's CBU after theirs (the last two of
  their exact shape with a wrong check digit too).
- ``national-id``: an identity or tax number after its label that passes its country's check: FR NIR, IT codice
  fiscale, ES DNI/NIE/NIF, DE Steuer-ID, NL BSN, PL PESEL and identity card, SE, NO, DK, FI personal numbers,
  BR CPF/CNPJ, IN Aadhaar/PAN, CN resident ID, KR RRN, JP My Number, CA SIN, UK NI and NHS numbers, US ITIN and
  ~30 more (python-stdnum's validators); a passport number after its word in 20 languages. The label may be told
  in a sentence of its language ("Mój PESEL to …", "TC kimlik numaram …", "Số CCCD của tôi là …"). After a label
  that names one kind of number (``PESEL``, ``Steuer-ID``, ``СНИЛС``), a value of that number's exact shape is
  masked though it fails the check (mistyped, or made up for a test), unless it is a placeholder (``000 000 000``,
  ``123456789``); numbers with no public check (Russia's SNILS, Vietnam's CCCD, the Philippines' SSS and TIN) by
  their shape alone. After a label that may mean other things (``SIN``, ``my number``, ``cédula``), or with no
  label, a number must pass its check.
- ``card-code``: a card's 3 or 4-digit security code after CVV, CVC, CVN or CAV2 (also as part of a field name,
  ``"card_cvc": "123"``, ``cvv2=1234``) or after a word that means it only near a card (``security code``,
  ``cryptogramme``, ``Prüfziffer``, ``código de seguridad``, ``セキュリティコード``, ``安全码``…).

Every rule has literal anchors (lower case) and runs only on a text that holds one; the wordlists and validators
are imported only then (``import indexer.privacy`` loads neither ``mnemonic`` nor ``stdnum``).

>>> mask("BitLocker recovery key: 236808-089419-362835-512545-013816-460955-317185-655633")[0]
'BitLocker recovery key: [REDACTED:recovery-key]'
>>> mask("Steuer-ID: 65 929 970 489")[0]
'Steuer-ID: [REDACTED:national-id]'
"""

from __future__ import annotations

import functools
import importlib
import re
import unicodedata
from collections.abc import Callable, Iterator

from indexer.anchors import AnchorSet

_MARK = "[REDACTED"

Span = tuple[int, int]


def mask(text: str, lower: str | None = None) -> tuple[str, int]:
    """Mask the personal, financial and recovery secrets in ``text`` (``lower``: the text lower-cased, when the
    caller has it); returns the masked text and how many were masked."""
    low = text.lower() if lower is None else lower
    present = _LOWER_ANCHORS.present(low) | _UPPER_ANCHORS.present(text)
    # an IBAN's shape is an anchor of its own: "stuur maar naar NL22 RABO 0981 2762 97" names no bank
    shaped = _IBAN_SHAPE_RE.search(text) is not None
    if not present and not shaped:
        return text, 0
    total = 0
    other_digits = not text.isascii() and _OTHER_DIGITS_RE.search(text) is not None
    for kind, anchors, find in _RULES:
        if not present.isdisjoint(anchors) or shaped and find is _ibans:
            # a number in Arabic-Indic, Persian, Devanagari, Bengali, Thai or full-width digits is read as ASCII
            # digits (one character for one: the spans found in the copy are the original's)
            text, count = _replace(text, find(text.translate(_DIGITS) if other_digits else text), kind)
            total += count
    return text, total


_IBAN_SHAPE_RE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}[ ]?[A-Z0-9]{4}[ ]?[A-Z0-9]{4}")
#: the decimal digits of scripts whose users write numbers in them, each read as its ASCII digit
_DIGITS = {ord(c): str(unicodedata.digit(c)) for first in (0x0660, 0x06F0, 0x0966, 0x09E6, 0x0E50, 0xFF10)
           for c in map(chr, range(first, first + 10))}
_OTHER_DIGITS_RE = re.compile("[\u0660-\u0669\u06f0-\u06f9\u0966-\u096f\u09e6-\u09ef\u0e50-\u0e59\uff10-\uff19]")


def _replace(text: str, spans: Iterator[Span], kind: str) -> tuple[str, int]:
    out: list[str] = []
    cursor = count = 0
    for start, end in sorted(spans):
        if start < cursor or _MARK in text[start:end]:
            continue
        out += [text[cursor:start], f"[REDACTED:{kind}]"]
        cursor, count = end, count + 1
    return ("".join(out) + text[cursor:], count) if count else (text, 0)


@functools.cache
def _re(source: str, flags: int = 0) -> re.Pattern[str]:
    """A pattern compiled on first use: most texts trigger no rule here."""
    return re.compile(source, flags)


def _near(pattern: str, text: str, start: int, end: int, reach: int) -> bool:
    return _re(pattern, re.I).search(text, max(0, start - reach), min(len(text), end + reach)) is not None


def _cuts(text: str, start: int, limit: int, seps: str = " -./") -> list[int]:
    """Where a value read from ``start`` may end, longest first: letters and digits, with single separators between
    groups (``DE89 3704 0044``, ``900101-1234``), at most ``limit`` characters."""
    ends, i, stop = [], start, min(len(text), start + limit)
    while i < stop and text[i].isascii() and text[i].isalnum():
        i += 1
        if i == stop or not (text[i].isascii() and text[i].isalnum()):
            ends.append(i)
            if i + 1 < stop and text[i] in seps and text[i + 1].isascii() and text[i + 1].isalnum():
                i += 1
    return ends[::-1] if not _after_word(text, start) else []


def _after_word(text: str, start: int) -> bool:
    """The character before ``start`` is a digit or a letter of an alphabet that spaces its words: ``start`` is inside
    a word (in Chinese, Japanese or Thai a value may follow the word before it: ``身份证号码110105…``)."""
    return start > 0 and (text[start - 1].isdigit() or _re(_LETTER).match(text, start - 1) is not None)


# -- labelled values: a label, words such as "number" or "is", a colon or a quote, then the value -------------------
#: the words that may stand between a label and its value, by language: "number", a copula ("is", "to", "é", "on",
#: "ay", "là", "คือ"), a possessive that follows its noun ("mitt", "saya", "ko", "của tôi", "ของฉัน", "שלי"), a
#: possessive or definite ending (Turkish "numaram"); an inflected label itself ("Fødselsnummeret",
#: "Henkilötunnukseni") is written in its own pattern
_FILLER_WORDS = {
    "en": "number num no nr code is was are", "de": "nummer ist lautet sind", "fr": "numéro est c'est c’est le la",
    "es": "número es son era el", "pt": "número é era o", "it": "numero è il", "nl": "nummer is", "sv": "nummer är mitt min",
    "no": "nummer er mitt min", "da": "nummer er mit min", "fi": "numero on", "pl": "numer jest to",
    "cs": "číslo je", "sl": "je", "hr": "mi moj moja broj", "ro": "număr numărul este meu mea", "el": "αριθμός είναι μου",
    "tr": "numara numaram numaran numarası numarasi numaranız numaramız", "ru": "номер это", "uk": "номер це",
    "id": "nomor adalah ialah saya", "tl": "numero ko ay", "vi": "số của tôi là", "he": "מספר שלי הוא היא",
    "ar": "رقم هو هي الخاص بي", "hi": "नंबर संख्या है", "hu": "szám számom számú jelem", "th": "ของฉัน ของผม ของดิฉัน คือ เลขที่ หมายเลข",
    "ja": "番号 は が", "ko": "번호 는 은", "zh": "号码 號碼 号 是 为 為 係 用 我 的", "sw": "namba nambari yangu ni",
    "bn": "নম্বর নাম্বার আমার হলো হল", "ur": "نمبر میرا ہے", "fa": "شماره من است",
}
#: scripts whose words are not spaced (a word of the filler may be followed by the next without a space)
_UNSPACED = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _filler(leave_out: frozenset[str] = frozenset()) -> str:
    """The filler with the words of every language but ``leave_out``, longest first, each not followed by a letter
    unless its script is unspaced."""
    words = sorted({w for line in _FILLER_WORDS.values() for w in line.split()} - leave_out, key=lambda w: (-len(w), w))
    return _FILLER_HEAD + "|".join(re.escape(w) + ("" if _UNSPACED.match(w) else r"(?![^\W\d_])") for w in words) + "){0,16})"


#: what may stand between a label and its value: the words above, "no.", "n°", a colon, quotes (a JSON or YAML key),
#: "for my Chase account", a parenthesis, an ending after a hyphen or an apostrophe ("CNP-ul", "IBAN'ım", "NIK-nya")
#: (a line break only after a colon, each space one repetition: a filler that can be read in one way only is not
#: re-read in many when the value after it fails)
_FILLER_HEAD = (r"(?i:(?:[ \t]+(?:of|on|for|at|de|del|de la|du|der|des|di|della|da|do|van|på|för|na|z|w|bei|zur)"
           r"[ \t]+[^\n:：=\d]{1,30}?(?=[ \t]*[:：=]|[ \t]+(?:is|are|ist|est|es|é|è)\b))?(?:[ \t]*[(（][^)）\n]{0,40}[)）])?"
           r"(?:[-'’](?:ul|ului|nya|[ıiuü]?m|[ıiuü]n|n[ıiuü]n)(?![^\W\d_])|[ \t\"'`*_=#>\[\]—–№-]"
           r"|[:：](?:[ \t]*\r?\n)?|[，、]|n[°º.]|(?:nr|no|num)\.|")
_FILLER = _filler()
#: after a bank account's label ("account", "Konto"), words of other languages that are English or German words too
#: ("moved the account to 2024001", "Konto mit 1500000 Euro") are not read as filler
_ACCOUNT_FILLER = _filler(frozenset({"to", "min", "mit"}))


#: a letter of any alphabet (with the vowel signs of the Indic and Thai scripts, which are no letters to ``\w``)
_WORD_CHAR = r"(?:[^\W\d_]|[\u0300-\u036f\u0900-\u0dff\u0e00-\u0e7f])"
#: words that name another party than the person ("ИНН продавца": the seller's, printed on every receipt)
_PARTIES = (r"(?i:seller|vendor|merchant|company|supplier|employer|store|shop|bank|продавца|поставщика|организации"
            r"|компании|магазина|банка|работодателя|verkäufer\w*|firma|händler\w*|vendeur|société|entreprise"
            r"|vendedor|empresa|proveedor|tienda|venditore|azienda|fornitore)(?![^\W\d_])")
#: words that name another number than the one labelled ("the DNI field is required, see ticket 12345678")
_OTHER_NUMBERS = (r"(?i:ticket|issue|order|invoice|line|page|step|pr|bug|version|port|error|code|row|room|phone|tel"
                  r"|fax|case|build|commit|pedido|factura|bestellung|rechnung|commande|заказ\w*)(?![^\W\d_])")
#: what may stand between an identity number's label and its value besides :data:`_FILLER`: an ending after a hyphen
#: ("ЕГН-то") and up to six words of any language ("CNP-ul meu e …", "Số CCCD của mình là …", "ஆதார் எண்
#: …", "رقم الهوية الوطنية حقي …"): the value must still pass its check or have its label's exact shape
_SHORT_WORDS = (rf"(?:[-'’]{_WORD_CHAR}{{1,4}}(?!{_WORD_CHAR}))?[,;]?"
                rf"(?:[ \t]*(?<!{_WORD_CHAR})(?![A-Z]+[ \t]|{_PARTIES}|{_OTHER_NUMBERS}){_WORD_CHAR}(?:{_WORD_CHAR}|['’]){{0,13}}"
                rf"(?=[ \t,:：]),?){{0,6}}")  # (not "QQ" of "QQ 52 81 46 C")

#: a letter of an alphabet that spaces its words (a label in Chinese or Japanese may be inside a sentence)
_LETTER = r"[A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]"


def _labelled(labels: str, flags: int = re.I, filler: str = _FILLER) -> re.Pattern[str]:
    """``labels`` (an alternation; group 1) not followed by a letter, then the ``filler``; the value starts at
    ``m.end()``. That no letter comes before is checked by :func:`_word_start` (a pattern that starts with a
    lookbehind is tried at every position; one that starts with its words skips to their first letters)."""
    return _re(rf"({labels})(?!{_LETTER})" + filler, flags)


def _word_start(text: str, start: int) -> bool:
    return start == 0 or not _re(_LETTER).match(text, start - 1)


def _around(pattern: re.Pattern[str], text: str, anchors: tuple[str, ...], before: int = 48,
            after: int = 200) -> Iterator[re.Match[str]]:
    """The matches of ``pattern`` near an anchor (``before`` characters before it to ``after`` past it). A label
    pattern begins with one of many letters, so on a whole text it would be tried at most positions (measured:
    ~2 ms a KB of prose); near its anchors it is tried where a label can be."""
    low = text.lower()
    if len(low) != len(text):
        yield from pattern.finditer(text)
        return
    spans = []
    for anchor in anchors:
        hay = text if anchor.isupper() else low
        i = hay.find(anchor)
        while i >= 0:
            spans.append((max(0, i - before), min(len(text), i + len(anchor) + after)))
            i = hay.find(anchor, i + 1)
    cursor = 0
    for lo, hi in sorted(spans):
        if hi <= cursor:
            continue
        for m in pattern.finditer(text, max(lo, cursor), hi):
            yield m
            cursor = max(cursor, m.end())
        cursor = max(cursor, hi - after)  # the next window may still hold a label that starts before this one ends


def _labelled_values(matches: Iterator[re.Match[str]], text: str, valid: Callable[[str, str], bool],
                     limit: int = 34, seps: str = " -./") -> Iterator[Span]:
    """The longest value after each label that ``valid(label, value)`` accepts."""
    for m in matches:
        if not _word_start(text, m.start()):
            continue
        for end in _cuts(text, m.end(), limit, seps):
            value = text[m.end():end]
            if end < len(text) - 1 and text[end] in "-./" and text[end + 1].isalnum():
                continue  # a cut inside a token: 2011-02 of 2011-02-10
            if any(c.isdigit() for c in value) and valid(m.group(1), value):
                yield m.end(), end
                break


# -- seed phrases ----------------------------------------------------------------------------------------------
_SEED_ANCHORS = (
    "seed", "mnemonic", "phrase", "wallet", "recovery", "restore", "backup", "bip39", "bip-39", "words",
    "metamask", "ledger", "trezor", "phantom", "exodus", "electrum", "coinbase", "binance", "crypto", "bitcoin",
    "ethereum", "solana", "semilla", "frase", "graine", "mots", "palabras", "parole", "palavras", "wörter", "woorden",
    "słowa", "slova", "слов", "фраз", "kelime", "cümle", "単語", "ニーモニック", "シード", "助记词", "助記詞", "钱包",
    "錢包", "ウォレット", "니모닉", "시드", "단어", "지갑", "wiederherstell", "récupération", "recuperaci", "recupera",
    "herstel", "odzyskiw", "återställ", "gendannel", "gjenoppr", "palautus", "obnov", "восстановл", "kurtarma",
    "復元", "恢复", "復原", "portfel", "carteira", "cartera", "portefeuille", "portafoglio", "cüzdan", "кошел",
)
#: a word of a list: 3 to 10 letters (accents may be combining marks: a list copied in NFKD), or 1 to 10 kana
#: (Japanese, dakuten included), hanzi (Chinese, one a word) or hangul (Korean, maybe as jamo)
_WORD = r"(?:[\u3040-\u30ff\u3400-\u9fff\u1100-\u11ff\uac00-\ud7af]{1,10}|(?:[^\W\d_]|[\u0300-\u036f]){3,12})"
#: between two words: spaces, a comma, a line break (each at most once, so that a failed run is not re-split), then
#: maybe the next word's number ("2.", "(2)", "#2") or bullet
_SEED_SEP = r"[ \t\u3000]*(?:[,;、，][ \t\u3000]*)?(?:\r?\n[ \t\u3000]*)?(?<=[\s,;、，])"
_NUMBERING = r"(?:(?:#?\d{1,2}[.):]?|\(\d{1,2}\))[ \t\u3000]*|[-*•][ \t]+)?"
#: a maximal run of such words (read once: a run of fewer than 12 is dropped in Python, not retried from each of
#: its words, which cost ~0.5 µs a character of prose)
_SEED_RUN = rf"(?<![\w-]){_WORD}(?:{_SEED_SEP}{_NUMBERING}{_WORD})*"
_SEED_LENGTHS = (12, 15, 18, 21, 24)


@functools.cache
def _wordlists() -> dict[str, int]:
    """Each word of the BIP39 lists (NFKD, and without its accents) → a bit for each list that holds it."""
    from mnemonic import Mnemonic

    words: dict[str, int] = {}
    for bit, language in enumerate(sorted(Mnemonic.list_languages())):
        for word in Mnemonic(language).wordlist:
            for form in {word, _plain(word)}:
                words[form] = words.get(form, 0) | 1 << bit
    return words


def _plain(word: str) -> str:
    """``word`` NFKD without combining accents when that leaves ASCII (``ábaco`` → ``abaco``), else NFKD."""
    nfkd = unicodedata.normalize("NFKD", word)
    bare = "".join(c for c in nfkd if not unicodedata.combining(c))
    return bare if bare.isascii() else nfkd


def _seed_phrases(text: str) -> Iterator[Span]:
    words = _wordlists()
    for run in _around(_re(_SEED_RUN), text, _SEED_ANCHORS, 600, 1200):
        if run.end() - run.start() < 23:  # 12 one-letter words (Chinese) and their spaces
            continue
        tokens = list(_re(_WORD).finditer(run.group(0)))
        first, langs = 0, 0
        for i, token in enumerate(tokens + [None]):
            bits = words.get(_plain(token.group(0).lower()), 0) if token else 0
            if langs & bits:
                langs &= bits
                continue
            if i - first >= _SEED_LENGTHS[0] and len({t.group(0).lower() for t in tokens[first:i]}) >= 4:
                # (a list's test vector repeats one word: "abandon abandon … about")
                yield run.start() + tokens[first].start(), run.start() + tokens[i - 1].end()
            first, langs = i, bits


# -- recovery codes and keys -----------------------------------------------------------------------------------
_RECOVERY_ANCHORS = (
    "recovery", "backup", "back-up", "scratch", "emergency", "one-time", "one time", "single-use", "2fa", "two-factor",
    "mfa", "secours", "récupération", "recuperation", "sauvegarde", "recuperaci", "respaldo", "reserva", "recupero",
    "riserva", "recupera", "sicherungs", "wiederherstellung", "notfall", "herstel", "återställ", "reservkod",
    "reservekod", "gendannel", "varmistus", "palautus", "varakood", "zapasow", "odzyskiw", "awaryjn", "záložní",
    "obnov", "резервн", "восстановлен", "відновлен", "yedek", "kurtarma", "バックアップ", "リカバリ", "復旧", "回復",
    "备用", "恢复", "復原", "复原", "备份", "備用", "還原", "백업", "복구", "dự phòng", "khôi phục", "cadangan",
    "pemulihan", "बैकअप", "रिकवरी", "ανάκτησ", "αντιγράφ",
)
_RECOVERY_LABEL = (
    r"(?:(?:account|2fa|mfa|two[- ]factor|backup[ -]verification|one[- ]time|single[- ]use|recovery|backup|back-up"
    r"|emergency|scratch)[ -]?)+(?:codes?|keys?)"
    r"|c(?:o|ó)d(?:e|igo|ice)s?[ \t]+(?:de[ \t]+|di[ \t]+|da[ \t]+)?(?:secours|r[ée]cup[ée]ration|sauvegarde"
    r"|recuperaci[óo]n|respaldo|reserva|backup|recupero|riserva|emergencia|recupera[çc][ãa]o|emerg[êe]ncia)"
    r"|codici[ \t]+(?:di[ \t]+)?(?:backup|recupero|riserva|emergenza)"
    r"|(?:sicherungs|wiederherstellungs|notfall|backup|reserve|herstel|back-up|reserv|återställnings|gendannelses"
    r"|varmistus|palautus|vara)[ -]?(?:codes?|kodes?|koder|koodit|schlüssel)"
    r"|kody[ \t]+(?:zapasowe|odzyskiwania|awaryjne|jednorazowe)|(?:záložní|obnovovací)[ \t]+kódy"
    r"|kódy[ \t]+pro[ \t]+obnovení"
    r"|(?:резервн|аварийн)\w*[ \t]+код\w*|код\w*[ \t]+(?:восстановления|відновлення)"
    r"|(?:yedek|kurtarma)[ \t]+kod\w*"
    r"|(?:バックアップ|リカバリー?|復旧|回復)[ \t]?(?:コード|キー)"
    r"|(?:备用|恢复|復原|复原|备份|備用|還原|救援)(?:验证|驗證)?(?:码|碼|代码|代碼|密钥|金鑰)"
    r"|(?:백업|복구)[ \t]?(?:코드|키)"
    r"|mã[ \t]+(?:dự[ \t]+phòng|khôi[ \t]+phục)|kode[ \t]+(?:cadangan|pemulihan)|(?:बैकअप|रिकवरी)[ \t]+कोड"
    r"|κωδικ\w*[ \t]+(?:ανάκτησης|αντιγράφων[ \t]+ασφαλείας)"
)
#: after the label: "for my Google account" or the service's name alone ("GitLab"), "(keep them safe)", "are", a
#: colon, "**"; then the first code
_RECOVERY_HEAD = (r"(?:[ \t]+(?:for|of|from|für|von|de|pour|para|di|per|van|voor|do|dla|för|til|para)[ \t]+"
                  r"[^\n:：]{1,80}?(?=[ \t]*[:：(\n])|[ \t]+[A-Z][\w.-]{1,30}(?=[ \t]*[:：(\n]))?"
                  r"(?:[ \t]*[(（][^)）\n]{0,60}[)）])?[*_`]*"
                  r"(?:[,;][^\n:：]{1,60}(?=[:：][ \t]*\r?\n)"  # ", bitte sicher aufbewahren:" and the list below
                  r"|[ \t]+[^\n:：]{1,80}(?=[:：][ \t]*\r?\n)"  # " here so you can put them in the vault:" and the list
                  r"|[,;][^\n]{1,100}?[?.!](?=[ \t]*\r?\n)"  # ", can you format them as a checklist?"
                  r"|[ \t]+(?:in case|if|for when|falls|si|se|au cas)[^\n:]{1,60}(?=:)"  # "… in case the gh flow asks:"
                  r"|[ \t]+(?:di|de|do|von|for|dla|of)[ \t]+[A-Z][\w.-]{1,30})?"  # "codici di recupero di GitHub …"
                  r"[ \t]*(?:[:：=]|->|→|\b(?:is|are|sind|ist|lauten|sont|est|son|es|sono|è|são|é|zijn|są|är|er|on|"
                  r"ovat|jsou|—)\b)?[*_`]*")
#: one code of a list: maybe its number or bullet, or "and" after the one before; digits grouped by single spaces
#: are one code ("4821 9935"), letters and digits grouped by dashes too
_ITEM = (r"[ \t]*(?:\r?\n[ \t]*)?(?:(?:and|und|et|y|e|en|i|och|og|и|ve|và|dan)[ \t]+)?"
         r"(?:[-*•|・]|#?\d{1,2}[.):]|\(\d{1,2}\))?[ \t]*[\"'`]?"
         r"(\d{2,8}(?: \d{2,8})+|[A-Za-z0-9]{3,}(?:-[A-Za-z0-9]{2,})*)[\"'`]?[ \t]*[,;|]?")


def _code(token: str) -> bool:
    """A code: 4 to 40 letters and digits with a digit, not a date, a year or a time."""
    bare = token.replace("-", "").replace(" ", "")
    return (4 <= len(bare) <= 40 and any(c.isdigit() for c in bare)
            and not _re(r"(?:19|20)\d\d(?:-\d\d){0,2}|\d{1,2}-\d{1,2}-\d{2,4}").fullmatch(token))


def _same_shape(token: str, first: str) -> bool:
    """``token`` has the first code's groups (``pogv-toyn`` after ``5oa8-nk76``): a code of a list may hold no digit."""
    return [len(g) for g in token.split("-")] == [len(g) for g in first.split("-")] and len(token) >= 8


def _recovery_codes(text: str) -> Iterator[Span]:
    item = _re(_ITEM)
    for label in _around(_re(rf"(?:{_RECOVERY_LABEL})(?:\.txt)?(?!{_LETTER})" + _RECOVERY_HEAD, re.I), text,
                         _RECOVERY_ANCHORS):
        if not _word_start(text, label.start()):
            continue
        pos, first, last, codes = label.end(), -1, -1, list[str]()
        if text.startswith("\n\n", pos) or text.startswith("\r\n\r\n", pos):
            pos = text.index("\n", pos) + 1  # the file's name, a blank line, the codes (github-recovery-codes.txt)
        while len(codes) < 40:
            m = item.match(text, pos)
            if not m or not (_code(m.group(1)) or codes and _same_shape(m.group(1), codes[0])) or (
                    codes and "\n\n" in text[last:m.start(1)].replace("\r", "")):
                break
            first = m.start(1) if first < 0 else first
            last, pos = m.end(1), m.end()
            codes.append(m.group(1))
        if len(codes) > 1 or codes and len(codes[0].replace("-", "")) >= 6:
            yield first, last


_KEY_ANCHORS = ("bitlocker", "recovery", "filevault", "key", "schlüssel", "clé", "clave", "chiave", "sleutel",
                "klucz", "ключ", "キー", "密钥", "金鑰", "키", "nyckel", "nøgle", "nøkkel", "avain", "klíč", "anahtar",
                "chave", "khóa", "kunci", "a3-")
_STRUCTURED_KEY = (r"(?<![\w-])(?:(\d{6}(?:-\d{6}){7})|((?:[A-Z0-9]{4}-){5}[A-Z0-9]{4}(?:-[A-Z0-9]{4})?)"
                   r"|(A3-[A-Z0-9]{6}-[A-Z0-9]{6}(?:-[A-Z0-9]{5}){4}))(?![\w-])")


def _recovery_keys(text: str) -> Iterator[Span]:
    for m in _re(_STRUCTURED_KEY).finditer(text):
        if m.group(1):  # BitLocker's: valid groups, or any beside its name (a key copied with a typo is the key)
            groups = [int(g) for g in m.group(1).split("-")]
            ok = len(set(groups)) > 2 and (all(g % 11 == 0 and g < 720896 for g in groups) or _near(
                r"bitlocker|recovery[ \t]+key|wiederherstellungsschl|cl[ée][ \t]+de[ \t]+r[ée]cup[ée]ration"
                r"|clave[ \t]+de[ \t]+recuperaci|chiave[ \t]+di[ \t]+ripristino|herstelsleutel|回復キー|回复密钥|恢复密钥"
                r"|복구[ \t]?키|ключ[ \t]+восстановления", text, m.start(), m.end(), 80))
        elif m.group(2):
            ok = sum(any(c.isdigit() for c in g) and any(c.isalpha() for c in g) for g in m.group(2).split("-")) >= 3
        else:
            ok = True
        if ok:
            yield m.span()


# -- bank data -------------------------------------------------------------------------------------------------
_BANK_WORDS = (
    r"bank|iban|\bbic\b|swift|sepa|routing|sort[ -]?code|\bbsb\b|\baba\b|\bach\b|wire|checking|savings|deposit"
    r"|payee|beneficiar|transfer|payment|payout|ch[eè]que|\bifsc\b|\bneft\b|\bimps\b|\brtgs\b|betaal|konto|überweis|zahlung|compte|virement|banc|cuenta|transferencia"
    r"|banco|conto|bonifico|conta|rekening|overboek|rachun|przelew|kontonummer|tili|účet|účtu|счет|счёт|банк"
    r"|hesap|havale|口座|銀行|振込|银行|账户|帳戶|转账|계좌|은행|tài khoản|ngân hàng|rekening|बैंक|खाता"
    r"|بنك|مصرف|حساب|[آاإ]يبان|בנק|חשבון|ธนาคาร|บัญชี"
)
#: words for an account or a bank in more languages and scripts (Gujarati, Bengali, Tamil, Telugu, Marathi, Kannada,
#: Malayalam, Punjabi; Korean banks and the account holder; Yoruba, Swahili, Hausa): anchors of both account rules
#: and bank words around an account's number
_MORE_ACCOUNT_WORDS = ("ખાતા", "অ্যাকাউন্ট", "হিসাব", "கணக்கு", "ఖాతా", "खाते", "ಖಾತೆ", "അക്കൗണ്ട്", "ਖਾਤਾ", "은행", "뱅크",
                       "예금주", "농협", "우체국", "새마을금고", "신협", "수협", "àkáǹtì", "akanti", "akaunti", "asusu")
_BANK_ANCHORS = (
    # a payment's words too: an IBAN is told to be paid to (Danish indbetal, German überweis, Italian bonifico …)
    "betal", "überweis", "uberweis", "virement", "transfer", "pago", "pagamento", "bonifico", "przelew", "platb",
    "fizet", "maksu", "overfør", "przelej", "wpłać", "wplac", "betaal", "pay", "paga", "zahl", "оплат", "перевод",
    "ödeme", "havale", "ifsc", "neft", "imps", "rtgs", "invoice", "rechnung", "facture", "factura", "fattura", "faktura",
    "bank", "iban", "bic", "swift", "sepa", "routing", "rtn", "sort code", "sort-code", "sortcode", "bsb", "aba:", "aba ",
    "wire transfer", "checking", "savings", "deposit", "payee", "beneficiar", "transfer", "payment", "payout",
    "account", "acct", "a/c", "konto", "überweis", "zahlung", "compte", "virement", "banc", "cuenta", "transferencia",
    "conto", "bonifico", "conta ", "conta:", "conta corrente", "rekening", "overboek", "rachun", "przelew",
    "tilinumero", "tilinro", "účet", "účtu", "счет", "счёт", "банк",
    "hesap", "havale", "口座", "銀行", "振込", "银行", "账户", "帳戶", "转账", "계좌", "은행", "tài khoản", "ngân hàng",
    "बैंक", "खाता", "clabe", "cbu", "cvu", "آيبان", "ايبان", "إيبان", "شبا", "بنك", "مصرف", "حساب", "בנק", "חשבון",
    "ธนาคาร", "บัญชี", "普通", "当座", *_MORE_ACCOUNT_WORDS,
)
#: the registries' and banks' documented example IBANs (SWIFT's IBAN registry, the ECBS and Wikipedia): left alone
_EXAMPLE_IBANS = frozenset({
    "DE89370400440532013000", "GB82WEST12345698765432", "GB29NWBK60161331926819", "GB33BUKB20201555555555",
    "FR1420041010050500013M02606", "FR7630006000011234567890189", "NL91ABNA0417164300", "NL02ABNA0123456789",
    "CH9300762011623852957", "BE68539007547034", "BE71096123456769", "ES9121000418450200051332",
    "IT60X0542811101000000123456", "AT611904300234573201", "NO9386011117947", "PL61109010140000071219812874",
    "SE4550000000058398257466", "DK5000400440116243", "FI2112345600000785", "IE29AIBK93115212345678",
    "LU280019400644750000", "PT50000201231234567890154", "CZ6508000000192000145399", "SK3112000000198742637541",
})


def _mod97(value: str) -> int:
    """ISO 7064 mod 97-10 of an IBAN (country and check digits moved to the end, letters as 10…35): 1 when valid.
    Cheaper than the validator, which also checks the country's format, for the many cuts that fail."""
    moved = value[4:] + value[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 if moved.isalnum() and moved.isascii() else -1


#: the IBAN's name: in Latin letters, in Arabic (``الآيبان``: the article before it is passed over), in Persian
#: (Iran's "sheba"); every alternative starts with a letter, so the pattern skips to those (an optional article in
#: front cost 3 times as much)
_IBAN_LABEL = r"iban|[آاإ]يبان|شبا(?:ی|ي)?(?![\u0600-\u06ff])"  # شبای من: "my Sheba"
_IBAN_ANCHORS = ("iban", "آيبان", "ايبان", "إيبان", "شبا")


def _ibans(text: str) -> Iterator[Span]:
    """Valid IBANs anywhere; after the IBAN's name, one of its country's exact length and format whose check digits
    are wrong (mistyped, or made up for a test)."""
    from stdnum import iban

    def shaped(_: str, value: str) -> bool:
        number = value.replace(" ", "").replace("-", "").upper()
        if number in _EXAMPLE_IBANS or not _shaped(r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}", number):
            return False
        from stdnum.exceptions import InvalidComponent, ValidationError

        try:
            iban.validate(number[:2] + iban.calc_check_digits(number) + number[4:], check_country=False)
        except InvalidComponent:
            return True  # a country outside SWIFT's registry (Iran's Sheba): its label and its shape
        except ValidationError:
            return False
        return True

    yield from _labelled_values(_around(_labelled(_IBAN_LABEL), text, _IBAN_ANCHORS), text, shaped, 42)
    # Poland's account number (NRB) is its IBAN without "PL", told so at home: 26 digits, the first two the IBAN's
    # check digits (grouped 2 + 6 x 4)
    for m in _re(r"(?<![\w-])(\d{2}( ?)\d{4}(?:\2\d{4}){5})(?![\w-])").finditer(text):
        digits = m.group(1).replace(" ", "")
        if _mod97("PL" + digits) == 1 and "PL" + digits not in _EXAMPLE_IBANS:
            yield m.span(1)
    for m in _re(r"[A-Z]{2}[0-9]{2}(?=[ -]?[A-Z0-9])").finditer(text):
        if _after_word(text, m.start()):
            continue
        for end in _cuts(text, m.start(), 42, " -"):
            value = text[m.start():end].replace(" ", "").replace("-", "")
            if 15 <= len(value) <= 34 and _mod97(value) == 1 and iban.is_valid(value, check_country=False):
                if value not in _EXAMPLE_IBANS:
                    yield m.start(), end
                break


_ACCOUNT_LABEL = (
    r"(?:bank[ \t]+)?(?:account|acct|a/c)(?:[ \t]*(?:number|num|no\.?|nr\.?|#))?|bank[ \t]*account"
    r"|(?:checking|savings|chequing)(?:[ \t]+account)?|konto(?:nummer|nr\.?|[ \t]*nr\.?|[ \t]*nummer)?|kontonr"
    r"|num[ée]ro[ \t]+de[ \t]+compte(?:[ \t]+bancaire)?|n[°º][ \t]*de[ \t]+compte|compte[ \t]+bancaire"
    r"|n[úu]mero[ \t]+de[ \t]+(?:la[ \t]+)?cuenta(?:[ \t]+bancaria)?|n[°º.][ \t]*(?:de[ \t]+)?cuenta|cuenta(?:[ \t]+bancaria)?"
    r"|numero[ \t]+(?:di[ \t]+|del[ \t]+)?conto(?:[ \t]+bancario)?|conto[ \t]+corrente"
    r"|n[úu]mero[ \t]+da[ \t]+conta(?:[ \t]+banc[áa]ria)?|conta(?:[ \t]+corrente)?|rekening(?:nummer|[ \t]*nr\.?)?"
    r"|numer[ \t]+(?:konta|rachunku)|nr[ \t]+(?:konta|rachunku)|rachunek(?:[ \t]+bankowy)?|tilinumero|tilinro"
    r"|číslo[ \t]+(?:bankovního[ \t]+)?účtu|номер[ \t]+(?:банковского[ \t]+)?сч[её]та|расч[её]тный[ \t]+сч[её]т|"
    r"hesap[ \t]*(?:numarası|no)|口座番号|銀行口座|银行账号|银行账户|銀行帳號|계좌(?:[ \t]?번호)?|số[ \t]+tài[ \t]+khoản"
    r"|nomor[ \t]+rekening|no\.?[ \t]*rekening|खाता[ \t]+(?:संख्या|नंबर)|رقم[ \t]+(?:ال)?حساب|מספר[ \t]+ה?חשבון"
    r"|เลข(?:ที่)?บัญชี|(?:普通|当座)(?:預金)?"
    r"|ખાતા[ \t]+(?:નંબર|ક્રમાંક)|(?:অ্যাকাউন্ট|হিসাব)[ \t]+নম্বর|கணக்கு[ \t]+எண்|ఖాతా[ \t]+(?:సంఖ్య|నంబర్)"
    r"|खाते[ \t]+क्रमांक|ಖಾತೆ[ \t]+ಸಂಖ್ಯೆ|അക്കൗണ്ട്[ \t]+നമ്പർ|ਖਾਤਾ[ \t]+ਨੰਬਰ"
    r"|[가-힣]{1,6}(?:은행|뱅크)|농협|우체국|새마을금고|신협|수협"  # a Korean bank's name before the account
    r"|n[ọo]́?ń?b[àa][ \t]+[àa]k[áa][ǹn]t[ìi]|namba[ \t]+ya[ \t]+akaunti|lambar[ \t]+asusu"
)


_ACCOUNT_ANCHORS = (
    "account", "acct", "a/c", "checking", "savings", "chequing", "konto", "compte", "cuenta", "conto", "conta",
    "rekening", "rachun", "tilinumero", "tilinro", "účtu", "сч", "hesap", "口座", "银行账", "銀行帳", "계좌", "tài khoản",
    "खाता", "حساب", "חשבון", "บัญชี", "普通", "当座", *_MORE_ACCOUNT_WORDS,
)
_BANK_CODE_ANCHORS = ("routing", "aba", "rtn", "ruta", "sort", "bsb", "clabe", "cbu", "cvu", "transit")


def _account_number(label: str, value: str) -> bool:
    """6 to 20 digits, maybe grouped or with a check digit after a dash or a bank code after a slash; not a phone
    number's shape, a date or one digit repeated. After a Japanese deposit's kind (``普通``, ``当座``: words of
    everyday use too), the 7 digits of its account number."""
    if label[:2] in ("普通", "当座"):
        return _shaped(r"\d{7}", value)
    digits = re.sub(r"[ ./-]", "", value)
    return (digits.isdigit() and 6 <= len(digits) <= 20 and len(set(digits)) > 2
            and not _re(r"(?:\d{3}[ .-]){2}\d{4}|\d{1,4}[./-]\d{1,2}[./-]\d{1,4}").fullmatch(value))


def _bank_accounts(text: str) -> Iterator[Span]:
    labels = _around(_labelled(_ACCOUNT_LABEL, filler=_ACCOUNT_FILLER), text, _ACCOUNT_ANCHORS)
    for start, end in _labelled_values(labels, text, _account_number, 26):
        if _near(r"\baws\b|arn:aws|amazon", text, start, end, 200):
            continue  # an AWS account id (12 digits) in a text that speaks of transfers or payments
        if _near(_BANK_WORDS + r"|kontonummer|rekeningnummer|口座番号|계좌|" + "|".join(_MORE_ACCOUNT_WORDS), text, start,
                 end, 200):
            yield start, end


def _clabe(number: str) -> bool:
    digits = re.sub(r"[ -]", "", number)
    if len(digits) != 18 or not digits.isdigit():
        return False
    total = sum(int(d) * (3, 7, 1)[i % 3] % 10 for i, d in enumerate(digits[:17]))
    return (10 - total % 10) % 10 == int(digits[17])


def _bank_codes(text: str) -> Iterator[Span]:
    def valid(label: str, value: str) -> bool:
        low, digits = label.lower(), re.sub(r"[ -]", "", value)
        if "clabe" in low:  # after their names, a CLABE's or a CBU's exact shape with a wrong check digit too
            return _clabe(value) or _shaped(r"\d{3}([ -]?)\d{3}\1\d{11}\1\d", value)
        if "cbu" in low or "cvu" in low:
            return _valid("ar.cbu", value) or _shaped(r"\d{8}[ -]?\d{14}", value)
        if "sort" in low:
            return bool(_re(r"\d{2}([- ]?)\d{2}\1\d{2}").fullmatch(value))
        if "bsb" in low:
            return bool(_re(r"\d{3}[- ]?\d{3}").fullmatch(value))
        if "transit" in low:  # a Canadian branch's (with its bank's institution number beside it)
            return bool(_re(r"\d{5}").fullmatch(value)) and _near(r"institution|ch[eè]que|\bbank|banque", text, 0, 0, 10**9)
        return len(digits) == 9 and _valid("us.rtn", digits)

    labels = (r"routing(?:[ \t]+(?:number|no\.?|#))?|aba(?:[ \t]+(?:routing[ \t]+)?(?:number|no\.?|#))?|rtn"
              r"|n[úu]mero[ \t]+de[ \t]+ruta|sort[ -]?code|bsb(?:[ \t]+(?:number|no\.?))?|clabe(?:[ \t]+interbancaria)?|cbu|cvu"
              r"|transit(?:[ \t]+(?:number|no\.?|#))?")
    yield from _labelled_values(_around(_labelled(labels), text, _BANK_CODE_ANCHORS), text, valid, 26)


# -- national identity numbers ---------------------------------------------------------------------------------
#: the shapes of numbers that several labels share
_DNI = r"\d{8}[ -]?[A-Z]|[XYZ][ -]?\d{7}[ -]?[A-Z]"  # Spain's DNI and NIE
_PERSONNUMMER = r"(?:\d{2})?\d{6}[-+ ]?\d{4}|\d{6} ?\d{5}"  # Sweden's and Denmark's, Norway's
_TEN_DIGITS = r"\d{3}[ -]?\d{3}[ -]?\d{4}"

#: (anchors, labels, validators, shape): the python-stdnum validators (or ours) that a value after one of the labels
#: must pass; labels in capitals are read in capitals only (``SIN``, ``PAN``, ``RUT``: words in lower case). A label
#: that names one kind of number and nothing else (``PESEL``, ``Steuer-ID``, ``СНИЛС``, not ``SIN``, ``my number`` or
#: ``cédula``) has the number's shape: a value of exactly that shape after it is masked though it fails the check
#: (a number mistyped or made up for a test is told as the real one is); a number with no public check (Vietnam's,
#: the Philippines') has its shape only. Labels in each language as they are inflected: definite
#: (``fødselsnummeret``, ``personnumret``), possessive (``henkilötunnukseni``), with the article (``תעודת הזהות``).
#: No label starts with an optional part (``(?:steuerliche )?identifikationsnummer``): the alternation then skips to
#: the labels' first letters (measured: 0.28 → 0.18 ms a 2 KB text for that label).
_ID_LABELS: tuple[tuple[tuple[str, ...], str, tuple[str, ...], str], ...] = (
    (("NIR",), r"NIR", ("fr.nir",), r"[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3}(?: ?\d{2})?"),
    (("sécu", "securite sociale", "vitale", "insee"),
     r"num[ée]ro[ \t]+de[ \t]+s[ée]curit[ée][ \t]+sociale|s[ée]curit[ée][ \t]+sociale|n[°º][ \t]*(?:de[ \t]+)?s[ée]cu"
     r"|num[ée]ro[ \t]+(?:de[ \t]+)?s[ée]cu|carte[ \t]+vitale|num[ée]ro[ \t]+insee|insee", ("fr.nir",),
     r"[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3}(?: ?\d{2})?"),
    (("fiscal",), r"num[ée]ro[ \t]+fiscal|num[ée]ro[ \t]+d'identification[ \t]+fiscale", ("fr.nif",),
     r"[0-3]\d ?\d{2} ?\d{3} ?\d{3} ?\d{3}"),
    (("fiscale", "fisc", "c.f.", "CF"), r"codice[ \t_-]?fiscale|cod\.?[ \t]*fisc\.?|c\.f\.|(?-i:CF)",
     ("it.codicefiscale",), r"[A-Z]{6}[0-9LMNP-V]{2}[A-EHLMPR-T][0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{3}[A-Z]"),
    (("NIE",), r"NIE", ("es.nie",), r"[XYZ][ -]?\d{7}[ -]?[A-Z]"),
    (("dni", "identidad"), r"dni|documento[ \t]+nacional[ \t]+de[ \t]+identidad", ("es.dni", "es.nie", "es.nif", "pe.cui"),
     _DNI + r"|\d{1,2}\.?\d{3}\.?\d{3}"),  # and Argentina's and Peru's, 7 or 8 digits
    (("nif",), r"nif", ("es.nif", "pt.nif"), _DNI + r"|[A-HJNP-SUVW]\d{7}[0-9A-J]|\d{3} ?\d{3} ?\d{3}"),
    (("identidad",), r"n[úu]mero[ \t]+de[ \t]+identidad", ("es.dni", "es.nie", "es.nif"), ""),
    (("cidadão", "cidadao"), r"cart[ãa]o[ \t]+de[ \t]+cidad[ãa]o", ("pt.cc",), r"\d{8} ?\d ?[A-Z]{2}\d"),
    (("steuer", "identifikationsnummer", "idnr"),
     r"steuer[ \t_-]?id|steuerliche[ \t]+identifikationsnummer|steuer-?identifikationsnummer|identifikationsnummer|idnr", ("de.idnr",),
     r"\d{2} ?\d{3} ?\d{3} ?\d{3}"),
    (("steuernummer", "st.-nr", "st-nr", "stnr", "st.nr"), r"steuernummer|st\.?-?nr\.?", ("de.stnr",),
     r"\d{2,3}/\d{3,4}/\d{4,5}|\d{13}"),
    (("sozialversicherung", "rentenversicherung", "sv-nummer", "sv-nr", "svnr"),
     r"(?:sozial|renten)versicherungsnummer|sv-?(?:nummer|nr\.?)|svnr", ("at.vnr",),
     r"\d{2} ?\d{6} ?[A-Z] ?\d{3}|\d{4} ?\d{6}"),  # Germany's (area, birth date, initial, serial), Austria's
    (("versicherungsnummer",), r"versicherungsnummer", ("at.vnr",), ""),
    (("bsn", "burgerservice", "sofi"), r"bsn|burgerservicenummer|sofi[ \t_-]?nummer", ("nl.bsn",),
     r"\d{3}[ .]?\d{3}[ .]?\d{3}|\d{4}\.\d{2}\.\d{3}"),
    (("pesel",), r"pesel", ("pl.pesel",), r"\d{11}"),
    (("NIP",), r"NIP", ("pl.nip",), r"\d{3}-?\d{3}-?\d{2}-?\d{2}|\d{3}-\d{2}-\d{2}-\d{3}"),
    (("dowod", "dowód"),
     r"(?:nr|numer|seria[ \t]+i[ \t]+numer)[ \t]+dowodu(?:[ \t]+osobistego)?|dow[óo]d(?:u)?[ \t]+osobist\w*",
     ("pl-id-card",), r"[A-Z]{3} ?\d{6}"),
    (("personnummer", "personnumret", "personnr", "samordningsnummer", "personbeteckning"),
     r"person(?:nummer(?:et)?|numret|nr)|samordningsnumm?(?:er|ret)|personbeteckning",
     ("se.personnummer", "no.fodselsnummer", "dk.cpr"), _PERSONNUMMER),
    (("fødsels", "fodsels"), r"f[øo]dselsnummer(?:et)?|f[øo]dselsnr", ("no.fodselsnummer",), r"\d{6} ?\d{5}"),
    (("cpr",), r"cpr(?:[ \t_-]?(?:nummer(?:et)?|nr\.?))?", ("dk.cpr",), r"\d{6}-?\d{4}"),
    (("henkilötunnu", "henkilotunnu", "hetu"), r"henkil[öo]tunnu(?:s|ks\w*)|hetu(?:ni|si|nsa|n)?", ("fi.hetu",),
     r"\d{6}[-+A-FU-Y]\d{3}[0-9A-Y]"),
    (("kennitala",), r"kennitala|kennitalan", ("is_.kennitala",), r"\d{6}-?\d{4}"),
    (("cpf",), r"cpf", ("br.cpf",), r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}"),
    (("cnpj",), r"cnpj", ("br.cnpj",), r"\d{2}\.?\d{3}\.?\d{3}/?\d{4}-?\d{2}"),
    (("aadha", "आधार", "ஆதார்", "ആധാർ", "ఆధార్", "ಆಧಾರ್", "আধার", "આધાર", "ਆਧਾਰ", "ଆଧାର"),
     r"aadhaa?r|आधार|ஆதார்|ആധാർ|ఆధార్|ಆಧಾರ್|আধার|આધાર|ਆਧਾਰ|ଆଧାର", ("in_.aadhaar",), r"[2-9]\d{3}([ -]?)\d{4}\1\d{4}"),
    (("PAN",), r"PAN", ("in_.pan",), r"[A-Z]{3}[ABCFGHJLPT][A-Z]\d{4}[A-Z]"),
    (("permanent account", "पैन"), r"permanent[ \t]+account[ \t]+number|पैन", ("in_.pan",),
     r"[A-Z]{3}[ABCFGHJLPT][A-Z]\d{4}[A-Z]"),
    (("身份", "chinese id"), r"身份证|身份證|公民身份号码|居民身份证|chinese[ \t]+id", ("cn.ric", "hk-id"),
     r"\d{17}[\dX]|\d{15}"),
    (("resident id",), r"resident[ \t]+id(?:entity)?(?:[ \t]+card)?", ("cn.ric",), ""),
    (("주민", "외국인", "rrn", "resident registration"),
     r"(?:주민|외국인)[ \t]?등록[ \t]?번호|주민번호|rrn|resident[ \t]+registration(?:[ \t]+number)?", ("kr.rrn",),
     r"\d{6}-?\d{7}"),
    (("マイナンバー", "個人番号", "mynumber"), r"マイナンバー|個人番号|mynumber", ("jp.in_",), r"\d{4}([ -]?)\d{4}\1\d{4}"),
    (("my number",), r"my[ \t]number", ("jp.in_",), ""),
    (("SIN", "NAS"), r"SIN|NAS", ("ca.sin",), ""),
    (("social insurance", "assurance sociale"),
     r"social[ \t]+insurance(?:[ \t]+number)?|num[ée]ro[ \t]+d'assurance[ \t]+sociale", ("ca.sin",),
     r"\d{3}([ -]?)\d{3}\1\d{3}"),
    (("national insurance", "ni number", "ni no", "nino"),
     r"national[ \t]+insurance(?:[ \t]+number)?|ni[ \t]*(?:number|no\.?)|nino", ("gb-nino",),
     r"[A-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D]"),
    (("nhs number", "nhs no"), r"nhs[ \t]+(?:number|no\.?)", ("gb.nhs",), _TEN_DIGITS),
    (("nhs",), r"nhs", ("gb.nhs",), ""),
    (("UTR", "taxpayer reference"), r"(?-i:UTR)|unique[ \t]+taxpayer[ \t]+reference", ("gb.utr",), r"\d{5} ?\d{5}"),
    (("ITIN",), r"ITIN", ("us.itin",), r"9\d{2}-?\d{2}-?\d{4}"),
    (("ahv", "avs"), r"ahv(?:-?nummer|-?nr\.?)?|avs|ahv/avs", ("ch.ssn",), r"756\.?\d{4}\.?\d{4}\.?\d{2}"),
    (("rijksregister", "registre national", "insz", "niss", "numéro national", "numero national"),
     r"rijksregisternummer|registre[ \t]+national|num[ée]ro[ \t]+national(?:[ \t]+belge)?|insz|niss",
     ("be.nn",), r"\d{2}\.?\d{2}\.?\d{2}-?\d{3}\.?\d{2}"),
    (("егн", "egn"), r"егн|egn", ("bg.egn",), r"\d{10}"),
    (("rodn",), r"rodn[ée][ \t]+[čc][íi]slo", ("cz.rc", "sk.rc"), r"\d{6}/?\d{3,4}"),
    (("isikukood",), r"isikukood", ("ee.ik",), r"[1-6]\d{10}"),
    (("asmens",), r"asmens[ \t]+kodas", ("lt.asmens",), r"[1-6]\d{10}"),
    (("CNP", "numeric personal"), r"(?-i:CNP)|cod(?:ul)?[ \t]+numeric[ \t]+personal", ("ro.cnp",), r"[1-9]\d{12}"),
    (("emšo", "emso"), r"em[šs]o", ("si.emso",), r"\d{13}"),
    (("oib",), r"oib", ("hr.oib",), r"\d{11}"),
    (("amka", "αμκα"), r"amka|αμκα", ("gr.amka",), r"\d{11}"),
    (("PPS",), r"PPSN?", ("ie.pps",), r"\d{7}[A-W][A-IW]?"),
    (("ppsn",), r"ppsn", ("ie.pps",), r"\d{7}[A-W][A-IW]?"),
    (("curp",), r"curp", ("mx.curp",), r"[A-Z]{4}\d{6}[HMX][A-Z]{5}[0-9A-Z]\d"),
    (("RFC",), r"RFC", ("mx.rfc",), r"[A-Z]{3,4}\d{6}[A-Z0-9]{3}"),
    (("NSS",), r"NSS", (), r"\d{2}[ -]?\d{2}[ -]?\d{2}[ -]?\d{4}[ -]?\d"),  # Mexico's social security number
    (("CUIT", "CUIL"), r"CUIT|CUIL", ("ar.cuit",), r"\d{2}-?\d{8}-?\d"),
    (("RUT", "RUN"), r"RUT|RUN", ("cl.rut",), r"\d{1,2}\.?\d{3}\.?\d{3}-?[\dK]"),
    (("kimlik", "tckn"), r"t\.?c\.?[ \t]+kimlik(?:[ \t]+no)?|tckn|tc[ \t]?kimlik[ \t]?no", ("tr.tckimlik",), r"[1-9]\d{10}"),
    (("kimlik",), r"kimlik(?:[ \t]+(?:no|numarası))?", ("tr.tckimlik",), ""),
    (("nric", "mykad"), r"nric|mykad", ("my.nric",), r"\d{6}-?\d{2}-?\d{4}|[STFGM]\d{7}[A-Z]"),  # and Singapore's
    (("IC", "kad pengenalan"), r"(?-i:IC)|kad[ \t]+pengenalan", ("my.nric",), ""),  # Malaysia's, by its check only
    (("KRA",), r"(?-i:KRA)(?:[ \t]+PIN)?", ("ke.pin",), r"[AP]\d{9}[A-Z]"),  # Kenya's tax PIN ("PIN yangu ya KRA")
    (("jmbg", "јмбг", "embg", "ембг", "матичн"), r"jmbg|јмбг|embg|ембг|матични[ \t]+број|матичен[ \t]+број",
     (), r"(?:0[1-9]|[12]\d|3[01])(?:0[1-9]|1[0-2])\d{9}"),  # Serbia's, North Macedonia's, Bosnia's, Montenegro's
    (("ausweis",), r"(?:personal)?ausweis(?:nummer|-?nr\.?)", (),
     r"[CFGHJKLMNPRTVWXYZ][CFGHJKLMNPRTVWXYZ0-9]{8}\d?"),  # Germany's identity card (and its check digit)
    # the United Arab Emirates' (before Saudi Arabia's: "رقم الهوية الإماراتية"), Saudi Arabia's citizen or resident
    (("الإماراتية", "الاماراتية", "emirates id"), r"رقم[ \t]+الهوية[ \t]+ال[إا]ماراتية|الهوية[ \t]+ال[إا]ماراتية"
     r"|emirates[ \t]+id(?:[ \t]+(?:number|no\.?))?", ("luhn",), r"784-?\d{4}-?\d{7}-?\d"),
    (("الهوية", "الإقامة", "iqama"), r"رقم[ \t]+الهوية(?:[ \t]+الوطنية)?|الهوية[ \t]+الوطنية|رقم[ \t]+الإقامة|iqama",
     (), r"[12]\d{9}"),
    (("NIC", "ජාතික හැඳුනුම්පත්", "தேசிய அடையாள"), r"(?-i:NIC)|ජාතික[ \t]+හැඳුනුම්පත්|தேசிய[ \t]+அடையாள[ \t]+அட்டை",
     (), r"(?:19|20)\d{2}[0-8]\d{6}\d|\d{9}[VX]"),  # Sri Lanka's, new and old
    (("hkid", "香港身份證"), r"hkid|香港身份證(?:號碼)?", ("hk-id",), r"[A-Z]{1,2}\d{6}\(?[0-9A]\)?"),  # Hong Kong's
    (("cnic", "شناختی"), r"cnic|شناختی[ \t]+کارڈ", ("pk.cnic",), r"\d{5}-?\d{7}-?\d"),
    (("کد ملی", "کدملی", "شماره ملی", "melli"), r"کد[ \t]?ملی|شماره[ \t]+ملی|code[ \t]+melli|melli[ \t]+code",
     ("ir-melli",), r"\d{10}|\d{3}-\d{6}-\d"),  # Iran's
    (("NIN",), r"(?-i:NIN)", (), r"\d{11}"),  # Nigeria's
    (("BVN",), r"(?-i:BVN)", (), r"\d{11}"),  # Nigeria's bank verification number
    (("VID",), r"(?-i:VID)", ("in_.vid",), r"\d{4}([ -]?)\d{4}\1\d{4}\1\d{4}"),  # India's Aadhaar virtual id
    (("загранпаспорт",), r"загранпаспорт\w{0,2}", (), r"\d{2} ?\d{7}"),  # Russia's passport for travel
    (("NIT", "nit"), r"(?-i:NIT)|nit", ("gt.nit", "co.nit"), r"\d{6,10}-[\dK]"),  # Guatemala's, Colombia's
    (("RUC", "ruc"), r"(?-i:RUC)|ruc", ("py.ruc", "ec.ruc", "pe.ruc"), ""),  # Paraguay's, Ecuador's, Peru's
    (("RIF",), r"(?-i:RIF)", ("ve.rif",), r"[VEJPG]-?\d{8}-?\d"),  # Venezuela's
    (("rut",), r"rut|run", ("cl.rut",), ""),  # Chile's, in lower case: its check must pass
    (("CRA", "business number"), r"(?-i:CRA)(?:[ \t]+number)?", ("ca.sin",), ""),  # a Canadian's SIN as CRA asks it
    (("personal health number", "PHN"), r"personal[ \t]+health[ \t]+number|(?-i:PHN)", (),
     r"9\d{3} ?\d{3} ?\d{3}"),  # British Columbia's
    (("kitambulisho",), r"kitambulisho(?:[ \t]+cha[ \t]+taifa)?", (), r"\d{7,9}"),  # Kenya's, Tanzania's
    (("এনআইডি", "পরিচয়পত্র", "NID"), r"এনআইডি|জাতীয়[ \t]+পরিচয়পত্র|(?-i:NID)", (), r"\d{10}|\d{13}|\d{17}"),  # Bangladesh
    # told with a label that names no country: a number of an identity's length, not a placeholder
    (("national id", "national_id", "nationalid", "national identi", "identity card", "identity number", "id card",
      "tax id", "tax_id", "taxid", "taxpayer", "tax number", "personal id", "citizen id", "voter id"),
     r"national[ \t_-]?id(?:entity|entification)?(?:[ \t_-]?(?:card|number|no\.?))?"
     r"|identity[ \t_-]?(?:card[ \t_-]?)?(?:number|no\.?|card)|id[ \t_-]?card(?:[ \t_-]?(?:number|no\.?))?"
     r"|tax(?:payer)?[ \t_-]?id(?:entification)?(?:[ \t_-]?(?:number|no\.?))?|tax[ \t_-]?number"
     r"|personal[ \t_-]?id(?:entification)?[ \t_-]?(?:number|code|no\.?)|(?:citizen|voter)[ \t_-]?id",
     (), r"\d{8,17}|(?=(?:\D*\d){8})\d{2,6}(?:[ -]\d{1,8}){1,4}"),
    (("NIK", "induk kependudukan"), r"(?-i:NIK)|nomor[ \t]+induk[ \t]+kependudukan", ("id.nik",), r"\d{16}"),
    (("tfn", "tax file number"), r"tfn|tax[ \t]+file[ \t]+number", ("au.tfn",), r"\d{3} ?\d{3} ?\d{2,3}"),
    (("IRD",), r"IRD", ("nz.ird",), r"\d{2,3}-?\d{3}-?\d{3}"),
    # a person's (12 digits; an organisation's 10 are printed on its every receipt)
    (("инн",), r"инн(?:[ \t]+(?:физлица|физического[ \t]+лица|ип))?", ("ru-inn-person",), r"\d{12}"),
    (("снилс", "snils"), r"снилс|snils", (), r"\d{3}-?\d{3}-?\d{3}[ -]?\d{2}"),
    (("рнокпп", "іпн"), r"рнокпп|іпн", ("ua.rntrc",), r"\d{10}"),
    (("id number", "id no", "mazisi"), r"id[ \t]+(?:number|no\.?)|(?:inombolo[ \t]+)?(?:ka)?mazisi",
     ("za.idnr", "my.nric", "il.idnr", "cn.ric", "kr.rrn", "tr.tckimlik"), ""),  # a check must pass
    (("african id", "id-nommer", "id nommer", "identiteitsnommer"),
     r"south[ \t]+african[ \t]+id|id[ -]nommer|identiteitsnommer", ("za.idnr",), r"\d{13}"),
    (("sa id",), r"sa[ \t]+id", ("za.idnr",), ""),
    (("ת", "זהות", "zehut"), r"ת[.\"״']?ז\.?|תעודת[ \t]+ה?זהות|מספר[ \t]+ה?זהות|teudat[ \t]+zehut", ("il.idnr",),
     r"\d{9}"),
    (("cédula", "cedula"), r"c[ée]dula", ("ec.ci", "do.cedula"), ""),
    (("ประชาชน",), r"บัตร(?:ประจำตัว)?ประชาชน|ประจำตัวประชาชน", ("th.pin",),
     r"\d([ -]?)\d{4}\1\d{5}\1\d{2}\1\d"),
    (("cccd", "cmnd", "căn cước", "chứng minh", "định danh"),  # Vietnam: the citizen card's, the old card's
     r"cccd|cmnd|căn[ \t]+cước(?:[ \t]+công[ \t]+dân)?|chứng[ \t]+minh[ \t]+(?:nhân[ \t]+dân|thư)"
     r"|định[ \t]+danh[ \t]+cá[ \t]+nhân", (), r"\d{3}([ .]?)\d{3}\1\d{3}(?:\1\d{3})?"),
    (("sss",), r"sss", (), r"\d{2}-?\d{7}-?\d"),  # the Philippines: social security, tax, UMID, health, Pag-IBIG
    (("TIN",), r"TIN", (), r"\d{3}-?\d{3}-?\d{3}(?:-?\d{3,5})?"),
    (("umid",), r"umid(?:[ \t]+crn)?", (), r"\d{4}-?\d{7}-?\d"),
    (("philhealth",), r"philhealth", (), r"\d{2}-?\d{9}-?\d"),
    (("pag-ibig", "pagibig"), r"pag-?ibig(?:[ \t]+mid)?", (), r"\d{4}-?\d{4}-?\d{4}"),
    (("philsys", "PSN"), r"philsys(?:[ \t]+(?:id|card|number))?|(?-i:PSN)", (), r"\d{4}([ -]?)\d{4}\1\d{4}\1\d{4}"),
    (("mã số thuế",), r"mã[ \t]+số[ \t]+thuế(?:[ \t]+cá[ \t]+nhân)?", ("vn.mst",), r"\d{10}(?:-?\d{3})?"),
    (("身分證", "身分证"), r"身分[證证](?:字號|號碼|号码)?", (), r"[A-Z][12]\d{8}"),  # Taiwan's
    (("年金番号",), r"年金番号", (), r"\d{4}-?\d{6}"),  # Japan's pension number
    (("TAJ", "taj-szám", "taj szám", "adóazonosító"), r"(?-i:TAJ)(?:[ \t-]?sz[áa]m)?|taj-sz[áa]m|ad[óo]azonos[íi]t[óo][ \t]+jel(?:em|e)?",
     (), r"\d{3}[ -]?\d{3}[ -]?\d{3}|8\d{9}"),  # Hungary's social security and tax numbers
    (("personas kods",), r"personas[ \t]+kods", ("lv.pvn",), r"\d{6}-?\d{5}"),  # Latvia's
    (("القومي",), r"رقم[ \t]+(?:ال)?قومي", (), r"[23]\d{13}"),  # Egypt's
    # a driving licence's number (letters and digits, at least three digits), in the languages cards are issued in
    (("driver", "driving", "licence", "license", "führerschein", "fuhrerschein", "permis de conduire", "carnet de conducir",
      "licencia de conducir", "patente", "carteira de motorista", "cnh", "rijbewijs", "prawo jazdy", "körkort",
      "kørekort", "førerkort", "ajokortti", "водительск", "運転免許", "驾驶证", "駕照", "운전면허"),
     r"driver'?s?[ \t]+licen[cs]e(?:[ \t]+(?:number|no\.?|#))?|driving[ \t]+licen[cs]e(?:[ \t]+(?:number|no\.?))?"
     r"|(?:dl|licen[cs]e)[ \t]*(?:number|no\.?|#)|f(?:ü|ue?)hrerschein(?:nummer|[ \t-]?nr\.?)?"
     r"|(?:num[ée]ro[ \t]+(?:de[ \t]+|du[ \t]+)?)?permis[ \t]+de[ \t]+conduire|carnet[ \t]+de[ \t]+conducir"
     r"|licencia[ \t]+de[ \t]+conduc(?:ir|ción)|patente[ \t]+di[ \t]+guida|carteira[ \t]+de[ \t]+motorista|(?-i:CNH)"
     r"|rijbewijs(?:nummer)?|prawo[ \t]+jazdy|k[öo]rkort(?:snummer)?|k[øo]rekort|f[øo]rerkort|ajokortti"
     r"|водительск\w*[ \t]+(?:удостоверени\w*|прав\w*)|運転免許証?(?:番号)?|驾驶证(?:号)?|駕照(?:號碼)?|운전면허(?:증)?(?:[ \t]?번호)?",
     ("licence",), ""),
    # a health insurer's member number, a patient's record number
    (("member id", "member number", "krankenversicherung", "versichertennummer", "kvnr", "mrn", "medical record",
      "dossier médical", "dossier medical", "patient id", "health insurance", "numéro de sécurité"),
     r"member[ \t]+(?:id|number)|krankenversicherungsnummer|versichertennummer|kvnr|(?-i:MRN)"
     r"|medical[ \t]+record(?:[ \t]+(?:number|no\.?))?|dossier[ \t]+m[ée]dical|patient[ \t]+id"
     r"|health[ \t]+insurance[ \t]+(?:number|id)", ("licence",), ""),
    (("passport", "passeport", "reisepass", "passnummer", "passnr", "pasaporte", "passaport", "paspoort", "paszport",
      "cestovní pas", "паспорт", "pasaport", "passinumero", "パスポート", "护照", "護照", "여권", "hộ chiếu", "paspor",
      "पासपोर्ट", "διαβατήριο"),
     r"passport|passeport|reisepass(?:nummer|nr\.?)?|pass(?:nummer|nr\.?)|pasaporte|passaporto|passaporte|paspoort|paszport"
     r"|cestovn[íi][ \t]+pas|паспорт|pasaport|passinumero|パスポート|护照|護照|여권|hộ[ \t]+chiếu|paspor"
     r"|पासपोर्ट|διαβατήριο", ("passport",), ""),
)
_ID_ANCHORS = tuple(dict.fromkeys(a for anchors, _, _, _ in _ID_LABELS for a in anchors))


def _valid(validator: str, value: str) -> bool:
    """``value`` passes ``validator``: a python-stdnum module (``"fr.nir"``) or one of ours."""
    if validator == "passport":  # or a Russian one's series and number, "45 06 123456"
        return (bool(_re(r"[A-Z0-9]{6,9}").fullmatch(value)) and sum(c.isdigit() for c in value) >= 2
                or bool(_re(r"\d{2} \d{2} \d{6}|\d{4} \d{6}").fullmatch(value)))
    if validator == "licence":  # letters and digits (a dash inside), three digits or more, not a year or a date
        bare = value.replace("-", "").replace(" ", "")
        return (bool(_re(r"[A-Z0-9]{6,18}").fullmatch(bare)) and sum(c.isdigit() for c in bare) >= 3
                and not _re(r"(?:19|20)\d\d").fullmatch(bare) and len(set(bare)) > 2)
    if validator == "gb-nino":
        return bool(_re(r"(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?(?:\d{2} ?){3}[A-D]")
                    .fullmatch(value))
    if validator == "pl-id-card":
        return _pl_id_card(value)
    if validator == "ir-melli":
        return _ir_melli(value)
    if validator == "hk-id":
        return _hk_id(value)
    if validator == "ru-inn-person":
        return len(value) == 12 and bool(importlib.import_module("stdnum.ru.inn").is_valid(value))
    if validator == "luhn":
        return luhn(value.replace("-", "").replace(" ", ""))
    return bool(importlib.import_module("stdnum." + validator).is_valid(value))


def _shaped(shape: str, value: str) -> bool:
    """``value`` has exactly the number's ``shape`` and is not a placeholder: one or two digits repeated
    (``000 000 000``), or a run of consecutive digits (``123456789``)."""
    if not shape or not _re(shape, re.I).fullmatch(value):
        return False
    digits = "".join(c for c in value if c.isdigit())
    return len(set(digits)) > 2 and digits not in "01234567890123456789012" and digits not in "98765432109876543210"


def _hk_id(value: str) -> bool:
    """A Hong Kong identity card number: one or two letters, six digits, a check digit (0-9 or A) in parentheses or
    not; letters count 10 to 35 (a missing first letter 36), weights 9 down to 2, and the total with the check
    digit divides by 11."""
    bare = value.replace("(", "").replace(")", "").upper()
    m = _re(r"([A-Z]{1,2})(\d{6})([0-9A])").fullmatch(bare)
    if m is None:
        return False
    letters = m.group(1).rjust(2, " ")
    values = [36 if c == " " else int(c, 36) for c in letters] + [int(d) for d in m.group(2)]
    check = 10 if m.group(3) == "A" else int(m.group(3))
    return (sum(v * w for v, w in zip(values, range(9, 1, -1))) + check) % 11 == 0


def _ir_melli(value: str) -> bool:
    """An Iranian national code: 10 digits, the last a check digit (the first nine weighted 10 down to 2, mod 11:
    under 2 it is the remainder, else 11 less it)."""
    digits = value.replace("-", "")
    if not _re(r"\d{10}").fullmatch(digits) or len(set(digits)) < 3:
        return False
    r = sum(int(d) * (10 - i) for i, d in enumerate(digits[:9])) % 11
    return int(digits[9]) == (r if r < 2 else 11 - r)


def _pl_id_card(value: str) -> bool:
    """A Polish identity card number: 3 letters and 6 digits, the first digit a check digit (weights 7 3 1 · 7 3 1 7
    3 over the letters' values A=10… and the digits)."""
    value = value.replace(" ", "").upper()
    if not _re(r"[A-Z]{3}\d{6}").fullmatch(value):
        return False
    values = [int(c, 36) for c in value]
    total = sum(w * v for w, v in zip((7, 3, 1, 0, 7, 3, 1, 7, 3), values))
    return total % 10 == values[3]


@functools.cache
def _id_labels(entries: tuple[int, ...]) -> tuple[re.Pattern[str], list[tuple[re.Pattern[str], tuple[str, ...], str]]]:
    """The label pattern of the table's ``entries`` (those whose anchors the text holds), and each entry's label
    pattern, validators and shape."""
    table = [(_re(label, 0 if label.isupper() else re.I), validators, shape)
             for _, label, validators, shape in (_ID_LABELS[i] for i in entries)]
    labels = "|".join(p.pattern if p.flags & re.I == 0 else f"(?i:{p.pattern})" for p, _, _ in table)
    return _labelled(labels, 0, _SHORT_WORDS + _FILLER + _SHORT_WORDS + r"[ \t]*"), table


def _national_ids(text: str) -> Iterator[Span]:
    low = text.lower()
    present = tuple(a for a in _ID_ANCHORS if a in (text if a.isupper() else low))
    pattern, table = _id_labels(tuple(i for i, (anchors, _, _, _) in enumerate(_ID_LABELS)
                                      if not set(present).isdisjoint(anchors)))

    def valid(label: str, value: str) -> bool:
        return any(p.fullmatch(label) and (any(_valid(v, value) for v in validators) or _shaped(shape, value))
                   for p, validators, shape in table)

    for start, end in _labelled_values(_around(pattern, text, present), text, valid, seps=" -./("):
        yield start, end + (text[end : end + 1] == ")" and "(" in text[start:end])  # X875665(7): its closing ")"


# -- card security codes ---------------------------------------------------------------------------------------
_CARD_CODE_ANCHORS = (
    "cvv", "cvc", "cvn", "cav2", "cid:", "cid ", "cid=", "cid\"", "cid'", "csc", "cvd", "security", "verification", "cryptogramme", "prüf", "pruef",
    "sicherheitscode", "sécurité", "securite", "seguridad", "segurança", "seguranca", "sicurezza", "verifica",
    "beveiligingscode", "bezpieczeństwa", "zabezpieczając", "säkerhetskod", "sikkerhedskode", "sikkerhetskode",
    "turvakoodi", "bezpečnostní", "безопасности", "защитный", "güvenlik", "セキュリティ", "安全码", "安全碼", "보안",
    "bảo mật", "keamanan", "सुरक्षा", "ασφαλείας", "אבטחה", "الأمان",
)
#: a card's code with no doubt, field names included (``card_cvc``, ``cvv2``, ``cardCvv``)
_CARD_CODE_NAMES = r"cv[vcn]2?|cav2|card[ \t_-]?(?:security|verification|validation)[ \t_-]?(?:code|value|number)|cryptogramme(?:[ \t]+visuel)?|kartenpr(?:ü|ue)fnummer"
#: a word for it that needs a card nearby
_CARD_CODE_WORDS = (
    r"cid|csc|cvd|security[ \t_-]?code|sicherheitscode|pr(?:ü|ue)fziffer|pr(?:ü|ue)fnummer|code[ \t]+de[ \t]+s[ée]curit[ée]"
    r"|c[óo]digo[ \t]+de[ \t]+(?:seguridad|seguran[çc]a|verificaci[óo]n)|codice[ \t]+(?:di[ \t]+)?(?:sicurezza|verifica)"
    r"|beveiligingscode|kod[ \t]+(?:bezpiecze[ńn]stwa|zabezpieczaj[ąa]cy)|s[äa]kerhetskod|sikkerhe[dt]s?kode"
    r"|turvakoodi|bezpe[čc]nostn[íi][ \t]+k[óo]d|код[ \t]+безопасности|защитный[ \t]+код|g[üu]venlik[ \t]+kodu"
    r"|セキュリティー?コード|安全码|安全碼|보안[ \t]?코드|mã[ \t]+bảo[ \t]+mật|kode[ \t]+keamanan|सुरक्षा[ \t]+कोड"
    r"|κωδικός[ \t]+ασφαλείας|קוד[ \t]+אבטחה|رمز[ \t]+الأمان"
)
_CARD_WORDS = (r"card|visa|master[ \t]?card|amex|american[ \t]+express|discover|maestro|diners|unionpay|\bjcb\b"
               r"|carte|karte|tarjeta|cart[ãa]o|carta|kaart|karta|\bkort|kortti|\bkart\b|карт|カード|卡|카드|thẻ|kartu"
               r"|कार्ड|κάρτα|כרטיס|بطاقة|\bexp(?:iry|ires|iration)?\b|expir|ablauf|g[üu]ltig|vencimiento|scadenza"
               r"|validade|vervaldatum|\b(?:0[1-9]|1[0-2])[/-](?:\d\d|20\d\d)\b")
_SURE_PARTS = frozenset({"cvv", "cvv2", "cvc", "cvc2", "cvn", "cvn2", "cav2"})
_CODE_VALUE = r"[\"'`]?(\d{3,4})[\"'`]?(?![\w-]|[.,/]\d)"


def _card_codes(text: str) -> Iterator[Span]:
    words = _re(rf"(?:{_CARD_CODE_NAMES})(?![a-z])|(?P<word>(?:{_CARD_CODE_WORDS})(?![a-z]))|cv[vcn]2?", re.I)
    value = _re(_FILLER + _CODE_VALUE, re.I)
    for m in _around(words, text, _CARD_CODE_ANCHORS, 40, 40):
        start, end = m.span()
        while start and (text[start - 1].isalnum() or text[start - 1] in "_$-") and text[start - 1].isascii():
            start -= 1
        while end < len(text) and (text[end].isalnum() or text[end] in "_$") and text[end].isascii():
            end += 1
        name = text[start:end] if not m.group("word") else m.group(0)
        v = value.match(text, end)
        if not v:
            continue
        parts = {p.lower() for p in _re(r"[A-Z]?[a-z]+\d*|[A-Z]+\d*(?![a-z])|\d+").findall(name)}
        sure = bool(_re(_CARD_CODE_NAMES, re.I).fullmatch(name) or parts & _SURE_PARTS)
        if not m.group("word") and not sure and not parts & {"cid", "csc", "cvd", "security", "securitycode"}:
            continue  # "acid", "cidr", "cvvConfig": the word inside another name
        if sure or "card" in name.lower() or _near(_CARD_WORDS, text, start, v.end(), 150):
            yield v.span(1)


def _mrz_lines(text: str) -> Iterator[Span]:
    """A passport's machine-readable zone (ICAO 9303, two lines of 44): the second line, which holds the passport's
    number, the birth date and the expiry. Its shape is told apart by itself (the first line's name field, the
    second's fixed fields), so its check digits are not asked for: a zone typed out for a test is as sensitive."""
    mrz = _re(r"(?m)^P[A-Z<][A-Z<]{3}[A-Z<]{39}[ \t]*\r?\n([A-Z0-9<]{9}[0-9][A-Z<]{3}[0-9]{6}[0-9][MFX<][0-9]{6}[0-9]"
              r"[A-Z0-9<]{14}[0-9<][0-9])[ \t]*$")
    for m in mrz.finditer(text):
        yield m.span(1)


_AFTER_CARD_ANCHORS = ("cód", "cod", "kod", "код", "קוד", "رمز", "کد")


def _codes_after_cards(text: str) -> Iterator[Span]:
    """"código 462", "code 318" within 40 characters after a card number (that passes the Luhn check): its
    security code. Most texts that say "code" hold no card number: a cheap scan for one comes first."""
    if _re(r"\d{4}[ -]?\d{4}[ -]?\d{4}").search(text) is None:
        return
    after_card = _re(r"(?<![\w-])((?:\d[ -]?){12,18}\d)(?![\w-])[^\n]{0,40}?\b(?:c[óo]d(?:igo|e|ice)?|kod|код|קוד|رمز|کد)"
                     + _FILLER + _CODE_VALUE, re.I)
    for m in _around(after_card, text, _AFTER_CARD_ANCHORS, 80, 40):
        if luhn(m.group(1)):
            yield m.span(2)


def luhn(number: str) -> bool:
    """13 to 19 digits that pass the Luhn check, not one digit repeated (a card's number; ``secret_rules`` asks too).

    >>> luhn("4556 7375 8689 9855"), luhn("4556 7375 8689 9856"), luhn("0000 0000 0000 0000")
    (True, False, False)
    """
    digits = [int(c) for c in number if c.isdigit()]
    if not 13 <= len(digits) <= 19 or len(set(digits)) < 3:
        return False
    return sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(reversed(digits))) % 10 == 0


#: (kind, anchors, find): a rule runs when the lower-cased text holds one of its anchors (a tuple, not a dataclass:
#: the prompt hook imports this module, and a dataclass costs ~10 ms to import)
_RULES: tuple[tuple[str, tuple[str, ...], Callable[[str], Iterator[Span]]], ...] = (
    ("seed-phrase", _SEED_ANCHORS, _seed_phrases),
    ("recovery-key", _KEY_ANCHORS, _recovery_keys),
    ("recovery-code", _RECOVERY_ANCHORS, _recovery_codes),
    ("iban", _BANK_ANCHORS, _ibans),
    ("account-number", _BANK_ANCHORS, _bank_codes),
    ("account-number", _BANK_ANCHORS, _bank_accounts),
    ("national-id", _ID_ANCHORS, _national_ids),
    ("card-code", _CARD_CODE_ANCHORS, _card_codes),
    ("card-code", _AFTER_CARD_ANCHORS, _codes_after_cards),
    ("national-id", ("p<",), _mrz_lines),
)
#: every rule's anchors once (a word in capitals is looked for as written: ``RUN``, ``SIN``)
_ANCHORS = tuple(dict.fromkeys(a for _, anchors, _ in _RULES for a in anchors))
#: found in one pass over the text (indexer.anchors): the anchors in capitals as written, the others in lower case
_LOWER_ANCHORS = AnchorSet(a for a in _ANCHORS if not a.isupper())
_UPPER_ANCHORS = AnchorSet(a for a in _ANCHORS if a.isupper())
