"""Snapshot folders for the hook tests, built from real nvidia-smi recordings.

Each helper records one ``nvidia-smi -q -x`` result the way the hook's live probe would
(argv, exit code, output, timing), optionally with framework facts, and saves it as a
snapshot folder that ``gpudoctor hook --snapshot`` replays.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Optional

from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import FileRecord, Snapshot

ROOT = Path(__file__).resolve().parent.parent
XML = ROOT / "fixtures" / "nvidia-smi" / "xml"

# Real recordings (see fixtures/nvidia-smi/SOURCES.md).
HEALTHY = "rtx-4090_driver-535.86.05_cuda-12.2.xml"             # 1 GPU, persistence on, 40 C
RETIRED = "tesla-v100-sxm3-32gb_driver-410.104_cuda-10.0_retired-pages.xml"  # retired pages pending
SIX_GPUS = "gtx-1070-x6_driver-384.66_dtd-v9_processes.xml"     # 6 GPUs, ethminer on each
T4_PROCS = "tesla-t4_driver-515.105.01_cuda-11.7_processes.xml"  # Xorg (G) + python (C)
WDDM = "rtx-3080_driver-536.40_cuda-12.2_windows-wddm_processes.xml"  # persistence N/A
NO_TEMP = "gt-730_driver-384.111_dtd-v9_unsupported-gpu-na.xml"  # temperature N/A

ARGV = ("nvidia-smi", "-q", "-x")
NOT_LOADED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
              "Make sure that the latest NVIDIA driver is installed and running.\n")


def xml(name: str, **edits: str) -> str:
    """A recording, with ``<tag>old</tag>`` values replaced by ``edits`` (first match each)."""
    text = (XML / name).read_text(encoding="utf-8")
    for tag, value in edits.items():
        text, n = re.subn(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{value}</{tag}>", text, count=1)
        assert n == 1, f"{name} has no <{tag}>"
    return text


# The live hook also reads /dev/kmsg (the Xid checks): these recordings carry a kernel log with no
# NVIDIA error, the first record of this project's development VM as /dev/kmsg prints it.
CLEAN_KMSG = ("5,0,0,-;Linux version 6.18.44-fc-v782 (builder@sandboxing) (gcc (GCC) 15.3.0, GNU ld (GNU Binutils) "
              "2.46) #1 SMP PREEMPT_DYNAMIC @0\n")


def save(directory: Path, result: Optional[CommandResult], frameworks: Optional[Dict] = None,
         hostname: str = "node01", meta: Optional[Dict] = None, key: str = "nvidia_smi_xml",
         kmsg: Optional[str] = CLEAN_KMSG) -> Path:
    snap = Snapshot(meta={"hostname": hostname, "gpudoctor_version": "test", **(meta or {})},
                    frameworks=frameworks or {})
    if result is not None:
        snap.commands[key] = result
    if kmsg is not None:
        snap.files["/dev/kmsg"] = FileRecord("/dev/kmsg", content=kmsg)
    snap.save(str(directory))
    return directory


def answered(directory: Path, text: str, **kw) -> Path:
    return save(directory, CommandResult(ARGV, 0, text, "", 0.31), **kw)


def recording(directory: Path, name: str, **kw) -> Path:
    return answered(directory, xml(name), **kw)


def hung(directory: Path, seconds: float = 10.0) -> Path:
    return save(directory, CommandResult(ARGV, None, "", "", seconds, timed_out=True))


def not_found(directory: Path) -> Path:
    return save(directory, CommandResult(ARGV, error="not found"))


def driver_not_loaded(directory: Path) -> Path:
    return save(directory, CommandResult(ARGV, 9, NOT_LOADED, "", 0.05))


def torch_record(version: str, cuda: Optional[str]) -> Dict:
    return {"installed": True, "version": version, "cuda": cuda, "probe": {"source": "test"}}


def tf_record(version: str, cuda: Optional[str]) -> Dict:
    info = {"is_cuda_build": cuda is not None, **({"cuda_version": cuda} if cuda else {})}
    return {"installed": True, "version": version, "build_info": info, "probe": {"source": "test"}}
