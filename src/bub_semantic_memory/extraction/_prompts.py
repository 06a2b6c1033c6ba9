"""Versioned prompt files: loading, rendering, release records and promotion.

A prompt lives in ``prompts/<name>/v<N>.md``: YAML front matter (name, version,
description, strategy, the ontology) and a Jinja2 body split into ``=== system ===``
and ``=== user ===`` sections. ``prompts/manifest.json`` records the sha256 of every
released version (released versions are immutable) and which version is promoted
for the plugin, with the model and scores that justified it.

References look like ``extract@2``, ``extract@latest`` (the newest file, drafts
included), ``extract@promoted`` or just ``extract``: the version promoted for the model's
class (local or hosted), never another class's. A class without a promotion of its own:
a local model gets the newest released version (a bare name never picks a draft); a hosted
model, whose every request is billed, gets none, and resolving fails with a message naming
``semantic-memory prompts promote`` (a version promoted on the local model sent eight
times the hosted budget).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import jinja2.nodes
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bub_semantic_memory._errors import (
    ConfigurationError,
    PromptFormatError,
    PromptIntegrityError,
    PromptNotFoundError,
)
from bub_semantic_memory._models import PromptRef
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.backends import BILLED_CLASSES, MODEL_CLASSES, ModelClass, declared_traits
from bub_semantic_memory.extraction._strategies import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    Step,
    check_template_steps,
    strategy_named,
)

__all__ = [
    "Manifest",
    "Promotion",
    "PromptLibrary",
    "PromptTemplate",
    "WindowShape",
    "bundled_prompts_dir",
    "parse_prompt_ref",
    "writable_prompts_dir",
]

MANIFEST_FILE = "manifest.json"
_VERSION_FILE = re.compile(r"^v(\d+)\.md$")
_REF = re.compile(r"^(?P<name>[a-z][a-z0-9_-]*)(?:@(?P<version>\d+|latest|promoted))?$")
_SECTION = re.compile(r"^=== (system|user) ===\s*$", re.MULTILINE)


def bundled_prompts_dir() -> Path:
    """The prompt directory shipped with the package.

    In a wheel the files sit in ``bub_semantic_memory/prompts``; in a source
    checkout (an editable install) they are the repository's top-level ``prompts/``.
    """
    packaged = resources.files("bub_semantic_memory") / "prompts"
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parents[3] / "prompts"
    if checkout.is_dir():
        return checkout
    raise ConfigurationError("no prompt directory found: the package was installed without its prompts")


def _installed_package_dir() -> Path:
    return Path(str(resources.files("bub_semantic_memory"))).resolve()


def writable_prompts_dir(root: Path | None) -> Path:
    """Where a command that writes prompt files (new, release, promote) writes.

    ``root`` when given, unless it lies inside the installed package: files there
    belong to the package manager and vanish on the next upgrade. Without ``root``:
    the repository's ``prompts/`` in a source checkout, else ``<bub home>/prompts``,
    seeded with a copy of the bundled prompts on first use (point the plugin at it
    with ``BUB_SEMANTIC_MEMORY_PROMPTS_DIR``).

    Raises:
        ConfigurationError: ``root`` is inside the installed package.
    """
    package = _installed_package_dir()
    if root is not None:
        if root.resolve().is_relative_to(package):
            raise ConfigurationError(
                f"refusing to write prompt files inside the installed package ({root}); "
                "pass --prompts-dir DIR (or set BUB_SEMANTIC_MEMORY_PROMPTS_DIR) to a directory of your own"
            )
        return root
    bundled = bundled_prompts_dir()
    if not bundled.resolve().is_relative_to(package):
        return bundled  # a source checkout: the repository's prompts/
    import shutil

    from bub_semantic_memory._home import bub_home

    user = bub_home() / "prompts"
    if not user.exists():
        shutil.copytree(bundled, user)
    return user


def parse_prompt_ref(ref: str) -> tuple[str, str]:
    """Split ``name@version`` into (name, version), version being digits, latest, promoted or ''."""
    match = _REF.match(ref.strip())
    if match is None:
        raise PromptNotFoundError(
            f"bad prompt reference {ref!r}: expected NAME, NAME@N, NAME@latest or NAME@promoted"
        )
    return match["name"], match["version"] or ""


class WindowShape(BaseModel):
    """How much context a prompt version shows with each window (``window:`` in its front matter).

    Each one left out takes the extractor's default (4 lines and 250 tokens of earlier turns,
    20 known entities). A version for hosted models can show less: every request is billed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    overlap_lines: int | None = Field(default=None, ge=0)
    overlap_tokens: int | None = Field(default=None, ge=0)
    max_known_entities: int | None = Field(default=None, ge=0)


