"""`python -m gpudoctor.contrib_files`: where the Slurm wrappers and the NPD config are."""

from __future__ import annotations

import json
import os

from gpudoctor import contrib_files
from tests.conftest import ROOT

NAMES = ["npd/gpudoctor-npd", "npd/gpudoctor-plugin-monitor.json", "slurm/gpudoctor-healthcheck",
         "slurm/gpudoctor-prolog"]


def test_a_source_tree_uses_its_top_level_contrib_folder():
    assert contrib_files.folder() == ROOT / "contrib"
    assert [p.relative_to(ROOT / "contrib").as_posix() for p in contrib_files.files()] == NAMES


def test_main_lists_every_file_or_the_ones_named(capsys):
    assert contrib_files.main() == 0
    assert capsys.readouterr().out.splitlines() == [str(ROOT / "contrib" / n) for n in NAMES]
    assert contrib_files.main(["slurm/gpudoctor-prolog"]) == 0
    assert capsys.readouterr().out == f"{ROOT / 'contrib' / 'slurm' / 'gpudoctor-prolog'}\n"


def test_an_unknown_name_is_one_line_and_exit_2(capsys):
    assert contrib_files.main(["slurm/prolog"]) == 2
    err = capsys.readouterr().err
    assert err == f"gpudoctor: no contrib file slurm/prolog (there are: {', '.join(NAMES)})\n"


def test_the_files_are_what_the_readme_describes():
    prolog = (ROOT / "contrib" / "slurm" / "gpudoctor-prolog")
    assert os.access(prolog, os.X_OK) and "scontrol update" in prolog.read_text()
    npd = json.loads((ROOT / "contrib" / "npd" / "gpudoctor-plugin-monitor.json").read_text())
    assert npd["source"] == "gpudoctor" and npd["pluginConfig"]["max_output_length"] == 80
