"""Human-shaped secrets in prose, through the real filter: a password told in a sentence in any language (in a
weaker shape once the sentence announces it), a passphrase of several words, secrets only the context marks
(a password typed at a shell, "same as last time", a security question's answer), codes (door, alarm, safe,
one-time, banking) and API keys introduced in other languages. Each family has look-alikes in the same languages
that must pass through unchanged. The values are made up for these tests."""

import pytest

from indexer.privacy import redact


def _masked(text: str, secret: str) -> None:
    out = redact(text).text
    assert secret not in out, out
    assert "[REDACTED:" in out, out


# "the password (for X) is …" in ~80 languages, with a value a sentence gives in a weaker shape than a generated
# password (lower case and digits, a number, a word joined to digits by a dot)
PASSWORD_SENTENCES = [
    ("Heslo k serveru je vltava55", "vltava55"),  # cs
    ("Zadej heslo: tatra2077", "tatra2077"),
    ("Heslem pro VPN je morava31", "morava31"),
    ("Heslo do wifi sieti je bratislava88", "bratislava88"),  # sk
    ("Geslo za strežnik je triglav2864", "triglav2864"),  # sl
    ("A teszt szerver jelszava: balaton72", "balaton72"),  # hu
    ("A jelszavam hortobagy19", "hortobagy19"),
    ("Az admin jelszó pedig puszta4455", "puszta4455"),
    ("Лозинка за базу је ловћен4711", "ловћен4711"),  # sr Cyrillic
    ("Шифра за рутер је avala7788", "avala7788"),
    ("Lozinka za bazu je velebit4477", "velebit4477"),  # hr
    ("Šifra za mail je neretva2233", "neretva2233"),  # bs
    ("Sifra od kompa je mostar1566", "mostar1566"),
    ("Лозинката за серверот е ohrid8811", "ohrid8811"),  # mk
    ("Паролата за базата е rila2468", "rila2468"),  # bg
    ("Fjalëkalimi i serverit është dajti5566", "dajti5566"),  # sq
    ("Slaptažodis serveriui yra nemunas77", "nemunas77"),  # lt
    ("Serverio slaptažodį: nemunas7712", "nemunas7712"),
    ("Servera parole ir daugava93", "daugava93"),  # lv
    ("Serveri parool on toompea56", "toompea56"),  # et
    ("Palvelimen salasana on kuusamo82", "kuusamo82"),  # fi
    ("Lösenordet till routern är vattern44", "vattern44"),  # sv
    ("Adgangskoden til routeren er odense73", "odense73"),  # da
    ("Passordet til ruteren er bergen6620", "bergen6620"),  # no
    ("Lykilorðið er hekla2010x", "hekla2010x"),  # is
    ("Het wachtwoord van de NAS is zwolle58", "zwolle58"),  # nl
    ("Das Passwort für das NAS lautet wuppertal38", "wuppertal38"),  # de
    ("Das WLAN-Passwort ist kaffeehaus61", "kaffeehaus61"),
    ("Le mot de passe du routeur est grenoble84", "grenoble84"),  # fr
    ("mot de passe : camembert2718", "camembert2718"),
    ("La contraseña del NAS es gazpacho1984", "gazpacho1984"),  # es
    ("Mi contraseña de la oficina es tortilla33", "tortilla33"),
    ("La clave del router: paella7741", "paella7741"),
    ("A senha do servidor é feijoada42", "feijoada42"),  # pt
    ("A palavra-passe do portal é bacalhau99", "bacalhau99"),
    ("La password del database è carbonara27", "carbonara27"),  # it
    ("La contrasenya del servidor és montserrat5", "montserrat5"),  # ca
    ("Parola serverului este carpati4491", "carpati4491"),  # ro
    ("Hasło do bazy to pierogi2201", "pierogi2201"),  # pl
    ("Hasło do routera jest wisla6677", "wisla6677"),
    ("Пароль от сервера — байкал2290", "байкал2290"),  # ru
    ("Пароль від сервера: карпати88", "карпати88"),  # uk
    ("Ο κωδικός του router είναι olympos42", "olympos42"),  # el
    ("Sunucunun şifresi: bogazici1453x", "bogazici1453x"),  # tr
    ("Wi-Fi şifrem kapadokya88", "kapadokya88"),
    ("Serverin şifrəsi: xezer2024az", "xezer2024az"),  # az
    ("Сервердің құпия сөзі: altai4411", "altai4411"),  # kk
    ("Server paroli: samarqand77", "samarqand77"),  # uz
    ("სერვერის პაროლი არის kazbegi55", "kazbegi55"),  # ka
    ("Սերվերի գաղտնաբառը՝ ararat7744", "ararat7744"),  # hy
    ("सर्वर का पासवर्ड ganga2231 है", "ganga2231"),  # hi
    ("সার্ভারের পাসওয়ার্ড হল padma5612", "padma5612"),  # bn
    ("سرور کا پاس ورڈ ravi8890 ہے", "ravi8890"),  # ur
    ("சர்வர் கடவுச்சொல்: kaveri3344", "kaveri3344"),  # ta
    ("Mật khẩu wifi là phobo2468", "phobo2468"),  # vi
    ("รหัสผ่าน wifi คือ tomyum5511", "tomyum5511"),  # th
    ("Kata sandi server adalah rendang77", "rendang77"),  # id
    ("Kata laluan pelayan ialah durian4420", "durian4420"),  # ms
    ("Ang password ng router ay adobo5599", "adobo5599"),  # tl
    ("服务器的密码是kunlun2046", "kunlun2046"),  # zh
    ("伺服器密碼：yushan3952", "yushan3952"),  # zh-TW
    ("サーバーのパスワードはfujisan3776です", "fujisan3776"),  # ja
    ("서버 비밀번호는 hallasan1950입니다", "hallasan1950"),  # ko
    ("كلمة المرور للخادم هي nile4455", "nile4455"),  # ar
    ("رمز عبور سرور: damavand56", "damavand56"),  # fa
    ("הסיסמה לשרת היא carmel2288", "carmel2288"),  # he
    ("Nenosiri la seva ni kilimanjaro58", "kilimanjaro58"),  # sw
    ("Die wagwoord van die bediener is tafelberg31", "tafelberg31"),  # af
    ("Il-password tas-server hija mdina4512", "mdina4512"),  # mt
    ("Pasahitza da txakoli9034", "txakoli9034"),  # eu
    ("Cyfrinair y gweinydd yw eryri2277", "eryri2277"),  # cy
    # a word joined to digits by a dot, with capitals: a password, not an attribute
    ("Heslo k databázi je Vltava.Most55", "Vltava.Most55"),
    ("Az éles adatbázis jelszava: Hortobagy.Puszta19", "Hortobagy.Puszta19"),
    # a numeric password after a word for password: a banking app's, a phone's
    ("a senha do app do banco é 730915", "730915"),
    ("la contraseña de la app del banco es 482073", "482073"),
    ("mein Online-Banking-Passwort ist 59173846", "59173846"),
    ("the password for the parcel locker is 884215", "884215"),
    ("الرقم السري للبطاقة هو 7315", "7315"),
    # a possessive word with the value right after it, a parenthesised note between
    ("my password (for the NAS) is lemonade2031", "lemonade2031"),
]