class _FrontMatter(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    version: int = Field(ge=1)
    description: str = ""
    reasoning: bool = False
    strategy: str = DEFAULT_STRATEGY
    candidates: bool = False
    phrase_types: list[str] = Field(default_factory=list)
    window: WindowShape = Field(default_factory=WindowShape)
    facts: bool = False
    dates: bool = False
    ontology: Ontology

    @model_validator(mode="after")
    def _strategy_exists_and_its_needs_are_met(self) -> _FrontMatter:
        problems = strategy_named(self.strategy).requirements_unmet(
            candidates=self.candidates, phrase_types=bool(self.phrase_types), facts=self.facts
        )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _phrase_types_widen_candidates(self) -> _FrontMatter:
        if self.phrase_types and not self.candidates:
            raise ValueError("'phrase_types' widens candidate names: set 'candidates: true'")
        unknown = [t for t in self.phrase_types if t not in self.ontology.entity_types]
        if unknown:
            raise ValueError(f"'phrase_types' names types the ontology lacks: {', '.join(unknown)}")
        return self


@dataclass(frozen=True)
class PromptTemplate:
    """One prompt version: its metadata, ontology and template.

    Attributes:
        sha256: hash of the file's bytes; recorded on every snapshot it produces.
        reasoning: ask the model for a short reasoning note before the lists.
        candidates: entity names must be picked from capitalised spans of the window
            (an enum in the schema; grammar-constrained backends cannot invent names).
        strategy: which calls a window's extraction makes (a name of
            :data:`~bub_semantic_memory.extraction._strategies.STRATEGIES`).
        phrase_types: with ``candidates: true``, entity types whose name may instead be a
            short phrase of the transcript (tasks and events are rarely capitalised:
            "book the hotel", "soft opening").
        facts: the prompt states facts: what people said about the entities that no relation
            type holds. In a call of their own when the strategy has a ``facts`` step, else in
            the call that states relations (``all`` or ``relations``).
        dates: the transcript shows a day line before each day's first turn, so that a time
            said relative to it ("last Friday") can be copied and resolved.
    """

    name: str
    version: int
    description: str
    path: Path
    sha256: str
    ontology: Ontology
    reasoning: bool
    strategy: str
    candidates: bool
    system_template: str
    user_template: str
    ontology_sha256: str | None = None
    """Set when :meth:`with_ontology` replaced the file's ontology: the replacement's hash."""
    phrase_types: tuple[str, ...] = ()
    window: WindowShape = field(default_factory=WindowShape)
    """How much earlier context and how many known entities each window shows."""
    facts: bool = False
    dates: bool = False

    @property
    def ref(self) -> PromptRef:
        """The reference stored on snapshots."""
        return PromptRef(
            name=self.name, version=self.version, sha256=self.sha256, ontology_sha256=self.ontology_sha256
        )

    def with_ontology(self, ontology: Ontology, sha256: str) -> PromptTemplate:
        """This prompt showing ``ontology`` (a dataset's, with content hash ``sha256``) instead of its own.

        The file's hash stays in :attr:`sha256`; :attr:`ontology_sha256` records the
        substitution, so snapshots, reports and cache keys tell the two apart. Phrase types
        the replacement lacks are dropped, so :attr:`phrase_types` always names types of
        :attr:`ontology` (the front matter checks the same for the file's own ontology).
        """
        phrase_types = tuple(t for t in self.phrase_types if t in ontology.entity_types)
        return dataclasses.replace(self, ontology=ontology, ontology_sha256=sha256, phrase_types=phrase_types)

    @property
    def steps(self) -> tuple[Step, ...]:
        """The calls of one window's extraction, in order (the strategy's steps)."""
        return STRATEGIES[self.strategy].steps

    def __str__(self) -> str:
        return f"{self.name}@{self.version}"

    def render(self, **variables: Any) -> list[dict[str, str]]:
        """Render the system and user messages with ``variables`` (ontology is always available)."""
        context = {"ontology": self.ontology, **variables}
        messages: list[dict[str, str]] = []
        for role, source in (("system", self.system_template), ("user", self.user_template)):
            try:
                text = _compiled(source).render(**context).strip()
            except jinja2.TemplateError as exc:
                raise PromptFormatError(f"{self}: template error: {exc}") from exc
            if text:
                messages.append({"role": role, "content": text})
        return messages

    @classmethod
    def from_file(cls, path: Path) -> PromptTemplate:
        """Parse a prompt file.

        Raises:
            PromptFormatError: front matter, ontology or sections are malformed.
        """
        raw = path.read_bytes()
        text = raw.decode("utf-8")
        if not text.startswith("---\n"):
            raise PromptFormatError(f"{path}: missing YAML front matter (the file must start with '---')")
        try:
            _, header, body = text.split("---\n", 2)
        except ValueError as exc:
            raise PromptFormatError(f"{path}: front matter is not closed with '---'") from exc
        try:
            meta = _FrontMatter.model_validate(yaml.safe_load(header))
        except (yaml.YAMLError, ValidationError) as exc:
            raise PromptFormatError(f"{path}: invalid front matter: {exc}") from exc
        expected = _VERSION_FILE.match(path.name)
        if expected is None or int(expected[1]) != meta.version or path.parent.name != meta.name:
            raise PromptFormatError(
                f"{path}: front matter says {meta.name}@{meta.version}; the path disagrees"
            )
        sections = _split_sections(body, path)
        _check_syntax(sections, path)
        problems = check_template_steps(STRATEGIES[meta.strategy], _tested_steps(sections.values()))
        if problems:
            raise PromptFormatError(f"{path}: {'; '.join(problems)}")
        return cls(
            name=meta.name,
            version=meta.version,
            description=meta.description.strip(),
            path=path,
            sha256=hashlib.sha256(raw).hexdigest(),
            ontology=meta.ontology,
            reasoning=meta.reasoning,
            strategy=meta.strategy,
            candidates=meta.candidates,
            phrase_types=tuple(meta.phrase_types),
            window=meta.window,
            facts=meta.facts,
            dates=meta.dates,
            system_template=sections.get("system", ""),
            user_template=sections["user"],
        )


def _jinja_env() -> jinja2.Environment:
    # Prompts are plain text, not HTML: no autoescape. Undefined variables fail loudly.
    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False)


