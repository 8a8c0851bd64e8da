"""Hostile inputs for bench/campaign_recordings.py: snapshot folders, bundles and a planted machine.

Each builder writes one attack and returns (name, path, how to judge it). The host files
an attack tries to read hold a marker; finding the marker in gpudoctor's output means a
host file was read.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import tarfile
import zlib
from pathlib import Path
from typing import Callable, Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "fixtures" / "scenarios" / "core-healthy-workstation" / "snapshot"
MARKER = "HOST-FILE-MARKER-5d1e"
GIB = 1024 ** 3


def host_dir(base: Path) -> Path:
    """Stand-ins for host files (/etc/shadow, /etc) outside every recording."""
    host = base / "host"
    (host / "etc").mkdir(parents=True, exist_ok=True)
    for name in ("os-release", "shadow", "version"):
        (host / "etc" / name).write_text(f'PRETTY_NAME="{MARKER}"\nNVRM version: {MARKER}\n')
    meta = json.loads((SCENARIO / "snapshot.json").read_text())
    meta["meta"]["hostname"] = MARKER
    (host / "snapshot.json").write_text(json.dumps(meta))
    shutil.copytree(SCENARIO, host / "snap", dirs_exist_ok=True)
    (host / "snap" / "snapshot.json").write_text(json.dumps(meta))
    return host


def _copy(base: Path, name: str) -> Path:
    target = base / "folders" / name
    shutil.copytree(SCENARIO, target)
    return target


def _relink(path: Path, to: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(to)


def _sparse(path: Path, size: int) -> None:
    if path.exists():
        path.unlink()
    with open(path, "wb") as fh:
        fh.truncate(size)


def _snapshot_json(folder: Path, edit: Callable[[dict], None]) -> None:
    data = json.loads((folder / "snapshot.json").read_text())
    edit(data)
    (folder / "snapshot.json").write_text(json.dumps(data))


FolderAttack = Callable[[Path, Path], None]


def _deep(f: Path, h: Path) -> None:
    p = f / "files"
    for _ in range(200):
        p = p / "d"
    p.mkdir(parents=True)
    (p / "x.conf").write_text("deep")


def _many(f: Path, h: Path) -> None:
    many = f / "files" / "many"
    many.mkdir()
    for i in range(30000):
        (many / f"f{i}").touch()


FOLDER_ATTACKS: Dict[str, FolderAttack] = {
    "link-file-to-host": lambda f, h: _relink(f / "files" / "etc" / "os-release", h / "etc" / "os-release"),
    "link-files-dir-to-host-etc": lambda f, h: _relink(f / "files", h),
    "link-etc-dir-to-host-etc": lambda f, h: _relink(f / "files" / "etc", h / "etc"),
    "link-driver-version-to-host": lambda f, h: _relink(f / "files" / "proc" / "driver" / "nvidia" / "version",
                                                        h / "etc" / "version"),
    "link-command-output-to-host": lambda f, h: _relink(f / "commands" / "uname_r.out", h / "etc" / "shadow"),
    "link-snapshot-json-outside": lambda f, h: _relink(f / "snapshot.json", h / "snapshot.json"),
    "link-relative-escape": lambda f, h: _relink(f / "files" / "etc" / "os-release",
                                                 Path(os.path.relpath(h / "etc" / "shadow", f / "files" / "etc"))),
    "sparse-2g-file": lambda f, h: _sparse(f / "files" / "etc" / "huge.conf", 2 * GIB),
    "sparse-2g-command-output": lambda f, h: _sparse(f / "commands" / "nvidia_smi_xml.out", 2 * GIB),
    "sparse-2g-snapshot-json": lambda f, h: _sparse(f / "snapshot.json", 2 * GIB),
    "fifo-file": lambda f, h: os.mkfifo(f / "files" / "etc" / "fifo.conf"),
    "fifo-command-output": lambda f, h: (os.unlink(f / "commands" / "uname_r.out"), os.mkfifo(f / "commands" / "uname_r.out")),
    "fifo-snapshot-json": lambda f, h: (os.unlink(f / "snapshot.json"), os.mkfifo(f / "snapshot.json")),
    "dir-200-deep": _deep,
    "30000-entries": _many,
    "non-utf8-name": lambda f, h: (f / "files" / os.fsdecode(b"bad-\xff.conf")).write_text("x"),
    "lone-surrogate-in-json": lambda f, h: _snapshot_json(f, lambda d: d["meta"].update(hostname="\udc80host")),
    "json-nested-100000": lambda f, h: (f / "snapshot.json").write_text(
        '{"schema": "gpudoctor.snapshot/1", "meta": ' + "[" * 100000 + "]" * 100000 + "}"),
    "json-nested-500": lambda f, h: _snapshot_json(f, lambda d: d["meta"].update(x=json.loads("[" * 500 + "]" * 500))),
    "json-400-digit-returncode": lambda f, h: _snapshot_json(
        f, lambda d: d["commands"]["nvidia_smi_xml"].update(returncode=10 ** 400)),
    "json-wrong-types": lambda f, h: _snapshot_json(f, lambda d: d.update(env=[1, 2], commands={"x": []})),
}
if hasattr(os, "geteuid") and os.geteuid() == 0:
    FOLDER_ATTACKS["char-device-file"] = lambda f, h: os.mknod(f / "files" / "etc" / "zero.conf", 0o600 | stat.S_IFCHR,
                                                               os.makedev(1, 5))


def folder_attack(base: Path, host: Path, name: str) -> Path:
    folder = _copy(base, name)
    FOLDER_ATTACKS[name](folder, host)
    return folder


def linked_snapshot_subfolder(base: Path, host: Path) -> Path:
    holder = base / "folders" / "link-snapshot-subfolder"
    holder.mkdir(parents=True)
    (holder / "snapshot").symlink_to(host / "snap", target_is_directory=True)
    return holder


# --- bundles ---------------------------------------------------------------------------------

def _info(name: str, size: int, kind=tarfile.REGTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info


def _tar(entries, fmt=tarfile.PAX_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _gz(data: bytes, level: int = 6) -> bytes:
    return gzip.compress(data, compresslevel=level)


def _scenario_entries(top: str = "b") -> List[Tuple[str, bytes]]:
    return [(f"{top}/snapshot/{p.relative_to(SCENARIO).as_posix()}", p.read_bytes())
            for p in sorted(SCENARIO.rglob("*")) if p.is_file()]


def good_bundle(extra_manifest=(), extra=()) -> bytes:
    entries = _scenario_entries() + list(extra)
    rows = [{"name": n.split("/", 1)[1], "sha256": hashlib.sha256(d).hexdigest()} for n, d in entries]
    manifest = json.dumps({"schema": "gpudoctor.bundle/1", "members": rows + list(extra_manifest)}).encode()
    return _gz(_tar([(_info(n, len(d)), d) for n, d in entries + [("b/manifest.json", manifest)]]))


def _zeros_member(name: str, size: int) -> bytes:
    """A tar header and ``size`` zero bytes, gzip-compressed as one stream (joined streams are one gzip file)."""
    header = _info(name, size).tobuf(tarfile.GNU_FORMAT)
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [z.compress(header)]
    chunk = bytes(1 << 20)
    left = size
    while left > 0:
        n = min(left, len(chunk))
        out.append(z.compress(chunk[:n]))
        left -= n
    pad = (-size) % 512
    out.append(z.compress(bytes(pad)))
    out.append(z.flush())
    return b"".join(out)


def dot_bomb(members: int = 200, each: int = 60 * 1024 * 1024) -> bytes:
    unit = _zeros_member(".", each)  # compressed once, repeated: a 12 MB archive of 12 GB
    return unit * members + _gz(bytes(1024))  # gzip reads joined streams as one


def long_name_header(kind: str, size: int = GIB) -> bytes:
    """A GNU long-name ('L') or pax ('x') header whose data is ``size`` bytes, then a small member."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = _info("././@LongLink" if kind == "gnu" else "pax", size,
                 tarfile.GNUTYPE_LONGNAME if kind == "gnu" else tarfile.XHDTYPE).tobuf(tarfile.GNU_FORMAT)
    out = [z.compress(head)]
    prefix = f"{size} path=".encode() if kind == "pax" else b""
    out.append(z.compress(prefix))
    chunk = b"n" * (1 << 20)
    left = size - len(prefix)
    while left > 0:
        n = min(left, len(chunk))
        out.append(z.compress(chunk[:n]))
        left -= n
    out.append(z.compress(bytes((-size) % 512)))
    out.append(z.compress(_tar([(_info("b/x", 1), b"x")])))
    out.append(z.flush())
    return b"".join(out)


