"""Values computed from what a message said, using the knowledge base (never hard-coded).

"found version 11040" becomes CUDA 11.4; "sm_120" becomes compute capability 12.0 and the
PyTorch build that has kernels for it; a driver version becomes the newest CUDA it runs;
an Xid number becomes its meaning. The results feed the explanation templates, the recipe
placeholders and the boolean flags that signatures require or are boosted by.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional, Set

from packaging.version import InvalidVersion, Version

from gpudoctor import knowledge
from gpudoctor.knowledge import xid as xid_catalog
from gpudoctor.explain.values import sm_to_cc
from gpudoctor.framework_fixes import torch_fit
from gpudoctor.knowledge.tensorflow import releases_for_exact_cuda, tf_windows_native_gpu_last


def _v(text: Any) -> Optional[Version]:
    try:
        return Version(str(text))
    except (InvalidVersion, TypeError):
        return None


def _cuda_values(values: Dict[str, Any]) -> None:
    if values.get("driver_api") and not values.get("driver_cuda"):
        try:
            values["driver_cuda"] = knowledge.cuda_from_driver_api_int(_small_int(values["driver_api"]))
        except ValueError:
            pass
    driver = values.get("driver_version")
    if driver and not values.get("driver_max_cuda"):
        try:
            values["driver_max_cuda"] = knowledge.max_cuda_for_driver(str(driver))
        except ValueError:
            pass
    if not values.get("cuda_driver_max"):
        values["cuda_driver_max"] = values.get("driver_max_cuda") or values.get("driver_cuda")
    needed = values.get("required_cuda") or _torch_cuda(values.get("torch_version"))
    if needed and not values.get("min_driver"):
        try:
            req = knowledge.min_driver_for_cuda(str(needed))
        except ValueError:
            req = None
        if req is not None:
            values["min_driver"] = req.min_driver


def _small_int(value: Any) -> Optional[int]:
    """An int of at most 18 digits, else None (a message's 5,000-digit number is no version)."""
    text = str(value).strip()
    return int(text) if text.isdigit() and len(text) <= 18 else None


def _torch_cuda(torch_version: Any) -> Optional[str]:
    """"2.3.1+cu121" -> "12.1" (the CUDA a torch wheel was built with)."""
    m = re.search(r"\+cu(\d{1,4})(\d)$", str(torch_version or ""))
    return f"{int(m.group(1))}.{m.group(2)}" if m else None


def _arch_values(values: Dict[str, Any]) -> None:
    if values.get("sm") and not values.get("compute_cap"):
        values["compute_cap"] = sm_to_cc(str(values["sm"]))
    archs = values.get("arch_list")
    if isinstance(archs, list) and archs:
        numbered = [(int(m.group(1)), a) for a in archs for m in [re.search(r"_(\d{1,6})(?!\d)", str(a))] if m]
        if numbered:
            values["arch_max"] = max(numbered)[1]
    cc = values.get("compute_cap")
    if cc and not values.get("torch_install"):
        _torch_fit(values, str(cc))


def _torch_fit(values: Dict[str, Any], cc: str) -> None:
    """The PyTorch build with kernels for ``cc`` (and, when known, runnable on the driver)."""
    try:
        fit = torch_fit(values.get("torch_version"), values.get("driver_version"), [cc])
    except (ValueError, KeyError):
        fit = None
    if fit is None:
        values.setdefault("torch_fit_hint", "no PyTorch release in gpudoctor's table has kernels for it yet")
        return
    python = values.get("python") or "python"
    values.update(torch_fit_release=fit.pin, torch_fit_variant=fit.variant.name, torch_fit_cuda=fit.variant.cuda,
                  torch_index_url=fit.variant.index_url, torch_install=fit.install_command(python))
    values["torch_fit_hint"] = f"torch {fit.pin} for CUDA {fit.variant.cuda} ({fit.variant.name})"


def _tf_exact_cuda(values: Dict[str, Any]) -> None:
    """"libcublas.so.9.0" -> the TensorFlow releases built for exactly that CUDA ("TensorFlow 1.5 to 1.12")."""
    m = re.fullmatch(r"lib(?:cudart|cublas|cublasLt|cufft|curand|cusolver|cusparse|nvrtc|cupti)\.so\.(\d{1,2}\.\d)",
                     str(values.get("library") or ""))
    found = releases_for_exact_cuda(m.group(1)) if m else None
    if found is None or values.get("tf_exact_releases"):
        return
    first, last = found
    values["tf_exact_cuda"] = m.group(1)
    values["tf_exact_releases"] = f"TensorFlow {first}" if first == last else f"TensorFlow {first} to {last}"


def _xid_values(values: Dict[str, Any], tables: Dict[str, Any]) -> None:
    xid = values.get("xid")
    row = (tables.get("xid") or {}).get(str(xid)) if xid is not None else None
    said = _xid_catalog(xid, values.get("detail"))  # NVIDIA's action, from the Xid table the kernel-log checks use
    if row:
        values.setdefault("xid_meaning", row["meaning"])
        values.setdefault("xid_action", row["action"] + (f" ({said})" if said else ""))
        values.setdefault("xid_cause", row["cause"])
    elif said:
        values.setdefault("xid_meaning", xid_catalog.xid(int(xid)).description)
        values.setdefault("xid_action", said)
    elif xid is not None:
        values.setdefault("xid_meaning", "see NVIDIA's Xid catalog")
        values.setdefault("xid_action", "look it up in NVIDIA's Xid catalog and check the lines around it")


def _xid_catalog(xid: Any, detail: Optional[str] = None) -> Optional[str]:
    """"NVIDIA's Xid catalog: RESET_GPU, stop the GPU's processes and reset it ..." for a listed Xid; what
    the line says after the code (Fatal/Nonfatal, a recovery action) resolves a workflow as the checks do."""
    from gpudoctor.kernlog import RECOVERY, SEVERITY

    try:
        info = xid_catalog.xid(int(xid))
    except (TypeError, ValueError):
        return None
    if info is None:
        return None
    sev, rec = SEVERITY.search(detail or ""), RECOVERY.search(detail or "")
    action = xid_catalog.acts_as(info.code, fatal=None if sev is None else sev.group("sev") == "Fatal",
                                 recovery=rec.group("to") if rec else None)
    named = info.immediate if info.immediate == action else f"{info.immediate}, that is {action}"
    return f"NVIDIA's Xid catalog: {named}, {xid_catalog.bucket(action).means}"


def _flags(values: Dict[str, Any]) -> Set[str]:
    flags: Set[str] = set()
    if values.get("driver_version"):
        flags.add("driver_seen")              # a driver answered (nvidia-smi header, NVRM line, the snapshot)
    smi_cuda, native = _v(values.get("smi_cuda")), _v(values.get("driver_max_cuda"))
    if smi_cuda and native and smi_cuda > native:
        flags.add("cuda_beyond_driver")       # nvidia-smi shows a cuda-compat libcuda's version
    tf = _v(values.get("tf_version"))
    if tf:
        last = _v(tf_windows_native_gpu_last())
        if last and (tf.major, tf.minor) > (last.major, last.minor):
            flags.add("tf_windows_no_gpu")
        elif last:
            flags.add("tf_windows_gpu_ok")    # a release that still had GPU support on native Windows
    if str(values.get("torch_version") or "").endswith("+cpu"):
        flags.add("torch_cpu_wheel")          # "2.1.2+cpu": PyTorch's CPU-only wheel
    if values.get("tf_exact_releases"):
        flags.add("tf_exact_cuda")            # a library of one exact CUDA that old TensorFlow releases linked
    return flags


def derive(values: Dict[str, Any], tables: Dict[str, Any]) -> Set[str]:
    """Add derived values to ``values`` in place; return the boolean flags they imply."""
    _cuda_values(values)
    _arch_values(values)
    _tf_exact_cuda(values)
    _xid_values(values, tables)
    return _flags(values)