@pytest.mark.parametrize("text, secret", PASSWORD_SENTENCES)
def test_a_password_told_in_a_sentence_is_masked_in_any_language(text, secret):
    _masked(text, secret)


# passphrases of several words told without quotes, and network keys
PASSPHRASES = [
    ("my ssh key passphrase is velvet otter lantern 73", "velvet otter lantern 73"),
    ("the wifi password is correct horse battery staple", "correct horse battery staple"),
    ("the gpg passphrase is marble canyon whisper.", "marble canyon whisper"),
    ("my passphrase is three words 88", "three words 88"),
    ("passphrase: orange kettle 4711 sunrise\nnext line", "orange kettle 4711 sunrise"),
    ("the passphrase is seven blue lanterns and the key file is in ~/.ssh", "seven blue lanterns"),
    ("Die Passphrase ist Blauer Himmel 2042", "Blauer Himmel 2042"),
    ("La phrase de passe est soleil rouge 31", "soleil rouge 31"),
    ("network HarborCafe-5G, key is latte-macchiato-27", "latte-macchiato-27"),
    ("SSID Bakery_Guest, the key: croissant8841", "croissant8841"),
    ("WLAN-Schlüssel: Zimtschnecke4417", "Zimtschnecke4417"),
    ("le Wi-Fi du bureau, clé wifi : baguette2290", "baguette2290"),
    ("la clave wifi es churros5566", "churros5566"),
    ("WPA2 key for the guest network is muffin7731", "muffin7731"),
    ("Netzwerkschlüssel ist brezel3381", "brezel3381"),
]


