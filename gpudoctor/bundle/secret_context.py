"""Secrets known by where they stand, not by their shape.

Credentials in URLs (``https://user:pa/ss@w0rd@host``, the password holding "/" and "@")
and in proxies without a scheme (``user:pass@proxy:3128``), query parameters whose name is
secret (``&sig=`` of an Azure SAS), and ``name=value`` / ``name: value`` / ``"name": "value"``
/ ``<name>value</name>`` where the name is secret (``password="correct horse battery
staple"``, ``luks.key=`` on the kernel command line), values of any length.

Every pattern runs in linear time: each starts at a literal or a separator (found by re's
fast search) or where a lookbehind says a word starts, so no run is rescanned from inside,
and nothing after an open-ended run can fail; the decisions (is this name secret? where
does this value end?) are made in Python, reading a value only for a secret name.
"""

from __future__ import annotations

import re
from typing import Callable, List, Optional, Protocol, Tuple

MARK = "<redacted"
# A service's name (ALGOLIA_ADMIN) makes a value secret only when it looks like a token; tokens
# are shorter than this, and a longer value is not scanned to its end for every such name.
MAX_SERVICE_VALUE = 512
Mark = Callable[[str], str]


class Judge(Protocol):
    """What makes a name secret: redact.py's data-driven rules."""

    def secret_name(self, name: str) -> bool: ...
    def service_name(self, name: str) -> bool: ...
    def token_like(self, value: str) -> bool: ...
    def parameter(self, name: str, value: str) -> bool: ...


# From "://" on (a literal start is what makes re fast), after a scheme character.
_URL = re.compile(r"://(?<=[A-Za-z0-9+.-]://)[^\s\"'<>]*")
_HOST = re.compile(r"(?:\[[0-9A-Fa-f:.]*\]|[A-Za-z0-9._~%-]+)(?::\d{0,5})?(?![A-Za-z0-9._~%:@-])")
_PORT_PATH = re.compile(r"\d{1,5}(?:[/?#]|$)")
_PROXY = re.compile(r"(?<![^\s\"'=,;(\[{])(?!mailto:)[A-Za-z0-9._~%+-]{1,256}:(?!//)[^\s\"'<>@]+(?:@[^\s\"'<>@]+)*?@"
                    r"(?=(?:\[[0-9A-Fa-f:.]*\]|[A-Za-z0-9.-]+)(?::\d{1,5})?(?:[\s/\"'<>,;)\]}]|$))", re.M)
_QUERY = re.compile(r"[?&](?P<name>[A-Za-z0-9_.~%\[\]-]+)=(?P<value>[^&#\s\"'<>]*)")
# name=, name:, "name":, name := ... matched in the reversed text, so that the match starts at the
# separator (re finds a character class fast, a name that may start anywhere slowly): in forward
# terms, a name starting with a letter, not inside a longer word, path or query, and = not ==, =>, =~.
_REVERSED_NAME_SEP = re.compile(r"[=:](?<![=>~]=)(?<![:/\\]:)(?P<pre>[ \t]*[\"']?)"
                                r"(?P<rname>[A-Za-z0-9_.-]*[A-Za-z_])(?![A-Za-z0-9_.\-?&/\\])")
_VALUE = re.compile(r"\"(?:[^\"\\\n]|\\.?)*(?:\"|$)|'(?:[^'\\\n]|\\.?)*(?:'|$)|[^\s\"'<>;]*", re.M)
_XML_TAG = re.compile(r"<([A-Za-z_][A-Za-z0-9_.-]*)>")
_XML = re.compile(r"<(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)>(?P<value>[^<]*)</(?P=name)>")


def redact(s: str, mark: Mark, judge: Judge) -> str:
    s = url_credentials(s, mark)
    s = query_parameters(s, mark, judge)
    s = proxy_credentials(s, mark)
    s = assignments(s, mark, judge)
    return xml_elements(s, mark, judge)


def _secret(judge: Judge, name: str) -> Optional[int]:
    """How far to read a value of ``name``: None for a secret name (all of it), a bound for a
    service name (judged by the value's shape), 0 for a name that is not secret."""
    if judge.secret_name(name):
        return None
    return MAX_SERVICE_VALUE if judge.service_name(name) else 0


def _judged(judge: Judge, limit: Optional[int], value: str) -> bool:
    return limit is None or (len(value) < limit and judge.token_like(value))


# --- scheme://user:password@host --------------------------------------------------------------

def url_credentials(s: str, mark: Mark) -> str:
    if "://" not in s:
        return s
    return _URL.sub(lambda m: _url_run(m.group(0), mark), s)


