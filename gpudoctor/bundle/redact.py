"""Secrets never leave the machine: redaction applied to every member of a bundle.

Four kinds of secret are removed wherever they appear (command output, files, reports,
the manifest), in this order:

1. the values of environment variables whose names are secret (``HF_TOKEN``,
   ``DB_PASSWORD``; see :mod:`secret_names`), as literals, also JSON-escaped and
   percent-encoded;
2. known token formats (``data/secret_formats.json``: ``hf_...``, ``AKIA...``, private
   key blocks ... each row with its source);
3. secrets known by their context (:mod:`secret_context`): URL and proxy credentials,
   secret query parameters, ``name=value`` where the name is secret;
4. ``--hide`` words.

A replacement names what was there, never its value: ``<redacted:huggingface-token>``.
Every pattern runs in time linear in the text (see the data file's description).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from typing import Dict, Iterable, List, Mapping, Pattern, Tuple
from urllib.parse import quote

from gpudoctor.bundle import secret_context
from gpudoctor.bundle.secret_names import (JUDGE, formats, is_secret_name, is_secret_parameter,
                                           is_secret_variable, secret_env, token_like)

# The names' rules live in secret_names; callers import them from here, with the redactor.
__all__ = ["SecretRedactor", "redact_url", "token_patterns", "is_secret_name", "is_secret_parameter",
           "is_secret_variable", "secret_env", "token_like", "MARK"]

MARK = secret_context.MARK
# Values hunted as literals need this many characters; shorter ones ("1", "on") would wreck the bundle.
MIN_LITERAL = 3
# Below this a literal must stand alone ("/opt/abc1234/lib"), not inside a longer word.
MIN_SUBSTRING = 8
_TRIVIAL = {"true", "false", "yes", "no", "on", "off", "none", "null", "nil", "0", "1", "-1", "enabled", "disabled"}
_LITERAL_FIRST = re.compile(r"[A-Za-z0-9_:/<%-]|\\[.]")


@lru_cache(maxsize=1)
def token_patterns() -> List[Tuple[str, Pattern, Tuple[str, ...]]]:
    """(format id, compiled pattern, gate) for every known token format, in the data file's order.

    A pattern that starts with a literal is found by re's fast prefix search, as fast as a
    keyword test: it runs ungated (gate ``()``). Any other runs only on text holding one of
    its keywords; one without keywords always runs.
    """
    out = []
    for row in formats()["formats"]:
        flags = re.DOTALL if "DOTALL" in row.get("flags", "") else 0
        gate = () if _LITERAL_FIRST.match(row["pattern"]) else tuple(row.get("keywords") or ())
        out.append((row["id"], re.compile(row["pattern"], flags), gate))
    return out


def _variants(value: str) -> set:
    """How a value shows up in text: as is, trimmed, JSON-escaped, percent-encoded (in a URL)."""
    out = set()
    for v in {value, value.strip()}:
        out |= {v, json.dumps(v)[1:-1], quote(v, safe=""), quote(v, safe="/:")}
    return {v for v in out if len(v) >= MIN_LITERAL and v.lower() not in _TRIVIAL and not (v.isdigit() and len(v) < 6)}


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
        for name, value in secret_env(dict(secret_values)).items():
            for v in _variants(value):
                literals.setdefault(v, name)
        # Longest first, so that a value is never half-replaced by a shorter one inside it.
        self._literals = sorted(literals.items(), key=lambda kv: -len(kv[0]))
        self._tokens = token_patterns()

    def text(self, s: str) -> str:
        if not s:
            return s
        s = self._literal_values(s)
        lower = s.lower() if any(gate for _, _, gate in self._tokens) else s
        for kind, pattern, gate in self._tokens:
            if not gate or any(k in lower for k in gate):
                s = pattern.sub(lambda m, k=kind: self._replace(m, k), s)
        s = secret_context.redact(s, self._mark, JUDGE)
        if self._hide_re is not None:
            s = self._hide_re.sub(self._hidden, s)
        return s

    def _literal_values(self, s: str) -> str:
        for value, name in self._literals:
            if value not in s:
                continue
            kind = f"env:{name}"
            if len(value) >= MIN_SUBSTRING:
                self.counts[kind] += s.count(value)
                s = s.replace(value, f"{MARK}:{kind}>")
            else:
                s = re.sub(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", lambda m, k=kind: self._mark(k), s)
        return s

    def _replace(self, m: re.Match, kind: str) -> str:
        if "s" not in m.re.groupindex:
            return self._mark(kind)
        start, end = m.span("s")
        if start < 0 or m.group("s").startswith(MARK):
            return m.group(0)
        return m.string[m.start():start] + self._mark(kind) + m.string[end:m.end()]

    def _hidden(self, m: re.Match) -> str:
        self.counts["hidden"] += 1
        return self._hide[m.group(0).lower()]

    def _mark(self, kind: str) -> str:
        self.counts[kind] += 1
        return f"{MARK}:{kind}>"


def redact_url(value: str) -> str:
    """A URL with any user:password@ removed (for recording pip's index URLs)."""
    return secret_context.url_credentials(value, lambda kind: f"{MARK}:{kind}>")