@pytest.mark.parametrize("text, secret", PASSPHRASES)
def test_a_passphrase_of_words_and_a_network_key_are_masked(text, secret):
    _masked(text, secret)


# the same words in ordinary sentences: a policy, a field, a change, a length, a description, a person
PASSWORD_LOOK_ALIKES = [
    "change your heslo in settings",
    "Heslo musí mít alespoň 12 znaků",
    "Az új jelszó legalább 8 karakter",
    "A jelszó hossza 2048",
    "Lozinka je obavezna",
    "La contraseña es demasiado corta",
    "La contraseña debe tener 8 caracteres",
    "the password is 8 characters long",
    "the password is stored in the vault",
    "the password is hashed with bcrypt12",
    "the password is required for every login",
    "the password is wrong again today",
    "the password is correct but login fails",
    "Das Passwort ist zu kurz und unsicher",
    "Das Passwort muss mindestens 12 Zeichen lang sein",
    "Le mot de passe est trop court pour ce compte",
    "the passphrase must be 4 words",
    "I sent the password to bob42 yesterday",
    "password length is 1234",
    "Password expires in 90 days",
    "the password was changed on 2024-01-05",
    "the password policy is nist800",
    "the password field is input2 in the form",
    "password hashing uses argon2id",
    "the password manager is KeePassXC 2.7",
    "reset the password at line 1234",
    "Şifre en az 8 karakter olmalı",
    "Salasana on liian lyhyt",
    "Hasło to ciąg znaków",
    "Пароль — это строка из 12 символов",
    "密码长度是12",
    "the password is in 1Password under the team vault",
    "Ο κωδικός σφάλματος είναι 4040",
    "the password for user42 is required",
    "the password on prod01 is rotated weekly",
    # another sentence after the word, a count, a standard, a product, an issue number
    "Enter a new passphrase. The retry count is 3 attempts.",
    "Prompt for the passphrase once.  The timeout is 600 seconds.",
    "passwords are compared according to RFC8265 before hashing",
    "the password module was moved to upstream release 2b8e41c",
    "note that the passphrase is limited to 4096 bytes",
    "for the team the admin password is shared through 1Password",
    "fails if the password is longer than 4 gigabytes",
    "getent passwd in the hook.  Closes: 771204",
    "'gesl;': '\\u22db'",
    # a key's id in a note after the word is public
    "Add the Release Key (13/trixie) (ID: 0xA7236C2F4B8E9D13)",
    # network keys
    "the network key is stored in the keychain",
    "WPA2 key management uses PSK or 802.1X",
    "router key features: Wi-Fi 6E and 2.5G ports",
    "the key to a good network is redundancy",
    "network key rotation happens every 90 days",
    "the SSID and the key are printed on the router label",
    "la clave de red está en la etiqueta del router",
    "Netzwerkschlüssel ist auf der Rückseite",
]


