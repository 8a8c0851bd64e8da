"""TensorFlow build checks: a GPU build at all, its CUDA libraries loadable, versions that fit."""

from __future__ import annotations

from dataclasses import replace
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from gpudoctor import knowledge
from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.framework_builds import CudaLibraries
from gpudoctor.findings import Evidence, fail, ok, skip
from gpudoctor.framework_fixes import driver_older_than, knowledge_os, min_driver
from gpudoctor.knowledge.framework_runtime import tf_build_versions, tf_last_native_windows_gpu, tf_libraries
from gpudoctor.recipes import recipe

EV = "framework:tensorflow"
CPU_PACKAGES = ("tensorflow-cpu", "tensorflow-intel", "tensorflow-macos")


def _v(text: Optional[str]) -> Optional[Version]:
    try:
        return Version(str(text))
    except (InvalidVersion, TypeError):
        return None


def _python(f: Facts) -> str:
    return f.get("python_path") or "python"


def tf_install(f: Facts, tf) -> str:
    """The command that installs a GPU TensorFlow of this version with the CUDA libraries it expects."""
    v = _v(tf.version)
    if v is not None and v >= Version("2.14"):
        return f"{_python(f)} -m pip install 'tensorflow[and-cuda]=={tf.version}'"
    tested = knowledge.tf_build(tf.version) if v is not None else None
    if tested is None:
        return f"{_python(f)} -m pip install 'tensorflow[and-cuda]'"
    return (f"conda install -c conda-forge cudatoolkit={tested.cuda} cudnn={tested.cudnn}   "
            f"# TensorFlow {tf.version} was tested with CUDA {tested.cuda} / cuDNN {tested.cudnn}")


def _native_windows_without_gpu(f: Facts, tf) -> bool:
    last = tf_last_native_windows_gpu()
    v = _v(tf.version)
    return f.get("target_os") == "windows" and v is not None and v > Version(f"{last}.99")


@check("TF001", "tf-gpu-build", "TensorFlow is a GPU build", needs=("tf_info",))
def tf_gpu_build(f: Facts):
    """tensorflow-cpu, a CPU wheel or native Windows TF >= 2.11 cannot use an NVIDIA GPU."""
    tf = f["tf_info"]
    gpu = f.get("nvidia_gpu_present")
    has_gpu = bool(gpu and gpu.present)
    dists = ", ".join(f"{k} {v}" for k, v in sorted(tf.distributions.items())) or "no distribution metadata"
    ev = [Evidence(EV, f"TensorFlow {tf.version}: is_cuda_build={tf.cuda_build}; installed: {dists}")]
    if f.get("target_os") == "darwin":
        return skip("macOS: TensorFlow does not use CUDA there")
    if _native_windows_without_gpu(f, tf):
        if not has_gpu:
            return ok(f"TensorFlow {tf.version} on native Windows, CPU only; fine, there is no GPU", evidence=ev)
        return fail(f"TensorFlow {tf.version} has no GPU support on native Windows (2.10 was the last)",
                    subject=f"tensorflow {tf.version}", evidence=ev + [Evidence(gpu.source, gpu.evidence)],
                    detail="tf.config.list_physical_devices('GPU') stays empty whatever CUDA is installed.",
                    fix=recipe("tf_windows_native_unsupported", f))
    if tf.cuda_build:
        return ok(f"TensorFlow {tf.version} is a CUDA build (CUDA {tf.cuda or '?'}, cuDNN {tf.cudnn or '?'})",
                  evidence=ev)
    if not has_gpu:
        why = "there is no GPU" if gpu is not None else "gpudoctor found no sign of a GPU"
        return ok(f"TensorFlow {tf.version}, CPU build; fine, {why}", evidence=ev)
    package = next((p for p in CPU_PACKAGES if p in tf.distributions), "tensorflow")
    both = "tensorflow" in tf.distributions and package != "tensorflow"
    detail = ("TensorFlow never registers a GPU: list_physical_devices('GPU') is empty."
              + (f" Both tensorflow and {package} are installed; the one installed last owns the files."
                 if both else ""))
    return fail(f"{package} {tf.version} is a CPU build, but this machine has {gpu.count} NVIDIA GPU(s)",
                subject=f"tensorflow {tf.version}", detail=detail,
                evidence=ev + [Evidence(gpu.source, gpu.evidence)],
                fix=recipe("tensorflow_cpu_on_gpu", f, tf_package=package, install=tf_install(f, tf)))