@functools.lru_cache(maxsize=64)
def _compiled(source: str) -> jinja2.Template:
    """Compile a template once (compiling costs tens of milliseconds; rendering far less)."""
    return _jinja_env().from_string(source)


def _split_sections(body: str, path: Path) -> dict[str, str]:
    parts = _SECTION.split(body)
    sections = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    if "user" not in sections:
        raise PromptFormatError(f"{path}: the template has no '=== user ===' section")
    return sections


def _check_syntax(sections: dict[str, str], path: Path) -> None:
    env = _jinja_env()
    for role, source in sections.items():
        try:
            env.parse(source)
        except jinja2.TemplateSyntaxError as exc:
            raise PromptFormatError(f"{path}: {role} section, line {exc.lineno}: {exc.message}") from exc


def _tested_steps(sources: Iterable[str]) -> set[str]:
    """The step names a template compares ``step`` with (``step == "relations"``, either way round)."""
    env = _jinja_env()
    tested: set[str] = set()
    for source in sources:
        for compare in env.parse(source).find_all(jinja2.nodes.Compare):
            operands = [compare.expr, *(op.expr for op in compare.ops)]
            if any(isinstance(o, jinja2.nodes.Name) and o.name == "step" for o in operands):
                names = (o.value for o in operands if isinstance(o, jinja2.nodes.Const))
                tested.update(name for name in names if isinstance(name, str))
    return tested


class Promotion(BaseModel):
    """Which version the plugin uses for one model class, and the evidence that justified it.

    Attributes:
        model_class: ``local`` (a model in this process) or ``hosted`` (an endpoint that
            bills every request, tool schemas included).
        model: the model the gate ran on.
        scores: the candidate's scores on the gate's fixtures.
        cost: what the candidate's extraction of the budget session was billed (per tape
            token: ``ratio``, ``effective_ratio``; ``cached_share``), for a billed class.
    """

    version: int
    sha256: str
    model: str
    model_class: ModelClass = "local"
    promoted_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    baseline: str | None = None
    tolerance: float | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    cost: dict[str, float] = Field(default_factory=dict)


