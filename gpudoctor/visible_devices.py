"""CUDA_VISIBLE_DEVICES read the way the CUDA runtime reads it, and mapped to physical GPUs.

Pure functions, no I/O. The rules (CUDA programming guide, "CUDA Environment
Variables"; torch mirrors them in ``torch.cuda._parse_visible_devices``):

* unset: every GPU is visible; set but empty: none is.
* integers are read like ``strtoul``: leading blanks skipped, trailing junk ignored
  (``"1gpu2"`` is 1); an entry that does not start with a number, or a negative one
  (``-1``), ends the list: ``0,2,-1,1`` shows GPUs 0 and 2 only.
* a list that starts with ``GPU-`` or ``MIG-`` is a UUID list; a UUID may be shortened
  to any prefix that names one device; an entry without the prefix, an unknown or an
  ambiguous prefix ends the list.
* naming the same device twice hides every GPU.
* an ordinal at or beyond the number of GPUs ends the list too.

Integer entries count in CUDA's order, which is fastest first unless
``CUDA_DEVICE_ORDER=PCI_BUS_ID``; nvidia-smi counts in PCI bus order. NVIDIA documents
FASTEST_FIRST only as "a simple heuristic", so the order is taken, most certain first, from:
PCI order when it is asked for or all GPUs are one model; the order a CUDA program actually
saw when one was probed (torch's device list); else compute capability, highest first
(a newer architecture first, as observed in real threads), equal models in PCI order. When
two different models share a compute capability the order between them cannot be known
from the recorded facts, and the mapping says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

ORDERS = ("FASTEST_FIRST", "PCI_BUS_ID")
DEFAULT_ORDER = "FASTEST_FIRST"
_LEADING_INT = re.compile(r"^\s*([+-]?\d+)")
ULONG_MAX = 2 ** 64 - 1


@dataclass(frozen=True)
class Problem:
    """Something about the value worth telling; ``hides_all`` when it leaves no GPU visible."""

    code: str  # empty | negative | invalid | duplicate | lenient | spaces | beyond_count | unknown_uuid
    #            | ambiguous_uuid | mig_single | bad_order
    message: str
    hides_all: bool = False


@dataclass(frozen=True)
class Spec:
    """What CUDA makes of the variable before it looks at the GPUs."""

    raw: Optional[str]                  # None: the variable is not set
    mode: str                           # "all" | "index" | "uuid" | "mig"
    entries: Tuple[str, ...] = ()       # accepted entries in order: "1", "GPU-8932f937", "MIG-..."
    ignored: Tuple[str, ...] = ()       # entries at and after the one that ended the list
    problems: Tuple[Problem, ...] = ()

    @property
    def is_set(self) -> bool:
        return self.raw is not None


@dataclass(frozen=True)
class Visible:
    """One device a CUDA program sees: its CUDA index and the physical GPU behind it."""

    cuda_index: int
    entry: Optional[str]  # the entry that selected it; None when the variable is unset
    gpu: Any              # the physical GPU: an object with index, name, uuid, pci_bus_id
    mig: Any = None       # the MIG device, when a MIG UUID selected it


# How the CUDA order of the GPUs was found (see the module docstring), most certain first.
CERTAIN = ("pci_order", "observed")


@dataclass(frozen=True)
class Mapping:
    spec: Spec
    visible: Tuple[Visible, ...]
    problems: Tuple[Problem, ...]  # the spec's problems, then those found against the GPUs
    order: str                     # the CUDA_DEVICE_ORDER in effect
    order_known: bool              # False: CUDA may number these GPUs unlike nvidia-smi
    gpus: Tuple[Any, ...] = ()     # the physical GPUs, in nvidia-smi order
    order_source: str = "pci_order"  # pci_order | observed | compute_capability | unknown
    cuda_order: Tuple[Any, ...] = ()  # the physical GPUs in CUDA's enumeration order

    @property
    def certain(self) -> bool:
        return self.order_source in CERTAIN

    def to_dict(self) -> dict:
        """The mapping as a report carries it (renderers show this, they never recompute it)."""
        visible_ids = {id(v.gpu) for v in self.visible}
        return {
            "cuda_visible_devices": self.spec.raw, "mode": self.spec.mode, "order": self.order,
            "order_source": self.order_source,
            "certain": self.certain, "order_known": self.order_known,
            "visible": [{"cuda_index": v.cuda_index, "entry": v.entry, "gpu_index": getattr(v.gpu, "index", None),
                         "name": getattr(v.gpu, "name", None), "uuid": getattr(v.gpu, "uuid", None),
                         "pci_bus_id": getattr(v.gpu, "pci_bus_id", None),
                         "compute_cap": getattr(v.gpu, "compute_cap", None),
                         "mig_enabled": getattr(v.gpu, "mig_mode", None) == "Enabled",
                         "mig_uuid": getattr(v.mig, "uuid", None),
                         "mig": None if v.mig is None else {k: getattr(v.mig, k, None)
                                                            for k in ("uuid", "profile", "gi_id", "ci_id")}}
                        for v in self.visible],
            "hidden": [{"gpu_index": getattr(g, "index", None), "name": getattr(g, "name", None),
                        "pci_bus_id": getattr(g, "pci_bus_id", None), "uuid": getattr(g, "uuid", None),
                        "compute_cap": getattr(g, "compute_cap", None)}
                       for g in self.gpus if id(g) not in visible_ids],
            "problems": [{"code": p.code, "message": p.message, "hides_all": p.hides_all} for p in self.problems],
        }

    @property
    def physical_count(self) -> int:
        return len(self.gpus)

    def gpu_for(self, entry: str) -> Any:
        """The physical GPU one entry names on its own (None if it names none): "2", "GPU-ef1d". An
        index counts in this mapping's CUDA order (CUDA_DEVICE_ORDER, or the order a program saw)."""
        alone = resolve(parse(entry.strip()), self.cuda_order or self.gpus, "PCI_BUS_ID")  # already in order
        return alone.visible[0].gpu if alone.visible else None

    @property
    def hides_all(self) -> bool:
        return self.physical_count > 0 and not self.visible


