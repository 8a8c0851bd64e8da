"""Framework build facts read from installed files, never by importing the framework.

Importing torch takes seconds and can be the very failure being diagnosed; the hook only
needs what the build was made for, and the wheels write that into small files:

* ``torch/version.py``: ``__version__ = '2.3.1+cu121'``, ``cuda = '12.1'`` (None on CPU builds);
* ``tensorflow/python/platform/build_info.py``: ``build_info = OrderedDict([('cuda_version',
  '12.3'), ('is_cuda_build', True), ...])`` (``is_cuda_build`` False for tensorflow-cpu).

The package is found the way ``import`` would find it: the first ``sys.path`` entry of the
target interpreter that holds it (gpudoctor's own ``sys.path``, or one cheap
``python -c`` call for another interpreter). Parsed facts are cached under
``$XDG_CACHE_HOME/gpudoctor/`` keyed by the installed distribution's identity (its
``.dist-info`` path plus the mtime and size of its RECORD), so a reinstall invalidates them.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import time
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from gpudoctor import liveread, runner

# The file that holds the build facts, and the distribution names that install it.
PACKAGES: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "torch": ("torch/version.py", ("torch",)),
    "tensorflow": ("tensorflow/python/platform/build_info.py",
                   ("tensorflow", "tensorflow_cpu", "tensorflow_gpu", "tensorflow_intel", "tf_nightly")),
}
CACHE_NAME = "fastfacts-v1.json"
MAX_CACHE_ENTRIES = 64
MAX_FACTS_BYTES = 1 << 20  # torch/version.py is under 1 KB, build_info.py and the cache a few KB
_SYS_PATH_CODE = "import sys,json; print(json.dumps(sys.path))"


def cache_dir(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpudoctor"


def target_sys_path(python: Optional[str], environ: Mapping[str, str], timeout: float):
    """The target interpreter's ``sys.path``: ours when it is us, else one child call.

    Returns ``(paths, None)`` or ``(None, reason)``; the reason is a one-line string.
    """
    if not python or _same_file(python, sys.executable):
        return [p for p in sys.path if p], None
    res = runner.run((python, "-c", _SYS_PATH_CODE), timeout=timeout, env=dict(environ))
    if not res.ok:
        return None, res.error or res.describe()  # "not found" says it; the argv would only repeat `python`
    try:
        paths = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError, RecursionError):
        paths = None
    if not isinstance(paths, list):
        return None, f"`{python}` printed no sys.path"
    return [p for p in paths if isinstance(p, str) and p], None


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def find(name: str, paths: Sequence[str]) -> Optional[Tuple[Path, Optional[Path]]]:
    """(build-facts file, .dist-info dir or None) from the first path entry holding ``name``."""
    rel, dists = PACKAGES[name]
    for entry in paths:
        target = Path(entry) / rel
        if not target.is_file():
            continue
        return target, _dist_info(Path(entry), dists)
    return None


def _dist_info(entry: Path, dists: Tuple[str, ...]) -> Optional[Path]:
    try:
        names = os.listdir(entry)
    except OSError:
        return None
    for item in sorted(names):
        if item.endswith(".dist-info") and _dist_name(item) in dists:
            return entry / item
    return None


def _dist_name(dirname: str) -> str:
    return dirname.split("-", 1)[0].lower().replace("-", "_").replace(".", "_")


def _dist_version(dist_info: Optional[Path]) -> Optional[str]:
    """``torch-2.3.1+cu121.dist-info`` -> ``2.3.1+cu121``."""
    if dist_info is None:
        return None
    parts = dist_info.name[: -len(".dist-info")].split("-", 1)
    return parts[1] if len(parts) == 2 else None


def identity(facts_file: Path, dist_info: Optional[Path]) -> str:
    """The cache key: the dist-info's RECORD (or the facts file itself) path, mtime and size."""
    anchor = dist_info / "RECORD" if dist_info is not None else facts_file
    st = anchor.stat()
    return f"{anchor}|{st.st_mtime_ns}|{st.st_size}"


