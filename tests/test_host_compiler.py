"""CUDA004: the gcc nvcc calls against the limit in the build toolkit's crt/host_config.h."""

from __future__ import annotations

import pytest

from gpudoctor.facts import Facts
from gpudoctor.findings import Status
from gpudoctor_checks.host_compiler import host_compiler
from tests.builders import ran, snap

HEADER = "#if __GNUC__ > {n}\n#error -- unsupported GNU version! gcc versions later than {n} are not supported!\n#endif\n"


def machine(gcc_line: str, limit: int = 12):
    return Facts(snap(
        files={"/usr/local/cuda-12.2/version.json": '{"cuda": {"name": "CUDA SDK", "version": "12.2.0"}}',
               "/usr/local/cuda-12.2/include/crt/host_config.h": HEADER.format(n=limit)},
        listings={"/usr/local": ["cuda-12.2"]},
        commands={"gcc_version": ran(["gcc", "--version"], gcc_line + "\nCopyright (C) 2023 Free Software Foundation\n")}))


@pytest.mark.parametrize("line,version,major", [
    ("gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0", "11.4.0", 11),
    ("gcc (GCC) 13.2.1 20231011 (Red Hat 13.2.1-4)", "13.2.1", 13),
    ("gcc (Debian 12.2.0-14+deb12u1) 12.2.0", "12.2.0", 12),
])
def test_gcc_versions_of_the_distributions(line, version, major):
    got = machine(line)["host_gcc"]
    assert (got.version, got.major) == (version, major)


def test_a_gcc_the_toolkit_accepts_passes():
    finding = host_compiler.run(machine("gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0"))
    assert finding.status is Status.OK
    assert finding.title == "gcc 11.4.0; CUDA 12.2.0 accepts gcc up to 12"


def test_a_newer_gcc_warns_with_the_limit_and_the_fix():
    f = machine("gcc (GCC) 13.2.1 20231011 (Red Hat 13.2.1-4)")
    finding = host_compiler.run(f)
    assert finding.status is Status.WARN
    assert finding.title.startswith("gcc 13.2.1 is newer than CUDA 12.2.0 accepts (gcc 12 or older)")
    assert "export NVCC_CCBIN=/usr/bin/g++-12" in " ".join(finding.fix.commands)
    assert finding.fix.kb_id == "cuda_host_compiler"
