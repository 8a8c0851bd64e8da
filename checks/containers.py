"""Container checks: was a GPU passed in, and may CUDA and nvidia-smi use it?"""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts, NotApplicable
from gpudoctor.findings import Evidence, fail, ok, warn
from gpudoctor.recipes import recipe


def _visible_note(visible) -> str:
    if visible is None:
        return "NVIDIA_VISIBLE_DEVICES is unset"
    if visible.strip() in ("", "void"):
        return f"NVIDIA_VISIBLE_DEVICES={visible!r}: the NVIDIA runtime acts like plain runc"
    if visible.strip() == "none":
        return "NVIDIA_VISIBLE_DEVICES=none: driver libraries but no GPU"
    return f"NVIDIA_VISIBLE_DEVICES={visible}, yet no device arrived: the container was not started with --gpus"


def _wants_gpu(f: Facts, c) -> list:
    """Signs that the container was meant to have a GPU (a CUDA image, nvidia-smi, a CUDA torch)."""
    signs = []
    if c.visible is not None and c.visible.strip() not in ("", "void", "none"):  # as _visible_note reads it
        signs.append(Evidence("env:NVIDIA_VISIBLE_DEVICES", c.visible))
    if c.require_cuda:
        signs.append(Evidence("env:NVIDIA_REQUIRE_CUDA", c.require_cuda))
    res = f.get("smi_result")
    if res is not None and res.ran:
        signs.append(Evidence("command:nvidia_smi_xml", res.describe()))
    torch = f.get("torch")
    if torch and torch.cuda:
        signs.append(Evidence("framework:torch", f"torch {torch.version} built for CUDA {torch.cuda}"))
    return signs


def _no_gpu_anywhere(f: Facts, signs) -> bool:
    """Neither this container nor the host's kernel shows an NVIDIA GPU, and nothing but a CUDA build of a
    framework (pip's default torch is one) says a GPU was meant: an empty /dev alone is the symptom, not
    proof, so the host's /proc/driver/nvidia must have been read and found empty."""
    gpu = f.get("nvidia_gpu_present")
    strong = [e for e in signs if not e.source.startswith("framework:")]
    return gpu is not None and not gpu.present and isinstance(f.failure("kernel_module"), NotApplicable) \
        and not strong


@check("CTR001", "container-gpu-devices", "the container was given a GPU", needs=("container_gpu",))
def container_gpu_devices(f: Facts):
    """Inside Docker, Podman or Kubernetes, /dev/nvidia* exists only when the runtime passed a GPU in
    (docker --gpus, an nvidia.com/gpu limit, CDI devices)."""
    c = f["container_gpu"]
    nodes = [n for n in c.devices if n.startswith("nvidia")]
    if c.gpu_nodes:
        return ok(f"{len(c.gpu_nodes)} GPU device(s) passed into this {c.kind} container: "
                  + " ".join(f"/dev/{n}" for n in nodes), evidence=[Evidence("listing:/dev", " ".join(nodes))])
    signs = _wants_gpu(f, c)
    ev = [Evidence("listing:/dev", "no /dev/nvidia* device" if not nodes else " ".join(nodes))] + signs
    values = dict(container_kind=c.kind, visible_note=_visible_note(c.visible))
    title = f"no GPU was passed into this {c.kind} container (no /dev/nvidia0)"
    if _no_gpu_anywhere(f, signs):
        # No GPU anywhere (DRV001) is the cause to name; this container adds nothing to fix.
        return warn(title, detail="Neither this container nor the host's kernel (/proc/driver/nvidia) shows an "
                                  "NVIDIA GPU; if GPU work should run here, start it on a GPU host with GPUs.",
                    evidence=ev, fix=recipe("no_device_in_container", f, **values), symptom_of=("DRV001",))
    if not signs:
        return warn(title, detail="Nothing in it expects a GPU either; if GPU work should run here, start it "
                                  "with GPUs.", evidence=ev, fix=recipe("no_device_in_container", f, **values))
    return fail(title, detail=f"{_visible_note(c.visible)}. CUDA inside sees no device.", evidence=ev,
                fix=recipe("no_device_in_container", f, **values))


@check("CTR002", "container-driver-capabilities", "the container has the compute and utility driver capabilities",
       needs=("container_gpu",))
def container_capabilities(f: Facts):
    """NVIDIA_DRIVER_CAPABILITIES decides which driver libraries the runtime mounts: compute (libcuda)
    and utility (nvidia-smi, NVML) are what CUDA programs and gpudoctor need."""
    c = f["container_gpu"]
    raw = c.capabilities
    if raw is None or not raw.strip():
        return ok("NVIDIA_DRIVER_CAPABILITIES is unset: the NVIDIA runtime's default (utility, compute) applies")
    caps = {x.strip().lower() for x in raw.split(",") if x.strip()}
    ev = [Evidence("env:NVIDIA_DRIVER_CAPABILITIES", raw)]
    if "all" in caps or {"compute", "utility"} <= caps:
        return ok(f"NVIDIA_DRIVER_CAPABILITIES={raw} includes compute and utility", evidence=ev)
    missing = sorted({"compute", "utility"} - caps)
    consequence = {"compute": "CUDA cannot load libcuda.so.1", "utility": "nvidia-smi and NVML are missing"}
    said = " and ".join(consequence[m] for m in missing)
    return warn(f"NVIDIA_DRIVER_CAPABILITIES={raw} lacks {' and '.join(missing)}: {said}", evidence=ev,
                fix=recipe("container_driver_capabilities", f, capabilities=raw, missing=" and ".join(missing),
                           consequence=said))


CHECKS = (container_gpu_devices, container_capabilities)