# --- parsing ---------------------------------------------------------------------------

def parse(raw: Optional[str]) -> Spec:
    """Read CUDA_VISIBLE_DEVICES as CUDA does, before looking at the GPUs."""
    if raw is None:
        return Spec(None, "all")
    for prefix, mode in (("GPU-", "uuid"), ("MIG-", "mig")):
        if raw.startswith(prefix):
            return _parse_uuids(raw, prefix, mode)
    return _parse_indices(raw)


def _strtoul(text: str) -> Optional[int]:
    """strtoul saturates at ULONG_MAX; so does this, before int() meets 5,000 digits (ValueError).

    Leading zeros are dropped first: ``0000…01`` with 5,000 zeros is 1, as for strtoul."""
    m = _LEADING_INT.match(text)
    if not m:
        return None
    sign = -1 if m.group(1).startswith("-") else 1
    digits = m.group(1).lstrip("+-").lstrip("0") or "0"
    if len(digits) > 20:
        return sign * ULONG_MAX
    return sign * min(int(digits), ULONG_MAX)


def _parse_indices(raw: str) -> Spec:
    parts = raw.split(",")
    entries: List[str] = []
    seen = set()  # a set beside the list: 16,000 entries took 8 s with `in entries`
    notes: List[Problem] = []
    for i, part in enumerate(parts):
        value = _strtoul(part)
        if value is None or value < 0:
            ignored = tuple(p.strip() for p in parts[i:])
            return Spec(raw, "index", tuple(entries), ignored, tuple(notes) + (_ended(raw, part, value, ignored,
                                                                                        bool(entries)),))
        if str(value) in seen:
            dup = Problem("duplicate", f"GPU {value} is listed twice, which makes CUDA show no GPU at all",
                          hides_all=True)
            return Spec(raw, "index", (), tuple(p.strip() for p in parts), tuple(notes) + (dup,))
        token = part.strip()
        if token.lstrip("+") != str(value):
            notes.append(Problem("lenient", f"{token!r} is read as {value}: CUDA keeps the leading digits "
                                            "and ignores the rest"))
        elif token != part and "spaces" not in seen:
            seen.add("spaces")
            notes.append(Problem("spaces", f"{raw!r} contains spaces; CUDA skips them before a number, "
                                           "but not in a UUID list, and many launchers do not: remove them"))
        entries.append(str(value))
        seen.add(str(value))
    return Spec(raw, "index", tuple(entries), (), tuple(notes))


