"""One object that every byte of a bundle passes through: secrets out, then (optionally) pseudonyms in.

The snapshot is sanitised as a structure (command outputs, argv, file contents and
file *paths*, env values, NVML and framework records) so that the report computed
from it, and the replay of it elsewhere, describe the same redacted machine.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, Dict, Iterator, Optional

from gpudoctor.bundle.anonymize import Anonymizer
from gpudoctor.bundle.redact import SecretRedactor
from gpudoctor.snapshot import Snapshot

# Fields whose keys are names gpudoctor chose (not paths or machine data): keys stay as they are.
_FIXED_KEYS = ("meta", "env", "nvml", "frameworks")


class Sanitizer:
    def __init__(self, secrets: SecretRedactor, anonymizer: Optional[Anonymizer] = None):
        self.secrets = secrets
        self.anonymizer = anonymizer

    @property
    def anonymize(self) -> bool:
        return self.anonymizer is not None

    def text(self, s: str) -> str:
        s = self.secrets.text(s)
        return self.anonymizer.text(s) if self.anonymizer is not None and s else s

    def value(self, obj: Any, keys: bool = False) -> Any:
        """Sanitise every string inside a JSON-like value; dict keys too with ``keys`` (paths)."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {(self.text(k) if keys and isinstance(k, str) else k): self.value(v, keys)
                    for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(self.value(v, keys) for v in obj)
        return obj

    def learn(self, texts) -> None:
        if self.anonymizer is None:
            return
        before = self.secrets.counts.copy()  # learning is not redacting: count each secret once
        for t in texts:
            # Learn from the secret-free text: a token must never become a "user name".
            self.anonymizer.learn(self.secrets.text(t))
        self.secrets.counts = before

    def snapshot(self, snap: Snapshot) -> Snapshot:
        """A sanitised copy of ``snap``; the original is left untouched.

        Fields are walked generically, so a field added to Snapshot later is sanitised
        (keys too: listings and links are keyed by paths) rather than dropped.
        """
        out = Snapshot(source=snap.source)
        for f in fields(Snapshot):
            if f.name in ("commands", "files", "source"):
                continue
            setattr(out, f.name, self.value(getattr(snap, f.name), keys=f.name not in _FIXED_KEYS))
        if self.anonymizer is not None and snap.meta.get("hostname"):
            # The recorded host name is certain to be one, generic ("ubuntu") or short ("vm") as it may be.
            out.meta["hostname"] = self.anonymizer.exact("host", snap.meta["hostname"])
            if out.meta["hostname"] != snap.meta["hostname"]:
                self.anonymizer.counts["host"] += 1
        for key, res in snap.commands.items():
            out.commands[key] = replace(res, argv=tuple(self.text(a) for a in res.argv),
                                        stdout=self.text(res.stdout), stderr=self.text(res.stderr),
                                        error=self.text(res.error) if res.error else res.error)
        for path, rec in snap.files.items():
            new = self.text(path)
            out.files[new] = replace(rec, path=new,
                                     content=self.text(rec.content) if rec.content is not None else None)
        return out

    def counts(self) -> Dict[str, Dict[str, int]]:
        """What was removed, by kind: {"secrets": {...}, "pseudonyms": {...}} (never the values)."""
        out = {"secrets": dict(sorted(self.secrets.counts.items()))}
        if self.anonymizer is not None:
            out["pseudonyms"] = dict(sorted(self.anonymizer.counts.items()))
        return out


def snapshot_texts(snap: Snapshot) -> Iterator[str]:
    """Every string a snapshot holds (keys included), for :meth:`Sanitizer.learn`."""
    for f in fields(Snapshot):
        if f.name not in ("commands", "files", "source"):
            yield from _strings(getattr(snap, f.name))
    for res in snap.commands.values():
        yield from (res.stdout, res.stderr, " ".join(res.argv))
    for path, rec in snap.files.items():
        yield path
        if rec.content:
            yield rec.content


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)