@pytest.mark.parametrize("text", PASSWORD_LOOK_ALIKES)
def test_sentences_about_passwords_without_one_stay(text):
    assert redact(text).text == text


# codes: doors, alarms, gates and safes (with a letter or a keypad's sign), combinations, one-time codes in many
# languages and on command lines, PINs under their other names
CODES = [
    ("door code 7391C", "7391C"),
    ("the alarm code is 5528, disarm it first", "5528"),
    ("Türcode: 4719#", "4719#"),
    ("le digicode est B2749", "B2749"),
    ("el código de la puerta es 8830", "8830"),
    ("kod do drzwi: *6612#", "6612#"),
    ("код домофона 3391", "3391"),
    ("the gate code for the parking lot is 1957A", "1957A"),
    ("safe combination is 21-05-33", "21-05-33"),
    ("the combo for the lockbox is 38-12-27", "38-12-27"),
    ("Kombination vom Tresor: 14-36-09", "14-36-09"),
    ("your SMS code 661934", "661934"),
    ("Bestätigungscode: 604 118", "604 118"),
    ("Die TAN lautet 551807", "551807"),
    ("pushTAN 339016 bestätigen", "339016"),
    ("aws sts get-session-token --serial-number arn:aws:iam::1:mfa/me --token-code 902114", "902114"),
    ("op signin --otp=304958", "304958"),
    ("aws-vault exec prod --mfa-token 771520", "771520"),
    ("304958 is your verification code", "304958"),
    ("G-728301 is your Google verification code", "728301"),
    ("código de verificación: 773201", "773201"),
    ("o código de verificação é 550392", "550392"),
    ("codice di verifica 229174", "229174"),
    ("kod SMS to 448120", "448120"),
    ("ověřovací kód je 672201", "672201"),
    ("код подтверждения 559902", "559902"),
    ("doğrulama kodu: 318860", "318860"),
    ("vahvistuskoodi on 904411", "904411"),
    ("mã xác minh của bạn là 227310", "227310"),
    ("認証コードは 662913 です", "662913"),
    ("验证码：481726", "481726"),
    ("인증번호는 539204입니다", "539204"),
    ("the MFA code from my phone was 118204", "118204"),
    ("my 2FA code right now: 650017", "650017"),
    ("PIN-Nummer der Karte: 7305", "7305"),
    ("Geheimzahl 8142", "8142"),
    ("PIN kodu 6630", "6630"),
    ("voicemail pin is 2211", "2211"),
]


@pytest.mark.parametrize("text, secret", CODES)
def test_codes_pins_and_one_time_codes_are_masked(text, secret):
    _masked(text, secret)


# numbers after the same words that are line numbers, HTTP, exit and error codes, years, issues, durations
CODE_LOOK_ALIKES = [
    "the verification code check failed at line 1234",
    "exit code 1234",
    "HTTP status code 4040",
    "error code 0x8004 in the log",
    "verification code expires in 10 minutes",
    "the SMS code expires after 300 seconds",
    "tan 1234 radians",
    "Tan 2048 was the colour",
    "the SMS code feature shipped in 2023",
    "see issue #4821 about the door code",
    "OTP 26.1 released",
    "Erlang/OTP 27 is out",
    "the door code is in the wiki",
    "the combo box shows 1000 items",
    "PIN 13 drives the LED",
    "the PIN diode at 1550 nm",
    "digitalWrite(pin, 1234);",
    "the access code path is in src/auth.py",
    "2FA code length is 6",
    "TAN-Verfahren seit 2019",
    "the safe combination of flags is --fast --dry-run",
    "verification code sent to +1 555 0100",
    "aws sts get-session-token --duration-seconds 3600",
    "run with --otp to prompt for a code",
    "the combination of this patch and fixing #884120 helps",
    "keycode remapping fixed (closes: #661209)",
]


@pytest.mark.parametrize("text", CODE_LOOK_ALIKES)
def test_numbers_after_code_words_that_are_no_code_stay(text):
    assert redact(text).text == text


