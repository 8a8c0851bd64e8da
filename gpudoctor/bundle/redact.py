"""Secrets never leave the machine: redaction applied to every member of a bundle.

Three kinds of secret are removed wherever they appear (command output, files, reports,
the manifest): the values of environment variables whose names look secret
(``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``DB_PASSWORD`` ...), known token formats
(``data/secret_formats.json``: ``hf_...``, ``ghp_...``, ``AKIA...``, PEM private keys ...)
and credentials inside URLs (``https://user:password@pypi.corp/simple`` from pip's
index URL). A replacement names what was there, never its value:
``<redacted:huggingface-token>``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Pattern, Tuple

_DATA = Path(__file__).with_name("data") / "secret_formats.json"
MARK = "<redacted"
# Values shorter than this are too common ("1", "true", "ubuntu") to hunt for as literals.
MIN_LITERAL = 8
_NOT_SECRET_NAMES = {"PWD", "OLDPWD", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "SESSION_MANAGER",
                     "DESKTOP_SESSION", "XDG_SESSION_TYPE", "XDG_SESSION_CLASS", "XDG_SESSION_DESKTOP",
                     "XDG_SESSION_ID"}
_URL_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)([^/\s@'\"<>]+)@")
# KEY=value / "key": "value" where the key names a secret; the value ends at a blank or a quote.
_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Z0-9_.-]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?"
    r"|AUTH_?TOKEN|COOKIE|SESSION_?ID)(?:_[A-Z0-9_]*)?)(['\"]?\s*(?:=(?!=)|:)\s*['\"]?)([^\s'\"<>,;]{4,})")


@lru_cache(maxsize=1)
def _formats() -> dict:
    return json.loads(_DATA.read_text(encoding="utf-8"))


def token_patterns() -> List[Tuple[str, Pattern]]:
    """(format id, compiled pattern) for every known token format."""
    out = []
    for row in _formats()["formats"]:
        flags = re.DOTALL if "DOTALL" in row.get("flags", "") else 0
        out.append((row["id"], re.compile(row["pattern"], flags)))
    return out


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says its value is a secret."""
    upper = name.upper()
    if upper in _NOT_SECRET_NAMES:
        return False
    words = _formats()["secret_env_words"]
    if set(upper.split("_")) & set(words["words"]):
        return True
    return any(s in upper for s in words["substrings"])


def secret_env(environ: Mapping[str, str]) -> Dict[str, str]:
    """The environment variables whose names look secret, with their values."""
    return {k: v for k, v in environ.items() if is_secret_name(k)}


class SecretRedactor:
    """Removes secrets from text; counts what it removed by kind (never the values)."""

    def __init__(self, secret_values: Mapping[str, str] = (), hide: Iterable[str] = ()):
        self.counts: Counter = Counter()
        # --hide words (a project or domain name) become hidden1, hidden2: path-safe and consistent.
        self._hide = {w.lower(): f"hidden{i}" for i, w in enumerate(dict.fromkeys(w for w in hide if w.strip()), 1)}
        # A word, not part of one: "projectx" hides "/data/projectx-2", not "projectxy".
        alts = "|".join(re.escape(w) for w in sorted(self._hide, key=len, reverse=True))
        self._hide_re = re.compile(rf"(?i)(?<![A-Za-z0-9])(?:{alts})(?![A-Za-z0-9])") if self._hide else None
        literals: Dict[str, str] = {}
        for name, value in dict(secret_values).items():
            for v in {value, value.strip()}:
                if len(v) >= MIN_LITERAL and not v.isdigit() and v.lower() not in ("true", "false"):
                    literals[v] = name
        self._literals = literals
        self._literal_re = (re.compile("|".join(re.escape(v) for v in sorted(literals, key=len, reverse=True)))
                            if literals else None)
        self._tokens = token_patterns()

    def text(self, s: str) -> str:
        if not s:
            return s
        if self._literal_re is not None:
            s = self._literal_re.sub(self._literal, s)
        for kind, pattern in self._tokens:
            s = pattern.sub(lambda m, k=kind: self._mark(k), s)
        s = _URL_USERINFO.sub(self._url, s)
        s = _ASSIGNMENT.sub(self._assignment, s)
        if self._hide_re is not None:
            s = self._hide_re.sub(self._hidden, s)
        return s

    def _hidden(self, m: re.Match) -> str:
        self.counts["hidden"] += 1
        return self._hide[m.group(0).lower()]

    def _mark(self, kind: str) -> str:
        self.counts[kind] += 1
        return f"{MARK}:{kind}>"

    def _literal(self, m: re.Match) -> str:
        return self._mark(f"env:{self._literals[m.group(0)]}")

    def _url(self, m: re.Match) -> str:
        if m.group(2).startswith(MARK):
            return m.group(0)
        return f"{m.group(1)}{self._mark('url-credentials')}@"

    def _assignment(self, m: re.Match) -> str:
        if m.group(3).startswith(MARK):
            return m.group(0)
        return f"{m.group(1)}{m.group(2)}{self._mark('secret-assignment')}"


def redact_url(value: str) -> str:
    """A URL with any user:password@ removed (for recording pip's index URLs)."""
    return _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MARK}:url-credentials>@", value)

