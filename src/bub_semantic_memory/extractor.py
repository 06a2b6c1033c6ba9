"""The extractor: tape entries in, validated snapshots out.

Instructor drives the model through function calling (or JSON modes) against any
OpenAI-compatible endpoint or the in-process local backend. Each window of new
entries becomes one extraction call:

1. render the prompt version with the window, a little earlier context and the
   tape's known entities (so the model reuses keys instead of inventing duplicates);
2. send it through :func:`.transport.send_with_retries` (transport retries);
3. validate the answer against a :class:`.schema.ValidationScope`; a violation is
   re-asked with the error, at most ``RetryPolicy.reasks`` times;
4. return a :class:`.models.Snapshot` with the usage of every attempt.

When the re-asks run out on an answer that still breaks a rule, the items that pass
every rule are kept and the others dropped, each with the validator's reason on the
snapshot (:attr:`.models.Snapshot.dropped`): a bad relation costs that relation, not the
window. Other failures raise a typed :class:`.errors.ExtractionError` carrying the
cause and the usage; the extractor never returns an empty snapshot as if nothing had
been said. Output cut at the token limit (however it shows: a ``length`` finish, or
JSON that ends mid-way) is extracted again in halves of the window.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

import instructor
from instructor.core import IncompleteOutputException, InstructorRetryException
from openai.types.chat import ChatCompletion
from pydantic import ValidationError

from bub_semantic_memory.backends import open_backend
from bub_semantic_memory.candidates import candidate_names
from bub_semantic_memory.config import ExtractorConfig
from bub_semantic_memory.errors import (
    ExtractionError,
    OutputTruncatedError,
    TransportError,
    ValidationExhaustedError,
)
from bub_semantic_memory.graph import MemoryGraph
from bub_semantic_memory.models import Entity, Relation, Snapshot, Usage, normalize_name
from bub_semantic_memory.schema import (
    MAX_CLASSIFIED,
    Constraints,
    ExtractionResponse,
    KnownEntity,
    Salvage,
    ValidationScope,
    build_classification_model,
    build_entities_model,
    build_phrases_model,
    build_relations_model,
    build_response_model,
    leftover_names,
    salvage,
    validation_scope,
)
from bub_semantic_memory.transcript import coerce_entries
from bub_semantic_memory.transport import (
    CallLedger,
    ChatBackend,
    EndpointFailure,
    send_with_retries,
)
from bub_semantic_memory.window import Window, plan_windows

__all__ = ["Extractor"]

logger = logging.getLogger(__name__)

_INSTRUCTOR_MODES: dict[str, instructor.Mode] = {
    "tools": instructor.Mode.TOOLS,
    "json_schema": instructor.Mode.JSON_SCHEMA,
    "md_json": instructor.Mode.MD_JSON,
    "json": instructor.Mode.JSON,
}
_MAX_SPLIT_DEPTH = 3
_DEFAULT_CHUNK_TOKENS = 3000
_LOCAL_CHUNK_TOKENS = 1500
_MIN_CHUNK_TOKENS = 300
# A generous estimate of a prompt's fixed part (instructions, ontology) in tokens, and of
# one listed known entity; the planner keeps a window within what is left of the context.
_PROMPT_OVERHEAD_TOKENS = 2000
_KNOWN_ENTITY_TOKENS = 12


class Extractor:
    """Extract entities and relations from tape entries with one prompt version and one model.

    Args:
        config: model, prompt and bounds (see :class:`~bub_semantic_memory.config.ExtractorConfig`).
        backend: a ready :class:`ChatBackend` (tests, a local model shared by several
            extractors); default: the one :func:`~bub_semantic_memory.backends.open_backend`
            opens for ``config.model``.
    """

    def __init__(self, config: ExtractorConfig, *, backend: ChatBackend | None = None) -> None:
        self.config = config
        self.model = config.model
        self.mode = config.mode
        self.prompt = config.load_prompt()
        self.retry = config.retry_policy()
        self.max_output_tokens = config.output_tokens()
        self.redactor = config.redactor()
        self.backend = backend or open_backend(config)
        self.chunk_tokens = config.chunk_tokens or self._fitting_chunk_tokens()

    def _fitting_chunk_tokens(self) -> int:
        """New transcript per call: 3000 tokens, or less when the backend's context is smaller.

        A window must fit beside the prompt's fixed part, the overlap, the known entities
        and the answer; a local model opened with a small context would otherwise reject
        the request ("Requested tokens exceed context window").
        """
        context = getattr(self.backend, "context_tokens", None)
        if not isinstance(context, int):
            return _DEFAULT_CHUNK_TOKENS
        budget = context - self.max_output_tokens - _PROMPT_OVERHEAD_TOKENS - self.config.overlap_tokens
        budget -= self.config.max_known_entities * _KNOWN_ENTITY_TOKENS
        # Small models extract better (and a CPU answers sooner) from short windows.
        return max(_MIN_CHUNK_TOKENS, min(_LOCAL_CHUNK_TOKENS, budget))

    async def aclose(self) -> None:
        """Release the backend's connections (or model)."""
        await self.backend.aclose()

    async def __aenter__(self) -> Extractor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- whole tapes ---------------------------------------------------------------

    async def extract(
        self,
        entries: Iterable[Any],
        *,
        tape: str,
        memory: MemoryGraph | None = None,
    ) -> list[Snapshot]:
        """Extract every window after the memory's watermark; see :meth:`iter_extract`."""
        return [snapshot async for snapshot in self.iter_extract(entries, tape=tape, memory=memory)]

    async def iter_extract(
        self,
        entries: Iterable[Any],
        *,
        tape: str,
        memory: MemoryGraph | None = None,
    ) -> AsyncIterator[Snapshot]:
        """Yield one snapshot per window of entries after ``memory.watermark``, in tape order.

        Store each snapshot as it comes: if a later window fails, the earlier ones are
        kept and the watermark stops right before the failed window.

        Raises:
            ExtractionError: a window could not be extracted within the bounds.
        """
        tape_entries, _ = coerce_entries(entries)
        plan = plan_windows(
            tape_entries,
            watermark=memory.watermark if memory is not None else 0,
            chunk_tokens=self.chunk_tokens,
            overlap_lines=self.config.overlap_lines,
            overlap_tokens=self.config.overlap_tokens,
            limits=self.config.line_limits,
            redact=self.redactor,
        )
        learned: dict[str, KnownEntity] = {}
        for window in plan.windows:
            async for snapshot in self._extract_splitting(window, tape=tape, memory=memory, learned=learned):
                for entity in snapshot.entities:
                    learned[entity.key] = KnownEntity.of(entity)
                yield snapshot

    async def _extract_splitting(
        self,
        window: Window,
        *,
        tape: str,
        memory: MemoryGraph | None,
        learned: dict[str, KnownEntity],
        depth: int = 0,
        carried: Usage | None = None,
    ) -> AsyncIterator[Snapshot]:
        try:
            snapshot = await self.extract_window(window, tape=tape, memory=memory, learned=learned)
        except (OutputTruncatedError, ValidationExhaustedError) as exc:
            # Too much to say for one answer (cut at the token limit, or more items than
            # the schema allows): say it in two halves.
            too_much = isinstance(exc, OutputTruncatedError) or exc.too_many_items
            halves = window.split() if too_much else None
            if halves is None or depth >= _MAX_SPLIT_DEPTH:
                raise _charged(exc, carried) from exc.__cause__
            logger.info(
                "too much to extract at once from entries %d-%d; extracting each half",
                window.first_entry_id,
                window.last_entry_id,
            )
            cost = exc.usage + (carried or Usage())
            for index, half in enumerate(halves):
                async for part in self._extract_splitting(
                    half,
                    tape=tape,
                    memory=memory,
                    learned=learned,
                    depth=depth + 1,
                    carried=cost if index == 0 else None,
                ):
                    yield part
            return
        except ExtractionError as exc:
            raise _charged(exc, carried) from exc.__cause__
        if carried is not None:
            snapshot = snapshot.model_copy(update={"usage": snapshot.usage + carried})
        yield snapshot

    # -- one window ----------------------------------------------------------------

    async def extract_window(
        self,
        window: Window,
        *,
        tape: str,
        memory: MemoryGraph | None = None,
        learned: Mapping[str, KnownEntity] | None = None,
    ) -> Snapshot:
        """Extract one window into a snapshot (a window without conversation needs no model call)."""
        entities: list[Entity] = []
        relations: list[Relation] = []
        ledger = CallLedger(self.retry)
        if window.lines:
            known_all = _known_entities(memory, learned or {})
            listed = self._listed_known(memory, learned or {}, window)
            if self.prompt.strategy != "single":
                entities, relations = await self._two_step(window, known_all, listed, ledger)
            else:
                entities, relations = await self._single(window, known_all, listed, ledger)
        usage = ledger.finish()
        return Snapshot(
            tape=tape,
            first_entry_id=window.first_entry_id,
            last_entry_id=window.last_entry_id,
            prompt=self.prompt.ref,
            model=self.model,
            mode=self.mode,
            usage=usage,
            entities=tuple(self._redacted(e) for e in entities),
            relations=tuple(relations),
            dropped=tuple(self.redactor(reason) for reason in ledger.dropped),
        )

    def _redacted(self, entity: Entity) -> Entity:
        """The model only saw redacted text, but a secret must never be stored even if one slips through."""
        attributes = {k: self.redactor(v) for k, v in entity.attributes.items()}
        aliases = tuple(self.redactor(a) for a in entity.aliases)
        if attributes == entity.attributes and aliases == entity.aliases:
            return entity
        return entity.model_copy(update={"attributes": attributes, "aliases": aliases})

    def _listed_known(
        self, memory: MemoryGraph | None, learned: Mapping[str, KnownEntity], window: Window
    ) -> list[KnownEntity]:
        """Known entities shown in the prompt: those the window names first, then the most recent."""
        picked: dict[str, KnownEntity] = {}
        for key, known in learned.items():
            picked.setdefault(key, known)
        if memory is not None and len(memory):
            text = "\n".join([window.context.text(), window.lines.text()])
            for key in [*memory.named_in(text), *memory.ranked_keys()]:
                if len(picked) >= self.config.max_known_entities:
                    break
                entity = memory.entity(key)
                if entity is not None and entity.key not in picked:
                    picked[entity.key] = KnownEntity.of(entity)
        return list(picked.values())[: self.config.max_known_entities]

    def _scope(self, window: Window, known: dict[str, KnownEntity]) -> ValidationScope:
        return ValidationScope(ontology=self.prompt.ontology, lines=window.all_lines(), known=known)

    def _messages(self, window: Window, listed: Sequence[KnownEntity], **extra: Any) -> list[dict[str, str]]:
        return self.prompt.render(
            transcript=window.lines.text(),
            context=window.context.text(),
            known_entities=list(listed),
            first_entry_id=window.first_entry_id,
            last_entry_id=window.last_entry_id,
            **extra,
        )

    async def _single(
        self, window: Window, known: dict[str, KnownEntity], listed: list[KnownEntity], ledger: CallLedger
    ) -> tuple[list[Entity], list[Relation]]:
        messages = self._messages(window, listed, step="all", entities=[])
        model = build_response_model(
            self.prompt.ontology,
            reasoning=self.prompt.reasoning,
            constraints=self._constraints(window, listed),
        )
        response = await self._ask(model, messages, self._scope(window, known), ledger)
        return response.resolved()

    def _constraints(self, window: Window, listed: Sequence[KnownEntity]) -> Constraints:
        """What the schema itself should enforce for this window.

        Only a grammar-constrained backend (the local model) or a prompt with
        ``candidates: true`` needs per-window enums (turn numbers, candidate names); for
        an endpoint the validators enforce the same rules, and a fixed schema is cheaper.
        """
        if not (self.prompt.candidates or getattr(self.backend, "grammar_constrained", False)):
            return Constraints()
        turns = tuple(sorted({*window.context.entry_ids, *window.lines.entry_ids}))
        if not self.prompt.candidates:
            return Constraints(turns=turns)
        spans = candidate_names(window.all_lines())
        if spans is None:
            return Constraints(turns=turns)
        names = tuple(dict.fromkeys([*spans, *(k.name for k in listed)]))
        # A grammar-constrained model must name one entity when the new lines hold a candidate;
        # a window that names nothing new ("Where do I live?") may answer [] (context and
        # memory supply names too, and forcing one of them failed such windows).
        grammar = getattr(self.backend, "grammar_constrained", False)
        at_least = 1 if grammar and candidate_names(window.lines.lines) else 0
        return Constraints(turns=turns, names=names, at_least=at_least, phrase_types=self.prompt.phrase_types)

    async def _two_step(
        self, window: Window, known: dict[str, KnownEntity], listed: list[KnownEntity], ledger: CallLedger
    ) -> tuple[list[Entity], list[Relation]]:
        scope = self._scope(window, known)
        constraints = self._constraints(window, listed)
        names = constraints.names or ()
        phrases_apart = self.prompt.strategy == "three_step" and bool(constraints.phrase_types)
        if self.prompt.strategy == "classify" and 0 < len(names) <= MAX_CLASSIFIED:
            step, model = "classify", build_classification_model(self.prompt.ontology, names)
        else:
            step = "entities"
            model = build_entities_model(
                self.prompt.ontology,
                reasoning=self.prompt.reasoning,
                constraints=dataclasses.replace(constraints, phrase_types=())
                if phrases_apart
                else constraints,
            )
        messages = self._messages(window, listed, step=step, entities=[], candidates=list(names))
        found = await self._ask(model, messages, scope, ledger)
        entities, _ = found.resolved()
        if phrases_apart:
            entities += await self._phrases(window, listed, scope, constraints, entities, ledger)
        if self.prompt.strategy == "sweep":
            entities += await self._sweep(window, listed, scope, names, entities, ledger)
        candidates = {e.key: KnownEntity.of(e) for e in entities}
        endpoints = {k.name: k.type for k in listed if k.key not in candidates}
        endpoints.update({e.name: e.type for e in entities})
        relations_model = (
            build_relations_model(self.prompt.ontology, endpoints, turns=constraints.turns)
            if entities
            else None
        )
        if relations_model is None:
            return entities, []
        scope = dataclasses.replace(scope, known={**known, **candidates})
        messages = self._messages(window, listed, step="relations", entities=entities)
        linked = await self._ask_after_entities("relations", relations_model, messages, scope, ledger)
        return entities, linked.resolved()[1] if linked is not None else []

    async def _phrases(
        self,
        window: Window,
        listed: list[KnownEntity],
        scope: ValidationScope,
        constraints: Constraints,
        entities: list[Entity],
        ledger: CallLedger,
    ) -> list[Entity]:
        """The three-step strategy's middle call: tasks and events named by a phrase, not yet listed.

        Phrases add to what the entities call found (see :meth:`_ask_after_entities`). A
        phrase that is a candidate name in lower case ("ivan petrov", "lyon") is that name,
        not a task or event, and is dropped with its reason.
        """
        messages = self._messages(window, listed, step="phrases", entities=entities)
        found = await self._ask_after_entities(
            "phrases", build_phrases_model(constraints), messages, scope, ledger
        )
        if found is None:
            return []
        listed_keys = {entity.key for entity in entities}
        names = {normalize_name(name) for name in constraints.names or ()}
        phrases = []
        for entity in found.resolved()[0]:
            if normalize_name(entity.name) in names:
                ledger.dropped.append(
                    f"phrase {entity.name!r} ({entity.type}) is a candidate name in lower case"
                )
            elif entity.key not in listed_keys:
                phrases.append(entity)
        return phrases

    async def _sweep(
        self,
        window: Window,
        listed: list[KnownEntity],
        scope: ValidationScope,
        names: Sequence[str],
        entities: list[Entity],
        ledger: CallLedger,
    ) -> list[Entity]:
        """The sweep strategy's middle call: a type or none for each candidate name not listed yet.

        A small model that lists entities stops after the first few; typing every
        candidate instead (``classify``) finds more but types parts of names and common
        words. Here only the leftovers are typed: names already listed, known, or a word
        sequence inside or around one of those ("Klaus" beside "Klaus Becker") are not asked,
        and one call types at most :data:`MAX_CLASSIFIED` (the rest are counted as dropped).
        """
        leftovers = leftover_names(names, [*entities, *listed])
        if not leftovers:
            return []
        if len(leftovers) > MAX_CLASSIFIED:
            ledger.dropped.append(
                f"sweep: {len(leftovers) - MAX_CLASSIFIED} candidate name(s) after the first "
                f"{MAX_CLASSIFIED} were not typed"
            )
            leftovers = leftovers[:MAX_CLASSIFIED]
        messages = self._messages(window, listed, step="sweep", entities=entities, candidates=leftovers)
        model = build_classification_model(self.prompt.ontology, tuple(leftovers))
        found = await self._ask_after_entities("sweep", model, messages, scope, ledger)
        if found is None:
            return []
        listed_keys = {entity.key for entity in entities}
        return [entity for entity in found.resolved()[0] if entity.key not in listed_keys]

    async def _ask_after_entities(
        self,
        step: str,
        response_model: type[ExtractionResponse],
        messages: list[dict[str, str]],
        scope: ValidationScope,
        ledger: CallLedger,
    ) -> ExtractionResponse | Salvage | None:
        """A call that adds to entities already found (phrases, swept names, relations).

        When every re-ask still breaks a rule and nothing of the last answer validates, the
        step's items are dropped with the reason and the window keeps its entities: a bad
        relation costs relations, not the people and places found before it. Too many items
        still raise, so the window is split.
        """
        try:
            return await self._ask(response_model, messages, scope, ledger)
        except ValidationExhaustedError as exc:
            if exc.too_many_items:
                raise
            retried = exc.__cause__  # Instructor's retry error; its cause is the last answer's
            problem = _summarise(retried.__cause__ if retried is not None else None)
            ledger.dropped.append(f"{step}: every answer broke a rule; the last: {problem}")
            return None

    async def _ask(
        self,
        response_model: type[ExtractionResponse],
        messages: list[dict[str, str]],
        scope: ValidationScope,
        ledger: CallLedger,
    ) -> ExtractionResponse | Salvage:
        async def send(**kwargs: Any) -> ChatCompletion:
            return await send_with_retries(ledger, lambda: self.backend.create(**kwargs))

        create: Any = instructor.patch(create=send, mode=_INSTRUCTOR_MODES[self.mode])
        attempts_before = ledger.usage.attempts
        try:
            with validation_scope(scope):  # not context=: Instructor would template the messages
                result: ExtractionResponse = await create(
                    response_model=response_model,
                    messages=list(messages),
                    max_retries=self.retry.reasks,
                    model=self.model,
                    temperature=self.config.temperature,
                    max_tokens=self.max_output_tokens,
                )
        except Exception as exc:
            ledger.usage.reasks += max(0, ledger.usage.attempts - attempts_before - 1)
            failure = self._failure(exc, ledger)
            kept = self._salvage(failure, response_model, scope, ledger)
            if kept is None:
                raise failure from exc
            logger.info(
                "kept %d item(s), dropped %d: %s",
                len(kept.entities) + len(kept.relations),
                len(kept.dropped),
                "; ".join(kept.dropped)[:300],
            )
            ledger.dropped.extend(kept.dropped)
            return kept
        ledger.usage.reasks += max(0, ledger.usage.attempts - attempts_before - 1)
        ledger.dropped.extend(result.dropped)
        return result

    def _salvage(
        self,
        failure: ExtractionError,
        response_model: type[ExtractionResponse],
        scope: ValidationScope,
        ledger: CallLedger,
    ) -> Salvage | None:
        """What validates of the last answer, when the failure is a rule the answer kept breaking.

        Truncated output and too many items are split instead; transport failures have no answer;
        an answer with nothing valid in it is a failure, not an empty success.
        """
        if not isinstance(failure, ValidationExhaustedError) or failure.too_many_items:
            return None
        kept = salvage(response_model, ledger.last_output, scope)
        if kept is None or not kept.dropped or not (kept.entities or kept.relations):
            return None  # nothing valid to keep: the window failed
        return kept

    def _failure(self, exc: Exception, ledger: CallLedger) -> ExtractionError:
        usage = ledger.finish()
        details: dict[str, Any] = {
            "usage": usage,
            "model": self.model,
            "attempts": usage.attempts,
            "last_output": ledger.last_output,
        }
        cause: BaseException | None = exc.__cause__ if isinstance(exc, InstructorRetryException) else exc
        if isinstance(exc, IncompleteOutputException) or _cut_json(cause):
            return OutputTruncatedError(
                f"the model stopped at its output limit ({self.max_output_tokens} tokens)", **details
            )
        if isinstance(cause, EndpointFailure):
            return TransportError(cause.reason, **details)
        if isinstance(exc, InstructorRetryException):
            summary = _summarise(cause)
            too_long = isinstance(cause, ValidationError) and any(
                e.get("type") == "too_long" for e in cause.errors()
            )
            return ValidationExhaustedError(
                f"no valid extraction after {usage.attempts} attempt(s); last problem: {summary}",
                too_many_items=too_long,
                **details,
            )
        return ExtractionError(f"extraction failed: {type(exc).__name__}: {exc}", **details)


