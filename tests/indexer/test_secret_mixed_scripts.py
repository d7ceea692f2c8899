"""A Latin word for a secret typed against Chinese, Japanese, Korean or Thai text, with no space on either side
("门禁卡PIN是4524", "서버password는 …"), through the real filter: it announces the value as the same word with
spaces does, and the words of those scripts around it are not taken for a value. Every value is made up."""

import pytest

from indexer.privacy import redact

SECRETS = [
    ("门禁卡PIN 4524，别告诉别人", "4524"),
    ("银行卡PIN码是 9073", "9073"),
    ("门禁PIN是8816", "8816"),
    ("주차장PIN 3391 입니다", "3391"),
    ("服务器的password是Hunter2abc", "Hunter2abc"),
    ("ルーターのpasswordはsakura2024です", "sakura2024"),
    ("서버 password는 Kq82mzLp 이에요", "Kq82mzLp"),
    ("เราเตอร์passwordคือ Mango!2291", "Mango!2291"),
    ("新的WiFi password是 blueHeron#77", "blueHeron#77"),
]

LOOK_ALIKES = [
    "修改password字段的校验规则，版本 v2.3.1",
    "请用token认证，见文档第12页",
    "パスワードはpasswordという文字列を含めないでください",
    "PIN码长度必须是4到8位数字",
    "서버password 정책은 12자 이상입니다",
]


@pytest.mark.parametrize("text, secret", SECRETS)
def test_the_secret_is_masked(text, secret):
    out = redact(text).text
    assert secret not in out
    assert "[REDACTED" in out


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_the_look_alike_stays(text):
    assert redact(text).text == text
