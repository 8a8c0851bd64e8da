"""Where the contrib files are: the Slurm Prolog and HealthCheckProgram wrappers and the
node-problem-detector plugin config, to copy into place by hand or from a package recipe.

A wheel carries them inside the package (``gpudoctor/contrib/``); a source tree, an sdist and an
editable install have them in the top-level ``contrib/``. ``python -m gpudoctor.contrib_files``
prints the path of each, one per line, or of the ones named::

    install -m 0755 "$(python -m gpudoctor.contrib_files slurm/gpudoctor-prolog)" /usr/local/libexec/
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional, Sequence

PACKAGE = Path(__file__).resolve().parent
MARKER = Path("slurm") / "gpudoctor-prolog"   # a folder holding this is a contrib folder


def folder() -> Optional[Path]:
    """The installed copy first, then the source tree's; None if this copy has neither."""
    for candidate in (PACKAGE / "contrib", PACKAGE.parent / "contrib"):
        if (candidate / MARKER).is_file():
            return candidate
    return None


def files() -> List[Path]:
    base = folder()
    if base is None:
        return []
    return sorted(p for p in base.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".py", ".pyc"))


def main(names: Sequence[str] = ()) -> int:
    found = files()
    if not found:
        print("gpudoctor: this copy of gpudoctor has no contrib files; they are in the sdist's contrib/",
              file=sys.stderr)
        return 2
    by_name = {p.relative_to(folder()).as_posix(): p for p in found}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        print(f"gpudoctor: no contrib file {unknown[0]} (there are: {', '.join(by_name)})", file=sys.stderr)
        return 2
    for path in [by_name[n] for n in names] or found:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
