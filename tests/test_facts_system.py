"""Parsers behind the system-side facts: modprobe.d, kernel command line, os-release families,
CUDA version files, cudnn_version.h, ldconfig -p, mokutil, modinfo, and the toolkit/path picture."""

from __future__ import annotations

import pytest

from gpudoctor.facts import Facts
from gpudoctor.facts.cuda import parse_version_json, parse_version_txt, real_path
from gpudoctor.facts.cudnn import parse_cudnn_version_h
from gpudoctor.facts.driver import NvidiaModuleFile
from gpudoctor.facts.libraries import libs_named, parse_ldconfig
from gpudoctor.facts.modprobe import (cmdline_params, effective_files, masked_files, module_block,
                                      parse_modprobe_conf)
from gpudoctor.facts.system import OsRelease
from gpudoctor.recipes import distro_family
from gpudoctor.runner import CommandResult
from tests.builders import ran, snap




# --- modprobe.d --------------------------------------------------------------------------

def test_modprobe_parser_skips_comments_and_joins_continuations():
    text = ("# blacklist nouveau\n   #options nouveau modeset=0\n\nblacklist nouveau # trailing words\n"
            "install nouveau \\\n    /bin/false\noptions snd-hda-intel model=auto\n")
    rules = parse_modprobe_conf(text, "/etc/modprobe.d/x.conf")
    assert [(r.command, r.module) for r in rules] == [("blacklist", "nouveau"), ("install", "nouveau"),
                                                      ("options", "snd-hda-intel")]
    assert rules[1].args == "/bin/false"
    assert rules[1].text == "install nouveau /bin/false"


@pytest.mark.parametrize("line, blocked", [
    ("blacklist nouveau", True),
    ("install nouveau /bin/false", True),
    ("install nouveau /usr/bin/true", True),
    ("options nouveau modeset=0", True),
    ("alias nouveau off", True),
    ("options nouveau modeset=1", False),
    ("install nouveau /sbin/modprobe --ignore-install nouveau", False),
    ("blacklist nouveaufb", False),
    ("#blacklist nouveau", False),
    ("blacklist nvidiafb", False),
])
def test_what_keeps_nouveau_off(line, blocked):
    rules = parse_modprobe_conf(line + "\n", "/etc/modprobe.d/t.conf")
    assert module_block(rules, None, "nouveau").blocked is blocked


@pytest.mark.parametrize("cmdline, blocked", [
    ("ro quiet modprobe.blacklist=nouveau", True),
    ("ro modprobe.blacklist=radeon,nouveau", True),
    ("ro rd.driver.blacklist=nouveau", True),
    ("ro module_blacklist=nouveau", True),
    ("ro nouveau.modeset=0", True),
    ("ro nouveau.modeset=1", False),
    ("ro modprobe.blacklist=nouveaux", False),
    ("ro quiet splash", False),
])
def test_kernel_command_line_blocks(cmdline, blocked):
    block = module_block([], cmdline, "nouveau")
    assert block.blocked is blocked
    if blocked:
        assert block.by[0][0] == "file:/proc/cmdline"


def test_cmdline_params_keep_repeated_keys():
    assert cmdline_params("a=1 b a=2 c=x=y") == {"a": ["1", "2"], "b": [""], "c": ["x=y"]}


def test_same_named_file_in_etc_masks_the_packaged_one():
    s = snap(files={"/usr/lib/modprobe.d/nvidia-utils.conf": "blacklist nouveau\n",
                    "/etc/modprobe.d/nvidia-utils.conf": "options nvidia_drm modeset=1\n",
                    "/lib/modprobe.d/systemd.conf": "options bonding max_bonds=0\n"})
    assert [p for p, _ in effective_files(s)] == ["/etc/modprobe.d/nvidia-utils.conf", "/lib/modprobe.d/systemd.conf"]
    assert masked_files(s) == [("/usr/lib/modprobe.d/nvidia-utils.conf", "/etc/modprobe.d/nvidia-utils.conf")]
    assert Facts(s)["nouveau_block"].blocked is False


