"""Personal, financial and recovery secrets (indexer/secret_ids.py) through the real filter: seed phrases, recovery
codes and keys, bank data, national identity numbers and card security codes in many languages and layouts, and the
look-alikes that must stay (numbers that fail their check, dates, phones, order ids, prices, SHAs, word lists in
prose). Every value here is made up for these tests (checksums computed, not copied; some fail theirs on purpose)."""

import subprocess
import sys

import pytest

from indexer.privacy import redact

SEED_EN = "neglect interest bag step mule brisk local garden energy vast spirit grant"
SEED_EN24 = ("volcano uncle cereal brand harbor seed nest few art exhibit guard monster few cannon sentence purity "
             "video enrich strong media sure spoon office follow")
SEED_ES = "flota asegurar terapia fútbol lengua tribu pacto lesión lucha champú fiera decir"
SEED_FR = ("frère navire dragon agile casier lumière kayak biopsie aider dégrafer élaborer terrible puceron navire "
           "ironique maillon réclamer adjectif")

SECRETS = [
    # seed phrases: one line, numbered, one a line, commas, other lists, accents dropped, a wrong checksum
    (f"I restored my wallet with this phrase: {SEED_EN}", "mule brisk local"),
    (f"my ledger's 24 words are {SEED_EN24}.", "exhibit guard monster"),
    ("seed:\n" + "\n".join(f"{i}. {w}" for i, w in enumerate(SEED_EN.split(), 1)), "brisk"),
    ("Recovery phrase\n" + "\n".join(f"{i}) {w}" for i, w in enumerate(SEED_EN24.split(), 1)), "cannon"),
    ("backup words (keep offline):\n" + "\n".join(SEED_EN.split()), "energy\nvast"),
    ("mnemonic = " + ", ".join(SEED_EN.split()), "mule, brisk"),
    (f"frase de recuperación de mi cartera: {SEED_ES}", "lengua tribu"),
    ("frase semilla: " + SEED_ES.replace("ú", "u").replace("ó", "o"), "lengua tribu"),  # typed without accents
    (f"phrase de récupération : {SEED_FR}", "kayak biopsie"),
    ("seed phrase: tazza abisso mucosa isotopo cilindro proteso savana cefalo puntare starnuto formica anarchia",
     "savana cefalo"),
    ("frase de recuperação: diverso turbo restante lesma obcecado apetite objetivo iminente restante intriga fada "
     "gasto", "objetivo iminente"),
    ("obnovovací fráze: obrazec odevzdat cyklista xylofon revize sloupek pomlka povzdech otvor sazba paprika exekuce",
     "sloupek pomlka"),
    ("kurtarma kelimeleri: aygıt boncuk pencere misafir otel çengel veliaht yakın ırmak saygın akustik önsezi",
     "veliaht yakın"),
    ("지갑 복구 구문: 인생 막걸리 사흘 엉터리 일종 앞날 집단 공짜 인종 유난히 몰래 관련", "집단 공짜"),
    ("錢包助記詞：嘴 幅 州 煩 固 衝 丟 沿 後 寨 署 湯", "固 衝 丟"),
    ("seed (one word mistyped, fails the checksum): neglect interest bag step mule brisk local garden energy vast "
     "spirit spirit", "mule brisk local"),
    # recovery codes after their word, one or many, in several languages
    ("Here are your backup codes:\n7319 0462\n5581 2907\n6043 1178\n", "5581 2907"),
    ("Google backup codes (keep them safe):\n1. 4827 1935  2. 6619 0734  3. 9052 3318", "6619 0734"),
    ("recovery codes for my Proton account: x7k2m9q4, p3n8r6t1, h5w2c9v7", "p3n8r6t1"),
    ("Codes de secours :\n  - 82 61 94 07\n  - 31 77 50 28", "31 77 50 28"),
    ("Meine Backup-Codes sind 48213975 und 90376142", "90376142"),
    ("códigos de recuperación: 5f3a-9c21 8e7d-0b46 2a19-d7c3", "8e7d-0b46"),
    ("codici di backup:\n19374620\n58203917", "58203917"),
    ("kody zapasowe: 8823 1047, 6630 9281", "6630 9281"),
    ("резервные коды: 4471-9302 8815-2746", "8815-2746"),
    ("バックアップコード：\n3349 8810\n1205 7763", "1205 7763"),
    ("备用验证码：83726104 29183756", "29183756"),
    ("백업 코드: 6619 4402", "6619 4402"),
    ("the recovery code is TQ7M-4XK2-9PLR", "TQ7M-4XK2-9PLR"),
    # recovery keys told by their structure
    ("BitLocker recovery key: 713812-008789-508574-607992-082588-127336-468710-310376", "508574-607992"),
    ("BitLocker key (one digit mistyped): 713812-008789-508574-607992-082588-127336-468710-310377", "508574-607992"),
    ("Wiederherstellungsschlüssel 709995-313489-083897-195107-206393-309958-112640-187704", "083897-195107"),
    ("FileVault recovery key: HS68-C82C-5H2X-HGXV-EE96-5ZJM", "5H2X-HGXV"),
    ("Apple ID recovery key RTN7-Z647-SJZG-3XKR-H8CL-M3HT-772H", "SJZG-3XKR"),
    ("Secret Key: A3-HLPZVD-LZRKC5-NLLY2-U2V4A-3Y4XG-XXD53", "LZRKC5-NLLY2"),
    # IBANs (mod 97 and the country's format) and account, routing and sort-code numbers beside their labels
    ("IBAN: DE64 2032 9344 8041 0221 31, BIC COBADEFFXXX", "2032 9344 8041"),
    ("Virement sur FR71 6362 1578 67A9 6071 6025 788 svp", "6362 1578 67A9"),
    ('{"payee": "J. Doe", "iban": "GB49NWBK74465937213077"}', "GB49NWBK74465937213077"),
    ("Bonifico a NL57RABO3212413795 entro venerdì", "NL57RABO3212413795"),
    ("Przelew na konto PL18 1360 9985 7703 0537 6985 4714", "1360 9985 7703"),
    ("Bankverbindung: CH29 1333 6997 4154 7210 8", "1333 6997 4154"),
    ("routing number 937339983, account number 4417 0922 581", "937339983"),
    ("routing number 937339983, account number 4417 0922 581", "4417 0922 581"),
    ("ABA: 937339983", "937339983"),
    ("Bank account no. 60311872 (Barclays), sort code 20-44-91", "60311872"),
    ("Bank account no. 60311872 (Barclays), sort code 20-44-91", "20-44-91"),
    ("Kontonummer 0532013 bei der Sparkasse", "0532013"),
    ("número de cuenta bancaria: 0049 1500 0512 3456 78", "0049 1500 0512"),
    ("銀行口座: 普通 口座番号 4829107", "4829107"),
    ("BSB 062-481, account 10928374 at the bank", "062-481"),
    ("CLABE interbancaria: 012180807920190826", "012180807920190826"),
    ("CBU 0110599550298776109790", "0110599550298776109790"),
    # national identity and tax numbers beside their labels (valid checks)
    ("mon numéro de sécurité sociale : 2 91 11 69 123 714 20", "2 91 11 69 123 714 20"),
    ("Mon numéro de sécu c'est 2 91 11 69 123 714 20, merci", "2 91 11 69 123 714 20"),
    ("我的身份证号是 110105198806236784，谢谢", "110105198806236784"),
    ("मेरा आधार नंबर 4361 3114 9351 है", "4361 3114 9351"),
    ("Mitt personnummer är 880412-0809.", "880412-0809"),
    ("IBAN ES84 2100 7731 9055 1820 4467 (la cuenta)", "2100 7731 9055"),
    ("Codice fiscale: RSSMRA85T10A562S", "RSSMRA85T10A562S"),
    ('{"codice_fiscale": "BNCGLI90A41F205H"}', "BNCGLI90A41F205H"),
    ("DNI 98685201K y NIE Y7969473X", "98685201K"),
    ("DNI 98685201K y NIE Y7969473X", "Y7969473X"),
    ("Meine Steuer-ID ist 52307941802", "52307941802"),
    ("Steuernummer 21/815/25804", "21/815/25804"),
    ("BSN: 387981135", "387981135"),
    ("PESEL 92031503869, numer dowodu osobistego GHD621942", "92031503869"),
    ("PESEL 92031503869, numer dowodu osobistego GHD621942", "GHD621942"),
    ("personnummer 880412-0809", "880412-0809"),
    ("CPF: 941.933.187-37 e CNPJ 55.801.521/0001-30", "941.933.187-37"),
    ("CPF: 941.933.187-37 e CNPJ 55.801.521/0001-30", "55.801.521/0001-30"),
    ("Aadhaar 4361 3114 9351 and PAN BXQPK4821M", "4361 3114 9351"),
    ("Aadhaar 4361 3114 9351 and PAN BXQPK4821M", "BXQPK4821M"),
    ("身份证号码：110105198806236784", "110105198806236784"),
    ("주민등록번호 880623-1611742", "880623-1611742"),
    ("マイナンバー: 3391 0997 7796", "3391 0997 7796"),
    ("SIN 481 881 563", "481 881 563"),
    ("National Insurance number: JX 45 71 09 C", "JX 45 71 09 C"),
    ("NHS number 389 216 8539", "389 216 8539"),
    ("CPR-nummer: 230588-7373", "230588-7373"),
    ("henkilötunnus 130590A657U", "130590A657U"),
    ("fødselsnummer 15039102274", "15039102274"),
    ("AHV-Nummer 756.8649.4865.15", "756.8649.4865.15"),
    ("TC Kimlik No: 57697023492", "57697023492"),
    ("ITIN 994-72-2303", "994-72-2303"),
    ("CURP: GOMA900315HDFRRN03", "GOMA900315HDFRRN03"),
    ("OIB: 36864347819", "36864347819"),
    ("passport number: 548213907", "548213907"),
    ("Reisepass Nr. C4J7K29T1", "C4J7K29T1"),
    ("numéro de passeport 19FV42871", "19FV42871"),
    ("パスポート番号 TR8812047", "TR8812047"),
    # the same in a sentence, in each language's words: a copula, a possessive after the noun, an inflected label
    ("Mój PESEL to 92031503869, a numer dowodu to GHD621942", "92031503869"),
    ("Mój PESEL to 92031503869, a numer dowodu to GHD621942", "GHD621942"),
    ("O meu NIF é 245 123 459", "245 123 459"),
    ("TC kimlik numaram 39281746502", "39281746502"),
    ("T.C. kimlik numarası: 39281746502", "39281746502"),
    ("TCKN'm 39281746502", "39281746502"),
    ("Fødselsnummeret mitt er 15039102274", "15039102274"),
    ("Personnumret mitt är 880412-0809.", "880412-0809"),
    ("CPR-nummeret er 230588-7373", "230588-7373"),
    ("Henkilötunnukseni on 130590A657U", "130590A657U"),
    ("CNP-ul meu este 1850714123458", "1850714123458"),
    ("NIK saya 3174051407850001", "3174051407850001"),
    ("NIK-nya adalah 3174051407850001", "3174051407850001"),
    ("Ang SSS number ko ay 34-7192853-6", "34-7192853-6"),
    ("Ang TIN ko ay 418-392-705-000", "418-392-705-000"),
    ("מספר תעודת הזהות שלי 123456782", "123456782"),
    ('ת"ז: 039337423', "039337423"),
    ("Số CCCD của tôi là 079095001234", "079095001234"),
    ("số CMND: 025 471 938", "025 471 938"),
    ("เลขบัตรประชาชนของฉันคือ 1-1017-00230-70-5", "1-1017-00230-70-5"),
    ("เลขประจำตัวประชาชน1101700230705", "1101700230705"),
    ("マイナンバーは 4829 1736 5502 です", "4829 1736 5502"),
    ("私の個人番号は482917365502です", "482917365502"),
    ("मेरा आधार नंबर 4829 1736 5502 है", "4829 1736 5502"),
    ("Мой СНИЛС 112-233-445 95", "112-233-445 95"),
    ("Ο ΑΜΚΑ μου είναι 14028501237", "14028501237"),
    ("Mi RFC es GODE561231GR8", "GODE561231GR8"),
    ("我的身份证号码110105198507142385", "110105198507142385"),
    ("주민등록번호는 850714-1234567", "850714-1234567"),
    ("マイナンバー（個人番号）は 4829 1736 5502 です", "4829 1736 5502"),
    ("A TAJ-számom 038 492 716", "038 492 716"), ("az adóazonosító jelem 8391047265", "8391047265"),
    ("PhilSys ID ko ay 4829-1736-5502-9183", "4829-1736-5502-9183"),
    ("mã số thuế cá nhân của tôi là 0312345678", "0312345678"), ("身分證字號：A129384756", "A129384756"),
    ("基礎年金番号は 4829-173655 です", "4829-173655"), ("personas kods: 120385-12345", "120385-12345"),
    # a label that names one kind of number, then a value of its exact shape: masked though the check fails
    ("BSN: 387981136", "387981136"), ("Steuer-ID 52307941803", "52307941803"), ("CPF 941.933.187-38", "941.933.187-38"),
    ("Aadhaar 4361 3114 9352", "4361 3114 9352"), ("身份证号码：110105198806236785", "110105198806236785"),
    ("PESEL 92031503860", "92031503860"), ("codice fiscale RSSMRA85T10A562X", "RSSMRA85T10A562X"),
    ("Mon numéro de sécu c'est 1 84 07 75 116 042 37", "1 84 07 75 116 042 37"),
    ("Para la domiciliación: DNI 48291736K", "48291736K"), ("Mi DNI es 27.456.891", "27.456.891"),
    ("Meine Sozialversicherungsnummer lautet 12 150589 M 123", "12 150589 M 123"),
    ("Mijn BSN is 204918374", "204918374"), ("NI number QQ 52 81 46 C", "QQ 52 81 46 C"),
    ("マイナンバーは 4829 1736 5503 です", "4829 1736 5503"),
    ("IBAN: DE64 2032 9344 8041 0221 32", "2032 9344 8041"),
    ("رقم الآيبان الخاص بي SA73 8000 0000 6080 1016 7519، شكرا", "6080 1016 7519"),
    ("CLABE interbancaria: 012 180 00118359719 3", "00118359719"),
    # IBANs and account numbers in other scripts: after CJK or Arabic words, before their punctuation
    ("请转到IBAN：GB49NWBK74465937213077。谢谢", "GB49NWBK74465937213077"),
    ("الآيبان: GB49NWBK74465937213077، من فضلك", "GB49NWBK74465937213077"),
    ("账户DE64203293448041022131", "DE64203293448041022131"),
    ("三井住友銀行 新宿支店 普通 4829107", "4829107"),
    ("みずほ銀行 当座預金 7310482", "7310482"),
    # a card's magnetic stripe: the number after the track's sentinel, whatever its check digit
    ("swipe log: %B4001654053811902^CARTER/JOHN^27111010000000000000?", "4001654053811902"),
    ("track2=;4001654053811902=27111010000000000000?", "4001654053811902"),
    ("%B5413330089020011^DOE/JANE Q^2512101000000000000000123000000?", "5413330089020011"),
    # card security codes in other languages and fields
    ("Carte 4970 1012 3456 7890, exp 11/28, cryptogramme 482", "482"),
    ("Amex Karte, Prüfziffer 3817", "3817"),
    ("Kartenprüfnummer (CVC): 604", "604"),
    ('{"number": "4970101234567891", "cvc":"710", "exp_month": 4}', "710"),
    ("card_cvv2=3391", "3391"),
    ("cardCvc: '447'", "447"),
    ("tarjeta Visa, código de seguridad: 915", "915"),
    ("cartão de crédito, código de segurança 286", "286"),
    ("carta di credito con codice di sicurezza 531", "531"),
    ("betaalkaart, beveiligingscode 774", "774"),
    ("クレジットカードのセキュリティコードは 208 です", "208"),
    ("信用卡安全码：619", "619"),
    ("CVV/CVC: 358", "358"),
    ("the security code on the back of my card is 4492", "4492"),
]


