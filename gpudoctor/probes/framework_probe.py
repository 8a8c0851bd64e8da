# Runs inside the *user's* interpreter (``--python``), never inside gpudoctor's own
# process: importing torch or TensorFlow can be the very failure being diagnosed.
# Self-contained on purpose (the target interpreter may not have gpudoctor) and kept
# compatible with old Pythons. Prints one marked JSON line; libraries may print too.
import json
import sys
import traceback
import warnings

MARKER = "GPUDOCTOR-PROBE-JSON:"


def _exc(e):
    return {"type": type(e).__name__, "message": str(e).strip()}


def _dist_version(name):
    try:
        from importlib import metadata
    except ImportError:
        return None
    try:
        return metadata.version(name)
    except Exception:
        return None


def _nvidia_wheels():
    """pip's NVIDIA library wheels (nvidia-cudnn-cu12, nvidia-cuda-runtime-cu12, ...): name -> version."""
    try:
        from importlib import metadata
        dists = list(metadata.distributions())
    except Exception:
        return {}
    found = {}
    for d in dists:
        try:
            name = (d.metadata["Name"] or "").lower().replace("_", "-")
        except Exception:
            continue
        if name.startswith("nvidia-"):
            found[name] = d.version
    return found


def probe_torch(out):
    out["nvidia_wheels"] = _nvidia_wheels()
    import torch
    out["version"] = getattr(torch, "__version__", None)
    out["file"] = getattr(torch, "__file__", None)
    ver = getattr(torch, "version", None)
    out["cuda"] = getattr(ver, "cuda", None)
    out["hip"] = getattr(ver, "hip", None)
    out["git"] = getattr(ver, "git_version", None)
    cuda = torch.cuda
    out["cuda_built"] = bool(getattr(torch.backends.cuda, "is_built", lambda: out["cuda"] is not None)())
    try:
        out["arch_list"] = list(cuda.get_arch_list())
    except Exception as e:
        out["arch_list_error"] = _exc(e)
    try:
        out["cudnn"] = torch.backends.cudnn.version()
    except Exception as e:
        out["cudnn_error"] = _exc(e)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out["available"] = bool(cuda.is_available())
        except Exception as e:
            out["available"] = False
            out["available_error"] = _exc(e)
        try:
            out["device_count"] = int(cuda.device_count())
        except Exception as e:
            out["device_count_error"] = _exc(e)
        if not out["available"]:
            try:
                cuda.init()  # raises the exact reason: not compiled with CUDA, driver too old, ...
            except Exception as e:
                out["init_error"] = _exc(e)
        else:
            devices = []
            for i in range(out.get("device_count") or 0):
                try:
                    p = cuda.get_device_properties(i)
                    devices.append({"index": i, "name": p.name, "capability": "%d.%d" % (p.major, p.minor),
                                    "total_memory_mib": int(p.total_memory) // (1024 * 1024),
                                    "uuid": str(getattr(p, "uuid", "")) or None,
                                    "pci_bus_id": getattr(p, "pci_bus_id", None)})
                except Exception as e:
                    devices.append({"index": i, "error": _exc(e)})
            out["devices"] = devices
    out["warnings"] = [str(w.message).strip() for w in caught]


def probe_tensorflow(out):
    import os
    # Since 2.16 TensorFlow logs the libraries it failed to dlopen only at VLOG(1) of dso_loader.
    os.environ.setdefault("TF_CPP_VMODULE", "dso_loader=1")
    out["nvidia_wheels"] = _nvidia_wheels()
    import tensorflow as tf
    out["version"] = getattr(tf, "__version__", None)
    out["file"] = getattr(tf, "__file__", None)
    try:
        info = dict(tf.sysconfig.get_build_info())
        out["build_info"] = {k: (v if isinstance(v, (str, int, float, bool, list, type(None))) else str(v))
                             for k, v in info.items()}
    except Exception as e:
        out["build_info_error"] = _exc(e)
    try:
        out["cuda_built"] = bool(tf.test.is_built_with_cuda())
    except Exception as e:
        out["cuda_built_error"] = _exc(e)
    try:
        gpus = tf.config.list_physical_devices("GPU")
        out["gpus"] = [g.name for g in gpus]
        details = []
        for g in gpus:
            try:
                details.append(dict(tf.config.experimental.get_device_details(g)))
            except Exception as e:
                details.append({"error": _exc(e)})
        out["gpu_details"] = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()} for d in details]
    except Exception as e:
        out["gpus_error"] = _exc(e)
    dists = {}
    for name in ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly", "tensorflow-intel",
                 "tensorflow-macos", "tensorflow-rocm"):
        v = _dist_version(name)
        if v:
            dists[name] = v
    out["distributions"] = dists


def probe_jax(out):
    import jax
    out["version"] = getattr(jax, "__version__", None)
    out["file"] = getattr(jax, "__file__", None)
    out["jaxlib"] = _dist_version("jaxlib")
    out["plugins"] = {n: _dist_version(n) for n in ("jax-cuda12-plugin", "jax-cuda13-plugin",
                                                    "jax-cuda12-pjrt", "jax-cuda13-pjrt") if _dist_version(n)}
    try:
        out["backend"] = jax.default_backend()
        out["devices"] = [str(d) for d in jax.devices()]
    except Exception as e:
        out["devices_error"] = _exc(e)


PROBES = {"torch": probe_torch, "tensorflow": probe_tensorflow, "jax": probe_jax}


def main(name):
    out = {"name": name, "python": sys.version.split()[0], "executable": sys.executable}
    import importlib
    try:
        found = importlib.util.find_spec(name) is not None
    except Exception:
        found = True  # a broken package: let the import below say why
    if not found:
        out["installed"] = False
    else:
        out["installed"] = True
        try:
            PROBES[name](out)
        except BaseException as e:  # ImportError, OSError from a missing libcudnn, SystemExit...
            out["import_error"] = _exc(e)
            out["traceback"] = traceback.format_exc(limit=8)
    sys.stdout.flush()
    sys.stdout.write("\n" + MARKER + json.dumps(out, default=str) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    import importlib.util  # noqa: F401  (find_spec lives here on old Pythons)
    main(sys.argv[1])