def test_modprobe_rules_missing_when_nothing_recorded_but_empty_when_dirs_listed():
    assert not Facts(snap()).has("modprobe_rules")
    assert Facts(snap(listings={"/etc/modprobe.d": []}))["modprobe_rules"] == ()


def test_nouveau_block_names_file_and_line():
    s = snap(files={"/etc/modprobe.d/blacklist-nouveau.conf": "blacklist nouveau\noptions nouveau modeset=0\n",
                    "/proc/cmdline": "ro quiet\n"})
    block = Facts(s)["nouveau_block"]
    assert block.by == (("file:/etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau"),
                        ("file:/etc/modprobe.d/blacklist-nouveau.conf", "options nouveau modeset=0"))


# --- os-release families -----------------------------------------------------------------

@pytest.mark.parametrize("osr, family", [
    ({"ID": "ubuntu", "ID_LIKE": "debian"}, "debian"),
    ({"ID": "debian"}, "debian"),
    ({"ID": "linuxmint", "ID_LIKE": "ubuntu debian"}, "debian"),
    ({"ID": "fedora"}, "rhel"),
    ({"ID": "rocky", "ID_LIKE": "rhel centos fedora"}, "rhel"),
    ({"ID": "amzn", "ID_LIKE": "centos rhel fedora"}, "rhel"),
    ({"ID": "opensuse-leap", "ID_LIKE": "suse opensuse"}, "suse"),
    ({"ID": "sles"}, "suse"),
    ({"ID": "arch"}, "arch"),
    ({"ID": "endeavouros", "ID_LIKE": "arch"}, "arch"),
    ({"ID": "alpine"}, "default"),
    (None, "default"),
])
def test_distribution_family_from_os_release(osr, family):
    typed = OsRelease(osr.get("ID"), tuple(osr.get("ID_LIKE", "").split()), None, None) if osr else None
    assert distro_family(typed) == family


def test_os_release_quotes_are_stripped():
    s = snap(files={"/etc/os-release": 'ID="rocky"\nID_LIKE="rhel centos fedora"\nPRETTY_NAME="Rocky Linux 9.4"\n'})
    osr = Facts(s)["os_release"]
    assert (osr.id, osr.id_like, osr.pretty_name) == ("rocky", ("rhel", "centos", "fedora"), "Rocky Linux 9.4")


# --- CUDA and cuDNN version files --------------------------------------------------------

def test_version_json_and_txt():
    assert parse_version_json('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, "nvcc": {"version": "12.4.131"}}') == "12.4.1"
    assert parse_version_json("not json") is None
    assert parse_version_json('{"cuda_cudart": {"version": "12.4.127"}}') is None
    assert parse_version_txt("CUDA Version 10.2.89\n") == "10.2.89"
    assert parse_version_txt("CUDA Version 9.0.176\nPatch 1\n") == "9.0.176"
    assert parse_version_txt("") is None


def test_cudnn_version_header():
    header = "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n#define CUDNN_VERSION (...)\n"
    assert parse_cudnn_version_h(header) == "9.1.0"
    assert parse_cudnn_version_h("#  define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n") == "8.9"
    assert parse_cudnn_version_h("#define CUDNN_MINOR 9\n") is None


def test_cudnn_fact_dedupes_alternatives_link_and_reads_ldconfig():
    header = "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 7\n"
    s = snap(files={"/usr/include/cudnn_version.h": header,
                    "/usr/include/x86_64-linux-gnu/cudnn_version_v8.h": header},
             commands={"ldconfig_p": ran(["ldconfig", "-p"], "2 libs found in cache `/etc/ld.so.cache'\n"
                                         "\tlibcudnn.so.8 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn.so.8\n"
                                         "\tlibcudnn_ops_infer.so.8 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn_ops_infer.so.8\n")},
             links={"/usr/include/cudnn_version.h": {"target": "/etc/alternatives/cudnn_version_h",
                                                     "real": "/usr/include/x86_64-linux-gnu/cudnn_version_v8.h"}})
    info = Facts(s)["cudnn"]
    assert [h.version for h in info.headers] == ["8.9.7"]
    assert info.lib_majors == (8,)


