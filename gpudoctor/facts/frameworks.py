"""Facts about the installed frameworks, from the probes run in the user's interpreter."""

from __future__ import annotations

from typing import Dict

from gpudoctor.facts import Facts, Missing, NotApplicable, fact


def _probe(f: Facts, name: str) -> Dict:
    data = f.snapshot.frameworks.get(name)
    if data is None:
        raise Missing(f"{name} was not probed in this snapshot")
    return data


def _installed(f: Facts, name: str) -> Dict:
    data = _probe(f, name)
    probe = data.get("probe") or {}
    python = probe.get("python") or data.get("executable") or "the target interpreter"
    if probe.get("timed_out"):
        raise Missing(f"the {name} probe did not finish within {probe.get('duration_s', '?')}s")
    if data.get("installed") is False:
        raise NotApplicable(f"{name} is not installed for {python}")
    if "installed" not in data and probe.get("error"):
        raise Missing(f"the {name} probe could not run {python}: {probe['error']}")
    if "installed" not in data:
        raise Missing(f"the {name} probe gave no answer (exit code {probe.get('returncode')})")
    return data


for _name in ("torch", "tensorflow", "jax"):
    def _raw(f: Facts, _n=_name) -> Dict:
        return _probe(f, _n)

    def _ok(f: Facts, _n=_name) -> Dict:
        return _installed(f, _n)

    _raw.__doc__ = f"The raw {_name} probe record, including how the child process ended."
    _ok.__doc__ = f"{_name} build facts, present only when {_name} is installed for the target interpreter."
    fact(f"{_name}_probe")(_raw)
    fact(_name)(_ok)