def _cut_json(cause: BaseException | None) -> bool:
    """Whether a validation error says the JSON ended mid-way: output cut at the token limit
    by an endpoint that did not report ``finish_reason: length``."""
    if not isinstance(cause, ValidationError):
        return False
    errors = cause.errors()
    return any(e.get("type") == "json_invalid" and "EOF while parsing" in str(e.get("msg")) for e in errors)


def _charged(error: ExtractionError, carried: Usage | None) -> ExtractionError:
    """``error`` with the cost of the truncated attempts that led to it added to its usage."""
    return error if carried is None else error.charged(carried)


def _summarise(cause: BaseException | None) -> str:
    """The validation problems of the last attempt, in one line."""
    if isinstance(cause, ValidationError):
        messages = [str(error.get("msg", "")).replace("Value error, ", "") for error in cause.errors()[:3]]
        return " | ".join(" ".join(m.split()) for m in messages)[:500]
    text = " ".join(str(cause).split()) if cause is not None else ""
    return (text or type(cause).__name__)[:500]


def _known_entities(memory: MemoryGraph | None, learned: Mapping[str, KnownEntity]) -> dict[str, KnownEntity]:
    known: dict[str, KnownEntity] = {}
    if memory is not None:
        for entity in memory.entities():
            known[entity.key] = KnownEntity.of(entity)
    known.update(learned)
    return known