def _ended(raw: str, part: str, value: Optional[int], ignored: Sequence[str], some_kept: bool) -> Problem:
    token = part.strip()
    if not raw.strip():
        return Problem("empty", "the variable is set but empty, which hides every GPU", hides_all=True)
    if value is not None:
        why, code = f"{token!r} is negative", "negative"
    elif not token:
        why, code = "an empty entry (two commas in a row, or a trailing comma)", "invalid"
    else:
        why, code = f"{token!r} is neither a GPU index nor a GPU-/MIG- UUID", "invalid"
    rest = [x for x in ignored[1:] if x]
    tail = f" ({', '.join(rest)} after it {'is' if len(rest) == 1 else 'are'} ignored too)" if rest else ""
    if some_kept:
        return Problem(code, f"{why}: CUDA stops reading the list there{tail}")
    return Problem(code, f"{why}: CUDA stops reading the list there and shows no GPU{tail}", hides_all=True)


def _parse_uuids(raw: str, prefix: str, mode: str) -> Spec:
    parts = raw.split(",")
    entries: List[str] = []
    seen = set()
    for i, part in enumerate(parts):
        if part in seen:
            dup = Problem("duplicate", f"{part} is listed twice, which makes CUDA show no GPU at all",
                          hides_all=True)
            return Spec(raw, mode, (), tuple(parts), (dup,))
        if not part.startswith(prefix):
            ignored = tuple(p.strip() for p in parts[i:])
            if part.strip().startswith(prefix):
                why = Problem("invalid", f"{part!r} starts with a space, so it is not read as a UUID: CUDA "
                                         f"stops there and ignores {', '.join(ignored)}; remove the spaces")
            else:
                why = Problem("invalid", f"{part.strip()!r} does not start with {prefix}: in a UUID list CUDA "
                                         f"stops there and ignores {', '.join(ignored)}")
            return Spec(raw, mode, tuple(entries), ignored, (why,))
        entries.append(part)
        seen.add(part)
    problems: Tuple[Problem, ...] = ()
    if mode == "mig" and len(entries) > 1:
        problems = (Problem("mig_single", f"a CUDA process enumerates one MIG instance only: {entries[0]} is "
                                          f"used, {', '.join(entries[1:])} not"),)
    return Spec(raw, mode, tuple(entries), (), problems)


def device_order(raw: Optional[str]) -> Tuple[str, Optional[Problem]]:
    """The CUDA_DEVICE_ORDER in effect, and a problem when the value is not one CUDA knows."""
    if raw is None or raw == "":
        return DEFAULT_ORDER, None
    if raw in ORDERS:
        return raw, None
    return DEFAULT_ORDER, Problem("bad_order", f"CUDA_DEVICE_ORDER={raw!r} is neither FASTEST_FIRST nor "
                                               "PCI_BUS_ID; CUDA ignores it and numbers the fastest GPU first")


# --- mapping to the physical GPUs ------------------------------------------------------

def mixed_models(gpus: Sequence[Any]) -> bool:
    """More than one GPU model: only then can CUDA's fastest-first order differ from PCI order."""
    return len({(getattr(g, "name", None) or "?").strip() for g in gpus}) > 1


def _cc_key(g: Any) -> Tuple[int, ...]:
    cc = getattr(g, "compute_cap", None) or ""
    try:
        return tuple(-int(x) for x in str(cc).split("."))
    except ValueError:
        return (1,)  # unknown capability: after every known one


def cuda_order(gpus: Sequence[Any], order: str, observed: Optional[Sequence[str]] = None) -> Tuple[list, str]:
    """(the GPUs in CUDA's order, how that order was found). ``observed`` are the UUIDs a CUDA
    program enumerated with every GPU visible (torch's device list under an unset
    CUDA_VISIBLE_DEVICES), in its order."""
    if order == "PCI_BUS_ID" or not mixed_models(gpus):
        return list(gpus), "pci_order"
    by_uuid = {(getattr(g, "uuid", None) or "").lower(): g for g in gpus}
    seen = [by_uuid.get((u or "").lower()) for u in observed or ()]
    if observed and len(seen) == len(gpus) and all(seen) and len({id(g) for g in seen}) == len(gpus):
        return seen, "observed"
    ranked = sorted(gpus, key=_cc_key)  # stable: equal capabilities keep PCI order
    models = {}
    for g in gpus:
        models.setdefault(_cc_key(g), set()).add((getattr(g, "name", None) or "?").strip())
    known = all(len(names) == 1 for names in models.values()) and (1,) not in models
    return ranked, "compute_capability" if known else "unknown"


