"""The hook's settings: a config file (TOML, JSON or INI) merged under command-line flags.

A Slurm Prolog gets no arguments, so requirements usually live in a file named by
``--config`` or ``$GPUDOCTOR_HOOK_CONFIG``. Keys are the long flag names with ``_`` for
``-``; they may sit at the top level or under a ``[hook]`` table/section::

    [hook]
    gpus = 8
    min_driver = "535.104.05"
    min_free_mem = "70GiB"
    no_foreign_processes = true
    allow_processes = ["nvidia-cuda-mps-server"]
    cuda = "12.4"
    max_temp = 85
    drain_xid_actions = ["RESET_GPU", "RESTART_BM", "CONTACT_SUPPORT"]   # the default; "none": ignore Xids
    nvlink = true

TOML needs Python 3.11+ (``tomllib``) or the ``tomli`` package; JSON and INI work everywhere
(INI lists are comma-separated). A flag given on the command line wins over the file.
"""

from __future__ import annotations

import configparser
import json
import os
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

from gpudoctor.requirements import Requirements

DEFAULT_TIMEOUT_S = 10.0
MAX_CONFIG_BYTES = 1 << 20  # a settings file is a few lines; /dev/zero is not one


class ConfigError(ValueError):
    """A bad setting; the message is one line naming the key and what was expected."""


@dataclass(frozen=True)
class Settings:
    requirements: Requirements = field(default_factory=Requirements)
    timeout: float = DEFAULT_TIMEOUT_S
    python: Optional[str] = None       # the interpreter jobs use (its torch/TensorFlow builds)
    prometheus: Optional[str] = None   # node_exporter textfile to write
    snapshot: Optional[str] = None     # replay a recorded snapshot instead of probing


# Exact ratios (Fraction), so a size is never rounded through a float (1e400 would be infinite).
_UNITS = {"": 1, "mib": 1, "m": 1, "gib": 1024, "g": 1024, "tib": 1024 * 1024, "t": 1024 * 1024,
          "mb": Fraction(10 ** 6, 2 ** 20), "gb": Fraction(10 ** 9, 2 ** 20), "tb": Fraction(10 ** 12, 2 ** 20)}
MAX_SIZE_MIB = 1 << 30  # 1 PiB per GPU: far beyond any GPU, far below where numbers get costly
_SIZE = re.compile(r"\s*(\d{1,20}(?:\.\d{1,20})?)\s*([a-zA-Z]{0,3})\s*")


def parse_size_mib(text: Any) -> int:
    """``70GiB`` -> 71680; ``512MiB``, ``80GB`` (decimal), or a bare number of MiB."""
    m = _SIZE.fullmatch(str(text)) if isinstance(text, (str, int, float)) and not isinstance(text, bool) else None
    if not m or m.group(2).lower() not in _UNITS:
        raise ConfigError(f"not a memory size: {_show(text)} (expected e.g. 70GiB, 512MiB or 80GB)")
    mib = int(Fraction(m.group(1)) * _UNITS[m.group(2).lower()])
    if mib > MAX_SIZE_MIB:
        raise ConfigError(f"memory size {_show(text)} is larger than any GPU's (at most 1 PiB)")
    return mib


def _show(value: Any) -> str:
    """A value for an error line: repr, cut to a readable length (a config may hold 1 MiB)."""
    text = repr(value) if not isinstance(value, (list, dict)) else f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def _version(text: Any, what: str) -> str:
    from packaging.version import InvalidVersion, Version

    # A version is short; 5,000 digits would even fail int() inside packaging (ValueError).
    if not isinstance(text, (str, int, float)) or isinstance(text, bool) or len(str(text)) > 64:
        raise ConfigError(f"not a {what}: {_show(text)}")
    try:
        Version(str(text))
    except (InvalidVersion, ValueError):
        raise ConfigError(f"not a {what}: {_show(text)}") from None
    return str(text).strip()


def _bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    word = value.strip().lower() if isinstance(value, str) else value if isinstance(value, int) else None
    if word in ("1", "true", "yes", "on", 1):
        return True
    if word in ("0", "false", "no", "off", 0):
        return False
    raise ConfigError(f"{key}: expected true or false, got {_show(value)}")


def _int(value: Any, key: str, low: int, high: int) -> int:
    n = None
    if isinstance(value, int) and not isinstance(value, bool):
        n = value
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d{1,12}\s*", value):
        n = int(value)
    if n is None or not low <= n <= high:
        raise ConfigError(f"{key}: expected a whole number from {low} to {high}, got {_show(value)}")
    return n


def _names(value: Any, key: str) -> tuple:
    if isinstance(value, str):
        value = [v for v in value.split(",")]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key}: expected a list of names, got {_show(value)}")
    return tuple(v.strip() for v in value if v.strip())


def _path(value: Any, key: str) -> str:
    """A file name the hook opens or runs: text, without NUL (which no file name can hold)."""
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise ConfigError(f"{key}: expected a file name, got {_show(value)}")
    try:
        os.fsencode(value)
    except UnicodeError:
        raise ConfigError(f"{key}: {_show(value)} cannot be a file name on this system") from None
    return value


