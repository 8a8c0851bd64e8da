"""Every secret format in data/secret_formats.json is redacted, has a source, and costs linear time.

The rows are the test cases: adding a format is adding a row (with a made-up example),
and this file then checks it. The end-to-end plant of every row through `gpudoctor
bundle` is in test_bundle_redaction.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gpudoctor.bundle.redact import SecretRedactor, is_secret_name, is_secret_variable, token_patterns

DATA = json.loads((Path(__file__).resolve().parent.parent / "gpudoctor" / "bundle" / "data" /
                   "secret_formats.json").read_text(encoding="utf-8"))
ROWS = DATA["formats"] + DATA["rules"]


def _secret(row) -> str:
    return row.get("secret", row["example"])


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['id']}:{i}" for i, r in enumerate(ROWS)])
def test_each_format_is_redacted_by_name_and_nothing_else_is_touched(row):
    r = SecretRedactor()
    out = r.text(f"before\n{row['example']}\nafter")
    assert _secret(row) not in out
    assert f"<redacted:{row['id']}>" in out
    assert out.startswith("before\n") and out.endswith("\nafter")
    assert r.text(out) == out  # a redacted text is left as it is


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['id']}:{i}" for i, r in enumerate(ROWS)])
def test_each_row_names_its_source_and_its_keywords_occur_in_its_example(row):
    sources = row["source"] if isinstance(row["source"], list) else [row["source"]]
    assert sources and all(s.startswith("http") for s in sources)
    assert all(k == k.lower() and k in row["example"].lower() for k in row.get("keywords", [])) or \
        any(k in row["example"].lower() for k in row.get("keywords", []))


# Variants of the rows' formats (other prefixes of the same family), as the reference scanners list them.
VARIANTS = ["ASIAEXAMPLE0123456789", "ABIAEXAMPLE0123456789", "A3TXEXAMPLE0123456789", "gho_" + "a1B2" * 9, "ghs_" + "a1B2" * 9,
            "ghr_" + "a1B2" * 9, "ghu_" + "a1B2" * 9, "gldt-" + "a1B2" * 5, "glrt-" + "a1B2" * 5, "glptt-" + "0a" * 20,
            "rk_live_" + "a1B2" * 6, "sk_test_" + "a1B2" * 6, "xoxp-0123456789-0123456789-0123456789-" + "ab12" * 8,
            "xoxa-2-" + "ab12" * 5, "pypi-AgENdGVzdC5weXBpLm9yZw" + "a1_-" * 20, "EAAC" + "a1B2" * 26,
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0B\n-----END ENCRYPTED PRIVATE KEY-----",
            '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkq\\n-----END PRIVATE KEY-----\\n"',
            "sq0atp-" + "a1B2" * 6, "hvb." + "a1B2" * 35, "dor_v1_" + "0a" * 32, "shpss_" + "0a" * 16]


@pytest.mark.parametrize("token", VARIANTS)
def test_each_variant_of_a_family_is_redacted_whole(token):
    out = SecretRedactor().text(f"x {token} y")
    body = token.split("\n")[1] if "\n" in token else token[-12:]
    assert "<redacted:" in out and body not in out


def test_rows_have_unique_ids_and_cover_the_reference_sets():
    ids = [r["id"] for r in DATA["formats"]]
    assert len(ids) == len(set(ids)) and len(ids) >= 90
    assert set(DATA["reference_commits"]) == {"gitleaks", "detect-secrets"}


@pytest.mark.parametrize("text, kept", [
    ("<session_count>0</session_count>", True),                    # nvidia-smi -q -x
    ("sig_key:        2A:91:0B:6E:55:73:0C:D1", True),              # modinfo: a public key's id
    ("sig_hashalgo:   sha512", True),
    ("PASSWORD_FILE=/run/secrets/db", True),                        # names a secret, holds none
    ("tokenizers==0.15.2 nvidia-cudnn-cu12==9.1.0.70 https://pypi.org/simple", True),
    ("https://registry.npmjs.org/@scope/pkg http://localhost:8080/@x", True),
    ("git@github.com:org/repo.git", True),
    ('{"key": "pip_list", "redactions": {"secrets": {"private-key": 1}}, "secret_variables": ["HF_TOKEN"]}', True),
    ("    Product Name                          : NVIDIA A100-SXM4-80GB", True),
    ("password=x", False), ("DB_PASSWORD: x", False), ('"apiKey": "x"', False), ("X-Auth-Token: x", False),
])
def test_what_is_not_a_secret_is_left_alone(text, kept):
    assert (SecretRedactor().text(text) == text) is kept


def test_values_of_any_length_and_with_blanks():
    r = SecretRedactor({"MY_TOKEN": "abc1234", "SHORT_PASS": "k9", "FLAG_TOKEN": "1"})
    assert r.text("LD_LIBRARY_PATH=/opt/abc1234/lib:/usr/lib") == "LD_LIBRARY_PATH=/opt/<redacted:env:MY_TOKEN>/lib:/usr/lib"
    assert r.text("xabc1234y GPU 1") == "xabc1234y GPU 1"  # short values only where they stand alone
    assert r.text('password="correct horse battery staple" user=bob') == \
        'password="<redacted:secret-assignment>" user=bob'
    assert r.text("password = correct horse battery staple\nuser = bob") == \
        "password = <redacted:secret-assignment>\nuser = bob"
    assert r.text('{"password": "with \\"quotes\\" inside", "n": 1}') == '{"password": "<redacted:secret-assignment>", "n": 1}'
    assert r.text("api-key=a luks.key=b") == "api-key=<redacted:secret-assignment> luks.key=<redacted:secret-assignment>"


def test_env_values_are_found_escaped_and_encoded_too():
    r = SecretRedactor({"DB_PASSWORD": 'p@ss "w/rd"'})
    out = r.text('json "p@ss \\"w/rd\\"" url https://u:p%40ss%20%22w%2Frd%22@h/ raw p@ss "w/rd"')
    assert "p@ss" not in out and "p%40ss" not in out and out.count("<redacted:env:DB_PASSWORD>") == 3


def test_secret_names_split_at_separators_and_camel_case():
    assert [n for n in ("luks.key", "api-key", "apiKey", "AccountKey", "X-Amz-Security-Token", "HF_TOKEN",
                        "GITHUBTOKEN", "Authorization") if not is_secret_name(n)] == []
    assert [n for n in ("KEYBOARD_LAYOUT", "monkey", "session_count", "TOKEN_URL", "PWD", "sig_key", "PATH")
            if is_secret_name(n)] == []
    assert is_secret_variable("ALGOLIA_ADMIN", "Zx9Qw2Er7Ty5Ui3Op1As") and not is_secret_variable("DATADOG_SITE", "datadoghq.com")


# --- linear time ---------------------------------------------------------------------------------

def _seconds(fn, text: str, enough: float = 0.0) -> float:
    """CPU seconds of this thread (the best of three): a loaded runner's waits are not the pattern's cost.
    A run under ``enough`` ends the tries (the best is under it too, and that is all the caller asks)."""
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        fn(text)
        best = min(best, time.thread_time() - start)
        if best < enough:
            break
    return best


def _grows_linearly(fn, unit: str, n: int) -> bool:
    """4x the input may cost at most 10x the time (a quadratic pattern costs 16x every time, and minutes at
    this size); times under 50 ms are noise, and a busy machine gets three tries."""
    for _ in range(3):
        small = _seconds(fn, unit * n)
        big = _seconds(fn, unit * (4 * n), enough=max(0.05, 10 * small))
        if big < 0.05 or big < 10 * small:
            return True
    return False


def _units(row) -> list:
    ex = row["example"]
    return [ex[: len(ex) // 2], ex[:-1], ex[:-1] + " ", ex + "=", ex.replace("\n", "")[: max(4, len(ex) // 3)] + "\n"]


@pytest.mark.parametrize("kind, pattern", [(k, p) for k, p, _ in token_patterns()], ids=[k for k, _, _ in token_patterns()])
def test_each_format_pattern_is_linear_on_hostile_repetitions(kind, pattern):
    row = next(r for r in DATA["formats"] if r["id"] == kind)
    slow = [u for u in _units(row) if not _grows_linearly(lambda t: pattern.sub("x", t), u, 20_000 // max(len(u), 1) + 1)]
    assert slow == []


HOSTILE = ["a", "a.", "a-", "a=", "a:", "a@", "eyJ", "password=\"", "password: '", "\\", '"', "https://a:", "a://", "u:p@",
           "<password>", "-----BEGIN PRIVATE KEY-----", "/t/", "&sig=", "?token=", "A1", "0", "sk-", "hf_", ":A", "x=y ",
           "Authorization: ", "curl -u ", "AKIAAKIA", "xoxb-", "<a>b</a>"]


@pytest.mark.parametrize("unit", HOSTILE)
def test_the_whole_redactor_is_linear_on_hostile_inputs(unit):
    r = SecretRedactor({"MY_TOKEN": "abc1234", "HF_TOKEN": "hf_PlantedPlantedPlanted0123"}, hide=["projectx"])
    assert _grows_linearly(r.text, unit, 25_000 // len(unit) + 1)
