"""When no known message matched: read the text's vocabulary into a ranked differential.

A text no signature knows ("CUDNN_STATUS_INTERNAL_ERROR on GTX 1660 TI", "TensorFlow can't detect
my gpu" under a Windows 11 header) still names parts of the stack: libraries (libcudnn, nvcuda.dll),
error codes by name or number (``cudaErrorNoDevice``, "error 804", "returned 30"), framework words
(``is_available() ... False``, "no kernel image", ``sm_120``), places (docker, WSL, Windows).
Each word points to a few families (``knowledge/data/error_vocabulary.json``, codes in
``error_codes.json``), weighted by how often each was the cause among real threads holding that word.
The best family is named with low confidence and the others listed with the command that tells
each apart; nothing is said unless a word names a part of the GPU stack or a failure of it, and
nothing when the words point first to a bug in the program.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from gpudoctor.explain.diagnose import DECIDED_BONUS
from gpudoctor.explain.differential import Candidate, Differential
from gpudoctor.explain.model import Diagnosis
from gpudoctor.explain.tailor import build_fix
from gpudoctor.explain.words import Mark, features
from gpudoctor.knowledge import vocabulary
from gpudoctor.knowledge.families import family as family_info

NOT_ENV = "not_env_problem"
SCORE = 30                 # a Diagnosis score: "low" confidence (medium when the machine decides)
# The best family needs at least this score (a tenth of one word fully for it). Round 10 lowered it from 0.3 to 0.2:
# in the 5-fold cross-validation by thread the fallback then spoke on 88.6% of environment texts, not 85.9%, with its
# false claims on program bugs unchanged (10/142). Round 14 gave PyTorch's 'No CUDA GPUs are available' a word of its
# own, so 'no GPU found' words alone spread over many families; at 0.1 the fallback speaks on them again (a ranked,
# low-confidence answer rather than none): alone 1630 -> 1645 of 1888 texts, top-1 1323 -> 1324, false claims 15/178
# either way.
MIN_SHARE = 0.1
MAX_CANDIDATES = 5
# A family of one framework (TensorFlow's) counts a quarter when the text names another framework and not
# that one: libcublas in a PyTorch or JAX traceback is no TensorFlow problem, whatever the counts say.
OTHER_FRAMEWORK = 0.25
# ... and counts half as much again when the text names that framework: a CUDA library missing in a TensorFlow
# log is TensorFlow's library, though most texts naming that library alone came from other packages.
OWN_FRAMEWORK = 1.5


def _declared(fid: str) -> Tuple[Tuple[str, ...], float, str]:
    """The families a feature names, most likely first, its weight and its kind (error codes are strong)."""
    if fid.startswith("code:"):
        fams: List[str] = []
        for code in vocabulary.codes():
            if "code:" + code.key == fid:
                fams += [f for f in code.families if f not in fams]
        return tuple(fams), 1.0, "strong"
    term = next(t for t in vocabulary.terms() if t.id == fid)
    return term.families, term.weight, term.kind


def contributions(fid: str, counts: Mapping[str, Mapping[str, int]]) -> Dict[str, float]:
    """Family -> share of this feature: its real cases by family, a declared family counting one case
    more (half a case after the first), normalised to 1, times the feature's weight."""
    declared, weight, _ = _declared(fid)
    pseudo = {f: (1.0 if i == 0 else 0.5) for i, f in enumerate(declared)}
    seen = counts.get(fid, {})
    total = sum(seen.values()) + sum(pseudo.values())
    return {f: weight * (seen.get(f, 0) + pseudo.get(f, 0.0)) / total for f in set(seen) | set(pseudo)}


def rank(feats: Iterable[str], counts: Optional[Mapping] = None) -> List[Tuple[str, float]]:
    """Families by summed contribution of the features, best first (ties: the family further down the stack)."""
    counts = vocabulary.counts() if counts is None else counts
    scores: Dict[str, float] = defaultdict(float)
    for fid in feats:
        for family, share in contributions(fid, counts).items():
            scores[family] += share
    tells = vocabulary.tell_apart()
    for family in scores:
        tell = tells.get(family)
        if tell is None or not tell.framework:
            continue
        if tell.framework in feats:
            scores[family] *= OWN_FRAMEWORK
        elif any(f in feats for f in vocabulary.frameworks() if f != tell.framework):
            scores[family] *= OTHER_FRAMEWORK
    return sorted(scores.items(), key=lambda kv: (-kv[1], _family_rank(kv[0]), kv[0]))


def _family_rank(family: str) -> int:
    return 999 if family == NOT_ENV else family_info(family).rank


