"""Which names hold secrets: the rules of data/secret_formats.json for variables, keys and parameters.

A name is split at ``_``, ``.``, ``-`` and camelCase (``luks.key`` -> luks, key; ``apiKey``
-> api, Key) and judged by its words: ``secret_env_words`` (with the words that only describe
a secret, ``PASSWORD_FILE``, and ``KEY`` that needs a second word), ``query_words`` for URL
parameters (``sig=``), and ``service_names`` (``ALGOLIA_ADMIN``) whose values count only when
they look like generated tokens.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Dict, Mapping

_DATA = Path(__file__).with_name("data") / "secret_formats.json"
_NOT_SECRET_NAMES = {"PWD", "OLDPWD", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "SESSION_MANAGER",
                     "DESKTOP_SESSION", "XDG_SESSION_TYPE", "XDG_SESSION_CLASS", "XDG_SESSION_DESKTOP",
                     "XDG_SESSION_ID", "KEYBOARD", "PIP_KEYRING_PROVIDER",
                     "SIG_KEY"}  # modinfo: the id of the public key that signed the module
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9_+=.-]+")


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a name (variable, key, parameter) says its value is a secret: ``HF_TOKEN``, ``luks.key``, ``apiKey``."""
    name = name.strip("\"' ")
    upper = name.upper()
    if upper in _NOT_SECRET_NAMES or not name:
        return False
    words = formats()["secret_env_words"]
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
    return is_secret_variable(name, value) or bool(parts & set(formats()["query_words"]["words"]))


@lru_cache(maxsize=4096)
def _service(name: str) -> bool:
    parts = {p.lower() for p in _PARTS.findall(name)}
    return bool(parts & set(formats()["service_names"]["words"]))


def token_like(value: str) -> bool:
    """A value shaped like a generated credential: long, letters and digits, high entropy (gitleaks' test)."""
    rule = formats()["service_names"]
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


JUDGE = _Judge()


def secret_env(environ: Mapping[str, str]) -> Dict[str, str]:
    """The environment variables that hold secrets, with their values."""
    return {k: v for k, v in environ.items() if is_secret_variable(k, v)}


@lru_cache(maxsize=1)
def formats() -> dict:
    return json.loads(_DATA.read_text(encoding="utf-8"))
