"""cuDNN checks: is the system cuDNN built for the CUDA toolkit it is used with?"""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.cuda_paths import default_toolkit
from gpudoctor.findings import Evidence, fail, ok, warn
from gpudoctor.knowledge.cudnn import cudnn_major_cuda_text, cudnn_major_supports, cudnn_pairing
from gpudoctor.recipes import recipe


def _paired_toolkit(f: Facts, path: str):
    """The toolkit a cuDNN belongs to: the one it was copied into, else the one builds use by default."""
    toolkits = f.get("cuda_toolkits") or ()
    return next((t for t in toolkits if t.owns(path)), None) or default_toolkit(f)


def _toolkit_values(toolkit) -> dict:
    if toolkit is None or not toolkit.major_minor():
        return {}
    return {"cuda_version": toolkit.version, "cuda_root": toolkit.root,
            "cuda_major": toolkit.major_minor().split(".")[0]}


def _mismatch(f: Facts, version: str, path: str, source: str, toolkit, line, cuda_text: str):
    values = _toolkit_values(toolkit)
    major = values["cuda_major"]
    return fail(f"cuDNN {version} ({path}) is not built for CUDA {toolkit.version} ({toolkit.root})",
                detail=f"{line} is built for {cuda_text}; loading it with CUDA {major} fails.",
                evidence=[Evidence(source, f"cuDNN {version}"), Evidence(toolkit.source, toolkit.label())],
                fix=recipe("cudnn_mismatch_or_missing", f, cudnn_version=version, cudnn_path=path,
                           cudnn_line=line, cudnn_cuda=cuda_text, **values))


@check("CDN001", "cudnn-cuda-pairing", "system cuDNN is built for its CUDA toolkit", needs=("cudnn",))
def cudnn_cuda_pairing(f: Facts):
    """cuDNN from cudnn_version.h (or libcudnn.so.N in the loader cache) against the CUDA toolkit it sits
    in or is used with: cuDNN 9 needs CUDA 11.x/12.x (13.x from 9.12), 8.x pairs with 10.2/11.x/12.x."""
    info, findings, fine = f["cudnn"], [], []
    for h in info.headers:
        toolkit = _paired_toolkit(f, h.path)
        pairing = cudnn_pairing(h.version)
        if toolkit is None or not toolkit.version or pairing is None:
            fine.append(f"cuDNN {h.version} ({h.path}), no CUDA toolkit to pair it with" if pairing else
                        f"cuDNN {h.version} ({h.path}), a release gpudoctor has no data for")
        elif pairing.supports(toolkit.version):
            fine.append(f"cuDNN {h.version} with CUDA {toolkit.version} ({toolkit.root})")
        else:
            findings.append(_mismatch(f, h.version, h.path, f"file:{h.path}", toolkit, pairing.label,
                                      pairing.cuda_text()))
    if not info.headers:
        toolkit = default_toolkit(f)
        for lib in info.libs:
            major = int(lib.name.split(".so.")[1].split(".")[0]) if ".so." in lib.name else None
            fits = cudnn_major_supports(major, toolkit.version) if major and toolkit and toolkit.version else None
            if fits is False:
                findings.append(_mismatch(f, str(major), lib.path, "command:ldconfig_p", toolkit, f"cuDNN {major}",
                                          cudnn_major_cuda_text(major)))
            elif major:
                fine.append(f"libcudnn.so.{major} ({lib.path})" + (f" with CUDA {toolkit.version}" if fits else ""))
    return findings or ok("; ".join(dict.fromkeys(fine)) or "no system cuDNN to check")


@check("CDN002", "cudnn-header-library", "cuDNN headers and libraries are the same major", needs=("cudnn",))
def cudnn_header_library(f: Facts):
    """A cudnn_version.h of one major with only libcudnn.so of another in the loader cache: builds
    compile against one cuDNN and load another."""
    info = f["cudnn"]
    if not info.headers or not info.ldconfig_recorded or not info.lib_majors:
        return ok("nothing to compare: " + ("no cudnn_version.h" if not info.headers
                                            else "no libcudnn.so.N in the loader cache"))
    bad = [h for h in info.headers if h.major not in info.lib_majors]
    if not bad:
        return ok(f"cuDNN headers ({', '.join(h.version for h in info.headers)}) and libcudnn.so."
                  f"{'/'.join(map(str, info.lib_majors))} agree")
    h = bad[0]
    return warn(f"cudnn_version.h says cuDNN {h.version} but the loader only finds libcudnn.so."
                f"{'/'.join(map(str, info.lib_majors))}",
                detail="Code compiled against these headers links to a cuDNN the loader does not have, or "
                       "loads another major at run time.",
                evidence=[Evidence(f"file:{h.path}", f"cuDNN {h.version}")]
                + [Evidence("command:ldconfig_p", lib.line) for lib in info.libs[:3]],
                fix=recipe("cudnn_mismatch_or_missing", f, cudnn_version=h.version, cudnn_path=h.path,
                           **_toolkit_values(_paired_toolkit(f, h.path))))


CHECKS = (cudnn_cuda_pairing, cudnn_header_library)