def test_no_cudnn_is_missing_with_the_reason():
    f = Facts(snap(commands={"ldconfig_p": ran(["ldconfig", "-p"], "0 libs found\n")}))
    assert "no system cuDNN found" in f.why_missing("cudnn")


# --- ldconfig -p -------------------------------------------------------------------------

def test_ldconfig_parse_keeps_order_and_flags():
    text = ("912 libs found in cache `/etc/ld.so.cache'\n"
            "\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1\n"
            "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/wsl/lib/libcuda.so.1\n"
            "\tlibfoo.so (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libfoo.so\n"
            "\tlibcudnn.so (libc6,AArch64) => /usr/lib/aarch64-linux-gnu/libcudnn.so\n"
            "Cache generated by: ldconfig (GNU libc) stable release version 2.35\n")
    libs = parse_ldconfig(text)
    assert [lib.path for lib in libs_named(libs, "libcuda.so")] == ["/lib/x86_64-linux-gnu/libcuda.so.1",
                                                                    "/usr/lib/wsl/lib/libcuda.so.1"]
    assert libs[2].flags == "libc6,x86-64, OS ABI: Linux 3.2.0"
    assert libs_named(libs, "libcudnn.so")[0].flags == "libc6,AArch64"
    assert libs_named(libs, "libcud") == []


# --- Secure Boot and the module on disk --------------------------------------------------

@pytest.mark.parametrize("out, err, rc, enabled, enforced", [
    ("SecureBoot enabled\n", "", 0, True, True),
    ("SecureBoot disabled\n", "", 0, False, False),
    ("SecureBoot enabled\nSecureBoot validation is disabled in shim\n", "", 0, True, False),
    ("", "EFI variables are not supported on this system\n", 255, False, False),
    ("This system doesn't support Secure Boot\n", "", 255, False, False),
])
def test_mokutil_states(out, err, rc, enabled, enforced):
    sb = Facts(snap(commands={"mokutil_sb_state": ran(["mokutil", "--sb-state"], out, rc, err)}))["secure_boot"]
    assert (sb.enabled, sb.enforced) == (enabled, enforced)


def test_mokutil_not_installed_is_missing():
    f = Facts(snap(commands={"mokutil_sb_state": CommandResult(("mokutil", "--sb-state"), error="not found")}))
    assert "not found" in f.why_missing("secure_boot")


def test_modinfo_found_signed_and_not_found():
    out = ("filename:       /lib/modules/6.8.0-49-generic/updates/dkms/nvidia.ko.zst\nversion:        550.120\n"
           "signer:         host Secure Boot Module Signature key\nparm:           NVreg_Foo:int\n")
    m = Facts(snap(commands={"modinfo_nvidia": ran(["modinfo", "nvidia"], out)}))["nvidia_module_file"]
    assert (m.found, m.version, m.signer) == (True, "550.120", "host Secure Boot Module Signature key")
    gone = ran(["modinfo", "nvidia"], "", 1, "modinfo: ERROR: Module nvidia not found.\n")
    m = Facts(snap(commands={"modinfo_nvidia": gone}))["nvidia_module_file"]
    assert m == NvidiaModuleFile(found=False, line="modinfo: ERROR: Module nvidia not found.")


def test_userspace_driver_from_mismatch_message_and_library_names():
    said = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.54\n"
    s = snap(commands={"nvidia_smi_xml": ran(["nvidia-smi", "-q", "-x"], said, 18)},
             listings={"/usr/lib/x86_64-linux-gnu": ["libcuda.so.1", "libnvidia-ml.so.550.54.15", "libcuda.so.550.54.15"]})
    user = Facts(s)["userspace_driver"]
    assert user.version == "550.54.15"
    assert user.line == "NVML library version: 550.54"
    assert user.versions == ("550.54.15",)


