"""One setup for a tape's memory: built one way from settings, defaults written once, the ontology
of the version that extracted a tape."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from bub.store import FileTapeStore
from bub.tape import TapeEntry
from typer.testing import CliRunner

from bub_semantic_memory._models import Entity, Relation
from bub_semantic_memory.agent._policy import MemoryPolicy
from bub_semantic_memory.agent._setup import MemorySetup
from bub_semantic_memory.cli import app
from bub_semantic_memory.cli._options import memory_setup as cli_setup
from bub_semantic_memory.extraction._prompts import PromptLibrary
from bub_semantic_memory.plugin._settings import SemanticMemorySettings
from bub_semantic_memory.plugin._settings import memory_setup as plugin_setup
from bub_semantic_memory.stores._store import SnapshotStore
from tests.conftest import make_snapshot

POLICY = {f.name for f in dataclasses.fields(MemoryPolicy)}


def parsed(path: tuple[str, ...], argv: list[str]) -> dict[str, Any]:
    """A command's options as the real CLI parses them."""
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    with command.make_context(" ".join(path), argv) as ctx:
        return dict(ctx.params)


def test_the_plugins_settings_default_to_the_policy_and_build_the_default_policy() -> None:
    fields = SemanticMemorySettings.model_fields
    assert set(fields) >= POLICY  # every policy field is a setting
    assert {name: fields[name].default for name in POLICY} == dataclasses.asdict(MemoryPolicy())
    assert plugin_setup(SemanticMemorySettings(model="local")).policy == MemoryPolicy()


@pytest.mark.parametrize(
    ("path", "argv"),
    [
        (("show",), ["T"]),
        (("eval", "run"), ["--model", "m"]),
        (("eval", "qa"), []),
    ],
)
def test_a_commands_policy_options_default_to_the_plugins_policy(
    path: tuple[str, ...], argv: list[str]
) -> None:
    params = parsed(path, argv)
    assert POLICY & set(params), f"{' '.join(path)} has no policy option"
    assert cli_setup(params, extract=False).policy == MemoryPolicy()


def test_an_explicit_setting_changes_that_setting_only() -> None:
    setup = MemorySetup.from_settings({"model": "local", "every_turns": 2, "budget": 300}, extract=False)
    assert setup.policy == dataclasses.replace(MemoryPolicy(), every_turns=2, budget=300)


@pytest.mark.parametrize(("model", "model_class"), [("local", "local"), ("gpt-4o-mini", "hosted")])
def test_the_prompt_version_is_the_one_promoted_for_the_class_the_backend_declares(
    model: str, model_class: str
) -> None:
    setup = MemorySetup.from_settings({"model": model, "base_url": None})
    promoted = PromptLibrary().manifest().promoted["extract"][model_class]  # type: ignore[index]
    assert setup.traits.model_class == model_class
    assert setup.load_template().version == promoted.version


ANA = Entity.create("Ana", "person", evidence=[1])
PORTO = Entity.create("Porto", "location", evidence=[1])


async def extracted_tape(tmp_path: Path, model_class: str) -> tuple[Path, Any]:
    """A tape whose memory the version promoted for ``model_class`` extracted, and that version."""
    version = PromptLibrary().load("extract", model_class=model_class)  # type: ignore[arg-type]
    tapes = tmp_path / "tapes"
    store = FileTapeStore(tapes)
    store.append("t", TapeEntry.message({"role": "user", "content": "Ana lives in Porto."}))
    snapshot = make_snapshot(
        [ANA, PORTO], [Relation(source=ANA.key, type="lives_in", target=PORTO.key, evidence=(1,))], tape="t"
    ).model_copy(update={"prompt": version.ref})
    await SnapshotStore(store).append(snapshot)
    return tapes, version


def test_the_two_classes_promote_versions_with_different_ontologies() -> None:
    library = PromptLibrary()
    assert (
        library.load("extract", model_class="local").ontology
        != library.load("extract", model_class="hosted").ontology
    )  # otherwise the tests below could not tell which one folded a memory


@pytest.mark.parametrize("model_class", ["local", "hosted"])
async def test_a_setup_folds_a_tape_with_the_ontology_of_the_version_that_extracted_it(
    model_class: str, tmp_path: Path
) -> None:
    tapes, version = await extracted_tape(tmp_path, model_class)
    folded = await MemorySetup.from_settings({}, extract=False).for_tape(FileTapeStore(tapes), "t")
    assert folded.ontology == version.ontology


@pytest.mark.parametrize("model_class", ["local", "hosted"])
@pytest.mark.parametrize(
    "verb",
    [["show", "t"], ["memory", "export", "--tape", "t"], ["memory", "edits", "--tape", "t"]],
    ids=["show", "export", "edits"],
)
def test_show_export_and_edits_fold_with_the_version_that_extracted_the_tape(
    verb: list[str], model_class: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tapes, version = asyncio.run(extracted_tape(tmp_path, model_class))
    seen: list[Any] = []
    original = SnapshotStore.load_graph

    async def recording(self: SnapshotStore, tape: str, ontology: Any = None, **kwargs: Any) -> Any:
        seen.append(ontology)
        return await original(self, tape, ontology, **kwargs)

    monkeypatch.setattr(SnapshotStore, "load_graph", recording)
    result = CliRunner().invoke(app, [*verb, "--tapes-dir", str(tapes)])
    assert result.exit_code == 0, result.output
    assert seen and all(ontology == version.ontology for ontology in seen)
    if verb[:2] == ["memory", "export"]:
        assert json.loads(result.stdout)["entities"]
