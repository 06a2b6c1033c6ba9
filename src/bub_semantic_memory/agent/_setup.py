"""One owner of a tape's memory setup: what extracts it, which prompt version and ontology fold it,
when extraction runs, how much a note holds, what is redacted.

Every entry point builds its memories from one :class:`MemorySetup`, made by one builder,
:meth:`MemorySetup.from_settings`, from settings by their names (the plugin's settings, a
command's parsed options, an eval's): the plugin, every ``semantic-memory`` verb, ``eval qa``'s
memory contexts and the plugin-cadence replay. What works on memories is made from a setup and
nothing else: :meth:`MemoryService.from_setup <bub_semantic_memory.agent.MemoryService.from_setup>`
(the memory of running agents), :meth:`MemoryEditor.from_setup
<bub_semantic_memory.agent.MemoryEditor.from_setup>` (a person's edits) and
:meth:`MemorySetup.open_extractor` (the extractor, with the bounds its backend declares).

Which prompt version (and so which ontology) applies is decided here, once, from what the
backend declares (:func:`~bub_semantic_memory.backends.declared_traits`), never from a model
name elsewhere. A tape that was extracted already is folded with the ontology of the version
that extracted it (:meth:`MemorySetup.for_tape`), so ``show``, the edits and the export of a
tape a hosted model extracted read it as the plugin on that model does.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bub_semantic_memory._errors import PromptNotFoundError
from bub_semantic_memory.agent._policy import ExtractionCadence, MemoryPolicy
from bub_semantic_memory.backends import HOSTED, BackendTraits, declared_traits
from bub_semantic_memory.extraction import ExtractorConfig, PromptLibrary, PromptTemplate
from bub_semantic_memory.tape import Redactor

if TYPE_CHECKING:
    from bub.store import AsyncTapeStore, TapeStore

    from bub_semantic_memory._models import PromptRef
    from bub_semantic_memory._ontology import Ontology
    from bub_semantic_memory.backends import ChatBackend
    from bub_semantic_memory.extraction import Extractor

__all__ = ["MemorySetup"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class MemorySetup:
    """Everything that decides a tape's memory, resolved once.

    Attributes:
        extractor: what extracts (None: this setup reads and edits memory, it never extracts).
        prompt: the prompt reference whose ontology folds a memory (``extract``: the version
            promoted for the extractor's model class); the extractor's own when it has one.
        prompts_dir: where prompt references are looked up (None: the bundled prompts).
        policy: cadence, note budget, bounds of the agent's own edits.
        redactor: what hides secrets in the lines a note shows (the one extraction uses).
        folds_with: the ontology memories fold with when it is not the prompt version's: the
            version that extracted a tape (:meth:`for_tape`), an eval's dataset or report.
    """

    extractor: ExtractorConfig | None = None
    prompt: str = "extract"
    prompts_dir: Path | None = None
    policy: MemoryPolicy = field(default_factory=MemoryPolicy)
    redactor: Redactor = field(default_factory=Redactor)
    folds_with: Ontology | None = None

    @classmethod
    def from_settings(
        cls, settings: Mapping[str, Any], /, *, extract: bool = True, **overrides: Any
    ) -> MemorySetup:
        """The setup settings describe: how the plugin, the CLI and the evals build one.

        Args:
            settings: values by the settings' names (``BUB_SEMANTIC_MEMORY_<NAME>``): the plugin's
                settings, a command's parsed options. Unknown names are ignored, ``None`` leaves a
                setting at its default.
            extract: build an extractor configuration (needs ``model``); False for a setup that
                only reads and edits memory.
            overrides: values by the same names that win over ``settings`` (the endpoint the
                plugin derived from bub's model settings).

        Raises:
            ConfigurationError: ``extract`` without a model, or an invalid setting.
        """
        values = {**settings, **overrides}
        config = ExtractorConfig.from_settings(values) if extract else None
        patterns, allowlist = values.get("redact_patterns") or (), values.get("redact_allowlist") or ()
        return cls(
            extractor=config,
            prompt=str(values.get("prompt") or "extract"),
            prompts_dir=values.get("prompts_dir"),
            policy=MemoryPolicy.from_settings(values),
            redactor=Redactor(list(patterns), allowlist=list(allowlist)),
        )

    def replace(self, **changes: Any) -> MemorySetup:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    # -- what decides the prompt version ---------------------------------------------

    @property
    def traits(self) -> BackendTraits:
        """What the extractor's backend declares, known without opening it (an endpoint's, when
        this setup does not extract)."""
        return declared_traits(self.extractor.model) if self.extractor is not None else HOSTED

    def library(self) -> PromptLibrary:
        """The prompt library references are looked up in (the extractor's, when it has one)."""
        return self.extractor.library() if self.extractor is not None else PromptLibrary(self.prompts_dir)

    def load_template(self) -> PromptTemplate:
        """The prompt version this setup extracts with: the extractor's prompt (``prompt`` when it
        does not extract), as promoted for the model class its backend declares.

        A bare name for a class with no promotion falls back to the version promoted for the other
        class (extraction is then off, and says why), so memory already stored is still read.
        """
        if self.extractor is not None and isinstance(self.extractor.prompt, PromptTemplate):
            return self.extractor.prompt
        reference = str(self.extractor.prompt) if self.extractor is not None else self.prompt
        library = self.library()
        try:
            return library.load(reference, model_class=self.traits.model_class)
        except PromptNotFoundError:
            if reference.partition("@")[2]:
                raise
            return library.load(reference)

    @property
    def ontology(self) -> Ontology:
        """The ontology memories of this setup fold with: :attr:`folds_with`, else the prompt
        version's (see :meth:`load_template`)."""
        return self.folds_with if self.folds_with is not None else self.load_template().ontology

    async def for_tape(self, store: TapeStore | AsyncTapeStore, tape: str) -> MemorySetup:
        """This setup, folding ``tape`` with the ontology of the version that extracted its newest
        snapshot (unchanged when nothing was extracted yet, or that version is not in the library)."""
        from bub_semantic_memory.stores import SnapshotStore

        recorded = self._recorded(await SnapshotStore(store).extracted_by(tape))
        return self if recorded is None else self.replace(folds_with=recorded.ontology)

    def _recorded(self, recorded: PromptRef | None) -> PromptTemplate | None:
        if recorded is None:
            return None
        try:
            return self.library().load(f"{recorded.name}@{recorded.version}")
        except PromptNotFoundError:
            logger.warning(
                "semantic memory: %s@%d extracted this memory but is not in the prompt library; "
                "folding it with %s",
                recorded.name,
                recorded.version,
                self.prompt,
            )
            return None

    def cadence(self) -> ExtractionCadence:
        """When extraction runs, for the backend the extractor's model declares (no backend is
        opened; see :meth:`MemoryPolicy.cadence`)."""
        if self.extractor is None:
            return self.policy.cadence(self.traits, 0)
        bounds = self.extractor.resolve(self.traits, self.load_template().window)
        return self.policy.cadence(self.traits, bounds.chunk_tokens)

    # -- what the setup builds ----------------------------------------------------------

    def open_extractor(self, *, backend: ChatBackend | None = None) -> Extractor | None:
        """The extractor (None when this setup does not extract); ``backend`` instead of the one
        the model spec opens (tests, an embedding application)."""
        from bub_semantic_memory.extraction import Extractor

        if self.extractor is None:
            return None
        return Extractor(self.extractor, backend=backend)
