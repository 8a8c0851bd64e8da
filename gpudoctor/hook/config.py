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

TOML needs Python 3.11+ (``tomllib``) or the ``tomli`` package; JSON and INI work everywhere
(INI lists are comma-separated). A flag given on the command line wins over the file.
"""

from __future__ import annotations

import configparser
import json
import re
from dataclasses import dataclass, field, replace
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


_UNITS = {"": 1, "mib": 1, "m": 1, "gib": 1024, "g": 1024, "tib": 1024 * 1024, "t": 1024 * 1024,
          "mb": 1e6 / 2 ** 20, "gb": 1e9 / 2 ** 20, "tb": 1e12 / 2 ** 20}


def parse_size_mib(text: Any) -> int:
    """``70GiB`` -> 71680; ``512MiB``, ``80GB`` (decimal), or a bare number of MiB."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ConfigError(f"not a memory size: {text!r} (expected e.g. 70GiB, 512MiB or 80GB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def _version(text: Any, what: str) -> str:
    from packaging.version import InvalidVersion, Version

    try:
        Version(str(text))
    except InvalidVersion:
        raise ConfigError(f"not a {what}: {text!r}") from None
    return str(text).strip()


def _bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in ("1", "true", "yes", "on"):
        return True
    if str(value).strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{key}: expected true or false, got {value!r}")


def _int(value: Any, key: str, low: int, high: int) -> int:
    try:
        n = int(str(value).strip()) if not isinstance(value, bool) else None
    except ValueError:
        n = None
    if n is None or not low <= n <= high:
        raise ConfigError(f"{key}: expected a whole number from {low} to {high}, got {value!r}")
    return n


def _names(value: Any, key: str) -> tuple:
    if isinstance(value, str):
        value = [v for v in value.split(",")]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{key}: expected a list of names, got {value!r}")
    return tuple(str(v).strip() for v in value if str(v).strip())


def _timeout(value: Any, key: str) -> float:
    try:
        t = float(value)
    except (TypeError, ValueError):
        t = -1
    if not 0.5 <= t <= 600:
        raise ConfigError(f"{key}: expected seconds from 0.5 to 600, got {value!r}")
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
    "pcie_width": _bool,
    "no_slowdown": _bool,
    "dcgm": lambda v, k: _int(v, k, 1, 4),
    "smoke": _bool,
}
_FIELD = {"min_free_mem": "min_free_mem_mib"}
_OTHER = {"timeout": _timeout, "python": lambda v, k: str(v), "prometheus": lambda v, k: str(v),
          "snapshot": lambda v, k: str(v)}
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
            data = {"hook": dict(parser["hook"])} if parser.has_section("hook") else {}
        else:
            data = _toml(text)
    except (ValueError, configparser.Error) as exc:
        raise ConfigError(f"{path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table of settings")
    hook = data.get("hook", data)
    if not isinstance(hook, dict):
        raise ConfigError(f"{path}: [hook] must be a table of settings")
    return {k: v for k, v in hook.items() if k != "hook"}


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
        raise ConfigError(f"unknown setting {unknown[0]!r} (known: {', '.join(KNOWN_KEYS)})")
    values.update({k: v for k, v in flag_values.items() if v is not None and v != ()})
    req = {}
    other = {}
    for key, value in values.items():
        if key in _REQ:
            req[_FIELD.get(key, key)] = _REQ[key](value, key)
        elif key in _OTHER:
            other[key] = _OTHER[key](value, key)
    merged = replace(settings, requirements=replace(settings.requirements, **req), **other)
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
