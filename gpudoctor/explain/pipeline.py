"""Run the explain pipeline over inputs: scan, read context, diagnose (the API commands and tests call)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Dict, Iterable, List, Optional, Tuple

from gpudoctor.explain import catalog as _catalog
from gpudoctor.explain import fallback
from gpudoctor.explain.context import Context, read_flags, read_machine, read_text
from gpudoctor.explain.diagnose import Diagnoser, Diagnosis, Hit, Note, typed_values
from gpudoctor.explain.normalize import normalize
from gpudoctor.explain.scan import HEAD_BYTES
from gpudoctor.explain.sources import BadInput, Source, resolve, scan

# A log of any size is read at hundreds of MB/s; a hostile one (every line an error, a gzip
# bomb of distinct messages) is cut here and its diagnosis says so.
TIME_LIMIT_S = 60.0

__all__ = ["BadInput", "Diagnosis", "Note", "Result", "explain", "explain_text", "resolve"]


@dataclass
class Result:
    diagnoses: List[Diagnosis]
    notes: List[Note]
    context: Context
    inputs: List[Dict[str, Any]] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 0 if self.diagnoses else 1


def _hits(source: Source, result, catalog) -> List[Hit]:
    hits = []
    for sig_id, h in result.hits.items():
        sig = catalog.by_id[sig_id]
        hits.append(Hit(sig, source.name, list(h.lines), h.count, h.excerpt, typed_values(sig, h.values),
                        [(source.name, n) for n in h.lines]))
    return hits


def _context_text(result) -> str:
    windows = [w for h in result.hits.values() for w in h.windows]
    return "\n".join([result.head.decode("utf-8", "replace")] + windows)


def explain(sources: Iterable[Source], flags: Iterable[str] = (), facts=None, stdin: Optional[BinaryIO] = None,
            catalog=None, jobs: Optional[int] = None, vocabulary: bool = True,
            time_limit: Optional[float] = TIME_LIMIT_S) -> Result:
    """Scan every source and diagnose them together (one log split over several files is one story).

    Nothing known in the text: a second reading of it normalised (colour codes, typography, wrapped
    lines, DLL names), then, with ``vocabulary``, the ranked reading of its words (``fallback``).
    Reading stops after ``time_limit`` seconds (None: no limit); what was read is diagnosed,
    and each input cut short says so (``stopped`` in its input entry, and a warning)."""
    catalog = catalog or _catalog.load()
    deadline = None if time_limit is None else time.monotonic() + time_limit
    ctx = Context()
    read_flags(ctx, flags, "--context")
    if facts is not None:
        read_machine(ctx, facts)
    hits: List[Hit] = []
    inputs, warnings, texts = [], [], []
    for source in sources:
        if deadline is not None and time.monotonic() > deadline:
            inputs.append({"name": source.name, "kind": source.kind, "bytes": 0, "lines": 0,
                           "stopped": f"not read: the time limit of {time_limit:g} s was reached before it"})
            warnings.append(f"{source.name}: {inputs[-1]['stopped']}")
            continue
        result = scan(source, catalog, stdin, jobs, deadline)
        inputs.append({"name": source.name, "kind": source.kind, "bytes": result.bytes_read, "lines": result.lines})
        _note_stop(inputs[-1], warnings, result.stopped_at, time_limit)
        text = _context_text(result)
        if not result.hits and result.bytes_read <= HEAD_BYTES:
            text = normalize(text)
            result = scan(Source(source.name, "text", text=text), catalog)
        texts.append((source.name, text))
        read_text(ctx, _context_text(result), catalog)
        hits.extend(_hits(source, result, catalog))
        warnings.extend(source.notes)
    diagnoser = Diagnoser(catalog, ctx, facts)
    diagnoses, notes = diagnoser.run(_merge_hits(hits))
    # a note already says what the text is (a bug, a CPU-only run); a harmless line (TensorFlow's start-up noise)
    # says only what it is not, so the words of the other lines are still read
    # the flags the user or the machine gave; those read from the text are its own words already
    given = {f for f in ctx.flags if not ctx.sources.get(f, "").startswith("text")}
    if vocabulary and not diagnoses and all(n.kind == "harmless" for n in notes):
        found = fallback.read(_without_lines(texts, notes, catalog), given, diagnoser.machine, facts)
        diagnoses = [found] if found is not None else []
    elif vocabulary and diagnoses and all(_words_only(d, catalog) for d in diagnoses):
        # a message in words alone ("CUDA initialization failure") names no cause; an error code on its own lines
        # ("... with error 222") does: that reading goes first when it names another family
        found = fallback.read(_near(texts, diagnoses), given, diagnoser.machine, facts, by_code=True)
        if found is not None and found.family not in {d.family for d in diagnoses}:
            diagnoses = [found] + diagnoses
    return Result(diagnoses, notes, ctx, inputs, warnings)


def _near(texts: List[Tuple[str, str]], diagnoses: List[Diagnosis]) -> List[Tuple[str, str]]:
    """The texts with only the lines of the diagnoses' own messages kept, and the line on either side."""
    keep: Dict[str, set] = {}
    for d in diagnoses:
        keep.setdefault(d.source, set()).update(n + k for n in d.lines for k in (-1, 0, 1))
    return [(name, "\n".join(line if n in keep.get(name, ()) else "" for n, line in enumerate(text.split("\n"), 1)))
            for name, text in texts]


def _words_only(diagnosis: Diagnosis, catalog) -> bool:
    """A diagnosis of a signature that reads a message's words only (``fallback``), not a known message."""
    sig = catalog.by_id.get(diagnosis.id)
    return sig is not None and sig.fallback


def _without_lines(texts: List[Tuple[str, str]], notes: List[Note], catalog) -> List[Tuple[str, str]]:
    """The texts with the lines the (harmless) notes matched blanked: their words are no complaint."""
    patterns = [p for sig in catalog.signatures if sig.id in {n.id for n in notes} for p in sig.patterns]
    return [(name, "\n".join("" if any(p.search(line) for p in patterns) else line for line in text.split("\n")))
            for name, text in texts]


def _note_stop(entry: Dict[str, Any], warnings: List[str], stopped_at: Optional[int], limit: Optional[float]) -> None:
    """An input the time limit cut short says where, in its entry and as a warning."""
    if stopped_at is not None:
        entry["stopped"] = (f"stopped after {limit:g} s (the time limit), {stopped_at / 2 ** 20:.1f} MiB in: "
                            "the rest was not read, and errors in it are not diagnosed")
        warnings.append(f"{entry['name']}: {entry['stopped']}")


def _merge_hits(hits: List[Hit]) -> List[Hit]:
    """One Hit per signature across inputs: the first input's lines and values, every occurrence."""
    by_id: Dict[str, Hit] = {}
    for h in hits:
        first = by_id.get(h.sig.id)
        if first is None:
            by_id[h.sig.id] = h
        else:
            first.count += h.count
            first.occurrences.extend(h.occurrences)
    return list(by_id.values())


def explain_text(text: str, flags: Iterable[str] = (), facts=None, vocabulary: bool = True) -> Result:
    """Explain one error message or log given as a string (the API tests and other tools use)."""
    return explain([Source("<text>", "text", text=text)], flags, facts, vocabulary=vocabulary)