# --- toolkits and what the lookups pick --------------------------------------------------

def _two_toolkits(**env):
    return snap(files={"/usr/local/cuda-11.8/version.json": '{"cuda": {"version": "11.8.0"}}',
                       "/usr/local/cuda-12.1/version.json": '{"cuda": {"version": "12.1.1"}}'},
                commands={"nvcc_version": ran(["nvcc", "--version"], "Cuda compilation tools, release 11.8, V11.8.89\n")},
                env=env, listings={"/usr/local": ["cuda", "cuda-11.8", "cuda-12.1"]},
                links={"/usr/local/cuda": {"target": "/usr/local/cuda-12.1", "real": "/usr/local/cuda-12.1"},
                       "/usr/local/cuda-11.8/bin/nvcc": {"target": None, "real": "/usr/local/cuda-11.8/bin/nvcc"}})


def test_toolkits_resolve_the_cuda_symlink():
    toolkits = Facts(_two_toolkits())["cuda_toolkits"]
    assert [(t.root, t.version, t.aliases) for t in toolkits] == [
        ("/usr/local/cuda-11.8", "11.8.0", ()), ("/usr/local/cuda-12.1", "12.1.1", ("/usr/local/cuda",))]


def test_picks_follow_path_cuda_home_and_ld_library_path():
    s = _two_toolkits(PATH="/usr/local/cuda-11.8/bin:/usr/bin", CUDA_HOME="/usr/local/cuda-12.1",
                      LD_LIBRARY_PATH="/opt/lib:/usr/local/cuda/lib64")
    picks = {(p.what, p.version) for p in Facts(s)["cuda_picks"]}
    assert picks == {("nvcc on PATH", "11.8"), ("CUDA_HOME", "12.1"), ("LD_LIBRARY_PATH", "12.1"), ("/usr/local/cuda", "12.1")}


def test_unresolved_usr_local_cuda_folds_into_the_only_toolkit():
    s = snap(files={"/usr/local/cuda-12.4/version.json": '{"cuda": {"version": "12.4.1"}}'},
             listings={"/usr/local": ["cuda", "cuda-12.4"]})
    toolkits = Facts(s)["cuda_toolkits"]
    assert [(t.root, t.aliases) for t in toolkits] == [("/usr/local/cuda-12.4", ("/usr/local/cuda",))]


def test_toolkit_version_from_name_when_no_version_file():
    s = snap(listings={"/usr/local": ["cuda-13.0"]})
    (t,) = Facts(s)["cuda_toolkits"]
    assert (t.version, t.source) == ("13.0", "listing:/usr/local")


def test_nvcc_outside_known_toolkits_is_its_own_toolkit():
    s = snap(commands={"nvcc_version": ran(["nvcc", "--version"], "Cuda compilation tools, release 12.6, V12.6.85\n")},
             env={"PATH": "/opt/conda/bin:/usr/bin"}, listings={"/usr/local": []},
             links={"/opt/conda/bin/nvcc": {"target": None, "real": "/opt/conda/bin/nvcc"}})
    (t,) = Facts(s)["cuda_toolkits"]
    assert (t.root, t.version, t.source) == ("/opt/conda", "12.6", "command:nvcc_version")


def test_toolkits_missing_when_nothing_was_recorded():
    assert "not recorded" in Facts(snap()).why_missing("cuda_toolkits")


def test_real_path_resolves_a_recorded_parent():
    s = snap(links={"/usr/local/cuda": {"target": "/etc/alternatives/cuda", "real": "/usr/local/cuda-12.4"}})
    assert real_path(s, "/usr/local/cuda/include/cudnn_version.h") == "/usr/local/cuda-12.4/include/cudnn_version.h"
    assert real_path(s, "/usr/local/cuda-12.4/bin") == "/usr/local/cuda-12.4/bin"
