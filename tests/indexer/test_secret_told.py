"""Secrets filter version 13 reads in what people type and what tools print, through the real filter: identity
numbers told in a sentence of their language, labels in more countries and scripts, codes told by what they
open or by the text message they came in, passwords taken back and told again, spelled out for a voice
assistant, or after "is literally", recovery codes under a sentence, app passwords, accounts and cards in more
languages, names of secrets in other scripts, signed links; and the look-alikes that must stay. Every value is
made up for these tests (check digits computed where a format has them)."""

import pytest

from indexer.privacy import redact

SECRETS = [
    # identity numbers: a few words of the sentence between the label and the number, in any language
    ("El formulari demana el DNI; posa el meu, 38461927Q, i prou", "38461927Q"),
    ("CNP-ul fratelui meu este 1850712400053", "1850712400053"),
    ("Мој ЈМБГ је 1503988710123, само за тест", "1503988710123"),
    ("Số CCCD của bạn là 079203004512 đúng không", "079203004512"),
    ("My ID number is 8507125009080, use it for the fixture only", "8507125009080"),
    ("Inombolo yakho kamazisi ithi 8507125009080", "8507125009080"),
    ("என் ஆதார் எண் 5927 1846 3025 தான்", "5927 1846 3025"),
    ("ആധാർ നമ്പർ 592718463025 ആണ്", "592718463025"),
    ("meine Ausweisnummer ist T22000129, bitte nur im Test", "T22000129"),
    ("رقم الهوية الإماراتية 784-1988-5417263-6 للاختبار فقط", "784-1988-5417263-6"),
    ("رقم الهوية الوطنية تبعي 1457823690", "1457823690"),
    ("ජාතික හැඳුනුම්පත් අංකය 199523456781", "199523456781"),
    ("No. IC dia 900514-10-5123 untuk ujian", "900514-10-5123"),
    ("KRA PIN yake ni A004512873K", "A004512873K"),
    ("BVN mi ni 22190456781", "22190456781"),
    ("паспорт 45 06 123456, выдан в 2015", "45 06 123456"),
    ("用我的身份证号110105199003071239注册测试账号", "110105199003071239"),
    ("佢嘅身份證號碼係K472915(3)", "K472915(3)"),
    ("for the payroll import my CRA number is 130 692 544 (mine)", "130 692 544"),
    ("the form wants a BC Personal Health Number — mine is 9123 456 782, no spaces", "9123 456 782"),
    ("mi RUC en Paraguay es 5585359-5; el generador calcula mal el dígito", "5585359-5"),
    ("el CUIT del monotributo es 20-39778595-6 y el resto va al .env", "20-39778595-6"),
    ("cédula ecuatoriana 2401167057 (del usuario) para el fixture", "2401167057"),
    ("meri VID use karo: 9187 4406 3208 2356 — sandbox me chalti hai", "9187 4406 3208 2356"),
    ("нужен загранпаспорт: 75 1234567, выдан в 2021", "75 1234567"),
    ("voor de test heb ik een echt BSN nodig, gebruik die van mij: 111222333. niet committen", "111222333"),
    # codes told by the message they came in, or by the door, box or locker they open
    ("the bank wants a code, I got 739104 by text just now", "739104"),
    ("Te llegó el código 582013 por SMS, ponlo ya", "582013"),
    ("пришла смс с кодом 417205, введи", "417205"),
    ("Der Code für den Schlüsselkasten ist 8046, danach links drehen", "8046"),
    ("the code for the bike shed is 5571", "5571"),
    ("Koden til kælderen er 9132", "9132"),
    ("the gate keypad is 2468#", "2468"),
    ("GCash MPIN ko ay 7315", "7315"),
    ("আমার পিন 58241", "58241"),
    # a password taken back and told again
    ("the vpn password is Maple!Trail42 — no wait, that was last month's, now it's Cedar.Ridge.88", "Cedar.Ridge.88"),
    ("Le mot de passe est Soleil#2020, non attends, c'est Lune_Bleue77 maintenant", "Lune_Bleue77"),
    ("DB ka password badal diya, ab Qv7#Lm2pTz hai, purana Falcon_2019 mat use karna", "Falcon_2019"),
    ("new password is Kx8#pLm2qq, the old one was Maple2018!", "Maple2018!"),
    ("oops, wrong paste: not Hx7&Qm2!pL but Vr4@Nt8#kS", "Vr4@Nt8#kS"),
    # a text message's sender tag and its code in brackets
    ("[신한은행] 인증번호 [583019]를 입력하세요", "583019"),
    ("rotate the grafana admin: Copper_Kite_41 -> Slate.Heron.52 and redeploy", "Copper_Kite_41"),
    ("przepraszam — hasło to Bigos!Domowy7, a nie Bigos!Domowy", "Bigos!Domowy"),
    ("كلمة مرور الخادم هي Falafel_Cairo_2024 واسم المستخدم admin", "Falafel_Cairo_2024"),
    ("სერვერის პაროლია ლობიანი_ქუთაისი7, შედი", "ლობიანი_ქუთაისი7"),
    ("furaha sirta ee database-ka waa Sambuus_Hargeisa9, gal", "Sambuus_Hargeisa9"),
    ("| env | user | hasło |\n|---|---|---|\n| dev | qa | Zurek_Smaczny_31 |", "Zurek_Smaczny_31"),
    # spelled out for a voice assistant
    ("and the password is orange dash tiger dash fifty five all lowercase", "orange dash tiger dash fifty five"),
    ("das Passwort ist sonne bindestrich mond bindestrich elf", "sonne bindestrich mond bindestrich elf"),
    # after "is literally", a passphrase that starts with a word of sentences, a network key of words
    ("the staging pw is literally summer-is-coming-77 dont laugh", "summer-is-coming-77"),
    ("the password is correct giraffe lamp 42", "correct giraffe lamp 42"),
    ("the guest wifi is GuestNet-5G, key blue kettle morning 2031, then retry", "blue kettle morning 2031"),
    # recovery codes under a sentence, and a list whose later codes hold no digit
    ("my gitlab recovery codes, keep them in the vault for me:\n- 7fk2q-9xw3p\n- m4ntr-qq8za", "7fk2q-9xw3p"),
    ("バックアップコード（一回ずつ使えます）\n・8dkq-2mzp\n・wxrt-pqns", "wxrt-pqns"),
    # an app password in Google's shape, names of secrets in other scripts, a value with "=" inside
    ("account work\nhost smtp.gmail.com\npassword qmzx wrtv lkpn bcsa\n", "qmzx wrtv lkpn bcsa"),
    ("[결제]\n시크릿키 = Wq8Zr2LmK4Xp9Tn6Vb3Yc7Hd", "Wq8Zr2LmK4Xp9Tn6Vb3Yc7Hd"),
    ("[poczta]\nhasło_smtp = Pk4-=Zr8wLm2q", "Pk4-=Zr8wLm2q"),
    # accounts and IBANs told in more languages
    ("토스뱅크 1000-2345-6789 예금주 박지훈", "1000-2345-6789"),
    ("ખાતા નંબર 50100234567812, IFSC HDFC0000456", "50100234567812"),
    ("شماره شبای من IR050170000000123456789012 است", "IR050170000000123456789012"),
    # a card's code in Hebrew, an Iranian card's second PIN
    ("כרטיס 4556 7375 8689 9855, קוד 527 בגב", "527"),
    ("کارت 4556 7375 8689 9855 رمز دوم 8392017", "8392017"),
    ('[\n  "DJANGO_SECRET_KEY=9xk*co&fv)mo60ue)n=!z1ge)%a!_r1%@cwp",\n  "DEBUG=0"\n]', "9xk*co&fv)mo60ue)n=!z1ge)%a!_r1%@cwp"),
    ("║ PGPASSWORD    │ Qm8Zr2LwK4Xp9Tn6Vb3Yc7Hd ║", "Qm8Zr2LwK4Xp9Tn6Vb3Yc7Hd"),
    ("  - https://conda.anaconda.org/t/ab-12345678-90ab-cdef-1234-567890abcdef/internal", "ab-12345678-90ab-cdef"),
    ('gems.example-pro.com\nSet for the current user (/home/u/.bundle/config): "a1b2c3d4:e5f6a7b8"', "a1b2c3d4:e5f6a7b8"),
    ("> config('app.key')\n= \"base64:Qm9yZWFsaXNTZWNyZXRWYWx1ZUhlcmUxMjM0NTY3OA==\"", "Qm9yZWFsaXNTZWNyZXRWYWx1ZUhl"),
    # signed links and keys of less famous services
    ("https://objectstorage.us-ashburn-1.oraclecloud.com/p/Zx9Qw2Er7Ty4Ui8Op1As5Df3Gh6Jk0LmNb/n/ns1/b/bk/o/f.zip",
     "Zx9Qw2Er7Ty4Ui8Op1As5Df3Gh6Jk0LmNb"),
    ("https://cdn.example.com/v/a.m3u8?hdnts=exp=1700000000~acl=/v/*~hmac=" + "8c1f" * 16, "8c1f" * 16),
    ('curl "https://api.day.app/Qw3Er5Ty7Ui9Op2As4Df6G/deploy/done"', "Qw3Er5Ty7Ui9Op2As4Df6G"),
    ('"signing": "addr_xsk1q9w8e7r6t5y4u3i2o1p0a9s8d7f6g5h4j3k2l1z0x9c8v7b6n5m4q3w2e1r0t9y8u7"',
     "addr_xsk1q9w8e7r6t5y4u3i2o1p0a9s8d7f6g5h4j3k2l1z0x9c8v7b6n5m4q3w2e1r0t9y8u7"),
]