class Manifest(BaseModel):
    """``prompts/manifest.json``: released hashes, and for each prompt name its promotion per model class.

    A manifest written before promotions were per class (one promotion per name) is read as
    a promotion for the class of the model it records.
    """

    released: dict[str, str] = Field(default_factory=dict)
    promoted: dict[str, dict[ModelClass, Promotion]] = Field(default_factory=dict)

    @field_validator("promoted", mode="before")
    @classmethod
    def _one_promotion_per_name_is_one_class(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return {
            name: {declared_traits(str(entry.get("model", ""))).model_class: entry}
            if isinstance(entry, dict) and "version" in entry
            else entry
            for name, entry in value.items()
        }

    def promotion(self, name: str, model_class: ModelClass | None = None) -> Promotion | None:
        """The version promoted for ``model_class`` (None: none for that class; never another's).

        Without a class (a caller that needs a version's ontology, not its cost): the local
        promotion, else the hosted one.
        """
        promotions = self.promoted.get(name, {})
        if model_class is not None:
            return promotions.get(model_class)
        return next((promotions[c] for c in MODEL_CLASSES if c in promotions), None)


def _not_promoted(name: str, model_class: ModelClass | None, manifest: Manifest) -> str:
    """Why a bare name or ``@promoted`` names no version, and what to do about it."""
    if model_class is None:
        return f"no version of {name!r} has been promoted"
    others = [
        f"{name}@{promotion.version} for {other} models"
        for other, promotion in manifest.promoted.get(name, {}).items()
        if other != model_class
    ]
    promoted = f" (promoted: {', '.join(others)})" if others else ""
    billed = (
        ", and a version promoted for another class can cost a hosted endpoint many times its budget "
        "(every request is billed, tool schemas included)"
        if model_class in BILLED_CLASSES
        else ""
    )
    return (
        f"no version of {name!r} is promoted for {model_class} models{promoted}{billed}: choose one "
        f"(--prompt {name}@N, or the prompt setting BUB_SEMANTIC_MEMORY_PROMPT={name}@N), or promote one "
        f"for them with 'semantic-memory prompts promote {name}@N --model <a {model_class} model>'"
    )


class PromptLibrary:
    """A directory of versioned prompts with its manifest.

    Args:
        root: the prompt directory; defaults to the one shipped with the package.
    """

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else bundled_prompts_dir()

    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST_FILE

    def manifest(self) -> Manifest:
        """Read the manifest (an empty one if the file does not exist)."""
        if not self.manifest_path.exists():
            return Manifest()
        try:
            return Manifest.model_validate_json(self.manifest_path.read_bytes())
        except ValidationError as exc:
            raise PromptFormatError(f"{self.manifest_path}: {exc}") from exc

    def save_manifest(self, manifest: Manifest) -> None:
        """Write the manifest atomically (write a temporary file, then rename)."""
        data = json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
        tmp = self.manifest_path.with_suffix(".json.tmp")
        tmp.write_text(data, encoding="utf-8")
        tmp.replace(self.manifest_path)

    def names(self) -> list[str]:
        """Prompt names (directories holding at least one ``v<N>.md``)."""
        if not self.root.is_dir():
            return []
        return sorted(d.name for d in self.root.iterdir() if d.is_dir() and self.versions(d.name))

    def versions(self, name: str) -> list[int]:
        """Available versions of ``name``, ascending."""
        folder = self.root / name
        if not folder.is_dir():
            return []
        found = (_VERSION_FILE.match(p.name) for p in folder.iterdir())
        return sorted(int(m[1]) for m in found if m)

    def resolve(self, ref: str, *, model_class: ModelClass | None = None) -> tuple[str, int]:
        """Turn a reference into (name, version) without loading the file.

        A bare name or ``@promoted`` means the version promoted for ``model_class``, never
        the one of another class. A bare name with nothing promoted for the class: the newest
        released version, unless the class is billed (hosted).

        Raises:
            PromptNotFoundError: no such name or version; ``@promoted`` with nothing promoted
                for the class; a bare name for a billed class with nothing promoted for it.
        """
        name, version = parse_prompt_ref(ref)
        versions = self.versions(name)
        if not versions:
            raise PromptNotFoundError(f"no prompt named {name!r} in {self.root}")
        if version.isdigit():
            if int(version) not in versions:
                listed = ", ".join(f"{name}@{v}" for v in versions)
                raise PromptNotFoundError(f"{name}@{version} does not exist (available: {listed})")
            return name, int(version)
        manifest = self.manifest()
        promoted = manifest.promotion(name, model_class)
        if version in ("promoted", "") and promoted is not None:
            return name, promoted.version
        if version == "promoted" or (version == "" and model_class in BILLED_CLASSES):
            raise PromptNotFoundError(_not_promoted(name, model_class, manifest))
        if version == "":
            # A bare name never picks a draft: the promoted version, else the newest released one.
            released = [v for v in versions if f"{name}@{v}" in manifest.released]
            if released:
                return name, released[-1]
        return name, versions[-1]

    def load(self, ref: str, *, model_class: ModelClass | None = None) -> PromptTemplate:
        """Load a prompt by reference, checking a released version against its recorded hash.

        ``model_class`` picks the promoted version a bare name means (see :meth:`resolve`).

        Raises:
            PromptNotFoundError: unknown name or version.
            PromptFormatError: the file does not parse.
            PromptIntegrityError: a released version's content changed.
        """
        name, version = self.resolve(ref, model_class=model_class)
        template = PromptTemplate.from_file(self.root / name / f"v{version}.md")
        recorded = self.manifest().released.get(str(template))
        if recorded is not None and recorded != template.sha256:
            raise PromptIntegrityError(
                f"{template} was released with sha256 {recorded[:12]}… but the file now hashes to "
                f"{template.sha256[:12]}…; released versions are immutable: start a new one with "
                f"'semantic-memory prompts new {name} --from {template}'"
            )
        return template

    def verify(self) -> list[str]:
        """Check every released version against its recorded hash; return the problems found."""
        problems: list[str] = []
        for ref, recorded in sorted(self.manifest().released.items()):
            name, version = parse_prompt_ref(ref)
            path = self.root / name / f"v{version}.md"
            if not path.exists():
                problems.append(f"{ref}: released but {path} is missing")
                continue
            actual = hashlib.sha256(path.read_bytes()).hexdigest()
            if actual != recorded:
                problems.append(f"{ref}: recorded sha256 {recorded[:12]}…, file has {actual[:12]}…")
        return problems

    def release(self, ref: str) -> PromptTemplate:
        """Record a version's hash in the manifest, making it immutable."""
        template = self.load(ref)
        manifest = self.manifest()
        manifest.released[str(template)] = template.sha256
        self.save_manifest(manifest)
        return template

    def new_version(self, name: str, *, base: str) -> Path:
        """Start the next version of ``name`` as an editable copy of ``base``.

        Returns the new file's path. The copy is a draft: not released, not promoted.
        """
        source = self.load(base)
        if source.name != name:
            raise PromptNotFoundError(f"{base} is not a version of {name!r}")
        next_version = self.versions(name)[-1] + 1
        text = source.path.read_text(encoding="utf-8")
        header_end = text.index("---\n", 4)
        header = re.sub(r"(?m)^version: \d+$", f"version: {next_version}", text[:header_end], count=1)
        target = self.root / name / f"v{next_version}.md"
        target.write_text(header + text[header_end:], encoding="utf-8")
        return target

    def promote(
        self,
        template: PromptTemplate,
        *,
        model: str,
        model_class: ModelClass,
        scores: dict[str, float],
        baseline: str | None,
        tolerance: float | None,
        cost: dict[str, float] | None = None,
    ) -> Promotion:
        """Record ``template`` as the promoted (and released) version of its name for ``model_class``."""
        manifest = self.manifest()
        manifest.released[str(template)] = template.sha256
        promotion = Promotion(
            version=template.version,
            sha256=template.sha256,
            model=model,
            model_class=model_class,
            baseline=baseline,
            tolerance=tolerance,
            scores=scores,
            cost=cost or {},
        )
        manifest.promoted.setdefault(template.name, {})[model_class] = promotion
        self.save_manifest(manifest)
        return promotion
