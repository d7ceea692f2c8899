"""Secrets in the layouts and words filter version 12 reads, through the real filter: base64 values that end in
their padding, a tool's output that starts with its command, key listings, login lists and user/password lines,
columns of personal numbers, card expiry dates and codes, identity, licence and record numbers, words for password
typed fast or without their letters, Wi-Fi keys with no verb, and the look-alikes that must stay. Every value is
made up for these tests (check digits computed where a format has them)."""

import base64

import pytest

from indexer.privacy import redact

PEM_B64 = base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAtest+made/up\n"
                           b"-----END RSA PRIVATE KEY-----\n").decode()

SECRETS = [
    # a base64 value that ends in "=" under a secret's name (it was read as a type: `secret: String = …`)
    (f"users:\n- name: ops\n  user:\n    client-key-data: {PEM_B64}", PEM_B64[20:60]),
    ("SIGNING_SECRET: Qm9yZWFsaXNTZWNyZXRWYWx1ZUhlcmU=", "Qm9yZWFsaXNTZWNyZXRWYWx1ZUhlcmU="),
    # a token of a known prefix whose body holds "/" and "+" (base64), after another one
    ('FLY_API_TOKEN="FlyV1 fm2_Ab3/xY9+Qw8zLk2Jm5Np7Rt4Vx6Bz1Cd,fm2_Zq4/Lm8+Rt2Wx5Yc7Vb9Nm3Kp6Hj1Fg"', "Rt2Wx5Yc7Vb9"),
    # a tool's output that starts with its command (no prompt), and Azure's key listings
    ("cat ~/.config/app/service_token\nq8Zt3Lm2Wx7Rv5Kp9Bn4Hc6Jd1Fs0Ga", "q8Zt3Lm2Wx7Rv5Kp9Bn4"),
    ("$ az cosmosdb keys list -g rg -n cdb --type keys -o tsv\nxQ3mR8vL2pZ7nK4wT9cY6bH1jF5sD0aG+eU3iO8uE2rW==",
     "xQ3mR8vL2pZ7nK4wT9cY6bH1jF5sD0aG"),
    ("$ az redis list-keys -g rg -n cache\n{\"primaryKey\": \"Kp2Lm8Rt5Wx3Yc9Vb6Nm1Qz4Hj7Fg0Ds=\"}", "Kp2Lm8Rt5Wx3Yc9Vb6"),
    # a name, a space and a random token (no sign between)
    ("the app_secret Zt8qLm3Rx7Wp2Kv9Bn5Hc4 goes in the CI variables", "Zt8qLm3Rx7Wp2Kv9Bn5Hc4"),
    # ODBC quotes a value in braces
    ("Driver={ODBC Driver 17 for SQL Server};Server=db01;Uid=report;Pwd={Wint3r$Solst1ce};", "Wint3r$Solst1ce"),
    # logins listed under a heading, a user line then a password line
    ("Staging logins:\n- qa / Lantern.Orbit.58\n- ops / Ferns&Rivers27", "Lantern.Orbit.58"),
    ("Staging logins:\n- qa / Lantern.Orbit.58\n- ops / Ferns&Rivers27", "Ferns&Rivers27"),
    ("## Test accounts\n- viewer: Quartz.Meadow.64", "Quartz.Meadow.64"),
    ("router admin\nUser: netops\nPW: Harbor-Kite-772", "Harbor-Kite-772"),
    # a column of personal numbers in a CSV export or a Markdown table
    ("name,iban,account_number\nJo Ruiz,x,77120419\n", "77120419"),
    ("| customer | card_number |\n|---|---|\n| Li | 4556 7375 8689 9855 |", "4556 7375 8689 9855"),
    # a card's expiry and its code beside the number
    ("card 4556 7375 8689 9855 exp 11/28, thanks", "11/28"),
    ("Karte 4556 7375 8689 9855 gültig bis 04/2029", "04/2029"),
    ("tarjeta 4556 7375 8689 9855 vence 07/27 código 914", "914"),
    ("Maestro card 6759 6498 2643 8453 112", "6759 6498 2643 8453 112"),
    # identity, tax, licence, passport and record numbers
    ('{"person": {"tax_id": "50294716385"}}', "50294716385"),
    ("my national ID number is 5839 2017 4462", "5839 2017 4462"),
    ("کد ملی: 0499370899", "0499370899"),
    ("ИНН физлица 500100732259", "500100732259"),
    ("driver's license number K4827361 (Ontario)", "K4827361"),
    ("Führerschein-Nr. F29X7K4Q2L8", "F29X7K4Q2L8"),
    ("Reisepassnummer C4J7K9LM2", "C4J7K9LM2"),
    ("P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10",
     "L898902C36UTO7408122F1204159"),
    ("MRN: 40917726, admitted 2024-03-02", "40917726"),
    ("Versichertennummer: K209371845", "K209371845"),
    ("número de seguro social: 219-09-9999", "219-09-9999"),
    # bank numbers: Poland's NRB, a Canadian cheque, an Indian account with its IFSC
    ("przelew na 34 1090 1014 0000 0712 1981 2875", "34 1090 1014 0000 0712 1981 2875"),
    ("direct deposit: transit 00012, institution 003, account 7654321 (bank form)", "7654321"),
    ("A/C 50100234567891 IFSC SBIN0001234", "50100234567891"),
    ("Betaal op NL20 INGB 0001 2345 67", "NL20 INGB 0001 2345 67"),
    # words for password typed fast, without their letters, in Latin letters, as a key's first part
    ("the passwrd for staging is Tulip_Harbor44", "Tulip_Harbor44"),
    ("haslo do serwera: Kasztan_Wiosna7 (bez polskich liter)", "Kasztan_Wiosna7"),
    ("la contrasena del router es Faro_Norte82 ok?", "Faro_Norte82"),
    ("o kwdikos tou wifi einai Elia_Kalamata5", "Elia_Kalamata5"),
    ("пароль_админа: Ryabina_Osen31", "Ryabina_Osen31"),
    ("ログイン ID: sato / パス: Sakura_2031", "Sakura_2031"),
    ("mot de passe du wifi-box : Lavande_Sud27", "Lavande_Sud27"),
    # passwords that end in signs, after an arrow, as the password, a passphrase joined by dashes
    ("try Autumn2025!! if the old one fails", "Autumn2025!!"),
    ("the vault entry -> Copper*Lantern9", "Copper*Lantern9"),
    ("Postgres won't take `Riv3r$Stone_Bend` as the password for user etl", "Riv3r$Stone_Bend"),
    ("my master passphrase (write it down): Velvet-Thunder-Paints-Nine-Walls", "Velvet-Thunder-Paints-Nine-Walls"),
    # Wi-Fi keys with no verb, and codes that unlock
    ("Wi-Fi: SSID Casa_Luz, key glass-pebble-48", "glass-pebble-48"),
    ("ゲストWi-Fiの暗号化キーは 7c2e9a41d05b です", "7c2e9a41d05b"),
    ("code wifi de la maison : 4f7a2c9e1b3d", "4f7a2c9e1b3d"),
    ("el código de desbloqueo del móvil es 604913", "604913"),
    ("dörrkoden är 5728", "5728"),
    # recovery codes after a service's name, a DingTalk signing secret, webhooks with /hook/
    ("recovery codes GitHub:\n- 4f8a2-9c1d3\n- 7b2e6-1a9f4", "4f8a2-9c1d3"),
    ("sign secret SEC" + "3f" * 32, "3f3f3f3f3f3f3f3f"),
    ("https://open.larksuite.com/open-apis/bot/v2/hook/2b9c41d7-8e3a-4f6b-a1c5-9d7e2f0b4a63", "2b9c41d7-8e3a"),
    # PagerDuty's routing key, a Terraform-generated password in the state
    ("routing_key = \"c4f9a1b27e3d4f58a6b0c2d9e7f1a3b5\"", "c4f9a1b27e3d4f58a6b0c2d9e7f1a3b5"),
    ('{"type": "random_password", "instances": [{"attributes": {"result": "q>7Lm!2Zx?Wp9Rt#"}}]}', "q>7Lm!2Zx?Wp9Rt#"),
    ("AT_KEY=atsk_5c2e8f1a9b7d3c6e0f4a2b8d1c9e7f3a", "5c2e8f1a9b7d3c6e"),
    # a plist's key and string on two lines; a map printed whole; an SQL dump's rows; a data frame; vault's Key Value
    ("<key>NOTES_API_TOKEN</key>\n    <string>8e1c4a7f2b9d3c6e5a0f1b2c3d4e5f6a7b8c9d0e</string>", "8e1c4a7f2b9d3c6e"),
    ("Config: {smtp.host=mail.local, smtp.password=kqrz vbnm plok ytre, smtp.port=587}", "kqrz vbnm plok ytre"),
    ("INSERT INTO `accounts` (`id`, `login`, `password_plain`) VALUES\n(7, 'ops', 'Gr4nite!Path'),\n"
     "(8, 'qa', 'Cedar_77x');", "Cedar_77x"),
    ("      name       api_key\n0     maps  Zx81LmQ2rT7wVb4N\n1   search  Pq3Rs8Tu1Vw6Xy2Z", "Pq3Rs8Tu1Vw6Xy2Z"),
    ("====== Data ======\nKey         Value\n---         -----\napi_token   Tk9Lm2Qp8Rv5Zx3W\nowner       ops",
     "Tk9Lm2Qp8Rv5Zx3W"),
    ("┌──────────┬──────────────────┐\n│ Name     │ Value            │\n├──────────┼──────────────────┤\n"
     "│ DB_TOKEN │ Mx7Qp2Lr9Tv4Wb8K │\n└──────────┴──────────────────┘", "Mx7Qp2Lr9Tv4Wb8K"),
    # a registry value, an ODBC-less comment after a value, a note between a name and its colon, a call's argument
    ("    SmtpPassword    REG_SZ    Orchid-lake-52", "Orchid-lake-52"),
    ("wx:\n  appsecret: 7d3f9a1c5e2b8d4f6a0c9e7b3d1f5a2c   # from the console", "7d3f9a1c5e2b8d4f"),
    ("# token (hex): 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706"),
    ('buildConfigField("String", "MAPS_API_KEY", "\\"d41e7c9a2b8f3e6d5c1a0b9f8e7d6c5b\\"")', "d41e7c9a2b8f3e6d"),
    # printed by a command run through ssh, a cookie header inside JSON, an OAuth code in a log, Salesforce's session
    ("$ ssh app01 'printenv STRIPE_API_KEY'\nrk_live_51Hx9QpLm2Rt5Wx3Yc9Vb6Nm", "rk_live_51Hx9Qp"),
    ('"headers": {"Cookie": "sessionid=a8k2m4p6r8t0v2x4z6b8d0f2h4j6l8n0"}', "a8k2m4p6r8t0v2x4z6b8d0f2h4j6l8n0"),
    ('"GET /auth/cb?code=4/0AfJohXm2Qp8Rv5Zx3Wb7Kt9Lm1Nc4Yd6Tg&state=x HTTP/1.1" 302', "4/0AfJohXm2Qp8Rv5"),
    ('sf = Salesforce(session_id="00DAb1Cd2Ef3Gh4I!AQ4AQLm2Qp8Rv5Zx3Wb7Kt9Lm1Nc4Yd6Tg8Hs0Jf2Kd4Ls6Md8Nf0Pg2Qh4")',
     "AQ4AQLm2Qp8Rv5Zx3Wb7"),
    ("Could not parse URL from string 'mysql//app:Gr4nite#path@db.internal:3306/shop'", "Gr4nite#path"),
    # a default login, a password with a sign in front, an answer put in, a code after a card, an IBAN with no word
    ("ssh into the switch: admin / Switch77port!", "Switch77port!"),
    ("I reset it to '!Harbor2291' this morning", "!Harbor2291"),
    ("security question (favourite teacher) I put Mrs.Kowalski88", "Mrs.Kowalski88"),
    ("karta 4556 7375 8689 9855, ważna do 09/27, kod 318", "318"),
    ("stuur het naar NL64 ABNA 0417 1643 01 graag", "NL64 ABNA 0417 1643 01"),
    ("my HKID is A123456(3)", "A123456(3)"),
    ("mot de passe WLAN : 40917726550184729931", "40917726550184729931"),
    # passwords as people choose them, in a sentence with no word for password, in any language
    ("ssh to the box and use LanternHeron62= until Friday", "LanternHeron62="),
    ("entra con MapacheLirio45^ y reinicia el servicio", "MapacheLirio45^"),
    ("مرحبا، استخدم Falcon+482 للدخول", "Falcon+482"),
    ("请用QuillOrchid07~登录后台", "QuillOrchid07~"),
    ("kirjaudu KettleMoss19#:llä palveluun", "KettleMoss19#"),
    ("[3/11/25, 09:15] Me: CopperFinch88!", "CopperFinch88!"),
    # strong tokens: after an arrow or a menu path, before a note in parentheses, two signs and no digit
    ("login with ops and Gr4vel!Moon9 then go to Settings > Users", "Gr4vel!Moon9"),
    ("pwd for the box is Qu1ll#Fern4 (not the pwd command)", "Qu1ll#Fern4"),
    ("use xRtP?mLq&ZvWk for the staging admin", "xRtP?mLq&ZvWk"),
    # a password in parentheses after its word, one corrected, an announced one without a digit
    ("the customer sent their password (marmot2231) by mail", "marmot2231"),
    ("sorry, wrong password: not Ember=7431 but Kelp#Tide2290", "Kelp#Tide2290"),
    ("sorry, wrong password: not Ember=7431 but Kelp#Tide2290", "Ember=7431"),
    ("das Passwort ist Vq!PmRt&Lw", "Vq!PmRt&Lw"),
    # a key cut over two lines, ASP.NET's cookie, a PaymentIntent's client secret, an LND macaroon, Flask's session
    ("here it is:\nsk-or-v1-4b8e2c7a9d1f3e5b7c9a2d4f6e8b0c1d\n3e5f7a9b1c2d4e6f8a0b2c4d6e8f0a1b", "3e5f7a9b1c2d4e6f"),
    (".AspNetCore.Cookies=CfDJ8Kq2Lm9Rt4Wx7Yc1Vb5Nm3Qz8Hj6Fg0Ds2Ap4Ko6Lu8Mi0Ny2Bx4Cv6Zw8", "CfDJ8Kq2Lm9Rt4Wx7Yc1"),
    ("clientSecret: pi_3Nx8Kq2Lm9Rt4Wx7Yc1Vb5N_secret_Qz8Hj6Fg0Ds2Ap4Ko6Lu8Mi0N", "pi_3Nx8Kq2Lm9Rt4Wx7Yc1Vb5N"),
    ("macaroon: 0201036c6e6402f801" + "3a7c" * 20, "3a7c3a7c3a7c3a7c"),
    ("session=eyJ1c2VyIjoxMn0.ZqK2Lm.8Rt4Wx7Yc1Vb5Nm3Qz8Hj6Fg0; Path=/; HttpOnly", "ZqK2Lm.8Rt4Wx7Yc1Vb5"),
    # a proxy's headers, SNMP's community and v3 passphrases, etcd's listing, Azure Pipelines' debug output
    ('proxy_set_header Authorization "Basic dXNlcjpLZWxwVGlkZTIy";', "dXNlcjpLZWxwVGlkZTIy"),
    ("proxy_set_header X-Api-Key 3f9c2a7e5b1d8f4a6c0e2b9d7f5a3c1e;", "3f9c2a7e5b1d8f4a6c0e"),
    ("rocommunity Lichen77mesa 10.0.0.0/8", "Lichen77mesa"),
    ('createUser mon SHA "Auth!Pass9z" AES "Priv!Pass8y"', "Priv!Pass8y"),
    ("$ etcdctl get --prefix /svc/\n/svc/db/password\nQuarry-Fox-881", "Quarry-Fox-881"),
    ("##[debug]Evaluating: variables['DEPLOY_TOKEN']\n##[debug]Result: 'Zp9Lq2Wx7Rt4Kv8N'", "Zp9Lq2Wx7Rt4Kv8N"),
    ("$ cat ~/vpn/office.auth\njdoe\nBirch-Lake-73", "Birch-Lake-73"),
    ("$ sudo base64 -w0 /etc/app/signing.key\nQm9yZWFsaXNTaWduaW5nS2V5VmFsdWU=", "Qm9yZWFsaXNTaWduaW5nS2V5VmFsdWU="),
    ('{"openweather": {"appid": "3f9c2a7e5b1d8f4a6c0e2b9d7f5a3c1e"}}', "3f9c2a7e5b1d8f4a"),
    ("INSERT INTO people (name, id_card) VALUES ('Li', '110105199001011234');", "110105199001011234"),
    ("access_key_id = Zt8qLm3Rx7Wp2Kv9Bn5H", "Zt8qLm3Rx7Wp2Kv9Bn5H"),
    # words joined by a dash or a dot and a short number, Wi-Fi words beside "wifi" in more languages
    ("sudo now wants Lantern-Quill-48, then install the package", "Lantern-Quill-48"),
    ("wifi kantoor Molen.Kaas17 - de printer doet raar", "Molen.Kaas17"),
    ("la clave del wifi del bar es Churro.Martes61 por si acaso", "Churro.Martes61"),
    ("rahat wifi PadThai_Krapow8 na khrap", "PadThai_Krapow8"),
    # Windows' Wi-Fi profile, a Google app password, a Zhipu key, cards and accounts in more languages
    ("    Key Content            : Lighthouse!Gate5", "Lighthouse!Gate5"),
    ("Contenido de la clave : Faro-Azul-998", "Faro-Azul-998"),
    ("MAIL_PASSWORD=qwer tyui opas dfgh", "qwer tyui opas dfgh"),
    ("GLM key 7c3e9a1f5b2d8e4c6a0f9b7d5e3c1a2b.Kp8Lm2Qr5Tv9Wx3Z", "7c3e9a1f5b2d8e4c"),
    ("la mia carta 4556 7375 8689 9855, non salvarla", "4556 7375 8689 9855"),
    ("내 계좌 110-234-567890 로 보내줘", "110-234-567890"),
    ("contul meu RO49 AAAA 1B31 0075 9384 0000 pentru test", "RO49 AAAA 1B31 0075 9384 0000"),
    # codes after more words, answers with no colon, recovery codes after a longer lead-in
    ("the disarm code is 4827 if it goes off", "4827"),
    ("pinkoden til døren 3917", "3917"),
    ("kod BLIK 582931, wpisz szybko", "582931"),
    ("код підтвердження 604213, введи", "604213"),
    ("security question: first pet, answer Biscuit Moon, for the script", "Biscuit Moon"),
    ("backup codes in case the cli asks: 4f8a2-9c1d3 7b2e6-1a9f4", "7b2e6-1a9f4"),
    ("codici di recupero di GitLab 4f8a2-9c1d3, 7b2e6-1a9f4 per favore", "7b2e6-1a9f4"),
    ("| sitio | usuario | clave |\n|---|---|---|\n| wiki | ana | Tortilla$Patata4 |", "Tortilla$Patata4"),
]