# API keys introduced by prose in other languages, or by "this key" / "the key they gave us"
API_KEYS = [
    ("clé API Mistral (projet interne) : Hq7xK2mPz9VtR4wLb8nYc3DfG6sJ1aQe", "Hq7xK2mPz9VtR4wLb8nYc3DfG6sJ1aQe"),
    ("API anahtarı: a8Fk2mQ9xZ7pL1wE3rT6yU0i", "a8Fk2mQ9xZ7pL1wE3rT6yU0i"),
    ("gizli anahtar: Zq8Lm2Xv7Rt4Kp9Wn3Bd6Hs", "Zq8Lm2Xv7Rt4Kp9Wn3Bd6Hs"),
    ("la chiave API del gestionale è acme_live_9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c", "9f8e7d6c5b4a3f2e1d0c9b8a"),
    ("klucz API do sandboxa: Tq7Lz2Xv9Rk4Wm8Pn3Bd6Hs", "Tq7Lz2Xv9Rk4Wm8Pn3Bd6Hs"),
    ("Der API-Schlüssel lautet Wv8Rk2Lq9Zt4Xm7Pn3Bd", "Wv8Rk2Lq9Zt4Xm7Pn3Bd"),
    ("Zugangsschlüssel für das Portal: Lk3Vn8Qp2Xz7Rw4Tb9Md", "Lk3Vn8Qp2Xz7Rw4Tb9Md"),
    ("APIキーはKp3vT9xQ2mW7zR4nB8dLです", "Kp3vT9xQ2mW7zR4nB8dL"),
    ("API密钥：Nf4Qa8Zr2Lm7Xc3Vt9Kp", "Nf4Qa8Zr2Lm7Xc3Vt9Kp"),
    ("API 키: Ps9Wm3Kd7Lx2Qb8Rv4Tn", "Ps9Wm3Kd7Lx2Qb8Rv4Tn"),
    ("ключ API: Rm4Kx9Pz2Qw7Lt8Vn3Bc", "Rm4Kx9Pz2Qw7Lt8Vn3Bc"),
    ("la clave de la API es Bx7Nq2Lz9Rm4Wk8Pt3Vd", "Bx7Nq2Lz9Rm4Wk8Pt3Vd"),
    ("a chave da API: Cy8Mr3Kx7Lp2Qz9Wn4Tb", "Cy8Mr3Kx7Lp2Qz9Wn4Tb"),
    ("the partner gave us this key: QH72LMWX-P9R4TZKA-B8NC3VDE", "QH72LMWX-P9R4TZKA-B8NC3VDE"),
    ("the key they sent for staging: R7TQ2MXZ-K8WP4LNB", "R7TQ2MXZ-K8WP4LNB"),
]


@pytest.mark.parametrize("text, secret", API_KEYS)
def test_api_keys_introduced_in_any_language_are_masked(text, secret):
    _masked(text, secret)


KEY_LOOK_ALIKES = [
    "the key is to keep it simple",
    "clé publique : Hq7xK2mPz9VtR4wLb8nYc3DfG6sJ1aQe",
    "öffentlicher Schlüssel: Hq7xK2mPz9VtR4wLb8nYc3DfG6sJ1aQe",
    "parola chiave: ottimizzazione2024",
    "la clé primaire est user_id",
    "birincil anahtar: id",
    "klucz obcy do tabeli orders",
    "the key they gave us expired in 2024",
    "product id: 3F2504E0-4F89-11D3-9A0C-0305E82C3301",
    "キーボードのキーが壊れた",
]


@pytest.mark.parametrize("text", KEY_LOOK_ALIKES)
def test_words_for_key_without_a_key_stay(text):
    assert redact(text).text == text


