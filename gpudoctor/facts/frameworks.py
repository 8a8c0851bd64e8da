"""Facts about the installed frameworks, from the probes run in the user's interpreter.

Each probe is a child of the target interpreter that imports torch, TensorFlow or JAX and
prints one JSON record (``probes/framework_probe.py``); ``probes/frameworks.py`` adds how
the child ended. ``<name>_probe`` is how it ran, ``<name>`` what it found when the
framework is installed; ``torch_build`` and ``tf_info`` (framework_builds) parse the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from gpudoctor.facts import Facts, Missing, NotApplicable, fact

FRAMEWORKS = ("torch", "tensorflow", "jax")


@dataclass(frozen=True)
class RaisedError:
    """An exception the probe caught: {"type": "ImportError", "message": "libcudnn.so.8: cannot open ..."}."""

    type: Optional[str]
    message: Optional[str]


@dataclass(frozen=True)
class FrameworkProbe:
    """How the probe of one framework ran (timed out, could not start, died, answered) and its answer."""

    framework: str                 # "torch", "tensorflow", "jax"
    python: str                    # the interpreter it ran, or "the target interpreter" when not recorded
    timed_out: bool                # killed after ``duration_s`` seconds without an answer
    duration_s: Optional[float]
    error: Optional[str]           # why the interpreter could not be started ("not found", ...)
    returncode: Optional[int]      # negative: killed by that signal
    answered: bool                 # the child printed its record (``installed`` says what it found)
    installed: Optional[bool]      # None when it did not answer
    import_error: Optional[RaisedError]   # importing (or probing) the framework raised
    stderr: str                    # what the child printed on stderr (TensorFlow's library log)
    traceback: str                 # the import error's traceback, "" when none


@dataclass(frozen=True)
class FrameworkInstall:
    """A framework installed for the target interpreter, as its probe recorded it (None: not recorded).

    Present even when importing it fails (``import_error``); the build details are the raw
    values the probe read, before ``torch_build`` / ``tf_info`` make sense of them."""

    name: str
    version: Optional[str]                 # "2.3.1+cu121"
    python_version: Optional[str]          # the interpreter's Python: "3.11.9"
    import_error: Optional[RaisedError]
    build_known: bool                      # the probe read the build (torch: torch.version.cuda; TF: build_info)
    cuda: Optional[str]                    # torch.version.cuda; TensorFlow's build_info cuda_version
    cuda_build: Optional[bool]             # TensorFlow: is_cuda_build (else is_built_with_cuda()); torch: cuda_built
    cuda_available: Optional[bool]         # torch.cuda.is_available()
    device_count: Optional[int]            # torch.cuda.device_count()
    gpus: Optional[Tuple[str, ...]]        # TensorFlow: list_physical_devices("GPU") names
    backend: Optional[str]                 # JAX: jax.default_backend()
    devices: Optional[Tuple[str, ...]]     # JAX: str() of each of jax.devices()


def record(f: Facts, name: str) -> Dict[str, Any]:
    """The probe's raw record for ``name`` (for the providers that parse it), or Missing."""
    data = f.snapshot.frameworks.get(name)
    if data is None:
        raise Missing(f"{name} was not probed in this snapshot")
    return data


def _raised(err) -> Optional[RaisedError]:
    return RaisedError(err.get("type"), err.get("message")) if err else None


def _tuple(value) -> Optional[Tuple]:
    return None if value is None else tuple(value)


def _probe(f: Facts, name: str) -> FrameworkProbe:
    data = record(f, name)
    probe = data.get("probe") or {}
    return FrameworkProbe(name, probe.get("python") or data.get("executable") or "the target interpreter",
                          bool(probe.get("timed_out")), probe.get("duration_s"), probe.get("error"),
                          probe.get("returncode"), "installed" in data, data.get("installed"),
                          _raised(data.get("import_error")), probe.get("stderr") or "", data.get("traceback") or "")


def _installed(f: Facts, name: str) -> FrameworkInstall:
    run = f[f"{name}_probe"]
    if run.timed_out:
        raise Missing(f"the {name} probe did not finish within {_secs(run)}s")
    if run.installed is False:
        raise NotApplicable(f"{name} is not installed for {run.python}")
    if not run.answered and run.error:
        raise Missing(f"the {name} probe could not run {run.python}: {run.error}")
    if not run.answered:
        raise Missing(f"the {name} probe gave no answer (exit code {run.returncode})")
    data = record(f, name)
    info = data.get("build_info")
    tf = name == "tensorflow"
    return FrameworkInstall(
        name, data.get("version"), data.get("python"), run.import_error,
        (info is not None) if tf else "cuda" in data,
        (info or {}).get("cuda_version") if tf else data.get("cuda"),
        (info or {}).get("is_cuda_build", data.get("cuda_built")) if tf else data.get("cuda_built"),
        data.get("available"), data.get("device_count"), _tuple(data.get("gpus")), data.get("backend"),
        _tuple(data.get("devices")) if name == "jax" else None)


def _secs(run: FrameworkProbe):
    return "?" if run.duration_s is None else run.duration_s


@fact("framework_probes")
def framework_probes(f: Facts) -> Tuple[FrameworkProbe, ...]:
    """How each framework probe ran, torch, tensorflow, jax order; () when none was probed."""
    return tuple(f[f"{name}_probe"] for name in FRAMEWORKS if name in f.snapshot.frameworks)


for _name in FRAMEWORKS:
    def _run(f: Facts, _n=_name) -> FrameworkProbe:
        return _probe(f, _n)

    def _ok(f: Facts, _n=_name) -> FrameworkInstall:
        return _installed(f, _n)

    _run.__doc__ = f"How the {_name} probe ran (FrameworkProbe): timed out, could not start, died, or answered."
    _ok.__doc__ = f"{_name} as installed for the target interpreter (FrameworkInstall), even when importing it fails."
    fact(f"{_name}_probe")(_run)
    fact(_name)(_ok)