def resolve(spec: Spec, gpus: Sequence[Any], order_raw: Optional[str] = None,
            observed: Optional[Sequence[str]] = None) -> Mapping:
    """Which physical GPU each CUDA index stands for. ``gpus`` are in nvidia-smi (PCI bus) order;
    ``observed`` is the CUDA order a program saw, when known (see :func:`cuda_order`)."""
    order, order_problem = device_order(order_raw)
    ordered, source = cuda_order(gpus, order, observed)
    order_known = source in CERTAIN and [id(g) for g in ordered] == [id(g) for g in gpus]
    problems = list(spec.problems) + ([order_problem] if order_problem else [])
    if spec.mode == "all":
        chosen = [(None, g, None) for g in ordered]
    elif spec.mode == "index":
        chosen = _by_index(spec, ordered, problems)
    else:
        chosen = _by_uuid(spec, gpus, problems)
    if spec.mode == "mig":
        chosen = chosen[:1]
    visible = tuple(Visible(i, entry, gpu, mig) for i, (entry, gpu, mig) in enumerate(chosen))
    return Mapping(spec, visible, tuple(problems), order, order_known, tuple(gpus), source, tuple(ordered))


def _by_index(spec: Spec, gpus: Sequence[Any], problems: List[Problem]) -> List[tuple]:
    chosen = []
    for pos, entry in enumerate(spec.entries):
        n = int(entry)
        if n >= len(gpus):
            rest = spec.entries[pos + 1:] + spec.ignored
            tail = f"; {', '.join(rest)} after it {'is' if len(rest) == 1 else 'are'} ignored" if rest else ""
            problems.append(Problem("beyond_count", f"GPU {n} does not exist: this machine shows {len(gpus)} "
                                                    f"GPU(s), numbered 0 to {len(gpus) - 1}{tail}",
                                    hides_all=not chosen))
            break
        chosen.append((entry, gpus[n], None))
    return chosen


def _by_uuid(spec: Spec, gpus: Sequence[Any], problems: List[Problem]) -> List[tuple]:
    chosen: List[tuple] = []
    seen = set()
    for pos, entry in enumerate(spec.entries):
        hits = _uuid_hits(entry, gpus, spec.mode)
        if len(hits) != 1:
            rest = spec.entries[pos + 1:] + spec.ignored
            tail = f"; {', '.join(rest)} after it ignored" if rest else ""
            code, what = (("unknown_uuid", "matches no device on this machine") if not hits else
                          ("ambiguous_uuid", f"is the start of {len(hits)} UUIDs"))
            problems.append(Problem(code, f"{entry} {what}: CUDA stops the list there{tail}",
                                    hides_all=not chosen))
            break
        gpu, mig = hits[0]
        key = (id(gpu), id(mig))
        if key in seen:
            problems.append(Problem("duplicate", f"{entry} names a device already listed, which makes CUDA "
                                                 "show no GPU at all", hides_all=True))
            return []
        seen.add(key)
        chosen.append((entry, gpu, mig))
    return chosen


def _uuid_hits(entry: str, gpus: Sequence[Any], mode: str) -> List[tuple]:
    want = entry.lower()
    hits = []
    for g in gpus:
        if mode == "uuid":
            if (getattr(g, "uuid", None) or "").lower().startswith(want):
                hits.append((g, None))
            continue
        for m in getattr(g, "mig_devices", ()) or ():
            if (getattr(m, "uuid", None) or "").lower().startswith(want):
                hits.append((g, m))
        # The pre-R470 form names the parent GPU: MIG-GPU-<uuid>/<gi>/<ci>.
        old = re.match(r"^mig-(gpu-[0-9a-f-]+)/(\d{1,9})/(\d{1,9})$", want)
        if old and (getattr(g, "uuid", None) or "").lower() == old.group(1):
            hits.extend((g, m) for m in getattr(g, "mig_devices", ()) or ()
                        if getattr(m, "gi_id", None) == int(old.group(2)) and getattr(m, "ci_id", None) ==
                        int(old.group(3)))
    return hits
