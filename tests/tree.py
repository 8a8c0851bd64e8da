"""The tree under test: gpudoctor, its built-in checks and their entry point all come from here.

The repository keeps the built-in checks in ``checks/``; installed, they are the package
``gpudoctor_checks``, found through the entry point ``gpudoctor.checks.v1`` ``builtin``. Outside an
editable install, Python would import ``gpudoctor`` from this tree (pytest puts it first on
``sys.path``) but ``gpudoctor_checks`` from an installed copy, so edits to ``checks/`` would go
silently untested. :func:`bind_checks` binds that name to this tree's ``checks/`` before anything
imports it; :func:`problems` names whatever still resolves elsewhere, and conftest stops the session.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parent.parent
GROUP = "gpudoctor.checks.v1"


class _TreeChecks(importlib.abc.MetaPathFinder):
    """Finds ``gpudoctor_checks`` in ``<root>/checks`` before any other finder looks (an editable
    install's finder or an installed copy on sys.path), when it is first imported, as installed."""

    def __init__(self, root: Path):
        self.root = root

    def find_spec(self, name, path=None, target=None):
        if name != "gpudoctor_checks":
            return None  # its submodules are found on the package's __path__, the tree's checks/
        return importlib.util.spec_from_file_location(
            name, self.root / "checks" / "__init__.py", submodule_search_locations=[str(self.root / "checks")])


def bind_checks(root: Path = ROOT) -> None:
    """From now on ``import gpudoctor_checks`` imports ``root/checks`` (unless it was imported before)."""
    if (root / "checks" / "__init__.py").is_file() and not any(isinstance(f, _TreeChecks) for f in sys.meta_path):
        sys.meta_path.insert(0, _TreeChecks(root))


def _inside(path, folder: Path) -> bool:
    try:
        Path(path).resolve().relative_to(folder.resolve())
        return True
    except (TypeError, ValueError):
        return False


def _builtin_entry_points() -> list:
    from gpudoctor.plugins import _entry_points  # exactly the entries gpudoctor loads its checks from

    return [ep for ep in _entry_points() if ep.name == "builtin"]


def problems(root: Path = ROOT) -> List[str]:
    """One line per name that resolves outside ``root``: the path it came from and the one expected."""
    out = []
    for name, folder in (("gpudoctor", root / "gpudoctor"), ("gpudoctor_checks", root / "checks")):
        try:
            where = importlib.import_module(name).__file__
        except ImportError as exc:
            out.append(f"{name} cannot be imported ({exc}); expected it from {folder}")
            continue
        if not _inside(where, folder):
            out.append(f"{name} is imported from {Path(where).parent}, not from the tree under test {folder}")
    try:
        eps = _builtin_entry_points()
    except ImportError:
        return out  # gpudoctor itself cannot be imported: said above
    if not eps:
        out.append(f"no entry point {GROUP} 'builtin' is registered (the checks would not run): "
                   f"install the project, e.g. pip install -e {root}")
    for ep in eps:
        target = sys.modules.get(ep.value.split(":")[0])
        where = getattr(target, "__file__", None)
        if ep.value.split(":")[0] != "gpudoctor_checks" or not _inside(where, root / "checks"):
            where = where or "a module not imported"
            out.append(f"entry point {GROUP} 'builtin' = {ep.value} resolves to {where}, outside {root}")
    return out


def message(found: List[str], root: Path = ROOT) -> str:
    return ("the tests would not test this tree (an installed copy shadows it):\n  " + "\n  ".join(found)
            + f"\nUse an editable install of {root} (pip install -e .), or run the tests of the copy you installed.")
