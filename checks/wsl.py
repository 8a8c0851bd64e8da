"""WSL2 checks: the CUDA driver must be Windows' own, served from /usr/lib/wsl/lib."""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.findings import Evidence, fail, ok, warn
from gpudoctor.recipes import recipe


@check("WSL001", "wsl-no-linux-driver", "no Linux NVIDIA driver is installed inside WSL", needs=("wsl_gpu",))
def wsl_linux_driver(f: Facts):
    """Under WSL2, libcuda must come from /usr/lib/wsl/lib; a Linux driver installed in the distribution
    (libcuda.so.<version>, a libcuda elsewhere in the loader cache, an nvidia module) breaks CUDA."""
    w = f["wsl_gpu"]
    ev = [Evidence(lib.source, lib.path) for lib in w.linux_driver_libs]
    ev += [Evidence("command:ldconfig_p", lib.line) for lib in w.foreign_libcuda]
    if w.module_loaded:
        ev.append(Evidence("file:/proc/modules", "an nvidia kernel module is loaded inside WSL"))
    if not ev:
        where = "/usr/lib/wsl/lib" if "libcuda.so.1" in w.wsl_libs else "nowhere yet"
        return ok(f"no Linux NVIDIA driver inside WSL; libcuda comes from {where}",
                  evidence=[Evidence("listing:/usr/lib/wsl/lib", " ".join(w.wsl_libs[:8]))])
    version = next((lib.version for lib in w.linux_driver_libs), None)
    return fail("a Linux NVIDIA driver" + (f" ({version})" if version else "") + " is installed inside WSL: "
                "CUDA loads its libcuda instead of Windows' /usr/lib/wsl/lib/libcuda.so.1",
                detail="Never install a Linux NVIDIA driver inside WSL: the GPU is driven by the Windows driver, "
                       "and a Linux libcuda cannot reach it.",
                evidence=ev, fix=recipe("wsl_specific", f))


@check("WSL002", "wsl-libcuda", "WSL's libcuda is in the loader cache", needs=("wsl_gpu",))
def wsl_libcuda(f: Facts):
    """/usr/lib/wsl/lib/libcuda.so.1 must be in `ldconfig -p`. That it is a file, not a symlink, makes
    ldconfig print 'is not a symbolic link': harmless, explained here with how to silence it."""
    w = f["wsl_gpu"]
    if "libcuda.so.1" not in w.wsl_libs:
        return warn("/usr/lib/wsl/lib has no libcuda.so.1: Windows did not mount its NVIDIA driver",
                    detail="Install or update the NVIDIA driver on Windows, then run `wsl.exe --shutdown`.",
                    evidence=[Evidence("listing:/usr/lib/wsl/lib", " ".join(w.wsl_libs[:8]) or "empty")])
    cached = w.libcuda_cache
    if cached is not None and not any(lib.path.startswith("/usr/lib/wsl/lib/") for lib in cached):
        return warn("the loader cache has no /usr/lib/wsl/lib/libcuda.so.1: programs cannot find libcuda",
                    evidence=[Evidence("command:ldconfig_p", "; ".join(lib.line for lib in cached) or "no libcuda")],
                    fix=recipe("wsl_libcuda_not_found", f))
    # The loader takes the first libcuda.so.1 in the cache; a Linux driver's copy ahead of WSL's is WSL001's.
    first = next((lib for lib in cached or () if lib.name == "libcuda.so.1"), None)
    where = ("libcuda.so.1 comes from /usr/lib/wsl/lib" if first is None or first.path.startswith("/usr/lib/wsl/")
             else f"/usr/lib/wsl/lib/libcuda.so.1 is in the loader cache, behind {first.path} (WSL001)")
    link = w.libcuda_so1
    if link is not None and link.target is None:
        return ok(f"{where}; ldconfig's '/usr/lib/wsl/lib/libcuda.so.1 is not a "
                  "symbolic link' message on this machine is harmless",
                  detail="Windows mounts libcuda.so, .so.1 and .so.1.1 as copies instead of symlinks; the loader "
                         "still finds libcuda.so.1. The fix below only silences the message.",
                  evidence=[Evidence("listing:/usr/lib/wsl/lib", "libcuda.so.1 is a regular file, not a symlink")],
                  fix=recipe("wsl_libcuda_symlink", f))
    return ok(where)


CHECKS = (wsl_linux_driver, wsl_libcuda)
