"""Fix recipes: data files, tailored with machine values, readable without them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpudoctor import recipes
from gpudoctor.facts.system import OsRelease
from gpudoctor.snapshot_folder import load
from tests.scenarios import SCENARIOS

RECIPES = sorted(recipes.all_recipes())
SIGNATURES = Path(recipes.RECIPE_DIR).parent / "signatures"
# Values only the user can know (which image, which GPU to reset) stay as <name> on purpose.
USER_FILLED = {"image", "gpu_index"}


def test_every_recipe_file_is_well_formed():
    for path in sorted(recipes.RECIPE_DIR.glob("*.json")):
        data = json.loads(path.read_text())
        assert data["id"] == path.stem
        assert data["family"] and data["summary"] and data["explanation"]
        assert all(link.startswith("https://") for link in data.get("links", [])), path


def _explain_recipe_ids():
    ids = set()
    for path in SIGNATURES.glob("*.json"):
        ids |= set(re.findall(r'"recipe":\s*"([a-z0-9_]+)"', path.read_text()))
    return sorted(ids)


@pytest.mark.parametrize("recipe_id", _explain_recipe_ids())
def test_recipes_explain_uses_read_cleanly_without_a_machine(recipe_id):
    fix = recipes.recipe(recipe_id)
    text = " ".join([fix.summary, *fix.commands])
    assert not set(re.findall(r"<([a-z_]+)>", text)) - USER_FILLED, text


def test_tailored_text_wins_when_the_machine_is_known():
    facts = __import__("gpudoctor.facts", fromlist=["Facts"]).Facts(
        load(str(SCENARIOS / "fw-torch-cu121-old-driver-515")))
    fix = recipes.recipe("driver_too_old", facts, framework="torch 2.3.1+cu121", min_driver="525.60.13",
                         alternative="install torch 2.3.1+cu118", alternative_command="pip install x")
    assert fix.summary.startswith("Driver 515.105.01 supports CUDA up to 11.7; torch 2.3.1+cu121 needs at least 525.60.13")


def test_generic_summaries_are_tried_from_most_to_least_specific():
    assert recipes.recipe("driver_too_old", cuda_driver_max="11.4").summary.startswith(
        "This driver supports CUDA up to 11.4")
    assert recipes.recipe("driver_too_old").summary.startswith("The NVIDIA driver is older than the CUDA")


def test_fill_and_unfilled():
    assert recipes.fill("driver {driver_version} on {gpu}", {"driver_version": "550.54.15"}) == \
        "driver 550.54.15 on <gpu>"
    assert recipes.unfilled("{a} {b} {a}", {"a": 1}) == {"b"}


def test_distribution_families():
    assert recipes.distro_family(OsRelease("ubuntu", ("debian",), None, None)) == "debian"
    assert recipes.distro_family(OsRelease("rocky", ("rhel", "centos", "fedora"), None, None)) == "rhel"
    assert recipes.distro_family(OsRelease("opensuse-leap", ("suse", "opensuse"), None, None)) == "suse"
    assert recipes.distro_family(OsRelease("nixos", (), None, None)) == "default"
    assert recipes.distro_family(None) == "default"