# secrets only the context marks: typed at a shell by mistake, "same as last time", a password prompt, an answer
CONTEXT = [
    ("$ sudo apt upgrade\nsudo: timed out reading password\n$ Pelikan_1987\nbash: Pelikan_1987: command not found",
     "Pelikan_1987"),
    ("% biscuit2015\nzsh: command not found: biscuit2015", "biscuit2015"),
    ("PS C:\\> Kx9#mQ2pL\nKx9#mQ2pL : The term 'Kx9#mQ2pL' is not recognized as the name of a cmdlet, function",
     "Kx9#mQ2pL"),
    ("C:\\>Tornado!2023\n'Tornado!2023' is not recognized as an internal or external command,", "Tornado!2023"),
    ("> Vq7tRm2Lx9\nfish: Unknown command: Vq7tRm2Lx9", "Vq7tRm2Lx9"),
    ("$ Lagune.4471\nsh: 1: Lagune.4471: not found", "Lagune.4471"),
    ("use the same one as last time (Orion$belt3)", "Orion$belt3"),
    ("the db password? same as before: espresso42", "espresso42"),
    ("same password as on the old server — Kastanie#19", "Kastanie#19"),
    ("Passwort wie letztes Mal: Brezel!77", "Brezel!77"),
    ("mot de passe : le même que la dernière fois (Cassis&2020)", "Cassis&2020"),
    ("what I typed at the sudo prompt was \"tangerine dream 1979\"", "tangerine dream 1979"),
    ("what I typed at the sudo prompt was tangerine dream 1979", "tangerine dream 1979"),
    ("I typed Falcon-2291 at the password prompt and it failed", "Falcon-2291"),
    ("at the passphrase prompt I typed velvet moon 62", "velvet moon 62"),
    ("what I entered at the PIN prompt was 4417", "4417"),
    ("the answer to my security question is Saint Brendan Primary", "Saint Brendan Primary"),
    ("Security question: name of your first school?\nAnswer: Holy Cross Academy", "Holy Cross Academy"),
    ("security question answer: Mulberry", "Mulberry"),
    ("Sicherheitsfrage: Name des ersten Haustiers – Antwort: Bello", "Bello"),
    ("question secrète : nom de jeune fille de ma mère, réponse : Lefebvre", "Lefebvre"),
    ("pregunta de seguridad: ciudad natal, respuesta: Salamanca", "Salamanca"),
    ("my mother's maiden name is Oyelaran", "Oyelaran"),
]


@pytest.mark.parametrize("text, secret", CONTEXT)
def test_secrets_only_the_context_marks_are_masked(text, secret):
    _masked(text, secret)


CONTEXT_LOOK_ALIKES = [
    "$ gti status\nbash: gti: command not found",
    "$ sl\nbash: sl: command not found",
    "$ pyhton app.py\nzsh: command not found: pyhton",
    "$ pyhton3 app.py\nzsh: command not found: pyhton3",
    "$ python3.11 -m venv .venv\nbash: python3.11: command not found",
    "$ x86_64-w64-mingw32-gcc a.c\nbash: x86_64-w64-mingw32-gcc: command not found",
    "$ Python3 -V\nbash: Python3: command not found",
    "'npm' is not recognized as an internal or external command,",
    "bash: line 12: kubectl: command not found",
    "/usr/bin/env: 'node18': No such file or directory",
    "same as last time (v2.4.1)",
    "same settings as last time (node18)",
    "same image as before: Ubuntu22",
    "same as before: espresso machine settings",
    "use the same one as before (see PR 214)",
    "wie immer: erst testen, dann deployen",
    "what I typed in the prompt was fix the bug in main.py",
    "the text I typed into the prompt was: summarize 3 papers",
    "I typed my question in the prompt box",
    "the answer to the security question is stored hashed",
    "security questions are a bad idea, the answer is often public",
    "the security question field is required",
    "the answer is 42",
    "Frage: wie geht das? Antwort: gar nicht",
]


@pytest.mark.parametrize("text", CONTEXT_LOOK_ALIKES)
def test_context_words_without_a_secret_stay(text):
    assert redact(text).text == text