LOOK_ALIKES = [
    "Чек № 0042, смена 118, ИНН продавца 7707083893, сумма 2 450,00 ₽.",
    "error code 5023 when sending the SMS",
    "the SMS gateway returns code 2024 or 3001 on failure, see the docs",
    "I texted the team the code review link for PR 4412",
    "see the garage example in the docs, code sample 2201 lines",
    "the password is just fine",
    "the keypad layout has 12 keys",
    "my account got pwned 3 times in 2019",
    "the password field uses a dash to separate the dash from the dot in names",
    '    <string name="password_rules">Mínimo 10 caracteres, con al menos un número</string>',
    "# Das Passwort wird nie im Klartext gespeichert, nur der Argon2-Hash.",
    "パスワード: 半角英数字8文字以上",
    "IBAN: DE89 3704 0044 0532 0130 00",
    "身份证号码长度是18位，请检查",
    "passwords must have four words like this",
    "it is not Python3.11 but Python3.12 that breaks the build",
    "реквизиты: ПАО «Сбербанк», ИНН 7707083893, КПП 773601001, БИК 044525225",
    "im inn passordet i chatten, bruk heller 1Password-lenken så jeg kan hente det",
    "Benutzer: admin, Passwort: steht im Team-Tresor unter Grafana Staging",
    "Host=db;Database=ledger;Username=app;Password=******;SSL Mode=Require",
    "The docs' example key sk_test_4eC39HqLyjWDarjtT1zdp7dc only works in test mode.",
    'client = WebClient(token="xoxb-not-a-real-token-this-will-not-work")',
    "мой паспорт выдан в 2015, подставь в e2e-тест",
    "the DNI field is required, see ticket 12345678",
    "> config('app.name')\n= \"Shop\"",
    "the password is stored in the vault, the old login page is at /legacy",
]


@pytest.mark.parametrize("text, secret", SECRETS)
def test_the_secret_is_masked(text, secret):
    out = redact(text).text
    assert secret not in out, out
    assert "[REDACTED" in out


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_the_look_alike_stays(text):
    assert redact(text).text == text
