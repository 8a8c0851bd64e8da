"""The words of GPU environment errors and the error-code tables, read from ``data/error_vocabulary.json``
and ``data/error_codes.json`` (explain's fallback when no known message matched)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Mapping, Optional, Tuple

from ._load import load

# strong: a part of the GPU stack or its failure, may make the fallback speak; context: where it ran, only
# ranks; against: a bug in the program, speaks for not_env_problem and never makes the fallback speak.
WEIGHTS = {"strong": 1.0, "context": 0.5, "against": 2.0}


@dataclass(frozen=True)
class Term:
    id: str
    pattern: "re.Pattern"
    kind: str                # "strong", "context" or "against" (WEIGHTS)
    families: Tuple[str, ...]
    what: str                # the term in words: "the CUDA driver library (libcuda.so, nvcuda.dll on Windows)"
    source: str
    with_: Optional[str] = None   # another term (or --context flag) it counts only together with
    framework: bool = False       # the term names a framework (PyTorch, TensorFlow, JAX)
    yields_to: Optional[str] = None   # a table of error codes (cudnnStatus_t): a code of it read says more than the term

    @property
    def weight(self) -> float:
        return WEIGHTS[self.kind]


@dataclass(frozen=True)
class Code:
    table: str               # "cudaError_t", "CUresult", "nvmlReturn_t", "cudnnStatus_t"
    name: str                # "cudaErrorNoDevice"
    number: Optional[int]
    families: Tuple[str, ...]
    meaning: str
    source: str

    @property
    def key(self) -> str:
        """The name as ``squash`` leaves it: CUDA_ERROR_NO_DEVICE, cudaErrorNoDevice and pynvml's
        NVMLError_DriverNotLoaded spell one code each."""
        return squash(self.name)


@dataclass(frozen=True)
class TellApart:
    family: str
    recipe: str
    command: str
    shows: str
    only_in: Optional[str]
    check: Optional[str] = None
    framework: Optional[str] = None   # the term of the one framework this family is about (tensorflow)


def squash(text: str) -> str:
    return text.lower().replace("_", "")


@lru_cache(maxsize=None)
def terms() -> Tuple[Term, ...]:
    return tuple(Term(r["id"], re.compile(r["pattern"], re.IGNORECASE), r["weight"], tuple(r["families"]),
                      r["what"], r["source"], r.get("with"),
                      bool(r.get("framework")), r.get("yields_to")) for r in load("error_vocabulary")["terms"])


@lru_cache(maxsize=None)
def success_lines() -> "re.Pattern":
    """A line that reports a part of the stack working (TensorFlow loaded libcudart, created its GPU device)."""
    rows = load("error_vocabulary").get("success_lines") or ()
    return re.compile("^.*(?:" + "|".join(f"(?:{r['pattern']})" for r in rows) + ").*$" if rows else r"(?!)",
                      re.MULTILINE | re.IGNORECASE)


@lru_cache(maxsize=None)
def codes() -> Tuple[Code, ...]:
    return tuple(Code(r["table"], r["name"], r["number"], tuple(r["families"]), r["meaning"], r["source"])
                 for r in load("error_codes")["codes"])


@lru_cache(maxsize=None)
def codes_by_number() -> Dict[int, Tuple[Code, ...]]:
    """Codes of 30 and above by number (below 30, 'error 2' is too common to mean a CUDA code)."""
    out: Dict[int, Tuple[Code, ...]] = {}
    for code in codes():
        if code.number is not None and code.number >= 30:
            out[code.number] = out.get(code.number, ()) + (code,)
    return out


@lru_cache(maxsize=None)
def small_codes_by_table() -> Tuple[Tuple["re.Pattern[str]", Dict[int, Tuple[Code, ...]]], ...]:
    """Per table that a line can name (``tables`` of error_codes.json): the words naming it, and its codes
    below 30 by number - read only on a line naming that table."""
    out = []
    for row in load("error_codes").get("tables", ()):
        by_number: Dict[int, Tuple[Code, ...]] = {}
        for code in codes():
            if code.table == row["table"] and code.number is not None and code.number < 30:
                by_number[code.number] = by_number.get(code.number, ()) + (code,)
        out.append((re.compile(row["named_by"]), by_number))
    return tuple(out)


@lru_cache(maxsize=None)
def tell_apart() -> Dict[str, TellApart]:
    return {r["family"]: TellApart(r["family"], r["recipe"], r["command"], r["shows"], r.get("only_in"),
                                   framework=r.get("framework"))
            for r in load("error_vocabulary")["tell_apart"]}


@lru_cache(maxsize=None)
def frameworks() -> Tuple[str, ...]:
    """The terms that name a framework (torch, tensorflow, jax): a family of one of them is unlikely when the
    text names another one and not it."""
    return tuple(t.id for t in terms() if t.framework)


def counts() -> Mapping[str, Mapping[str, int]]:
    """feature -> {family: real tuning cases holding it} (``bench/explain_vocabulary.py --write``)."""
    return load("error_vocabulary").get("counts", {})
