from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from bub_semantic_memory._errors import PromptFormatError, PromptIntegrityError, PromptNotFoundError
from bub_semantic_memory.extraction._prompts import PromptLibrary, parse_prompt_ref
from tests.conftest import REPO


@pytest.fixture
def library(tmp_path: Path) -> PromptLibrary:
    root = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", root)
    return PromptLibrary(root)


def test_bundled_released_versions_match_their_recorded_sha256() -> None:
    library = PromptLibrary()
    assert library.manifest().released, "the shipped prompts must record their released versions"
    assert library.verify() == []


def test_every_bundled_version_loads_and_renders() -> None:
    library = PromptLibrary()
    for name in library.names():
        for version in library.versions(name):
            template = library.load(f"{name}@{version}")
            messages = template.render(
                transcript="[1] user: hi", context="", known_entities=[], step="all", entities=[]
            )
            assert messages[-1]["role"] == "user" and "[1] user: hi" in messages[-1]["content"]


def test_parse_prompt_ref_accepts_versions_latest_and_promoted() -> None:
    assert parse_prompt_ref("extract@2") == ("extract", "2")
    assert parse_prompt_ref("extract@latest") == ("extract", "latest")
    assert parse_prompt_ref("extract") == ("extract", "")
    with pytest.raises(PromptNotFoundError):
        parse_prompt_ref("extract@two")


def test_load_resolves_latest_and_exposes_the_file_sha256(library: PromptLibrary) -> None:
    latest = library.load("extract@latest")
    assert latest.version == max(library.versions("extract"))
    import hashlib

    assert latest.sha256 == hashlib.sha256(latest.path.read_bytes()).hexdigest()
    assert latest.ref.sha256 == latest.sha256


def test_unknown_version_names_the_available_ones(library: PromptLibrary) -> None:
    with pytest.raises(PromptNotFoundError, match=r"extract@99 does not exist \(available: extract@1"):
        library.load("extract@99")


def test_editing_a_released_version_is_refused(library: PromptLibrary) -> None:
    released = next(iter(library.manifest().released))
    path = library.root / "extract" / f"v{released.split('@')[1]}.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n<!-- edited -->\n", encoding="utf-8")
    with pytest.raises(PromptIntegrityError, match="released versions are immutable"):
        library.load(released)
    assert library.verify() and released in library.verify()[0]


def test_new_version_is_an_editable_unreleased_copy(library: PromptLibrary) -> None:
    before = library.versions("extract")
    path = library.new_version("extract", base="extract@1")
    assert library.versions("extract") == [*before, before[-1] + 1]
    template = library.load(f"extract@{before[-1] + 1}")
    assert template.ontology == library.load("extract@1").ontology
    assert str(template) not in library.manifest().released
    path.write_text(path.read_text(encoding="utf-8").replace("Rules:", "Rules (edited):"), encoding="utf-8")
    assert library.load(str(template)).sha256 != library.load("extract@1").sha256


def test_a_bare_name_picks_the_version_promoted_for_the_models_class(library: PromptLibrary) -> None:
    promoted = library.manifest().promoted["extract"]
    for model_class, promotion in promoted.items():
        assert library.resolve("extract", model_class=model_class) == ("extract", promotion.version)
        assert library.resolve("extract@promoted", model_class=model_class) == ("extract", promotion.version)


def test_promote_records_version_model_class_and_scores(library: PromptLibrary) -> None:
    library.promote(
        library.load("extract@1"),
        model="gpt-x",
        model_class="hosted",
        scores={"entity_f1": 0.8},
        baseline=None,
        tolerance=0.02,
        cost={"ratio": 3.9},
    )
    manifest = library.manifest()
    assert manifest.promoted["extract"]["hosted"].version == 1
    assert manifest.promoted["extract"]["hosted"].model == "gpt-x"
    assert manifest.promoted["extract"]["hosted"].cost == {"ratio": 3.9}
    assert library.load("extract", model_class="hosted").version == 1
    assert library.load("extract@promoted", model_class="hosted").version == 1
    local = PromptLibrary().manifest().promoted["extract"]["local"].version
    assert library.load("extract", model_class="local").version == local  # the other class keeps its own


def test_a_manifest_with_one_promotion_per_name_reads_as_the_class_of_its_model(tmp_path: Path) -> None:
    shutil.copytree(REPO / "prompts", tmp_path / "prompts")
    library = PromptLibrary(tmp_path / "prompts")
    record = {"version": 2, "sha256": library.load("extract@2").sha256, "model": "gpt-4o-mini"}
    data = json.loads(library.manifest_path.read_text(encoding="utf-8"))
    library.manifest_path.write_text(json.dumps({**data, "promoted": {"extract": record}}), encoding="utf-8")
    manifest = library.manifest()
    assert set(manifest.promoted["extract"]) == {"hosted"}
    assert library.load("extract", model_class="hosted").version == 2
    # a class with nothing promoted never takes another class's promotion: local, the newest released
    newest = max(int(ref.split("@")[1]) for ref in data["released"] if ref.startswith("extract@"))
    assert library.load("extract", model_class="local").version == newest != 2