def bundle_attacks(base: Path, quick: bool) -> Dict[str, bytes]:
    passwd = Path("/etc/passwd").read_bytes()
    attacks = {
        "manifest-absolute-etc-passwd": good_bundle([{"name": "/etc/passwd", "sha256": hashlib.sha256(passwd).hexdigest()}]),
        "manifest-proc-kmsg": good_bundle([{"name": "/proc/kmsg", "sha256": "0" * 64}]),
        "manifest-dotdot": good_bundle([{"name": "../../../../etc/passwd", "sha256": hashlib.sha256(passwd).hexdigest()}]),
        "manifest-wrong-types": _gz(_tar([(_info(n, len(d)), d) for n, d in _scenario_entries()]
                                         + [(_info("b/manifest.json", 18), b'{"members": "x"}  ')])),
        "manifest-deep": _gz(_tar([(_info(n, len(d)), d) for n, d in _scenario_entries()]
                                  + [(_info("b/manifest.json", 200000), b"[" * 100000 + b"]" * 100000)])),
        "member-symlink": _gz(_tar([(_info("b/link", 0, tarfile.SYMTYPE), None)])),
        "member-absolute": _gz(_tar([(_info("/tmp/gpudoctor-campaign-escape", 1), b"x")])),
        "member-dotdot": _gz(_tar([(_info("b/../../gpudoctor-campaign-escape", 1), b"x")])),
        "truncated": good_bundle()[:3000],
        "zero-bomb-1g": _zeros_member("b/zeros", GIB // (8 if quick else 1)) + _gz(bytes(1024)),
        "dot-bomb-12g": dot_bomb(members=20 if quick else 200),
        "gnu-long-name-1g": long_name_header("gnu", GIB // (8 if quick else 1)),
        "pax-long-name-1g": long_name_header("pax", GIB // (8 if quick else 1)),
    }
    return attacks
