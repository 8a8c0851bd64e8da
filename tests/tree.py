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
import importlib.util
import sys
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parent.parent
GROUP = "gpudoctor.checks.v1"


def bind_checks(root: Path = ROOT) -> None:
    """Import ``checks/`` as ``gpudoctor_checks``, unless something imported that name already."""
    if "gpudoctor_checks" in sys.modules or not (root / "checks" / "__init__.py").is_file():
        return  # problems() says where the earlier one came from, or that the tree has no checks/
    spec = importlib.util.spec_from_file_location(
        "gpudoctor_checks", root / "checks" / "__init__.py", submodule_search_locations=[str(root / "checks")])
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpudoctor_checks"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["gpudoctor_checks"]
        raise


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
