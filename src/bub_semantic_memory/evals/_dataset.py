"""Eval fixtures on disk, their gold annotations and prediction files.

A fixture is a directory holding a Bub tape and the facts a perfect extractor would
find in it::

    evals/fixtures/<id>/tape.jsonl   a Bub 0.5 tape (one entry per line)
    evals/fixtures/<id>/gold.json    a :class:`Gold` object
    evals/fixtures/<id>/facts.json   optional: a :class:`GoldFacts` object (the fixture's facts are
                                     scored only where one exists)

``facts.json`` is generated with the tape and the gold (``fixtures import``, from the ``facts`` of a
source's gold, whose evidence names turns, never entry ids), and ``tests/evals/test_gold_facts.py``
holds each fact to its evidence lines by the validator's own rule and each said time to its
resolved date, so a fact whose evidence drifts fails a test instead of scoring silently wrong.

:func:`load_fixtures` validates every ``gold.json`` when the dataset is loaded, but
reads tapes only when :meth:`Fixture.entries` is called. Predictions (what an
extractor produced, one :class:`Prediction` per fixture) are JSONL files read by
:func:`load_predictions`. :func:`dataset_hash` fingerprints the tapes and gold of a
set of fixtures, so cached results can tell when the dataset changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from bub_semantic_memory._errors import FixtureError
from bub_semantic_memory._models import FactKind
from bub_semantic_memory.tape import Entry, read_tape_file

__all__ = [
    "FACTS_FILE",
    "GOLD_FILE",
    "TAPE_FILE",
    "Fixture",
    "Gold",
    "GoldEntity",
    "GoldFact",
    "GoldFacts",
    "GoldRelation",
    "Prediction",
    "Question",
    "dataset_hash",
    "describe_validation_error",
    "load_fixtures",
    "load_predictions",
    "read_jsonl",
]

TAPE_FILE = "tape.jsonl"
GOLD_FILE = "gold.json"
FACTS_FILE = "facts.json"
_RESOLVED_DATE = r"^\d{4}(-\d{2}(-\d{2})?|-W\d{2})?$"


class GoldEntity(BaseModel):
    """An entity that should be extracted: display name, ontology type, other names, small facts."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    type: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)
    attributes: dict[str, str] = Field(default_factory=dict)


class GoldRelation(BaseModel):
    """A relation that should be extracted; ``source`` and ``target`` are entity names."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=1)
    target: str = Field(min_length=1)
    type: str = Field(min_length=1)


class GoldFact(BaseModel):
    """A fact that should be extracted (see :class:`~bub_semantic_memory._models.Fact`).

    Attributes:
        about: gold entity names (or aliases) it is about.
        topic: a word or two for a superseding kind (state, preference, plan): a later fact on the
            same topic about the same first entity replaces this one.
        when: the resolved date (``2023-05-05``, ``2023-W18``, ``2023-05``, ``2023``), if the tape
            says a time for it.
        said_when: the time as the tape says it ("last Friday"), when it is relative: ``when`` is
            what it means on the date of the first evidence entry (not compared by the scorer).
        evidence: ids of the tape entries that state it.
    """

    model_config = ConfigDict(extra="forbid")

    statement: str = Field(min_length=8)
    kind: FactKind
    about: list[str] = Field(min_length=1)
    topic: str = ""
    when: str | None = Field(default=None, pattern=_RESOLVED_DATE)
    said_when: str | None = None
    evidence: list[int] = Field(default_factory=list)


class GoldFacts(BaseModel):
    """The content of a fixture's ``facts.json``."""

    model_config = ConfigDict(extra="forbid")

    facts: list[GoldFact] = Field(default_factory=list)


type QuestionCategory = Literal[
    "single-hop", "multi-hop", "temporal", "preference", "aggregation", "open-domain", "unanswerable"
]
"""What kind of recall a question needs: one stated fact; facts joined across turns or entities; a fact
as of a time, or one that changed; what someone likes or wants; a count or list gathered over the tape;
what the tape says combined with knowledge from outside it; nothing in the tape answers it (the right
answer is "unknown")."""

UNKNOWN = "unknown"
"""The answer of an unanswerable question."""

QUESTIONS_ONLY = "questions-only"
"""The tag of a fixture whose dataset annotates no entities or relations, only questions (LoCoMo's):
its extraction is not scored (F1 undefined, shown as "–", never 0) and its questions name no gold
entity (that share is undefined too)."""