def needed_libraries(tf) -> List[Tuple[str, Optional[str]]]:
    """(soname, pip wheel) TensorFlow dlopen()s for its CUDA runtime and cuDNN."""
    return tf_libraries(tf.cuda, tf.cudnn)


def _where(lib: str, wheel: Optional[str], libs: CudaLibraries) -> Optional[Evidence]:
    """Where the loader would find ``lib``: the ldconfig cache, or an nvidia-* wheel next to TensorFlow."""
    if lib in libs.linker:
        return Evidence("command:ldconfig_p", f"{lib} => {libs.linker[lib][0]}")
    if wheel and wheel in libs.wheels:
        return Evidence(EV, f"{lib} from pip wheel {wheel} {libs.wheels[wheel]}")
    return None


@check("TF002", "tf-cuda-libs", "TensorFlow can load its CUDA libraries", needs=("tf_info",))
def tf_cuda_libs(f: Facts):
    """A CUDA build of TensorFlow must find the libcudart and libcudnn majors it was built for."""
    tf = f["tf_info"]
    if not tf.cuda_build or f.get("target_os") in ("windows", "darwin"):
        return skip(f"TensorFlow {tf.version} is not a Linux CUDA build (TF001)")
    gpu = f.get("nvidia_gpu_present")
    if gpu is not None and not gpu.present:
        return ok(f"TensorFlow {tf.version} has CUDA, but this machine has no NVIDIA GPU: it runs on the CPU")
    if gpu is not None and gpu.host_only:
        return fail(f"TensorFlow {tf.version} registers no GPU: the host has {gpu.count} NVIDIA GPU(s), but none "
                    "was passed into this container", subject=f"tensorflow {tf.version}",
                    evidence=[Evidence(gpu.source, gpu.evidence)], symptom_of=("DRV001", "CTR001"),
                    fix=recipe("no_device_in_container", f))
    log = f.get("tf_log")
    libs = f.get("cuda_libraries") or CudaLibraries({}, False, {}, None)
    found, absent = [], []
    for lib, wheel in needed_libraries(tf):
        where = _where(lib, wheel, libs)
        (found if where else absent).append(where or (lib, wheel))
    failed = list(log.failed) if log else []
    skipped = log.skipped_gpus if log else None
    if not failed and not skipped:
        if tf.gpus:
            # TensorRT's libnvinfer is logged as missing on every machine without TensorRT: not a failure.
            optional = [Evidence(EV, f"could not load {lib} (optional: TensorRT, used only by TF-TRT)")
                        for lib, _ in (log.optional_failed if log else ())][:2]
            return ok(f"TensorFlow {tf.version} loads its CUDA libraries and registers {len(tf.gpus)} GPU(s)",
                      evidence=found + optional)
        if not f.has("cuda_libraries"):
            return skip("neither TensorFlow's log, `ldconfig -p` nor pip's nvidia-* wheels show its libraries")
        if not absent:
            return ok(f"TensorFlow {tf.version} finds its CUDA libraries: {'; '.join(e.excerpt for e in found)}",
                      evidence=found)
    ev = [Evidence(EV, f"could not load {lib}: {why}") for lib, why in failed]
    if skipped:
        ev.append(Evidence(EV, skipped))
    ev += [Evidence("command:ldconfig_p", f"{lib}: not in the linker cache" +
                    (f", and pip wheel {wheel} is not installed" if wheel else ""))
           for lib, wheel in absent]
    ev += found
    if libs.ld_library_path:
        ev.append(Evidence("env:LD_LIBRARY_PATH", libs.ld_library_path))
    missing = [lib for lib, _ in failed] or [lib for lib, _ in absent] or ["some GPU libraries"]
    return fail(f"TensorFlow {tf.version} cannot load {', '.join(missing)}: it runs on the CPU only",
                subject=f"tensorflow {tf.version}",
                detail=f"Built for CUDA {tf.cuda} and cuDNN {tf.cudnn}; TensorFlow logs \"Cannot dlopen some GPU "
                       "libraries\" and skips registering the GPUs, without raising an error.",
                evidence=ev, fix=recipe("tf_no_gpu_libs", f, missing=", ".join(missing), install=tf_install(f, tf)))


