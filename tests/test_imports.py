"""gpudoctor's own imports go one way: no import cycle, no package that imports its submodules back, no
``except ImportError`` around its own modules (a missing module of ours is a bug to see, not to hide)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Set

from tests.scenarios import ROOT

# Packages whose __init__ re-exports their submodules' API; none of those submodules imports the package.
FACADES = {"gpudoctor.knowledge", "gpudoctor.smi"}


def _modules() -> Dict[str, Path]:
    out = {}
    for base, pkg in (("gpudoctor", "gpudoctor"), ("checks", "gpudoctor_checks")):
        for path in (ROOT / base).rglob("*.py"):
            parts = [pkg, *path.relative_to(ROOT / base).with_suffix("").parts]
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imported(module: str, path: Path) -> Iterator[str]:
    """Every gpudoctor module ``module`` imports, at the top or inside a function."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            names = [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source for a in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name)
            if target and target != module:
                yield target


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    graph = {m: set(_imported(m, p)) for m, p in MODULES.items()}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_packages_do_not_import_their_own_submodules():
    for module, path in MODULES.items():
        if path.name != "__init__.py" or module in FACADES:
            continue
        own = sorted(t for t in _imported(module, path) if t.startswith(module + "."))
        assert own == [], f"{module}/__init__.py imports {own}, which import the package back"


def test_no_import_error_guard_around_our_own_modules():
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Try):
                continue
            caught = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
            if not any("ImportError" in c for c in caught):
                continue
            ours = [n for n in ast.walk(ast.Module(node.body, [])) if isinstance(n, (ast.Import, ast.ImportFrom))
                    and any(_resolve(x) for x in ([a.name for a in n.names] if isinstance(n, ast.Import)
                                                  else [n.module or ""]))]
            assert not ours, \
                f"{module} line {node.lineno} hides an ImportError of its own modules"