def literals(source: str) -> Dict[str, object]:
    """Top-level ``name = <literal>`` assignments of a module (annotated ones included)."""
    out: Dict[str, object] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        # build_info.py wraps its literal in collections.OrderedDict([...]).
        if isinstance(value, ast.Call) and len(value.args) == 1:
            value = value.args[0]
        try:
            lit = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        out[target.id] = dict(lit) if isinstance(lit, list) and all(
            isinstance(x, tuple) and len(x) == 2 for x in lit) else lit
    return out


def parse(name: str, text: str, dist_version: Optional[str]) -> Dict:
    """Build facts shaped like the full framework probe's record (see framework_probe.py)."""
    values = literals(text)
    if name == "torch":
        return {"installed": True, "version": values.get("__version__") or dist_version,
                "cuda": values.get("cuda"), "hip": values.get("hip"), "git": values.get("git_version"),
                "cuda_built": values.get("cuda") is not None}
    info = values.get("build_info") or {}
    info = {k: v for k, v in info.items() if isinstance(v, (str, int, float, bool, list, type(None)))}
    return {"installed": True, "version": dist_version, "build_info": info,
            "cuda_built": bool(info.get("is_cuda_build", "cuda_version" in info))}


class Cache:
    """A small JSON file of parsed facts; unreadable or unwritable means no cache, never an error."""

    def __init__(self, directory: Path):
        self.path = directory / CACHE_NAME
        self.entries: Dict[str, Dict] = {}
        self.dirty = False
        try:
            data = json.loads(liveread.read_bytes(str(self.path), MAX_FACTS_BYTES))
            if isinstance(data, dict):
                self.entries = {k: v for k, v in data.items() if isinstance(v, dict)}
        except (OSError, ValueError, RecursionError):
            pass

    def get(self, key: str) -> Optional[Dict]:
        return self.entries.get(key)

    def put(self, key: str, value: Dict) -> None:
        self.entries[key] = value
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        keep = dict(list(self.entries.items())[-MAX_CACHE_ENTRIES:])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(keep, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            pass


def framework_facts(python: Optional[str], environ: Mapping[str, str], timeout: float,
                    names: Sequence[str] = tuple(PACKAGES), cache: Optional[Cache] = None) -> Dict[str, Dict]:
    """``{name: record}`` for each framework, each with a ``probe`` note of how it was read."""
    start = time.monotonic()
    shown = python or sys.executable
    paths, why = target_sys_path(python, environ, timeout)
    if paths is None:
        probe = {"source": "files", "python": shown, "error": why,
                 "timed_out": "did not answer" in (why or ""), "duration_s": round(time.monotonic() - start, 3)}
        return {name: {"probe": dict(probe)} for name in names}
    cache = cache if cache is not None else Cache(cache_dir(environ))
    out: Dict[str, Dict] = {}
    for name in names:
        out[name] = _one(name, paths, cache, shown)
    cache.save()
    return out


def _one(name: str, paths: List[str], cache: Cache, python: str) -> Dict:
    probe = {"source": "files", "python": python, "cached": False}
    found = find(name, paths)
    if found is None:
        return {"installed": False, "probe": probe}
    facts_file, dist_info = found
    try:
        key = identity(facts_file, dist_info)
        record = cache.get(key)
        if record is not None:
            probe["cached"] = True
        else:
            text = liveread.read_bytes(str(facts_file), MAX_FACTS_BYTES).decode("utf-8", errors="replace")
            record = parse(name, text, _dist_version(dist_info))
            cache.put(key, record)
    # A damaged or hostile file (a FIFO, 100 MB, nesting deeper than the parser goes,
    # literals of the wrong type) is a probe error, never a crash of the hook.
    except (OSError, SyntaxError, ValueError, TypeError, AttributeError, RecursionError, MemoryError) as exc:
        probe["error"] = f"{facts_file}: {exc}"
        return {"probe": probe}
    package_dir = facts_file.parents[PACKAGES[name][0].count("/") - 1]
    return {**record, "file": str(package_dir), "probe": probe}
