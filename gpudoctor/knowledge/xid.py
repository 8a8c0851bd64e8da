"""NVIDIA's Xid catalog (``data/xid.json``): what an Xid is and which action NVIDIA names for it.

The catalog's immediate resolution buckets are kept in NVIDIA's own words (RESTART_APP,
RESET_GPU, RESTART_BM, CONTACT_SUPPORT, WORKFLOW_XID_48 ...). :func:`acts_as` turns a
workflow bucket into the bucket gpudoctor acts on, with what the Xid line itself says
(Fatal/Nonfatal on NVLink5 Xids, the new recovery action on Xid 154); :func:`bucket`
says which class of kernel-log check reports a bucket and what later event clears it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Optional, Tuple

from ._load import load


@dataclass(frozen=True)
class XidInfo:
    code: int
    mnemonic: str                  # "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    description: str               # "GPU has fallen off the bus"
    applies_to: Tuple[str, ...]    # GPU generations the catalog lists it for: ("A100", "H100", ...)
    immediate: Optional[str]       # NVIDIA's immediate bucket; None where the catalog lists none
    investigatory: Optional[str]   # NVIDIA's investigatory bucket, as written ("IGNORE (sympathetic)")
    recovery_since: Optional[str]  # driver branch from which the driver also sets a recovery action ("R565", "any")
    source: str


@dataclass(frozen=True)
class Bucket:
    name: str                      # "RESET_GPU"
    klass: str                     # reset, reboot, service, application, informational
    means: str                     # what to do, in a few words
    cleared_by: Tuple[str, ...]    # later events that clear it: "driver_load", "recovery_action_none"


@lru_cache(maxsize=None)
def _xids() -> Dict[int, XidInfo]:
    return {r["code"]: XidInfo(r["code"], r["mnemonic"], r["description"], tuple(r["applies_to"]),
                               r["immediate"], r["investigatory"], r.get("recovery_action_since"), r["source"])
            for r in load("xid")["xids"]}


def xid(code: int) -> Optional[XidInfo]:
    """The catalog row of Xid ``code``, or None for a code the catalog does not list."""
    return _xids().get(code)


@lru_cache(maxsize=None)
def _buckets() -> Dict[str, Bucket]:
    return {r["bucket"]: Bucket(r["bucket"], r["class"], r["means"], tuple(r["cleared_by"]))
            for r in load("xid")["buckets"]}


def bucket(name: str) -> Bucket:
    """A bucket's class and meaning; a name the data does not know is treated like UNKNOWN."""
    return _buckets().get(name) or _buckets()["UNKNOWN"]


def known_buckets() -> Tuple[str, ...]:
    """Every bucket name gpudoctor acts on (for validating --drain-xid-actions)."""
    return tuple(_buckets())


def _rows(section: str, key: str) -> Dict[str, dict]:
    return {r[key]: r for r in load("xid")[section]}


def recovery_bucket(name: str) -> Optional[str]:
    """The bucket for a driver recovery action ("GPU Reset Required" -> RESET_GPU), None if unknown."""
    row = _rows("recovery_actions", "name").get(name.strip())
    return row["acts_as"] if row else None


def sxid_bucket(severity: str) -> str:
    """The bucket for an NVSwitch SXid line's severity ("Fatal" -> RESTART_BM)."""
    row = _rows("sxid", "severity").get(severity)
    return row["acts_as"] if row else "UNKNOWN"


def sxid_why(severity: str) -> str:
    """What an SXid of this severity means, in a sentence."""
    row = _rows("sxid", "severity").get(severity)
    return row["why"] if row else ""


def acts_as(code: int, fatal: Optional[bool] = None, recovery: Optional[str] = None,
            after_other_xid: bool = False) -> str:
    """The bucket gpudoctor acts on for Xid ``code``, given what its line said.

    ``fatal``: "Fatal"/"Nonfatal" on an NVLink5 Xid (144-150) line; ``recovery``: the new
    recovery action an Xid 154 line names; ``after_other_xid``: another Xid on the same GPU
    came before it (NVIDIA's "not solo" for Xid 45)."""
    info = xid(code)
    if info is None:
        return "UNKNOWN"
    if info.immediate is None:
        return "UNLISTED"
    flow = _rows("workflows", "bucket").get(info.immediate)
    if flow is None:
        return info.immediate
    if flow.get("from_recovery_action") and recovery:
        return recovery_bucket(recovery) or "UNKNOWN"
    if fatal is not None and "fatal" in flow:
        return flow["fatal"] if fatal else flow["nonfatal"]
    if after_other_xid and "after_other_xid" in flow:
        return flow["after_other_xid"]
    return flow["acts_as"]


def catalog_url() -> str:
    return load("xid")["catalog"]