@pytest.mark.parametrize("text, secret", SECRETS)
def test_the_secret_is_masked(text, secret):
    out = redact(text).text
    assert secret not in out, out
    assert "[REDACTED" in out


LOOK_ALIKES = [
    # base64 that is public, a type after a name, a listing of key ids
    "publicKey: {string | Buffer | KeyObject}",
    "secret: String = readSecret()",
    "$ az keyvault key list --vault-name kv\n[{\"kid\": \"https://kv.vault.azure.net/keys/signing\"}]",
    "$ gcloud iam service-accounts keys list --iam-account ci@p.iam.gserviceaccount.com",
    # a tool's first line that reads no secret, code that names secrets
    "cat README.md\n# Project\nRun make test.",
    'api_key = os.environ["STRIPE_SECRET_KEY"]\npassword = os.getenv("DB_PASSWORD", "")',
    '$ gpg --verify libfoo-1.2.tar.bz2.sig libfoo-1.2.tar.bz2',
    'conn = f"Server=db;Pwd={password};"',
    # headings over lists that hold no logins
    "category: Users, Groups and Home Directories\nSPDX-License-Identifier: LGPL-2.1-or-later",
    "Users:\n- alice: admin\n- bob: 2024-01-03",
    "## Accounts\n- billing: see the finance wiki",
    "Changes to accounts:\n* config/auth/login.c: Likewise.",
    # numbers in columns that are no personal numbers, tables of ids
    "id,account_number,status\n1,,active\n2,n/a,closed",
    "id,name,score\n1,alice,93\n2,bob,88",
    # dates and codes that are not a card's
    "the certificate expires 08/27, renew it before then",
    "error code 402 on the card payment page",
    "exp 12/25 for build 4539 2239 1429 5903",
    # identity words with no identity number
    "tax_id = 42",
    "the national id field is optional",
    "license number field is 2024",
    "MIT License, version 2.0",
    "see the driver license docs at https://example.org/dl",
    "the MRN field must be 8 digits",
    # words for password with no password after them
    "ファイルパス: /usr/local/bin",
    "the password I used in the demo was simpler",
    "sha256 as the password hash",
    "wifi pass through mode",
    "the wifi code path is broken in 2.3.1",
    "network key length 2048 bits",
    "take transit 12345 to the airport",
    "passphrase: your-passphrase-goes-here",
    "Released Windows11!! today",
    "x = a -> b; Foo2024!!",
    # look-alikes of the rules above
    "*Italic2024* text",
    "see the admin / settings page",
    'pub api_key: SecretString,\n    #[serde(default = "default_timeout")]\n    pub timeout_secs: u64,',
    '<string name="title_api_token">Токен API</string>',
    '<string name="hint_password">Пароль</string>',
    "kind: Secret\nstringData:\n  DATABASE_PASSWORD: \"REPLACE_ME\"   # filled in later",
    "password = random_password.db.result",
    "login(email: String!, password: String!): AuthPayload!",
    "const strongPassword = /^(?=.*[a-z])(?=.*[A-Z])(?=.*\\d).{12,128}$/;",
    "nextPageToken: CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA3",
    "https://example.com/search?code=utf-8&lang=en",
    "NAME                  TYPE                                  DATA   AGE\ndefault-token-x8k2l   kubernetes.io/"
    "service-account-token   3      10d",
    "the security question (first car) is required",
    "the secret (for tests): see docs",
    "commit AB12 CDEF 1234 in release",
    "seed 0 gives the mnemonic abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon"
    " about",
    "The example token on jwt.io is eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9"
    "lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    '<div class="g-recaptcha" data-sitekey="6Lcaba5YRyB0k0chO_NETQ0NrSAwJozpn-g_3yEb"></div>',
    "posthog.init('phc_g7qF1m1DHEiXtP897EfCBBFMPFlqw5c2mQ9g45xUema', { api_host: 'https://eu.i.posthog.com' })",
    # look-alikes of the rules above
    "we upgraded to PostgreSQL16! today",
    "HelloWorld2024 is the demo",
    "see RFC+1234",
    "DC were transduced with lentiviruses encoding huIi80MAGE-A3 and murine DC (see CD4(+) cells)",
    "the password (optional) field",
    "the password is not required but recommended",
    "rocommunity public 127.0.0.1",
    "minisign -Vm app.tar.gz -P RWQKNoeHGUE54MJRz1xjv++kKrOAjwHXUtqDmRZmN5MQA9CQSGi+6yBX",
    "$ pwd\n/home/jo/projects/shop",
    "SESSION_SECRET=change-me-to-a-long-random-string",
    '{"login.password": "Passwort", "login.forgot": "Passwort vergessen?"}',
    "password = Пароль\nforgot_password = Забыли пароль?",
    '{"msg":"password reset email queued","request_id":"a6bc29aa-21e5-4ca7-8dbd-7c8bce545c89"}',
    "zapomniałem hasła do bazy, jak je zresetować przez psql jako postgres?",
    "refund created: re_CzleW6UCEAl7UkP9eb2My2tk for charge ch_DSuQIU0JG9hhDuv3Dv01YjXb",
    "Added connection ConnectionImpl@5a1b2c3d",
    "e3d9771a VP8EncDspCostInit*: add missing TSan annotations",
    "div_qr_1n_pi1_method only when !HAVE_NATIVE_mpn_div_qr_1n_pi1.",
    "  * debian/libsecret-1.0.symbols: Add new symbols",
    "with self._Client(self._address, authkey=self._authkey) as conn:",
    "  o Merge branch 'event-ET-#636-v2' (ca4b6404)",
    "    xfree86 (closes: Ubuntu#8562, Ubuntu#8626).",
    "community contributions are welcome",
    "SHA256 Fingerprint=17:CE:77:C6:73:96",
    "Timeout=30 and Width=100",
    "we use Visual-Studio-2022 here",
    "install python-dateutil-28 and node-red-14",
    "password_rule: 半角英数字記号を含む12文字以上で設定してください",
    'pon password: "CAMBIAR_AQUI" y luego',
    "the answer is the Security Council",
    "make -f Makefile.mingw32 fails",
    "collision handling for Caps-hpux11 and Caps.aix1",
    "allow failures on Debian.cross.aarch64",
    "convert days argument from dbus.Int32 to int",
    "26. WIN32: Added lcc-Win32 variants of i386 assembler code",
    "password (v2.4.1)",  # a note in parentheses after a name alone on its line
    "  client_secret (rotated 2024-01)",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_the_look_alike_stays(text):
    assert redact(text).text == text