def test_a_hosted_model_never_runs_the_version_promoted_for_local_models(tmp_path: Path) -> None:
    """Only a local promotion: a hosted model's bare name resolves to nothing, and says how to fix it."""
    shutil.copytree(REPO / "prompts", tmp_path / "prompts")
    library = PromptLibrary(tmp_path / "prompts")
    data = json.loads(library.manifest_path.read_text(encoding="utf-8"))
    library.manifest_path.write_text(json.dumps({**data, "promoted": {}}), encoding="utf-8")
    library.promote(
        library.load("extract@9"),
        model="local",
        model_class="local",
        scores={},
        baseline=None,
        tolerance=None,
    )
    assert library.load("extract", model_class="local").version == 9
    for ref in ("extract", "extract@promoted"):
        with pytest.raises(PromptNotFoundError) as caught:
            library.load(ref, model_class="hosted")
        message = str(caught.value)
        assert (
            "no version of 'extract' is promoted for hosted models (promoted: extract@9 for local" in message
        )
        assert "semantic-memory prompts promote extract@N --model <a hosted model>" in message
        assert "--prompt extract@N" in message
    assert library.load("extract@12", model_class="hosted").version == 12  # a version named is a choice
    # a promotion for local models does not walk around the hosted class
    library.promote(
        library.load("extract@10"),
        model="local",
        model_class="local",
        scores={},
        baseline=None,
        tolerance=None,
    )
    with pytest.raises(PromptNotFoundError):
        library.load("extract", model_class="hosted")


def test_a_prompt_without_front_matter_is_a_format_error(library: PromptLibrary) -> None:
    bad = library.root / "extract" / "v50.md"
    bad.write_text("no front matter\n=== user ===\nhi\n", encoding="utf-8")
    with pytest.raises(PromptFormatError, match="missing YAML front matter"):
        library.load("extract@50")


def _edited_copy(library: PromptLibrary, source: int, version: int, old: str, new: str) -> str:
    """A copy of ``extract@source`` saved as ``extract@version`` with ``old`` replaced by ``new``."""
    text = (library.root / "extract" / f"v{source}.md").read_text(encoding="utf-8")
    text = text.replace(f"version: {source}", f"version: {version}").replace(old, new)
    (library.root / "extract" / f"v{version}.md").write_text(text, encoding="utf-8")
    return f"extract@{version}"


def test_a_template_syntax_error_names_the_section_and_line(library: PromptLibrary) -> None:
    ref = _edited_copy(library, 1, 51, "{{ transcript }}", "{{ transcript")
    with pytest.raises(PromptFormatError, match="user section, line"):
        library.load(ref)


def test_the_classify_strategy_without_candidates_is_a_format_error(library: PromptLibrary) -> None:
    ref = _edited_copy(library, 6, 52, "candidates: true", "candidates: false")
    with pytest.raises(PromptFormatError, match="strategy 'classify' types candidate names"):
        library.load(ref)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("candidates: true", "candidates: false", "'phrase_types' widens candidate names"),
        ("phrase_types: [task, event]", "phrase_types: [task, chore]", "types the ontology lacks: chore"),
    ],
)
def test_phrase_types_need_candidates_and_types_of_the_ontology(
    library: PromptLibrary, old: str, new: str, message: str
) -> None:
    ref = _edited_copy(library, 7, 53, old, new)
    with pytest.raises(PromptFormatError, match=message):
        library.load(ref)


def test_the_three_step_strategy_without_phrase_types_is_a_format_error(library: PromptLibrary) -> None:
    ref = _edited_copy(library, 8, 54, "phrase_types: [task, event]\n", "")
    with pytest.raises(
        PromptFormatError, match="strategy 'three_step' asks for phrases in a call of its own"
    ):
        library.load(ref)


def test_the_sweep_strategy_without_candidate_names_is_a_format_error(library: PromptLibrary) -> None:
    ref = _edited_copy(library, 9, 55, "candidates: true", "candidates: false")
    with pytest.raises(PromptFormatError, match="strategy 'sweep' types candidate names"):
        library.load(ref)


def test_a_substituted_ontology_keeps_only_the_phrase_types_it_has(library: PromptLibrary) -> None:
    prompt = library.load("extract@7")
    without_events = prompt.ontology.model_copy(
        update={"entity_types": {k: v for k, v in prompt.ontology.entity_types.items() if k != "event"}}
    )
    assert prompt.with_ontology(without_events, "0" * 64).phrase_types == ("task",)


def _uv() -> list[str]:
    """The uv that `make` installs into .tools/ (never the system interpreter), else one on PATH."""
    tools = REPO / ".tools" / "bin" / "python"
    if tools.exists():
        return [str(tools), "-m", "uv"]
    found = shutil.which("uv")
    if found is None:
        pytest.fail("uv not found: run `make setup` (it installs uv into .tools/) or put uv on PATH")
    return [found]


@pytest.mark.slow
def test_the_built_wheel_ships_the_prompt_files(tmp_path: Path) -> None:
    subprocess.run(
        [*_uv(), "build", "--wheel", "--out-dir", str(tmp_path)], cwd=REPO, check=True, timeout=300
    )
    wheel = next(tmp_path.glob("bub_semantic_memory-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n for n in names if n.startswith("bub_semantic_memory/prompts/")}
    expected = {
        f"bub_semantic_memory/prompts/{p.relative_to(REPO / 'prompts').as_posix()}"
        for p in (REPO / "prompts").rglob("*")
        if p.is_file()
    }
    assert expected <= shipped
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[bub]" in text and "semantic-memory = bub_semantic_memory.plugin:SemanticMemoryPlugin" in text


def test_a_bare_name_never_picks_a_draft(library: PromptLibrary) -> None:
    manifest = library.manifest()
    manifest.promoted.clear()
    library.save_manifest(manifest)
    draft = library.new_version("extract", base="extract@1")
    released = sorted(int(ref.split("@")[1]) for ref in library.manifest().released)
    assert library.resolve("extract") == ("extract", released[-1])
    assert library.resolve("extract@latest") == ("extract", int(draft.stem[1:]))
