"""Facts from modprobe.d and the kernel command line: which kernel modules are kept from loading.

modprobe.d(5): ``*.conf`` files are read from /etc/modprobe.d, /run/modprobe.d,
/usr/local/lib/modprobe.d, /usr/lib/modprobe.d and /lib/modprobe.d; a file hides any file
of the same name in a later directory (an empty /etc/modprobe.d/foo.conf disables a
packaged /lib/modprobe.d/foo.conf). Lines whose first word starts with ``#`` are comments
and a trailing backslash continues a line.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from gpudoctor.facts import Facts, Missing, fact

MODPROBE_DIRS = ("/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d",
                 "/usr/lib/modprobe.d", "/lib/modprobe.d")
# Programs an `install <module> <program>` line runs instead of loading: the module never loads.
_NOOP_INSTALL = re.compile(r"^(/usr)?/bin/(false|true)\b")


@dataclass(frozen=True)
class ModprobeRule:
    """One command line of a modprobe.d file: ``blacklist nouveau`` -> ("blacklist", "nouveau", "")."""

    source: str    # "/etc/modprobe.d/blacklist-nouveau.conf"
    text: str      # the line as written (continuations joined)
    command: str   # blacklist | install | options | alias | remove | softdep | ...
    module: str
    args: str


def parse_modprobe_conf(text: str, source: str) -> List[ModprobeRule]:
    rules: List[ModprobeRule] = []
    pending = ""
    for raw in (text or "").splitlines():
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        words = line.split(None, 2)
        if len(words) < 2 or words[0].startswith("#"):
            continue
        rules.append(ModprobeRule(source, line, words[0], words[1], words[2] if len(words) > 2 else ""))
    return rules


def effective_files(snapshot) -> List[Tuple[str, str]]:
    """(path, content) of the modprobe.d files modprobe reads, in its order (sorted by name)."""
    chosen: Dict[str, Tuple[str, str]] = {}
    for directory in MODPROBE_DIRS:
        for rec in snapshot.glob(f"{directory}/*.conf"):
            name = posixpath.basename(rec.path)
            chosen.setdefault(name, (rec.path, rec.content))  # earlier directories win
    return [chosen[name] for name in sorted(chosen)]


def masked_files(snapshot) -> List[Tuple[str, str]]:
    """(hidden, by) pairs: a packaged file that modprobe ignores because a same-named file in an
    earlier directory (/etc/modprobe.d) replaces it."""
    first: Dict[str, str] = {}
    hidden = []
    for directory in MODPROBE_DIRS:
        for rec in snapshot.glob(f"{directory}/*.conf"):
            name = posixpath.basename(rec.path)
            if name in first and posixpath.dirname(first[name]) != directory:
                hidden.append((rec.path, first[name]))
            first.setdefault(name, rec.path)
    return hidden


@dataclass(frozen=True)
class ConfFile:
    """A modprobe.d file as recorded."""

    path: str
    content: str


@dataclass(frozen=True)
class MaskedFile:
    """A packaged modprobe.d file that modprobe ignores: a same-named file in an earlier directory replaces it."""

    path: str      # "/usr/lib/modprobe.d/nvidia-utils.conf"
    by: str        # "/etc/modprobe.d/nvidia-utils.conf"
    content: str   # what the ignored file says


@dataclass(frozen=True)
class ModprobeFiles:
    """The modprobe.d files modprobe reads, in its order, and the ones it ignores."""

    read: Tuple[ConfFile, ...]
    masked: Tuple[MaskedFile, ...]


@fact("modprobe_files")
def modprobe_files(f: Facts) -> ModprobeFiles:
    """The modprobe.d files modprobe reads (sorted by name, earlier directories winning) and those masked."""
    files = effective_files(f.snapshot)
    if not files and not any(f.snapshot.listing(d) is not None for d in MODPROBE_DIRS):
        raise Missing("the modprobe.d directories were not recorded in this snapshot")
    return ModprobeFiles(tuple(ConfFile(path, content) for path, content in files),
                         tuple(MaskedFile(hidden, by, f.snapshot.text(hidden) or "")
                               for hidden, by in masked_files(f.snapshot)))


@fact("modprobe_rules")
def modprobe_rules(f: Facts) -> Tuple[ModprobeRule, ...]:
    """Every rule in the modprobe.d files modprobe reads (same-named files masked by precedence)."""
    return tuple(rule for c in f["modprobe_files"].read for rule in parse_modprobe_conf(c.content, c.path))


def cmdline_params(cmdline: str) -> Dict[str, List[str]]:
    """``key=value`` words of a kernel command line; a key may repeat."""
    out: Dict[str, List[str]] = {}
    for word in (cmdline or "").split():
        key, _, value = word.partition("=")
        out.setdefault(key, []).append(value)
    return out


def _cmdline_blocks(cmdline: str, module: str) -> List[str]:
    params = cmdline_params(cmdline)
    found = [f"{key}={value}" for key in ("modprobe.blacklist", "module_blacklist", "rd.driver.blacklist")
             for value in params.get(key, []) if module in value.split(",")]
    found += [f"{module}.modeset=0" for value in params.get(f"{module}.modeset", []) if value == "0"]
    return found


def _rule_blocks(rule: ModprobeRule, module: str) -> bool:
    if rule.module != module:
        return False
    if rule.command == "blacklist":
        return True
    if rule.command == "install":
        return bool(_NOOP_INSTALL.match(rule.args.strip()))
    if rule.command == "options":
        return bool(re.search(r"(^|\s)modeset=0(\s|$)", rule.args))
    return rule.command == "alias" and rule.args.strip() == "off"


@dataclass(frozen=True)
class ModuleBlock:
    module: str
    blocked: bool
    by: Tuple[Tuple[str, str], ...]  # (source, line): "file:/etc/modprobe.d/x.conf", "blacklist nouveau"


def module_block(rules: Sequence[ModprobeRule], cmdline: Optional[str], module: str) -> ModuleBlock:
    """Whether modprobe.d or the kernel command line keeps ``module`` from loading, and where."""
    by = [(f"file:{r.source}", r.text) for r in rules if _rule_blocks(r, module)]
    by += [("file:/proc/cmdline", word) for word in _cmdline_blocks(cmdline or "", module)]
    return ModuleBlock(module, bool(by), tuple(by))


@fact("nouveau_block")
def nouveau_block(f: Facts) -> ModuleBlock:
    """How nouveau is kept off the GPU: blacklist / install /bin/false / modeset=0 lines, boot options."""
    return module_block(f["modprobe_rules"], f.get("kernel_cmdline"), "nouveau")