@check("TF003", "tf-cuda-versions", "TensorFlow's CUDA and cuDNN fit the driver and libraries",
       needs=("tf_info", "driver_version"))
def tf_cuda_versions(f: Facts):
    """The driver must support TF's CUDA; installed cuDNN/CUDA wheels must match its tested configuration."""
    tf = f["tf_info"]
    if not tf.cuda_build or not tf.cuda:
        return skip(f"TensorFlow {tf.version} is not a CUDA build (TF001)")
    os = knowledge_os(f.get("target_os"))
    driver = f["driver_version"].version
    need = min_driver(tf.cuda, os)
    ev = [Evidence(EV, f"tf.sysconfig.get_build_info(): cuda_version {tf.cuda}, cudnn_version {tf.cudnn}")]
    if driver_older_than(driver, need):
        return fail(f"driver {driver} supports CUDA up to {f.get('cuda_driver_max') or '?'}; TensorFlow "
                    f"{tf.version} (CUDA {tf.cuda}) needs at least {need}", subject=f"tensorflow {tf.version}",
                    evidence=ev + [Evidence(f["driver_version"].source, f"driver {driver}")],
                    detail="TensorFlow cannot initialise CUDA with this driver and registers no GPU; it runs on "
                           "the CPU without an error.",
                    fix=_tf_driver_fix(f, tf, need, driver, os))
    problems = _wheel_mismatches(f, tf)
    if problems:
        return fail(f"TensorFlow {tf.version} needs CUDA {tf.cuda} / cuDNN {tf.cudnn}: {'; '.join(problems)}",
                    subject=f"tensorflow {tf.version}", evidence=ev,
                    detail="Libraries of another major version are ignored; an older cuDNN than the build's makes "
                           "convolutions fail with \"Loaded runtime CuDNN library ... but source was compiled "
                           "with ...\".",
                    fix=recipe("tf_cuda_mismatch", f, found="; ".join(problems), install=tf_install(f, tf)))
    return ok(f"driver {driver} runs TensorFlow {tf.version} (CUDA {tf.cuda} needs >= {need or '?'})", evidence=ev)


def _wheel_mismatches(f: Facts, tf) -> List[str]:
    libs = f.get("cuda_libraries")
    wheels = libs.wheels if libs else {}
    cuda = _v(tf.cuda)
    out = []
    for name, version in sorted(wheels.items()):
        for kind in ("nvidia-cudnn-cu", "nvidia-cuda-runtime-cu"):
            if name.startswith(kind) and cuda is not None and name != f"{kind}{cuda.major}":
                out.append(f"pip wheel {name} {version} is for CUDA {name[len(kind):]}, not {cuda.major}")
    tested = knowledge.tf_build(tf.version)
    cudnn_wheel = next((v for n, v in wheels.items() if cuda and n == f"nvidia-cudnn-cu{cuda.major}"), None)
    if tested and cudnn_wheel and _v(cudnn_wheel) and _v(tested.cudnn):
        have, want = _v(cudnn_wheel), _v(tested.cudnn)
        if have.major != want.major or have.release[:2] < want.release[:2]:
            out.append(f"cuDNN {cudnn_wheel} is installed, TensorFlow {tested.version} was built with {tested.cudnn}")
    return out


def _tf_driver_fix(f: Facts, tf, need: str, driver: str, os: str):
    older = _newest_tf_for_driver(driver, os)
    if older is None:
        return recipe("driver_too_old", f, min_driver=need, framework=f"TensorFlow {tf.version}",
                      alternative="(no TensorFlow release in gpudoctor's table runs on this driver)",
                      alternative_command="# none known: upgrade the driver")
    return recipe("driver_too_old", f, min_driver=need, framework=f"TensorFlow {tf.version}",
                  alternative=f"install TensorFlow {older.version} (CUDA {older.cuda}), which runs on it",
                  alternative_command=tf_install(f, replace(tf, version=older.version)))


def _newest_tf_for_driver(driver: str, os: str):
    fits = [v for v, cuda in tf_build_versions()
            if min_driver(cuda, os) and not driver_older_than(driver, min_driver(cuda, os))]
    return knowledge.tf_build(max(fits, key=Version)) if fits else None


CHECKS = (tf_gpu_build, tf_cuda_libs, tf_cuda_versions)
