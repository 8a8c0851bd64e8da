"""Secrets never leave the machine: redaction applied to every member of a bundle.

Four kinds of secret are removed wherever they appear (command output, files, reports,
the manifest), in this order:

1. the values of environment variables whose names are secret (``HF_TOKEN``,
   ``DB_PASSWORD``; see :func:`is_secret_variable`), as literals, also JSON-escaped and
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
import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Pattern, Tuple
from urllib.parse import quote

from gpudoctor.bundle import secret_context

_DATA = Path(__file__).with_name("data") / "secret_formats.json"
MARK = secret_context.MARK
# Values hunted as literals need this many characters; shorter ones ("1", "on") would wreck the bundle.
MIN_LITERAL = 3
# Below this a literal must stand alone ("/opt/abc1234/lib"), not inside a longer word.
MIN_SUBSTRING = 8
_TRIVIAL = {"true", "false", "yes", "no", "on", "off", "none", "null", "nil", "0", "1", "-1", "enabled", "disabled"}
_NOT_SECRET_NAMES = {"PWD", "OLDPWD", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "SESSION_MANAGER",
                     "DESKTOP_SESSION", "XDG_SESSION_TYPE", "XDG_SESSION_CLASS", "XDG_SESSION_DESKTOP",
                     "XDG_SESSION_ID", "KEYBOARD", "PIP_KEYRING_PROVIDER",
                     "SIG_KEY"}  # modinfo: the id of the public key that signed the module
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9_+=.-]+")
_LITERAL_FIRST = re.compile(r"[A-Za-z0-9_:/<%-]|\\[.]")


@lru_cache(maxsize=1)
def _formats() -> dict:
    return json.loads(_DATA.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def token_patterns() -> List[Tuple[str, Pattern, Tuple[str, ...]]]:
    """(format id, compiled pattern, gate) for every known token format, in the data file's order.

    A pattern that starts with a literal is found by re's fast prefix search, as fast as a
    keyword test: it runs ungated (gate ``()``). Any other runs only on text holding one of
    its keywords; one without keywords always runs.
    """
    out = []
    for row in _formats()["formats"]:
        flags = re.DOTALL if "DOTALL" in row.get("flags", "") else 0
        gate = () if _LITERAL_FIRST.match(row["pattern"]) else tuple(row.get("keywords") or ())
        out.append((row["id"], re.compile(row["pattern"], flags), gate))
    return out


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a name (variable, key, parameter) says its value is a secret: ``HF_TOKEN``, ``luks.key``, ``apiKey``."""
    name = name.strip("\"' ")
    upper = name.upper()
    if upper in _NOT_SECRET_NAMES or not name:
        return False
    words = _formats()["secret_env_words"]
    parts = [p.upper() for p in _PARTS.findall(name)]
    if not parts or parts[-1] in words["not_last_words"]:
        return False
    hits = set(parts) & set(words["words"])
    if hits and (len(parts) > 1 or not hits <= set(words["qualified_words"])):
        return True
    return any(s in upper for s in words["substrings"])


def is_secret_parameter(name: str, value: str) -> bool:
    """A URL query parameter that holds a secret: a secret name, or sig=, X-Amz-Signature=, code=."""
    parts = {p.upper() for p in _PARTS.findall(name)}
    return is_secret_variable(name, value) or bool(parts & set(_formats()["query_words"]["words"]))


@lru_cache(maxsize=4096)
def _service(name: str) -> bool:
    parts = {p.lower() for p in _PARTS.findall(name)}
    return bool(parts & set(_formats()["service_names"]["words"]))


def token_like(value: str) -> bool:
    """A value shaped like a generated credential: long, letters and digits, high entropy (gitleaks' test)."""
    rule = _formats()["service_names"]
    if len(value) < rule["min_value_length"] or not _TOKEN_LIKE.fullmatch(value):
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy >= rule["min_entropy"]


def is_secret_variable(name: str, value: str) -> bool:
    """A secret name, or a service's name (``ALGOLIA_ADMIN``) holding a token-like value."""
    return is_secret_name(name) or (_service(name) and token_like(value.strip("\"' ")))


class _Judge:
    """The rules above, as secret_context asks for them."""

    secret_name = staticmethod(is_secret_name)
    service_name = staticmethod(_service)
    token_like = staticmethod(token_like)
    parameter = staticmethod(is_secret_parameter)


_JUDGE = _Judge()


def secret_env(environ: Mapping[str, str]) -> Dict[str, str]:
    """The environment variables that hold secrets, with their values."""
    return {k: v for k, v in environ.items() if is_secret_variable(k, v)}


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
        s = secret_context.redact(s, self._mark, _JUDGE)
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
