# The smoke test. Runs inside the *job's* interpreter (--python), never inside gpudoctor's own
# process, as `python -c <this file>` with its settings as JSON on stdin (see probes/active.py).
# Self-contained on purpose (the target interpreter may not have gpudoctor). It only measures:
# every number goes back raw (seconds, bytes, the largest difference to the CPU's product) and
# gpudoctor judges them. It writes nothing to disk and changes no setting. The NCCL ranks are
# children of this process, in its process group: gpudoctor kills the group at its timeout.
import json
import os
import socket
import subprocess
import sys
import time

MARKER = "GPUDOCTOR-SMOKE-JSON:"
MIB = 1024 * 1024


def _exc(e):
    return {"type": type(e).__name__, "message": str(e).strip()[:2000]}


def _emit(out):
    sys.stdout.write("\n" + MARKER + json.dumps(out) + "\n")
    sys.stdout.flush()


def _cc_tuple(text):
    major, _, minor = str(text).partition(".")
    return int(major), int(minor or 0)


def _alloc(torch, dev, mib):
    """Fill a block with 0, 1, 2, ... and read its sum back: every element written and read."""
    n = mib * MIB // 8
    start = time.perf_counter()
    block = torch.arange(n, dtype=torch.int64, device=dev)
    total = int(block.sum().item())
    seconds = time.perf_counter() - start
    del block
    return {"mib": mib, "ok": total == n * (n - 1) // 2, "seconds": seconds}


def _matmul(torch, dev, n, spec, cc):
    if cc < _cc_tuple(spec["min_cc"]):
        return {"dtype": spec["label"], "skipped": "needs compute capability " + spec["min_cc"]}
    gen = torch.Generator().manual_seed(20240611)
    dtype = getattr(torch, spec["dtype"])
    a = (torch.rand(n, n, generator=gen, dtype=torch.float64) * 2 - 1).to(dtype)
    b = (torch.rand(n, n, generator=gen, dtype=torch.float64) * 2 - 1).to(dtype)
    ref = a.double() @ b.double()  # the same (already rounded) inputs, exactly, on the CPU
    start = time.perf_counter()
    got = a.to(dev) @ b.to(dev)
    torch.cuda.synchronize(dev)
    seconds = time.perf_counter() - start
    got = got.double().cpu()
    return {"dtype": spec["label"], "max_abs_diff": float((got - ref).abs().max().item()),
            "max_abs_ref": float(ref.abs().max().item()), "seconds": seconds}


def _copies(torch, dev, mib, repeats):
    """Host<->device copies of a pinned buffer (pageable memory when pinning is refused)."""
    nbytes = mib * MIB
    host = torch.empty(nbytes, dtype=torch.uint8)
    pinned = True
    try:
        host = host.pin_memory()
    except Exception:
        pinned = False
    device = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    times = {"h2d_s": [], "d2h_s": []}
    for i in range(repeats + 1):  # the first round warms up and is not kept
        for key, dst, src in (("h2d_s", device, host), ("d2h_s", host, device)):
            torch.cuda.synchronize(dev)
            start = time.perf_counter()
            dst.copy_(src, non_blocking=True)
            torch.cuda.synchronize(dev)
            if i:
                times[key].append(time.perf_counter() - start)
    return dict(times, bytes=nbytes, pinned=pinned)


def _device(torch, i, cfg):
    props = torch.cuda.get_device_properties(i)
    cc = (props.major, props.minor)
    d = {"index": i, "name": props.name, "compute_cap": "%d.%d" % cc, "memory_mib": props.total_memory // MIB}
    if getattr(props, "uuid", None) is not None:  # torch 2.0+; nvidia-smi prints it with a "GPU-" prefix
        d["uuid"] = "GPU-" + str(props.uuid)
    if hasattr(props, "pci_bus_id"):
        d["pci_bus_id"] = "%04x:%02x:%02x.0" % (getattr(props, "pci_domain_id", 0), props.pci_bus_id,
                                               getattr(props, "pci_device_id", 0))
    dev = torch.device("cuda", i)
    steps = [("alloc", lambda: _alloc(torch, dev, cfg["block_mib"])),
             ("copy", lambda: _copies(torch, dev, cfg["copy_mib"], cfg["copy_repeats"]))]
    for key, fn in steps:
        try:
            d[key] = fn()
        except Exception as e:
            d[key] = {"error": _exc(e)}
    d["matmul"] = []
    for spec in cfg["dtypes"]:
        try:
            d["matmul"].append(_matmul(torch, dev, cfg["matrix_n"], spec, cc))
        except Exception as e:
            d["matmul"].append({"dtype": spec["label"], "error": _exc(e)})
    return d


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _allreduce(cfg, world):
    """One NCCL all-reduce across every visible GPU: one rank process per GPU, killed at the timeout."""
    params = json.dumps({"mib": cfg["allreduce_mib"], "repeats": cfg["allreduce_repeats"],
                         "timeout_s": cfg["nccl_timeout_s"]})
    port = str(_free_port())
    ranks = [subprocess.Popen([sys.executable, "-c", cfg["worker"], str(r), str(world), port, params],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for r in range(world)]
    deadline = time.time() + cfg["nccl_timeout_s"]
    out = {"world": world, "timed_out": False, "ranks": []}
    for proc in ranks:
        try:
            stdout, stderr = proc.communicate(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            out["timed_out"] = True
            break
        line = [ln for ln in stdout.decode("utf-8", "replace").splitlines() if ln.startswith(MARKER)]
        out["ranks"].append(json.loads(line[-1][len(MARKER):]) if line else
                            {"error": {"type": "exit %s" % proc.returncode,
                                       "message": stderr.decode("utf-8", "replace")[-1500:]}})
    for proc in ranks:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out["seconds_limit"] = cfg["nccl_timeout_s"]
    return out


def main():
    cfg = json.loads(sys.stdin.read() or "{}")
    out = {"python": sys.executable, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    try:
        import torch
    except Exception as e:
        out["torch_error"] = _exc(e)
        return _emit(out)
    out["torch"] = getattr(torch, "__version__", None)
    out["cuda_build"] = getattr(torch.version, "cuda", None)
    if not out["cuda_build"]:
        return _emit(out)
    try:
        torch.cuda.init()
        count = torch.cuda.device_count()
    except Exception as e:
        out["cuda_error"] = _exc(e)
        return _emit(out)
    out["devices"] = [_device(torch, i, cfg) for i in range(count)]
    if count > 1:
        out["nccl"] = _allreduce(cfg, count)
    _emit(out)


if __name__ == "__main__":
    main()
