"""TensorFlow GPU memory: the growth and allocator variables, and other processes on the same GPUs."""

from __future__ import annotations

from packaging.version import Version

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.nvidia import smi_key
from gpudoctor.findings import Evidence, ok, skip, warn
from gpudoctor.knowledge.framework_runtime import tf_env_rule
from gpudoctor.recipes import recipe

GROWTH = "TF_FORCE_GPU_ALLOW_GROWTH"
ALLOCATOR = "TF_GPU_ALLOCATOR"


def _rule(name: str) -> dict:
    return tf_env_rule(name)


def _growth_on(f: Facts) -> bool:
    return f.env.get(GROWTH) == "true" or f.env.get(ALLOCATOR) == "cuda_malloc_async"


def _memory_limit(f: Facts, visible) -> int:
    """A per-process cap that fits next to what is in use: half the free memory of the emptiest GPU, in MiB."""
    free = [(g.memory_total_mib or 0) - (g.memory_used_mib or 0) for g in visible if g.memory_total_mib]
    return max(1024, (max(free) // 2) // 512 * 512) if free else 4096


@check("TFM001", "tf-allow-growth-value", "TF_FORCE_GPU_ALLOW_GROWTH has a value TensorFlow accepts",
       needs=("env",))
def tf_allow_growth_value(f: Facts):
    """TensorFlow compares the value with exactly "true" or "false"; anything else ("True", "1") is ignored."""
    raw = f.env.get(GROWTH)
    if raw is None:
        return skip(f"{GROWTH} is not set")
    rule = _rule(GROWTH)
    ev = [Evidence(f"env:{GROWTH}", f"{GROWTH}={raw!r}")]
    log = f.get("tf_log")
    if log and log.growth_unparsed:
        ev.append(Evidence("framework:tensorflow", log.growth_unparsed))
    if raw in rule["accepted"]:
        return ok(f"{GROWTH}={raw}: TensorFlow {'grows GPU memory on demand' if raw == 'true' else 'maps it all'}",
                  evidence=ev)
    meant = "true" if raw.strip().lower() in ("true", "1", "yes", "on", "y", "t") else "false"
    return warn(f"{GROWTH}={raw!r} is not 'true' or 'false': TensorFlow ignores it",
                detail=f"{rule['otherwise']}. It compares the exact lower-case text, so write {GROWTH}={meant}.",
                evidence=ev,
                fix=recipe("tf_memory_growth", f, reason=f"{GROWTH}={raw!r} is ignored",
                           memory_limit_mib=4096))


@check("TFM002", "tf-gpu-allocator", "TF_GPU_ALLOCATOR names an allocator TensorFlow has", needs=("env",))
def tf_gpu_allocator(f: Facts):
    """TF_GPU_ALLOCATOR=cuda_malloc_async is CUDA's pool allocator; an unknown value is silently ignored."""
    raw = f.env.get(ALLOCATOR)
    if raw is None:
        return skip(f"{ALLOCATOR} is not set")
    rule = _rule(ALLOCATOR)
    ev = [Evidence(f"env:{ALLOCATOR}", f"{ALLOCATOR}={raw!r}")]
    if raw in rule["accepted"]:
        tf = f.get("tf_info")
        detail = rule["meaning"][raw]
        if raw == "cuda_malloc_async" and tf is not None and tf.cuda and Version(tf.cuda) < Version("11.2"):
            return warn(f"{ALLOCATOR}=cuda_malloc_async needs a TensorFlow built with CUDA 11.2+, this one has "
                        f"{tf.cuda}", evidence=ev, detail=detail)
        status = ok if raw == "cuda_malloc_async" else warn
        return status(f"{ALLOCATOR}={raw}: {detail}", evidence=ev)
    return warn(f"{ALLOCATOR}={raw!r} is not an allocator TensorFlow knows: it uses its default allocator",
                detail=f"Accepted values: {', '.join(rule['accepted'])} (exact text).", evidence=ev,
                fix=recipe("tf_memory_growth", f, memory_limit_mib=4096,
                           reason=f"{ALLOCATOR}={raw!r} is ignored; the value TensorFlow knows is cuda_malloc_async"))


@check("TFM003", "tf-shared-gpu-memory", "TensorFlow will not collide with processes already on its GPUs",
       needs=("tf_info", "gpu_processes", "visible_devices"))
def tf_shared_gpu_memory(f: Facts):
    """Without memory growth TensorFlow maps nearly all free memory: other compute processes on the GPU suffer."""
    tf = f["tf_info"]
    if not tf.cuda_build:
        return skip(f"TensorFlow {tf.version} is a CPU build (TF001)")
    visible = [v.gpu for v in f["visible_devices"].visible]
    indices = {g.index for g in visible}
    procs = [p for p in f["gpu_processes"] if p.gpu_index in indices and "C" in (p.type or "")
             and (p.used_memory_mib or 0) > 0]
    if not procs:
        return ok("no other compute process holds memory on the GPUs TensorFlow would use")
    src = f"command:{smi_key(f)}"
    ev = [Evidence(src, f"GPU {p.gpu_index}: PID {p.pid} {p.name or '?'} ({p.type}) uses {p.used_memory_mib} MiB")
          for p in procs]
    ev += [Evidence(src, f"{g.label()}: {g.memory_used_mib} of {g.memory_total_mib} MiB in use")
           for g in visible if g.index in {p.gpu_index for p in procs} and g.memory_total_mib]
    if _growth_on(f):
        setting = f"{GROWTH}=true" if f.env.get(GROWTH) == "true" else f"{ALLOCATOR}=cuda_malloc_async"
        return ok(f"{len(procs)} other process(es) use the GPU(s), and {setting} lets TensorFlow share them",
                  evidence=ev)
    where = ", ".join(sorted({f"GPU {p.gpu_index}" for p in procs}))
    return warn(f"{len(procs)} other compute process(es) already hold memory on {where}, and TensorFlow will "
                "map nearly all that is left", evidence=ev,
                detail="Without memory growth either TensorFlow or the other process runs out of memory "
                       "(CUDA_ERROR_OUT_OF_MEMORY).",
                fix=recipe("tf_memory_growth", f, reason=f"Other processes already use {where}",
                           memory_limit_mib=_memory_limit(f, visible)))


CHECKS = (tf_allow_growth_value, tf_gpu_allocator, tf_shared_gpu_memory)
