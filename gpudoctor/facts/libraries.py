"""Facts about shared libraries the dynamic loader finds: the `ldconfig -p` cache."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Sequence, Tuple

from gpudoctor.facts import Facts, command_result, fact

# "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/wsl/lib/libcuda.so.1"
# "\tlibfoo.so (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libfoo.so"
_ENTRY = re.compile(r"^\s+(\S+)\s+\(([^)]*)\)\s+=>\s+(\S.*?)\s*$")


@dataclass(frozen=True)
class CachedLib:
    name: str    # "libcudnn.so.8"
    flags: str   # "libc6,x86-64"
    path: str    # "/usr/lib/x86_64-linux-gnu/libcudnn.so.8"

    @property
    def line(self) -> str:
        return f"{self.name} ({self.flags}) => {self.path}"


def parse_ldconfig(text: str) -> List[CachedLib]:
    """Entries of `ldconfig -p` in cache order (the order the loader prefers), header skipped."""
    return [CachedLib(*m.groups()) for m in map(_ENTRY.match, (text or "").splitlines()) if m]


@fact("ldconfig")
def ldconfig(f: Facts) -> Tuple[CachedLib, ...]:
    """The dynamic loader's cache (`ldconfig -p`): which libcuda, libcudnn, libcudart it finds."""
    return tuple(parse_ldconfig(command_result(f, "ldconfig_p").stdout))


def libs_named(libs: Sequence[CachedLib], prefix: str) -> List[CachedLib]:
    """Entries whose name is ``prefix`` or ``prefix.N...`` ("libcudnn.so" -> libcudnn.so.8, .so.9)."""
    return [lib for lib in libs if lib.name == prefix or lib.name.startswith(prefix + ".")]
