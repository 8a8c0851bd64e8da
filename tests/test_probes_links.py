"""The probe records where symlinks point, below a root, without leaving it."""

from __future__ import annotations

import os

from gpudoctor.probes import files
from gpudoctor.snapshot import Snapshot
from gpudoctor.snapshot_folder import load


def _tree(tmp_path):
    root = tmp_path / "root"
    (root / "usr/local/cuda-12.4/bin").mkdir(parents=True)
    (root / "usr/local/cuda-12.4/bin/nvcc").write_text("#!/bin/sh\n")
    (root / "usr/local/cuda-12.4/targets/x86_64-linux/lib").mkdir(parents=True)
    os.symlink("targets/x86_64-linux/lib", root / "usr/local/cuda-12.4/lib64")
    (root / "etc/alternatives").mkdir(parents=True)
    os.symlink("/usr/local/cuda-12.4", root / "etc/alternatives/cuda")       # absolute: resolved below root
    os.symlink("/etc/alternatives/cuda", root / "usr/local/cuda")
    (root / "usr/lib/wsl/lib").mkdir(parents=True)
    (root / "usr/lib/wsl/lib/libcuda.so.1.1").write_text("elf")
    (root / "usr/lib/wsl/lib/libcuda.so.1").write_text("elf")                 # a copy, as WSL mounts it
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    for name in ("libcuda.so.1", "libcuda.so.550.54.15", "libnvidia-ml.so.550.54.15", "libc.so.6"):
        (root / "usr/lib/x86_64-linux-gnu" / name).write_text("")
    (root / "etc/modprobe.d").mkdir(parents=True)
    return root


def test_resolve_below_follows_absolute_and_relative_links_inside_root(tmp_path):
    root = str(_tree(tmp_path))
    assert files.resolve_below(root, "/usr/local/cuda") == "/usr/local/cuda-12.4"
    assert files.resolve_below(root, "/usr/local/cuda/lib64") == "/usr/local/cuda-12.4/targets/x86_64-linux/lib"
    assert files.resolve_below(root, "/usr/local/cuda/bin/nvcc") == "/usr/local/cuda-12.4/bin/nvcc"


def test_resolve_below_stops_on_a_link_loop(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    os.symlink("/b", root / "a")
    os.symlink("/a", root / "b")
    assert files.resolve_below(str(root), "/a") in ("/a", "/b")


def test_collect_links_records_targets_nvcc_on_path_and_plain_files(tmp_path):
    root = str(_tree(tmp_path))
    env = {"PATH": "/usr/local/cuda/bin:/usr/bin:relative/dir", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64:/nope",
           "CUDA_HOME": "/usr/local/cuda-12.4"}
    listings = files.collect_listings(root)
    links = files.collect_links(root, env, listings)
    assert links["/usr/local/cuda"] == {"target": "/etc/alternatives/cuda", "real": "/usr/local/cuda-12.4"}
    assert links["/usr/local/cuda/bin/nvcc"]["real"] == "/usr/local/cuda-12.4/bin/nvcc"
    assert links["/usr/local/cuda/lib64"]["real"] == "/usr/local/cuda-12.4/targets/x86_64-linux/lib"
    assert links["/usr/local/cuda-12.4"] == {"target": None, "real": "/usr/local/cuda-12.4"}
    assert links["/usr/lib/wsl/lib/libcuda.so.1"] == {"target": None, "real": "/usr/lib/wsl/lib/libcuda.so.1"}
    assert "/usr/bin/nvcc" not in links and "/nope" not in links  # only what exists
    assert not any(p.startswith("relative") for p in links)


def test_listings_keep_only_the_named_prefixes(tmp_path):
    listings = files.collect_listings(str(_tree(tmp_path)))
    assert listings["/usr/lib/x86_64-linux-gnu"] == ["libcuda.so.1", "libcuda.so.550.54.15", "libnvidia-ml.so.550.54.15"]
    assert listings["/etc/modprobe.d"] == []
    assert "/run/modprobe.d" not in listings


def test_links_survive_save_and_load(tmp_path):
    snap = Snapshot(links={"/usr/local/cuda": {"target": "cuda-12.4", "real": "/usr/local/cuda-12.4"}})
    snap.save(str(tmp_path / "s"))
    assert load(str(tmp_path / "s")).link("/usr/local/cuda/") == {"target": "cuda-12.4", "real": "/usr/local/cuda-12.4"}