def _url_run(run: str, mark: Mark) -> str:
    """Each URL of a run without blanks ("a://x:y@h,b://u:p@k"), cut where the next "://" starts."""
    return "://".join(_authority(part, mark) if i else part for i, part in enumerate(run.split("://")))


def _authority(rest: str, mark: Mark) -> str:
    at = _userinfo_end(rest)
    return rest if at is None else mark("url-credentials") + rest[at:]


def _userinfo_end(rest: str) -> Optional[int]:
    """Where user[:password] ends (the '@'): the last '@' followed by a host, the password may hold '/' and '@'."""
    colon = rest.find(":")
    authority = len(rest)
    for c in "/?#":
        i = rest.find(c)
        authority = i if 0 <= i < authority else authority
    if 0 < colon < authority and "@" not in rest[:colon]:
        at = len(rest)
        while True:
            at = rest.rfind("@", colon + 1, at)
            if at < 0:
                break
            if _HOST.match(rest, at + 1) and not _PORT_PATH.match(rest, colon + 1, at + 1):
                return at
    at = rest.rfind("@", 0, authority)
    return at if at > 0 else None


# --- user:password@proxy:3128, query parameters ------------------------------------------------

def proxy_credentials(s: str, mark: Mark) -> str:
    if "@" not in s:
        return s
    return _PROXY.sub(lambda m: m.group(0) if m.group(0).startswith(MARK) else mark("proxy-credentials") + "@", s)


def query_parameters(s: str, mark: Mark, judge: Judge) -> str:
    if "=" not in s:
        return s

    def one(m: re.Match) -> str:
        value = m.group("value")
        if not value or value.startswith(MARK) or not judge.parameter(m.group("name"), value):
            return m.group(0)
        return m.group(0)[:m.start("value") - m.start()] + mark("secret-query-parameter")

    return _QUERY.sub(one, s)


# --- name=value, "name": "value", <name>value</name> ------------------------------------------

def assignments(s: str, mark: Mark, judge: Judge) -> str:
    """Values of secret names. A non-secret value is scanned on (``ENV="PASSWORD=x"`` holds one)."""
    if "=" not in s and ":" not in s:
        return s
    n = len(s)
    found = [(n - m.end("rname"), m.group("rname")[::-1], n - 1 - m.start(), m.group("pre"))
             for m in _REVERSED_NAME_SEP.finditer(s[::-1])]
    out: List[str] = []
    pos = 0
    for start, name, sep_at, pre in reversed(found):
        limit = _secret(judge, name) if start >= pos else 0  # 0: inside a value already redacted
        if limit == 0:
            continue
        first, last, end = _value_span(s, sep_at, bool(pre.strip("\"'")), limit)
        value = s[first:last]
        if pre.strip(" \t") and s[first - 1] not in "\"'":
            continue  # "name": 3, "name": [ ... JSON: a secret there is a string, and the rest is structure
        if not value or value.startswith(MARK) or not _judged(judge, limit, value):
            continue
        out += [s[pos:first], mark("secret-assignment"), s[last:end]]
        pos = end
    out.append(s[pos:])
    return "".join(out)


def _value_span(s: str, sep_at: int, blank_before: bool, limit: Optional[int]) -> Tuple[int, int, int]:
    """(first, last) of the value after the separator at ``sep_at``, quotes excluded, and where it ends.

    Quoted: to the closing quote, escapes included, or the end of the line. Unquoted: the
    next blank for ``key=value`` (a command line), the end of the line for ``key = value``
    and ``key: value`` (INI, YAML, HTTP headers, logs), where a value may hold blanks.
    Read no further than ``limit`` characters when one is given.
    """
    start = sep_at + (2 if s.startswith(":=", sep_at) else 1)
    after = start
    while start < len(s) and s[start] in " \t":
        start += 1
    stop = len(s) if limit is None else min(len(s), start + limit)
    end = _VALUE.match(s, start, stop).end()
    if end > start and s[start] in "\"'":
        closed = end - 1 > start and s[end - 1] == s[start]
        return start + 1, end - closed, end
    if blank_before or start > after:
        eol = s.find("\n", start, stop)
        end = stop if eol < 0 else eol
        end -= s[end - 1:end] == "\r"
    return start, end, end


def xml_elements(s: str, mark: Mark, judge: Judge) -> str:
    if "</" not in s or not any(_secret(judge, name) != 0 for name in set(_XML_TAG.findall(s))):
        return s  # nvidia-smi -q -x has 100,000 elements: judged by their few distinct names

    def one(m: re.Match) -> str:
        value = m.group("value")
        if not value.strip() or value.startswith(MARK) or not _judged(judge, _secret(judge, m.group("name")), value):
            return m.group(0)
        return f"<{m.group('name')}>{mark('secret-assignment')}</{m.group('name')}>"

    return _XML.sub(one, s)