def _xid_actions(value: Any, key: str) -> tuple:
    """``RESET_GPU,RESTART_BM`` (or a list) -> a tuple of NVIDIA resolution buckets; ``none`` -> ()."""
    from gpudoctor.knowledge.xid import known_buckets

    names = tuple(n.upper() for n in _names(value, key))
    if names in ((), ("NONE",)):
        return ()
    bad = [n for n in names if n not in known_buckets()]
    if bad:
        raise ConfigError(f"{key}: unknown Xid action {bad[0]!r} (known: {', '.join(known_buckets())}, or none)")
    return names


def _timeout(value: Any, key: str) -> float:
    try:
        t = float(value) if not isinstance(value, bool) else -1
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer of 400 digits
        t = -1
    if not 0.5 <= t <= 600:  # also refuses nan and inf
        raise ConfigError(f"{key}: expected seconds from 0.5 to 600, got {_show(value)}")
    return t


# key -> (where it goes, converter)
_REQ = {
    "gpus": lambda v, k: _int(v, k, 0, 4096),
    "min_driver": lambda v, k: _version(v, "driver version"),
    "min_free_mem": lambda v, k: parse_size_mib(v),
    "no_foreign_processes": _bool,
    "allow_processes": _names,
    "allow_users": _names,
    "cuda": lambda v, k: _version(v, "CUDA version"),
    "persistence": _bool,
    "pending_retirement": _bool,
    "max_temp": lambda v, k: _int(v, k, 1, 200),
    "drain_xid_actions": _xid_actions,
    "fabric_manager": _bool,
    "nvlink": _bool,
    "pcie_width": _bool,
    "no_slowdown": _bool,
    "dcgm": lambda v, k: _int(v, k, 1, 4),
    "smoke": _bool,
}
_FIELD = {"min_free_mem": "min_free_mem_mib"}
_OTHER = {"timeout": _timeout, "python": _path, "prometheus": _path, "snapshot": _path}
KNOWN_KEYS = tuple(_REQ) + tuple(_OTHER)


def read_file(path: str) -> Dict[str, Any]:
    """The raw key/values of a config file (top level, or its ``hook`` table/section)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config ({exc.strerror or exc})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than 1 MiB, not a config file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text config file (it is not UTF-8)") from None
    suffix = p.suffix.lower()
    try:
        if suffix == ".json":
            data = json.loads(text)
        elif suffix in (".ini", ".cfg", ".conf"):
            parser = configparser.ConfigParser()
            parser.read_string(text, source=str(path))
            if not parser.has_section("hook"):
                raise ConfigError(f"{path}: no [hook] section, so no requirement would be checked")
            data = {"hook": dict(parser["hook"])}
        else:
            data = _toml(text)
    except ConfigError:
        raise
    except RecursionError:  # [[[[...]]]] a few thousand deep: no settings file looks like that
        raise ConfigError(f"{path}: nested too deeply to be a settings file") from None
    except (ValueError, configparser.Error) as exc:  # also 5,000-digit JSON numbers (ValueError)
        raise ConfigError(f"{path}: {(str(exc).splitlines() or ['unreadable'])[0][:200]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table of settings")
    hook = data.get("hook", data)
    if not isinstance(hook, dict):
        raise ConfigError(f"{path}: [hook] must be a table of settings")
    # An empty file (a deploy cut short) must not quietly leave only the driver check running.
    values = {k: v for k, v in hook.items() if k != "hook"}
    if not values:
        raise ConfigError(f"{path}: holds no settings, so no requirement would be checked")
    return values


def _toml(text: str) -> Dict[str, Any]:
    try:
        import tomllib as toml
    except ImportError:  # Python < 3.11
        try:
            import tomli as toml
        except ImportError:
            raise ValueError("reading TOML needs Python 3.11+ or the tomli package; "
                             "use a .json or .ini config instead") from None
    return toml.loads(text)


def merge(file_values: Mapping[str, Any], flag_values: Mapping[str, Any],
          base: Optional[Settings] = None) -> Settings:
    """Settings from the file's values, then the flags that were given (None = not given)."""
    settings = base or Settings()
    values = {k.replace("-", "_"): v for k, v in file_values.items()}
    unknown = sorted(set(values) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(f"unknown setting {_show(unknown[0])} (known: {', '.join(KNOWN_KEYS)})")
    values.update({k: v for k, v in flag_values.items() if v is not None and v != ()})
    req = {}
    other = {}
    for key, value in values.items():
        if key in _REQ:
            req[_FIELD.get(key, key)] = _REQ[key](value, key)
        elif key in _OTHER:
            other[key] = _OTHER[key](value, key)
    explicit = tuple(dict.fromkeys(settings.requirements.explicit + tuple(req)))
    merged = replace(settings, requirements=replace(settings.requirements, explicit=explicit, **req), **other)
    return _active_timeout(merged, "timeout" in values)


# A DCGM diagnostic or the smoke test takes far longer than the hook's usual second: when one is
# asked for and no timeout was given, the run may take as long as that test is allowed.
def _active_timeout(settings: Settings, timeout_given: bool) -> Settings:
    req, longest = settings.requirements, settings.timeout
    if timeout_given or not (req.dcgm or req.smoke):
        return settings
    from gpudoctor.knowledge import dcgm as dcgm_knowledge, node_health

    if req.dcgm:
        longest = max(longest, dcgm_knowledge.level_timeout_s(req.dcgm) + DEFAULT_TIMEOUT_S)
    if req.smoke:
        longest = max(longest, node_health.smoke_settings()["timeout_smoke_s"] + DEFAULT_TIMEOUT_S)
    return replace(settings, timeout=longest)