def speaks(feats: Mapping[str, Mark], ranked: Sequence[Tuple[str, float]]) -> bool:
    """Only when a word names the GPU stack or its failure, and the best reading is an environment problem."""
    strong = any(_declared(fid)[2] == "strong" for fid in feats)
    return strong and bool(ranked) and ranked[0][0] != NOT_ENV and ranked[0][1] >= MIN_SHARE


def read(texts: Sequence[Tuple[str, str]], flags: Iterable[str] = (), machine=None, facts=None,
         counts: Optional[Mapping] = None, by_code: bool = False) -> Optional[Diagnosis]:
    """The vocabulary's reading of (input name, text) pairs, or None when it has nothing to say (``by_code``: also
    when no error code is the word that speaks most for its first family)."""
    flags = set(flags)
    feats: Dict[str, Mark] = {}
    for source, text in texts:
        for fid, mark in features(text, source, flags).items():
            feats.setdefault(fid, mark)
    counts = vocabulary.counts() if counts is None else counts
    ranked = rank(feats, counts)
    if not speaks(feats, ranked):
        return None
    if by_code and not _lead(feats, ranked[0][0], counts)[0].startswith("code:"):
        return None
    return _diagnosis(feats, ranked, counts, flags, machine, facts, texts, by_code)


def _lead(feats: Mapping[str, Mark], family: str, counts: Mapping) -> List[str]:
    """The features that speak most for ``family``, strongest first."""
    return sorted(feats, key=lambda fid: -contributions(fid, counts).get(family, 0.0))


def _candidates(ranked, seen: Mapping[str, int], flags, machine) -> List[Candidate]:
    tells = vocabulary.tell_apart()
    out = []
    for i, (family, score) in enumerate((f, s) for f, s in ranked if f in tells):
        tell = tells[family]
        verdict = machine.verdict(family, tell) if machine is not None else None
        # past the first few, a cause the words name stays only when the machine's checks found it
        if i >= MAX_CANDIDATES and (verdict is None or verdict.kind != "decided"):
            continue
        cand = Candidate(family, tell.recipe, tell, seen.get(family, 0), score=round(100 * score))
        cand.unplaced = bool(tell.only_in) and tell.only_in not in flags
        cand.verdict = verdict
        out.append(cand)
    return sorted(out, key=Candidate.rank_key)


def _diagnosis(feats, ranked, counts, flags, machine, facts, texts, by_code: bool) -> Diagnosis:
    lead = _lead(feats, ranked[0][0], counts)
    seen = counts.get(lead[0], {})
    cands = _candidates(ranked, seen, flags, machine)
    top = cands[0]
    words = list(dict.fromkeys(feats[fid].word for fid in lead[:3]))
    where = next((feats[fid] for fid in lead if feats[fid].line), None) or _first_line(texts)
    opening = "Its message names no cause" if by_code else "No known message matched"
    title = f"{opening}; its words ({', '.join(words)}) point first to {family_info(top.family).title}"
    why = [("The message itself names no cause, so this is read from its error code and words: " if by_code else
            "No known error message matched, so this is read from the text's words alone: ")
           + "; ".join(f"'{feats[fid].word}' ({_what(fid)})" for fid in lead[:3]) + ".",
           "The causes below are ranked by those words; the command under each decides between them."]
    diag = Diagnosis("vocabulary", top.family, title, SCORE, top.recipe, where.source,
                     [where.line] if where.line else [], 1, where.excerpt, {"words": ", ".join(words)}, why,
                     build_fix(top.recipe, facts, {}, {}), via="vocabulary",
                     differential=Differential("vocabulary", sum(seen.values()), cands, basis=feats[lead[0]].word))
    if top.verdict is not None and top.verdict.kind == "decided":     # the machine's checks found one of them
        found = machine.diagnosis(top.family)
        diag.fix, diag.machine, diag.score = found.fix or diag.fix, machine.decided(found), SCORE + DECIDED_BONUS
        diag.title = (f"On this machine, {family_info(top.family).title}; no known message matched, and its words "
                      f"({', '.join(words)}) alone could not decide")
    return diag


def _what(fid: str) -> str:
    if fid.startswith("code:"):
        code = next(c for c in vocabulary.codes() if "code:" + c.key == fid)
        return f"{code.table} {code.name}: {code.meaning}"
    return next(t.what for t in vocabulary.terms() if t.id == fid)


def _first_line(texts: Sequence[Tuple[str, str]]) -> Mark:
    """The first non-blank line of the inputs (of the first input when all are blank)."""
    for source, text in texts:
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if line:
                return Mark(line, source, n, line[:300])
    return Mark("", texts[0][0], 1, "")
