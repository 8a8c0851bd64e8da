"""What explain hands back: a signature's hits in the inputs, diagnoses and notes (with their JSON form)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from gpudoctor.explain.values import convert, jsonable
from gpudoctor.findings import Fix


@dataclass
class Hit:
    """One signature's matches in the inputs."""

    sig: Any                                  # catalog.Signature
    source: str
    lines: List[int]
    count: int
    excerpt: str
    values: Dict[str, Any]                    # typed, from the first match
    occurrences: List[Tuple[str, int]] = field(default_factory=list)


def _fix_dict(fix: Optional[Fix]) -> Optional[Dict[str, Any]]:
    if fix is None:
        return None
    return {"summary": fix.summary, "commands": list(fix.commands), "needs_root": fix.needs_root,
            "needs_reboot": fix.needs_reboot, "links": list(fix.links), "recipe": fix.kb_id}


@dataclass
class Diagnosis:
    id: str
    family: str
    title: str
    score: int
    recipe: Optional[str]
    source: str
    lines: List[int]
    count: int
    excerpt: str
    values: Dict[str, Any]
    explanation: List[str]
    fix: Optional[Fix]
    also_matched: List[str] = field(default_factory=list)
    occurrences: List[Tuple[str, int]] = field(default_factory=list)
    analysis: Optional[Dict[str, Any]] = None
    via: str = "signature"                    # "signature", "alternative" of another family, or "machine"
    machine: Optional[Dict[str, Any]] = None  # the diagnosis `gpudoctor check` reaches on the recorded machine
    differential: Optional[Any] = None        # differential.Differential, when the text alone cannot decide

    @property
    def confidence(self) -> str:
        return "high" if self.score >= 85 else "medium" if self.score >= 55 else "low"

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "family": self.family, "title": self.title, "confidence": self.confidence,
                "score": self.score, "via": self.via, "input": self.source, "lines": self.lines,
                "count": self.count, "excerpt": self.excerpt,
                "values": {k: jsonable(v) for k, v in self.values.items()},
                "explanation": " ".join(self.explanation), "fix": _fix_dict(self.fix), "also_matched": self.also_matched,
                "occurrences": [{"input": s, "line": n} for s, n in self.occurrences],
                **({"analysis": self.analysis} if self.analysis else {}),
                **({"machine": self.machine} if self.machine else {}),
                **({"differential": self.differential.to_dict()} if self.differential else {})}


@dataclass
class Note:
    """A match that is not an environment problem: a program bug, or a harmless warning."""

    id: str
    kind: str
    title: str
    source: str
    lines: List[int]
    excerpt: str
    explanation: List[str]

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "title": self.title, "input": self.source, "lines": self.lines,
                "excerpt": self.excerpt, "explanation": " ".join(self.explanation)}


def typed_values(sig, raw: Mapping[str, str]) -> Dict[str, Any]:
    return {name: convert(sig.values.get(name, "str"), text) for name, text in raw.items()}