@pytest.mark.parametrize("text, secret", SECRETS)
def test_personal_financial_and_recovery_secrets_are_masked(text, secret):
    masked = redact(text).text
    assert secret not in masked and "[REDACTED:" in masked, masked


LOOK_ALIKES = [
    # numbers that fail their check after a label that does not name one kind of number, or not of its shape
    "routing number 937339984", "SIN 481 881 564", "my number is 0312 3456 7890", "NHS 0300 311 2233",
    "cédula 1234567891", "PESEL 9203150386", "Steuer-ID 5230794180", "BSN: 38798113", "IBAN: DE64 2032 9344 8041 0221",
    "ticket ids 713812-008789-508574-607992-082588-127336-468710-310377",
    # placeholders after such a label: a digit repeated, a run of digits
    "PESEL: 12345678901", "СНИЛС 000-000-000 00", "IBAN: DE00 0000 0000 0000 0000 00", "IBAN: DE12 3456 7890 1234 5678 90",
    "Steuer-ID: 00 000 000 000", "NI number QQ 12 34 56 C",
    # the same words before other numbers: orders, invoices, phones, counts, dates, versions, amounts
    "numer zamówienia 85071412385", "Bestellnummer 52307941803", "Rechnungsnummer: 81 572 930 641",
    "Mój numer telefonu to 601 234 567", "TC kimlik numarası 11 haneli bir sayıdır",
    "Số điện thoại của tôi là 0912 345 678", "เบอร์โทรศัพท์ของฉันคือ 081 234 5678", "マイナンバーは12桁の番号です",
    "आधार नंबर 12 अंकों का होता है", "Мой телефон 8 912 345-67-89", "PESEL 1985-07-14 (data urodzenia)",
    "CNP 1.2.3 release notes", "IBAN fee: 12.50 EUR", "CLABE de 18 dígitos", "普通列車で 2 時間", "当座の目標は 2025 年",
    "NIK 2024 report", "Ang SSS ay may 12 branch", "TIN 2024-05-19", "TAJ 2024",
    # English and German words that are filler in another language, after an account's label
    "After the bank merger we moved the account to 2024001 in the ledger", "Bankverbindung: Konto mit 1500000 Euro",
    # track-like text: a test card on a stripe, a format string
    "%B4111111111111111^TEST/CARD^2512101?", "printf '%b' 1234567890123",
    # the registries' documented example IBANs
    "IBAN example: DE89 3704 0044 0532 0130 00", "e.g. GB82 WEST 1234 5698 7654 32 (IBAN format)",
    # dates, phones, order ids, prices, versions, SHAs and ids beside these words
    "account created 2024-05-19, bank holiday", "call the bank at 555-201-4477", "order #4471-9302 paid by bank transfer",
    "Transfer of 1,250.00 EUR to account in 3 days", "AWS account 123456789012 owns the bucket; transfer acceleration on",
    "backup codes: 10 remaining", "recovery codes were regenerated on 2024-05-19 at 10:22",
    "Backup codes are hashed with sha256 before storage.", "Generate new recovery codes in Settings > Security.",
    "passport-jwt 4.0.1 and passport 0.7.0", '"passport": "^0.7.0"', "RFC 7519 and RFC 2119",
    "the CVV column is validated", "cvc 1.2.3 released", "security code review 2024 (card #120)",
    "CID 4471 in the MIME part", "Prüfziffer 7 der ISBN", "sort order 20-44-91 of the table",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 restored the wallet backup",
    "version 12.4.1 of the banking app", "IBAN and BIC are validated server side",
    # word lists in prose: eleven list words in a row, or a sentence of ordinary words
    "Seed the database: we need to restore the old backup before the next release, then check the words.",
    "wallet phrase words: apple banana cherry orange grape lemon mango melon peach pear plum",
    "recovery of the seed words list: Abandon ship only if the wallet is lost or empty again today",
    "The recovery phrase must never be typed into a website; store it on paper in a safe place.",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_stay(text):
    assert redact(text).text == text, redact(text).text


def test_kinds_read_as_what_was_hidden():
    text = (f"seed: {SEED_EN}\nbackup codes: 7319 0462 5581 2907\nIBAN DE64203293448041022131\n"
            "BSN 387981135\ncard cvv 737")
    masked = redact(text).text
    for kind in ("seed-phrase", "recovery-code", "iban", "national-id", "card-code"):
        assert f"[REDACTED:{kind}]" in masked, masked


def test_the_hook_path_does_not_import_the_wordlists_or_validators():
    code = ("import sys, indexer.privacy as p; p.redact('git commit -m fix'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mnemonic', 'stdnum')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


# inputs on which a rule that rescans from every start position, or backtracks over its separators, would take
# seconds: each must stay far below the bound (CPU time of this process, as tests/indexer/test_secret_rules_speed.py)
ADVERSARIAL = {
    "a seed-length run of list words, 20,000 long": "seed: " + "abandon " * 20_000,
    "list words with spaces and commas that never reach 12": "wallet " + "able, able ,\n 1. able zz " * 5_000,
    "backup codes followed by 20,000 codes": "backup codes: " + "4821 9935 " * 20_000,
    "recovery-code words repeated": "recovery codes " * 10_000,
    "IBAN-like groups": "IBAN " + "DE12 3456 " * 12_000,
    "label words repeated": "passport number BSN Steuer-ID cvv security code " * 3_000,
    "digit groups after an account label": "bank account number " + "12 " * 30_000,
    "BitLocker-like groups": "recovery key " + "123456-" * 15_000,
    "colons and spaces after a card word, no code": "card cvv: : : : : : : : : : x " * 5_000,
    "filler words of many languages after a label": "PESEL to " + "mitt er saya ko ay là numaram " * 8_000,
    "Thai labels with no spaces": "เลขบัตรประชาชนของฉันคือ" * 8_000,
    "track-1 starts with no end": "%B4001654053811902^" * 10_000,
}


@pytest.mark.parametrize("name", ADVERSARIAL)
def test_long_adversarial_inputs_take_linear_time(name):
    import time

    redact("warm up: backup codes 1234 5678, IBAN DE64203293448041022131, BSN 387981135, cvv 123")
    start = time.process_time()
    redact(ADVERSARIAL[name])
    elapsed = time.process_time() - start
    assert elapsed < 1.5, f"{name}: {elapsed:.2f} s of CPU for {len(ADVERSARIAL[name])} characters"


def test_numbers_written_in_other_scripts_digits_are_read_as_their_digits():
    """An Aadhaar number in Devanagari digits and an IBAN in full-width digits are what their ASCII forms are; the
    text around them, and a number of another kind in those digits, stay as they were."""
    aadhaar = "७६५१ २१५६ ५८७३"  # 7651 2156 5873: passes the Verhoeff check
    iban = "DE" + "40370400440532013009".translate({ord(str(i)): chr(0xFF10 + i) for i in range(10)})
    assert redact(f"मेरा आधार नंबर {aadhaar} है").text == "मेरा आधार नंबर [REDACTED:national-id] है"
    assert redact(f"IBAN: {iban}, bitte überweisen").text == "IBAN: [REDACTED:iban], bitte überweisen"
    for text in ("order ４２４２ shipped to the bank", "मेरे पास ७६५१ रुपये हैं"):
        assert redact(text).text == text
