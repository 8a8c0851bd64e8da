"""``--anonymize``: identifying values become consistent pseudonyms.

Host names, user names (and so home paths: /home/alice -> /home/user1), IP and MAC
addresses, GPU serial numbers and UUIDs are replaced. The same value always gets the
same pseudonym within one bundle, and a pseudonym keeps the original's shape: a GPU
UUID stays ``GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`` (so the nvidia-smi parsers and
the CUDA_VISIBLE_DEVICES mapping still work on the replay), a shortened UUID prefix in
CUDA_VISIBLE_DEVICES becomes the same-length prefix of its GPU's pseudonym, a serial
keeps its length. UUID and serial pseudonyms come from a keyed hash with a random key
per bundle, so two bundles of one machine cannot be linked through them.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections import Counter
from typing import Dict, Iterable, Optional, Set

_UUID = re.compile(r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
# A shortened UUID in CUDA_VISIBLE_DEVICES: "GPU-5135", "GPU-513536b6-7d".
_UUID_PREFIX = re.compile(r"(?i)(?<![\w-])(GPU|MIG)-([0-9a-f]{3,8}(?:-[0-9a-f]{1,12}){0,4})(?![\w-])")
_MAC = re.compile(r"(?i)(?<![\w:-])[0-9a-f]{2}([:-])(?:[0-9a-f]{2}\1){4}[0-9a-f]{2}(?![\w:-])")
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?!\.?\w)")
_IPV6 = re.compile(r"(?i)(?<![\w:.])(?:(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}"
                   r"|(?:[0-9a-f]{1,4}:){1,6}:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})(?![\w:])")
_VERSION_BEFORE = re.compile(r"(?i)(?:version|ver|==|>=|<=)\W{0,3}$")
_HOME = re.compile(r"(/home/|/Users/|/var/home/|\\Users\\)([^/\\\s:;'\"<>,=()\[\]]+)")
_SERIALS = (re.compile(r"<(?:\w*serial\w*)>\s*([^<\s]+)\s*</"),
            re.compile(r"(?i)\bSerial(?: Number)?\s*:\s*(\S+)"))
_JOURNAL_HOST = re.compile(r"(?m)^\w{3} [ \d]\d \d\d:\d\d:\d\d (\S+) kernel:")
_KEEP_IPS = ("0.0.0.0", "255.255.255.255")
# Names that identify nobody and are also ordinary words in the data ("ID=ubuntu" in os-release,
# "a cloud VM" in a fix): a host or user with such a name is not hunted for in free text.
_GENERIC_USERS = {"root", "user", "users", "linuxbrew", "shared", "nobody", "ubuntu", "debian", "fedora", "centos",
                  "rocky", "admin", "ec2-user", "cloud-user", "azureuser", "opc", "jovyan", "runner", "vagrant",
                  "guest", "docker"}
_GENERIC_HOSTS = {"", "localhost", "localhost.localdomain", "ubuntu", "debian", "fedora", "centos", "rhel", "rocky",
                  "almalinux", "arch", "archlinux", "opensuse", "suse", "kali", "raspberrypi", "linux", "server",
                  "host", "node", "gpu", "workstation", "desktop", "docker", "container", "default", "master",
                  "worker", "none", "unknown"}
MIN_WORD = 3  # shorter names ("vm", "ml") are replaced only where their meaning is certain (the hostname field)


class Anonymizer:
    """Replaces identifying values with pseudonyms; ``learn`` first, then ``text``."""

    def __init__(self, hostnames: Iterable[str] = (), users: Iterable[str] = (), key: Optional[bytes] = None):
        self.key = key if key is not None else os.urandom(16)
        self.counts: Counter = Counter()
        self.maps: Dict[str, Dict[str, str]] = {}
        self.issued: Set[str] = set()
        self.uuids: Dict[str, str] = {}  # original core (lower case) -> pseudonym core
        self.serials: Set[str] = set()
        self.words: Set[tuple] = set()  # (kind, key) hunted for in free text
        for h in hostnames:
            self.add("host", h)
        for u in users:
            self.add("user", u)

    # --- what to hide ----------------------------------------------------------------
    def add(self, kind: str, value: str) -> None:
        """Hide ``value`` (a host or user name) wherever it appears as a word, unless it is generic."""
        value = (value or "").strip()
        if len(value) < MIN_WORD or value.lower() in (_GENERIC_HOSTS if kind == "host" else _GENERIC_USERS):
            return
        self.pseudonym(kind, value)
        self.words.add((kind, value.lower() if kind == "host" else value))

    def exact(self, kind: str, value: str) -> str:
        """The pseudonym for a field known to hold a ``kind`` (the recorded host name), generic or not."""
        if not value or value in self.issued:
            return value
        return self.pseudonym(kind, value)

    def learn(self, text: str) -> None:
        """Collect names that only the data itself reveals: home directories, serials, journal hosts."""
        for m in _HOME.finditer(text or ""):
            self.add("user", m.group(2))
        for pattern in _SERIALS:
            for m in pattern.finditer(text or ""):
                value = m.group(1)
                if len(value) >= 4 and any(c.isdigit() for c in value) and value not in self.issued:
                    self.serials.add(value)
        for m in _JOURNAL_HOST.finditer(text or ""):
            self.add("host", m.group(1))
        for m in _UUID.finditer(text or ""):
            self._uuid_core(m.group(0))


    # --- pseudonyms ------------------------------------------------------------------
    def pseudonym(self, kind: str, value: str) -> str:
        table = self.maps.setdefault(kind, {})
        key = value.lower() if kind == "host" else value
        if key not in table:
            table[key] = f"{kind}{len(table) + 1}"
            self.issued.add(table[key])
        return table[key]

    def _hash_hex(self, value: str, n: int) -> str:
        digest = hmac.new(self.key, value.encode(), hashlib.sha256).hexdigest()
        while len(digest) < n:
            digest += hashlib.sha256(digest.encode()).hexdigest()
        return digest[:n]

    def _uuid_core(self, core: str) -> str:
        low = core.lower()
        if low in self.issued:
            return core
        if low not in self.uuids:
            h = self._hash_hex("uuid:" + low, 32)
            fake = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
            self.uuids[low] = fake
            self.issued.add(fake)
        fake = self.uuids[low]
        return fake.upper() if core.isupper() else fake

    def _serial(self, value: str) -> str:
        table = self.maps.setdefault("serial", {})
        if value not in table:
            h = self._hash_hex("serial:" + value, len(value))
            if value.isdigit():
                fake = str(int(h, 16))[-len(value):].zfill(len(value))
            else:
                fake = "SN" + h[:max(len(value) - 2, 4)].upper()
            table[value] = fake
            self.issued.add(fake)
        return table[value]

    def _numbered(self, kind: str, value: str, make) -> str:
        if value in self.issued:
            return value
        table = self.maps.setdefault(kind, {})
        if value not in table:
            table[value] = make(len(table) + 1)
            self.issued.add(table[value])
        return table[value]

    # --- rewriting -------------------------------------------------------------------
    def text(self, s: str) -> str:
        if not s:
            return s
        s = self._words(s)
        s = _HOME.sub(lambda m: m.group(1) + self._home_user(m.group(2)), s)
        s = _UUID.sub(lambda m: self._count("uuid", self._uuid_core(m.group(0)), m.group(0)), s)
        s = _UUID_PREFIX.sub(self._prefix, s)
        s = _MAC.sub(self._mac, s)
        s = _IPV4.sub(self._ipv4, s)
        return _IPV6.sub(self._ipv6, s)

    def _count(self, kind: str, new: str, old: str) -> str:
        if new != old:
            self.counts[kind] += 1
        return new

    def _words(self, s: str) -> str:
        for kind, flags in (("host", re.I), ("user", 0)):
            keys = [k for (k_kind, k) in self.words if k_kind == kind]
            if not keys:
                continue
            table = self.maps[kind]
            alts = "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))
            pattern = re.compile(rf"(?<![\w-])(?:{alts})(?![\w-])", flags)
            s = pattern.sub(lambda m, t=table, k=kind: self._count(
                k, t[m.group(0).lower() if k == "host" else m.group(0)], m.group(0)), s)
        for serial in sorted(self.serials, key=len, reverse=True):
            s = re.sub(rf"(?<![\w]){re.escape(serial)}(?![\w])",
                       lambda m: self._count("serial", self._serial(m.group(0)), m.group(0)), s)
        return s

    def _home_user(self, name: str) -> str:
        if name in self.issued or name in _GENERIC_USERS:
            return name
        return self._count("user", self.pseudonym("user", name), name)  # /home/ml: a path, so certain

    def _prefix(self, m: re.Match) -> str:
        kind, hexpart = m.group(1), m.group(2).lower()
        if any(fake.startswith(hexpart) for fake in self.issued if len(fake) == 36):
            return m.group(0)  # already a pseudonym (or a prefix of one)
        hits = [fake for orig, fake in self.uuids.items() if orig.startswith(hexpart)]
        fake = hits[0][:len(hexpart)] if len(hits) == 1 else self._uuid_core(hexpart.ljust(36, "0"))[:len(hexpart)]
        return self._count("uuid", f"{kind}-{fake}", m.group(0))

    def _mac(self, m: re.Match) -> str:
        value, sep = m.group(0).lower(), m.group(1)
        if value.replace(sep, "") in ("000000000000", "ffffffffffff"):
            return m.group(0)
        return self._count("mac", self._numbered("mac", value, lambda n: sep.join(
            ["02", "00", "00", "00", f"{n >> 8 & 255:02x}", f"{n & 255:02x}"])), m.group(0))

    def _ipv4(self, m: re.Match) -> str:
        value = m.group(0)
        before = m.string[max(0, m.start() - 12):m.start()]
        if value in _KEEP_IPS or value.startswith(("127.", "255.")) or _VERSION_BEFORE.search(before):
            return value
        fake = self._numbered("ip", value, lambda n: f"192.0.{2 + (n - 1) // 250}.{(n - 1) % 250 + 1}")  # RFC 5737
        return self._count("ip", fake, value)

    def _ipv6(self, m: re.Match) -> str:
        value = m.group(0)
        if len(value) < 6 or not any(c.isdigit() for c in value):
            return value  # "a::b" is C++ ("c10::Error"), not an address
        return self._count("ip", self._numbered("ip6", value.lower(), lambda n: f"2001:db8::{n:x}"), value)
