"""Framework build facts read from installed files, and their cache."""

from __future__ import annotations

import os

from gpudoctor.hook import fastfacts
from gpudoctor.hook.fastfacts import Cache, framework_facts

TORCH_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '{version}'
debug = False
cuda: Optional[str] = {cuda!r}
git_version = 'd990dada86a8ad94882b5c23e859b88c0c255bda'
hip: Optional[str] = None
"""

TF_BUILD_INFO_PY = '''"""Auto-generated module providing information about the build."""
import collections

build_info = collections.OrderedDict([('cpu_compiler', '/usr/lib/llvm-17/bin/clang'), \
('cuda_compute_capabilities', ['sm_60', 'sm_70', 'sm_80', 'sm_89', 'compute_90']), \
('cuda_version', '12.3'), ('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), \
('is_tensorrt_build', True)])
'''


def fake_site(root, torch=("2.3.1+cu121", "12.1"), tf="2.16.1"):
    site = root / "site-packages"
    if torch:
        (site / "torch").mkdir(parents=True)
        (site / "torch" / "version.py").write_text(TORCH_VERSION_PY.format(version=torch[0], cuda=torch[1]))
        (site / f"torch-{torch[0]}.dist-info").mkdir()
        (site / f"torch-{torch[0]}.dist-info" / "RECORD").write_text("torch/version.py,,\n")
    if tf:
        (site / "tensorflow" / "python" / "platform").mkdir(parents=True)
        (site / "tensorflow" / "python" / "platform" / "build_info.py").write_text(TF_BUILD_INFO_PY)
        (site / f"tensorflow-{tf}.dist-info").mkdir()
        (site / f"tensorflow-{tf}.dist-info" / "RECORD").write_text("tensorflow/__init__.py,,\n")
    site.mkdir(parents=True, exist_ok=True)
    return site


def fake_python(stub_bin, paths):
    """An interpreter that answers the sys.path question the way a real one would."""
    import json

    return str(stub_bin("python3", f"echo '{json.dumps([''] + [str(p) for p in paths])}'"))


def test_reads_torch_and_tensorflow_build_facts_from_files(tmp_path, stub_bin):
    site = fake_site(tmp_path)
    facts = framework_facts(fake_python(stub_bin, [tmp_path / "empty", site]), os.environ, 5,
                            cache=Cache(tmp_path / "cache"))
    torch, tf = facts["torch"], facts["tensorflow"]
    assert (torch["version"], torch["cuda"], torch["cuda_built"]) == ("2.3.1+cu121", "12.1", True)
    assert torch["file"] == str(site / "torch")
    assert tf["version"] == "2.16.1"
    assert tf["build_info"]["cuda_version"] == "12.3" and tf["build_info"]["is_cuda_build"] is True
    assert tf["build_info"]["cuda_compute_capabilities"][-1] == "compute_90"
    assert tf["file"] == str(site / "tensorflow")


def test_first_path_entry_wins_like_import(tmp_path, stub_bin):
    first = fake_site(tmp_path / "a", torch=("2.4.0+cu124", "12.4"), tf=None)
    second = fake_site(tmp_path / "b", torch=("2.1.0+cu118", "11.8"))
    facts = framework_facts(fake_python(stub_bin, [first, second]), os.environ, 5, cache=Cache(tmp_path / "c"))
    assert facts["torch"]["version"] == "2.4.0+cu124"
    assert facts["tensorflow"]["version"] == "2.16.1"  # only the second entry has it


def test_not_installed_and_cpu_builds(tmp_path, stub_bin):
    site = fake_site(tmp_path, torch=("2.13.0+cpu", None), tf=None)
    facts = framework_facts(fake_python(stub_bin, [site]), os.environ, 5, cache=Cache(tmp_path / "c"))
    assert facts["torch"]["cuda"] is None and facts["torch"]["cuda_built"] is False
    assert facts["tensorflow"]["installed"] is False


def test_cache_is_used_until_the_distribution_changes(tmp_path, stub_bin):
    site = fake_site(tmp_path, tf=None)
    python = fake_python(stub_bin, [site])
    cache_dir = tmp_path / "cache"
    first = framework_facts(python, os.environ, 5, cache=Cache(cache_dir))
    assert first["torch"]["probe"]["cached"] is False
    assert (cache_dir / fastfacts.CACHE_NAME).is_file()
    second = framework_facts(python, os.environ, 5, cache=Cache(cache_dir))
    assert second["torch"]["probe"]["cached"] is True and second["torch"]["cuda"] == "12.1"
    # A reinstall rewrites RECORD: the cached facts no longer apply.
    (site / "torch" / "version.py").write_text(TORCH_VERSION_PY.format(version="2.3.1+cu121", cuda="12.4"))
    (site / "torch-2.3.1+cu121.dist-info" / "RECORD").write_text("torch/version.py,,\ntorch/__init__.py,,\n")
    third = framework_facts(python, os.environ, 5, cache=Cache(cache_dir))
    assert third["torch"]["probe"]["cached"] is False and third["torch"]["cuda"] == "12.4"


def test_cache_lives_under_xdg_cache_home(tmp_path):
    assert fastfacts.cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "gpudoctor"


def test_unwritable_cache_is_not_an_error(tmp_path, stub_bin):
    site = fake_site(tmp_path, tf=None)
    blocker = tmp_path / "file"
    blocker.write_text("")
    facts = framework_facts(fake_python(stub_bin, [site]), os.environ, 5, cache=Cache(blocker / "sub"))
    assert facts["torch"]["version"] == "2.3.1+cu121"


def test_an_interpreter_that_hangs_leaves_frameworks_unknown(tmp_path, stub_bin):
    python = str(stub_bin("python3", "exec sleep 30"))
    facts = framework_facts(python, os.environ, 0.5, cache=Cache(tmp_path / "c"))
    assert facts["torch"]["probe"]["timed_out"] is True and "installed" not in facts["torch"]


def test_own_interpreter_needs_no_child(tmp_path):
    import sys

    paths, why = fastfacts.target_sys_path(sys.executable, os.environ, 5)
    assert why is None and paths == [p for p in sys.path if p]


def test_literals_reads_only_literal_assignments():
    values = fastfacts.literals("import os\nx = 1\ny: str = 'a'\nz = os.getcwd()\nw = dict([('k', 2)])\n")
    assert values == {"x": 1, "y": "a", "w": {"k": 2}}