class Question(BaseModel):
    """A question the memory should let the agent answer, with its expected answer.

    Attributes:
        answer: the canonical answer (:data:`UNKNOWN` when the tape does not answer it).
        accepted: other forms of the answer that count as it ("Bob" for "Robert Castillo").
        category: what kind of recall it needs (see :data:`QuestionCategory`).
        evidence: ids of the tape entries that state the answer (none for an unanswerable one).
        source_category: the category the question's own dataset gives it, as that dataset numbers
            and names it (LoCoMo's ``3 open-domain``), so results can be reported in its terms.
    """

    model_config = ConfigDict(extra="forbid")

    question: str
    answer: str
    accepted: list[str] = Field(default_factory=list)
    category: QuestionCategory | None = None
    evidence: list[int] = Field(default_factory=list)
    source_category: str | None = None

    @model_serializer(mode="wrap")
    def _without_empty_optionals(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A question written before these fields existed is written back byte for byte."""
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in ("question", "answer") or v not in (None, [])}

    @property
    def answers(self) -> list[str]:
        """Every accepted form, the canonical one first."""
        return [self.answer, *(a for a in self.accepted if a != self.answer)]

    @model_validator(mode="after")
    def _unanswerable_means_unknown(self) -> Question:
        if (self.category == "unanswerable") != (self.answer.strip().lower() == UNKNOWN):
            raise ValueError(f"an unanswerable question has the answer {UNKNOWN!r}, and only it")
        if self.category == "unanswerable" and self.evidence:
            raise ValueError("an unanswerable question has no evidence: the tape states no answer")
        if any(entry_id < 1 for entry_id in self.evidence):
            raise ValueError(f"evidence holds tape entry ids, which start at 1: {self.evidence}")
        return self


class Gold(BaseModel):
    """The gold annotation of one fixture (the content of its ``gold.json``)."""

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    entities: list[GoldEntity] = Field(default_factory=list)
    relations: list[GoldRelation] = Field(default_factory=list)
    questions: list[Question] = Field(default_factory=list)
    forbidden: list[str] = Field(
        default_factory=list,
        description="Names the memory must never hold: what an injection in the transcript tries to "
        "plant. An extracted entity that names one (in its name, an alias or an attribute value) is "
        "reported, on top of counting as spurious.",
    )


class Prediction(BaseModel):
    """What an extractor produced for one fixture, in the same shape as :class:`Gold`.

    A predictions file holds one of these per line (JSONL).
    """

    model_config = ConfigDict(extra="forbid")

    fixture: str = Field(min_length=1)
    entities: list[GoldEntity] = Field(default_factory=list)
    relations: list[GoldRelation] = Field(default_factory=list)
    facts: list[GoldFact] = Field(default_factory=list)


@dataclass(frozen=True)
class Fixture:
    """One fixture directory: its id (the directory name), path and validated gold.

    ``facts`` is None when the fixture has no ``facts.json`` (its facts are not scored).
    """

    id: str
    path: Path
    gold: Gold
    facts: tuple[GoldFact, ...] | None = None

    @property
    def tape_path(self) -> Path:
        """The fixture's ``tape.jsonl``."""
        return self.path / TAPE_FILE

    @property
    def gold_path(self) -> Path:
        """The fixture's ``gold.json``."""
        return self.path / GOLD_FILE

    @property
    def tags(self) -> list[str]:
        """The gold's tags."""
        return self.gold.tags

    @property
    def description(self) -> str:
        """The gold's description."""
        return self.gold.description

    def entries(self) -> list[Entry]:
        """Read the tape (on every call: tapes are never read at load time).

        Bad lines are skipped and logged by :func:`read_tape_file`.

        Raises:
            TapeReadError: the tape file cannot be opened.
        """
        entries, _ = read_tape_file(self.tape_path)
        return entries


def load_fixtures(directory: Path, *, tags: Sequence[str] = (), ids: Sequence[str] = ()) -> list[Fixture]:
    """Load the fixtures under ``directory``, sorted by id.

    A fixture is a sub-directory holding both ``tape.jsonl`` and ``gold.json``;
    sub-directories holding neither are ignored.

    Args:
        tags: keep fixtures having at least one of these tags (empty: no tag filter).
        ids: keep only these fixture ids (empty: all); every id must exist.

    Raises:
        FixtureError: ``directory`` is not a directory or holds no fixture; a
            sub-directory has only one of the two files; a ``gold.json`` is malformed
            (the message names the file and quotes the validation error) or names
            another id; a requested id does not exist; the filters leave nothing.
    """
    if not directory.is_dir():
        raise FixtureError(f"fixture directory {directory} does not exist or is not a directory")
    fixtures: list[Fixture] = []
    for child in sorted(directory.iterdir(), key=lambda p: p.name):
        if not child.is_dir():
            continue
        has_tape, has_gold = (child / TAPE_FILE).is_file(), (child / GOLD_FILE).is_file()
        if not has_tape and not has_gold:
            continue
        if not (has_tape and has_gold):
            missing = TAPE_FILE if not has_tape else GOLD_FILE
            raise FixtureError(f"fixture {child} has no {missing}")
        fixtures.append(Fixture(id=child.name, path=child, gold=_read_gold(child), facts=_read_facts(child)))
    if not fixtures:
        raise FixtureError(
            f"no fixtures in {directory} (expected sub-directories with {TAPE_FILE} and {GOLD_FILE})"
        )

    if ids:
        known = {f.id for f in fixtures}
        missing_ids = [i for i in dict.fromkeys(ids) if i not in known]
        if missing_ids:
            raise FixtureError(f"no such fixture in {directory}: {', '.join(missing_ids)}")
        wanted = set(ids)
        fixtures = [f for f in fixtures if f.id in wanted]
    if tags:
        wanted_tags = set(tags)
        fixtures = [f for f in fixtures if wanted_tags.intersection(f.tags)]
        if not fixtures:
            raise FixtureError(f"no fixture in {directory} has any of the tags: {', '.join(tags)}")
    return fixtures


def _read_gold(folder: Path) -> Gold:
    path = folder / GOLD_FILE
    try:
        gold = Gold.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise FixtureError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValidationError as exc:
        raise FixtureError(f"malformed gold file {path}: {exc}") from exc
    if gold.id and gold.id != folder.name:
        raise FixtureError(
            f"{path}: gold id {gold.id!r} does not match the fixture directory {folder.name!r}"
        )
    return gold if gold.id else gold.model_copy(update={"id": folder.name})


def _read_facts(folder: Path) -> tuple[GoldFact, ...] | None:
    path = folder / FACTS_FILE
    if not path.is_file():
        return None
    try:
        return tuple(GoldFacts.model_validate_json(path.read_bytes()).facts)
    except OSError as exc:
        raise FixtureError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValidationError as exc:
        raise FixtureError(f"malformed facts file {path}: {describe_validation_error(exc)}") from exc


def describe_validation_error(exc: ValidationError) -> str:
    """A validation error as one human line: the first problem, where it is, and how many more."""
    errors = exc.errors(include_url=False)
    if not errors:
        return "invalid"
    first = errors[0]
    if first["type"] == "json_invalid":
        detail = str(first.get("ctx", {}).get("error", "")).strip()
        return f"not valid JSON ({detail})" if detail else "not valid JSON"
    location = ".".join(str(part) for part in first["loc"])
    message = f"{location}: {first['msg']}" if location else str(first["msg"])
    more = len(errors) - 1
    return f"{message} (and {more} more problem{'s' if more > 1 else ''})" if more else message


def read_jsonl[M: BaseModel](path: Path, model: type[M], what: str) -> list[tuple[int, M]]:
    """Parse a JSONL file into ``model`` instances with their line numbers (blank lines skipped).

    Raises:
        FixtureError: the file cannot be read, or a line is malformed (one line naming
            file, line number and the first problem).
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FixtureError(f"cannot read {what}s {path}: {exc.strerror or exc}") from exc
    items: list[tuple[int, M]] = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            items.append((number, model.model_validate_json(line)))
        except ValidationError as exc:
            raise FixtureError(
                f"{path}:{number}: malformed {what}: {describe_validation_error(exc)}"
            ) from exc
    return items


def load_predictions(path: Path) -> dict[str, Prediction]:
    """Read a predictions JSONL file (one :class:`Prediction` per line) keyed by fixture id.

    Blank lines are ignored.

    Raises:
        FixtureError: the file cannot be read, a line is malformed (the message names
            the file and line), or two lines predict the same fixture.
    """
    predictions: dict[str, Prediction] = {}
    first_line: dict[str, int] = {}
    for number, prediction in read_jsonl(path, Prediction, "prediction"):
        if prediction.fixture in predictions:
            raise FixtureError(
                f"{path}:{number}: duplicate prediction for fixture {prediction.fixture!r} "
                f"(first on line {first_line[prediction.fixture]})"
            )
        predictions[prediction.fixture] = prediction
        first_line[prediction.fixture] = number
    return predictions


def dataset_hash(fixtures: Iterable[Fixture]) -> str:
    """A sha256 hex digest over each fixture's id, tape bytes and gold bytes.

    Fixtures are hashed in id order, each field length-prefixed, so the digest
    changes exactly when a fixture is added, removed, renamed or edited.

    Raises:
        FixtureError: a tape or gold file cannot be read.
    """
    digest = hashlib.sha256()
    for fixture in sorted(fixtures, key=lambda f: f.id):
        facts = fixture.path / FACTS_FILE
        for part in (
            fixture.id.encode("utf-8"),
            _read_bytes(fixture.tape_path),
            _read_bytes(fixture.gold_path),
            *([_read_bytes(facts)] if facts.is_file() else []),  # fixtures without facts hash as before
        ):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
    return digest.hexdigest()


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FixtureError(f"cannot read {path}: {exc.strerror or exc}") from exc
