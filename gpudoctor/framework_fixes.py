"""Which torch build fits this machine, and the recipe values for the framework checks.

Everything here is looked up in ``gpudoctor.knowledge`` (driver minimums, release
variants, compiled architectures); this module only combines the machine's numbers
with those tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from gpudoctor import knowledge


@dataclass(frozen=True)
class TorchFit:
    release: str                      # "2.3" (table row) or the installed "2.3.1"
    variant: "knowledge.TorchVariant"
    same_release: bool                # True: a variant of the installed release fits

    @property
    def pin(self) -> str:
        """A pip version pin: the installed "2.3.1", or "2.7.*" for a table row or a pre-release build
        (NGC's "2.1.0a0+29c30b1" is not on the PyTorch index)."""
        v = Version(self.release)
        if self.same_release and not v.is_prerelease and not v.is_devrelease:
            return self.release
        return f"{v.major}.{v.minor}.*"

    def install_command(self, python: str = "python") -> str:
        return (f"{python} -m pip install --force-reinstall 'torch=={self.pin}' "
                f"--index-url {self.variant.index_url}")


def knowledge_os(target_os: Optional[str]) -> str:
    return "windows" if target_os == "windows" else ("wsl" if target_os == "wsl" else "linux")


def _fits_all(version: str, driver: Optional[str], ccs: Iterable[str], os: str) -> List:
    ccs = [c for c in ccs if c] or [None]
    sets = [knowledge.torch_variants_for(version, driver, cc, os) for cc in ccs]
    names = set.intersection(*({v.name for v in s} for s in sets))
    release = knowledge.torch_release(version, os)
    default = release.default_variant if release else None
    # The release's default build first (the one PyTorch recommends), then newest CUDA first.
    return sorted((v for v in sets[0] if v.name in names), key=lambda v: v.name != default)


def torch_fit(torch_version: Optional[str], driver: Optional[str], ccs: Iterable[str],
              os: str = "linux", python: Optional[str] = None) -> Optional[TorchFit]:
    """A build that runs on this driver (None: any), on every GPU and on this Python (None: any): a
    variant of the installed release first (its default build if it fits), else the newest
    release that has one. None when no release in the table fits."""
    try:
        return _torch_fit(torch_version, driver, list(ccs), os, python)
    except ValueError:  # a version string the tables cannot compare ("N/A", a vendor build tag)
        return None


def _python_ok(release: str, python: Optional[str], os: str) -> bool:
    row = knowledge.torch_release(release, os)
    if python is None or row is None or not row.python:
        return True
    try:
        return Version(python) in SpecifierSet(row.python)
    except InvalidVersion:
        return True


def _torch_fit(torch_version: Optional[str], driver: Optional[str], ccs: List[str], os: str,
               python: Optional[str] = None) -> Optional[TorchFit]:
    if torch_version:
        base = torch_version.split("+")[0]
        try:
            same = _fits_all(base, driver, ccs, os)
        except ValueError:
            same = []
        if same:
            return TorchFit(base, same[0], True)
    for release in sorted(_releases(), key=Version, reverse=True):
        if not _python_ok(release, python, os):
            continue
        fits = _fits_all(release, driver, ccs, os)
        if fits:
            return TorchFit(release, fits[0], False)
    return None


def _releases() -> List[str]:
    from gpudoctor.knowledge.framework_runtime import torch_release_versions

    return torch_release_versions()


def driver_older_than(driver: Optional[str], need: Optional[str]) -> bool:
    """True when both are versions and ``driver`` < ``need`` (unknown or unparsable: False)."""
    try:
        return bool(driver and need) and Version(driver) < Version(need)
    except InvalidVersion:
        return False


def min_driver(cuda: Optional[str], os: str = "linux") -> Optional[str]:
    if not cuda:
        return None
    try:
        req = knowledge.min_driver_for_cuda(cuda, os)
    except ValueError:
        return None
    return req.min_driver if req else None


def framework_context(f) -> Dict[str, Any]:
    """Recipe values for the torch, TensorFlow and device checks (see recipe_context.machine_context)."""
    ctx: Dict[str, Any] = {}
    os = knowledge_os(f.get("target_os"))
    python = f.get("python_path") or "python"
    driver = f.get("driver_version")
    driver = driver.version if driver else None
    ccs = [g.compute_cap for g in f.get("gpus") or () if g.compute_cap]
    tb = f.get("torch_build")
    if tb is not None:
        ctx["torch_min_driver"] = min_driver(tb.cuda, os)
        fit = torch_fit(tb.version, driver, ccs, os)
        if fit is not None:
            ctx.update(torch_fit_release=fit.pin, torch_fit_variant=fit.variant.name,
                       torch_fit_cuda=fit.variant.cuda, torch_index_url=fit.variant.index_url,
                       torch_install=fit.install_command(python))
    tf = f.get("tf_info")
    if tf is not None:
        ctx.update(tf_cuda=tf.cuda, tf_cudnn=tf.cudnn, tf_min_driver=min_driver(tf.cuda, os))
        ctx["tf_and_cuda"] = f"tensorflow[and-cuda]=={tf.version}" if _at_least(tf.version, "2.14") else None
    spec = f.get("visible_devices_spec")
    if spec is not None and spec.is_set:
        ctx["cuda_visible_devices"] = spec.raw
    return {k: v for k, v in ctx.items() if v is not None}


def _at_least(version: str, floor: str) -> bool:
    try:
        return Version(version) >= Version(floor)
    except InvalidVersion:
        return False
