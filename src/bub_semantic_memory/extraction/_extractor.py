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
import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from bub_semantic_memory._errors import (
    ExtractionError,
    OutputTruncatedError,
    TransportError,
    ValidationExhaustedError,
)
from bub_semantic_memory._logging import extraction_call
from bub_semantic_memory._models import Entity, Fact, Relation, Snapshot, Usage, normalize_name
from bub_semantic_memory.backends import CallLedger, ChatBackend, EndpointFailure, send_with_retries
from bub_semantic_memory.extraction._candidates import candidate_names
from bub_semantic_memory.extraction._config import ExtractorConfig
from bub_semantic_memory.extraction._pairs import co_mentioned_pairs, endpoints_of, relation_pairs
from bub_semantic_memory.extraction._responses import (
    MAX_CLASSIFIED,
    MAX_PAIRS,
    Constraints,
    ExtractionResponse,
    build_classification_model,
    build_entities_model,
    build_facts_model,
    build_pairs_model,
    build_phrases_model,
    build_relations_model,
    build_response_model,
    leftover_names,
)
from bub_semantic_memory.extraction._strategies import Step
from bub_semantic_memory.extraction._validation import (
    KnownEntity,
    Salvage,
    ValidationScope,
    salvage,
    validation_scope,
)
from bub_semantic_memory.extraction._window import Window, plan_windows
from bub_semantic_memory.memory import MemoryGraph
from bub_semantic_memory.tape import TranscriptLine, coerce_entries

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

__all__ = ["Extractor"]

logger = logging.getLogger(__name__)

_INSTRUCTOR_MODES = {"tools": "TOOLS", "json_schema": "JSON_SCHEMA", "md_json": "MD_JSON", "json": "JSON"}
"""Our mode names and Instructor's ``Mode`` members: Instructor (and openai through it) is imported
when a call is made, not with this module, so that importing the package stays fast."""
_MAX_SPLIT_DEPTH = 3


class Extractor:
    """Extract entities and relations from tape entries with one prompt version and one model.

    Args:
        config: model, prompt and bounds (see :class:`~bub_semantic_memory.extraction.ExtractorConfig`).
        backend: a ready :class:`ChatBackend` (tests, a local model shared by several
            extractors); default: the one :func:`~bub_semantic_memory.backends._specs.open_backend`
            opens for ``config.model``.
    """

    def __init__(self, config: ExtractorConfig, *, backend: ChatBackend | None = None) -> None:
        self.config = config
        self.model = config.model
        self.mode = config.mode
        self.redactor = config.redactor()
        self.backend = backend or config.open_backend()
        self.traits = self.backend.traits
        self.prompt = config.load_prompt(self.traits.model_class)
        self.bounds = config.resolve(self.traits, self.prompt.window)
        self.shutdown_grace_s = config.shutdown_grace(self.traits)
        self.retry = self.bounds.retry

    @property
    def chunk_tokens(self) -> int:
        """Estimated tokens of new transcript per call (see :meth:`ExtractorConfig.resolve`)."""
        return self.bounds.chunk_tokens

    @property
    def max_output_tokens(self) -> int:
        """``max_tokens`` of each request (see :meth:`ExtractorConfig.resolve`)."""
        return self.bounds.max_output_tokens

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
            overlap_lines=self.bounds.overlap_lines,
            overlap_tokens=self.bounds.overlap_tokens,
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
                raise _failed(exc, window, carried) from exc.__cause__
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
            raise _failed(exc, window, carried) from exc.__cause__
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
        facts: list[Fact] = []
        ledger = CallLedger(self.retry)
        if window.lines:
            known = _known_entities(memory, learned or {})
            listed = self._listed_known(memory, learned or {}, window)
            call = _WindowCall(
                window=window,
                listed=listed,
                ledger=ledger,
                scope=self._scope(window, known),
                constraints=self._constraints(window, listed),
            )
            for step in self.prompt.steps:
                await _STEP_CALLS[step](self, call)
            entities, relations, facts = call.entities, call.relations, call.facts
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
            facts=tuple(self._redacted_fact(f) for f in facts),
            dropped=tuple(self.redactor(reason) for reason in ledger.dropped),
        )

    def given_up(self, failure: ExtractionError, *, tape: str, last_entry_id: int | None = None) -> Snapshot:
        """The window ``failure`` happened on, stored as extracted with nothing kept and why in
        ``dropped``: for a window whose answers keep breaking the rules, so that the memory goes on
        past it rather than asking about it again on every turn (the caller decides when).

        Args:
            last_entry_id: where to stop instead of the window's end (earlier failing runs held
                fewer entries: the last window of a tape grows with it).

        Its id is not an extraction's of the same entries: another process's real snapshot of
        them is folded beside it, not taken for it.

        Raises:
            ValueError: ``failure`` does not say which window failed.
        """
        if failure.window is None:
            raise ValueError(f"the failure names no window to give up: {failure}")
        first, last = failure.window
        snapshot = Snapshot(
            tape=tape,
            first_entry_id=first,
            last_entry_id=min(last, last_entry_id) if last_entry_id is not None else last,
            prompt=self.prompt.ref,
            model=self.model,
            mode=self.mode,
            usage=failure.usage,
            dropped=(self.redactor(f"given up, nothing kept: {failure.reason}"),),
        )
        marked = hashlib.sha256(f"{snapshot.id}|given up".encode()).hexdigest()[: len(snapshot.id)]
        return snapshot.model_copy(update={"id": marked})

    def _redacted(self, entity: Entity) -> Entity:
        """The model only saw redacted text, but a secret must never be stored even if one slips through."""
        attributes = {k: self.redactor(v) for k, v in entity.attributes.items()}
        aliases = tuple(self.redactor(a) for a in entity.aliases)
        if attributes == entity.attributes and aliases == entity.aliases:
            return entity
        return entity.model_copy(update={"attributes": attributes, "aliases": aliases})

    def _redacted_fact(self, fact: Fact) -> Fact:
        """A fact's free text redacted, as :meth:`_redacted` does an entity's."""
        statement, said = self.redactor(fact.statement), fact.said_when and self.redactor(fact.said_when)
        if statement == fact.statement and said == fact.said_when:
            return fact
        return fact.model_copy(update={"statement": statement, "said_when": said})

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
                if len(picked) >= self.bounds.max_known_entities:
                    break
                entity = memory.entity(key)
                if entity is not None and entity.key not in picked:
                    picked[entity.key] = KnownEntity.of(entity)
        return list(picked.values())[: self.bounds.max_known_entities]

    def _scope(self, window: Window, known: dict[str, KnownEntity]) -> ValidationScope:
        return ValidationScope(ontology=self.prompt.ontology, lines=window.all_lines(), known=known)

    def _messages(self, window: Window, listed: Sequence[KnownEntity], **extra: Any) -> list[dict[str, str]]:
        dated = self.prompt.dates
        return self.prompt.render(
            transcript=window.lines.text(dated=dated),
            context=window.context.text(dated=dated),
            facts=self.prompt.facts,
            known_entities=list(listed),
            first_entry_id=window.first_entry_id,
            last_entry_id=window.last_entry_id,
            **extra,
        )

    def _constraints(self, window: Window, listed: Sequence[KnownEntity]) -> Constraints:
        """What the schema itself should enforce for this window.

        Only a grammar-constrained backend (the local model) or a prompt with
        ``candidates: true`` needs per-window enums (turn numbers, candidate names); for
        an endpoint the validators enforce the same rules, and a fixed schema is cheaper.
        """
        if not (self.prompt.candidates or self.traits.grammar_constrained):
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
        at_least = 1 if self.traits.grammar_constrained and candidate_names(window.lines.lines) else 0
        return Constraints(turns=turns, names=names, at_least=at_least, phrase_types=self.prompt.phrase_types)

    # -- the steps of a strategy (see _strategies.Step), one method each ---------------------

    async def _call_all(self, call: _WindowCall) -> None:
        """Entities and relations in one answer."""
        messages = self._messages(call.window, call.listed, step=Step.ALL, entities=[])
        model = build_response_model(
            self.prompt.ontology,
            reasoning=self.prompt.reasoning,
            constraints=call.constraints,
            facts=self.prompt.facts,
        )
        response = await self._ask(model, messages, call.scope, call.ledger)
        call.entities, call.relations = response.resolved()
        call.facts = response.resolved_facts()

    async def _call_entities(self, call: _WindowCall) -> None:
        """The entities of the window; the phrase types wait for their own step when one follows."""
        constraints = call.constraints
        if self._phrases_apart(constraints):
            constraints = dataclasses.replace(constraints, phrase_types=())
        model = build_entities_model(
            self.prompt.ontology, reasoning=self.prompt.reasoning, constraints=constraints
        )
        await self._first_listing(call, Step.ENTITIES, model)

    async def _call_classify(self, call: _WindowCall) -> None:
        """Every candidate name typed or ``none``; listed as entities where there are no
        candidates (Chinese) or more than one call may type."""
        names = call.constraints.names or ()
        if not 0 < len(names) <= MAX_CLASSIFIED:
            await self._call_entities(call)
            return
        model = build_classification_model(self.prompt.ontology, names)
        await self._first_listing(call, Step.CLASSIFY, model)

    async def _first_listing(
        self, call: _WindowCall, step: Step, response_model: type[ExtractionResponse]
    ) -> None:
        names = list(call.constraints.names or ())
        messages = self._messages(call.window, call.listed, step=step, entities=[], candidates=names)
        found = await self._ask(response_model, messages, call.scope, call.ledger)
        call.entities, _ = found.resolved()

    def _phrases_apart(self, constraints: Constraints) -> bool:
        return Step.PHRASES in self.prompt.steps and bool(constraints.phrase_types)

    async def _call_phrases(self, call: _WindowCall) -> None:
        """Tasks and events named by a phrase, not yet listed, in a call of their own.

        Phrases add to what the entities call found (see :meth:`_ask_after_entities`). A
        phrase that is a candidate name in lower case ("ivan petrov", "lyon") is that name,
        not a task or event, and is dropped with its reason.
        """
        if not self._phrases_apart(call.constraints):
            return
        messages = self._messages(call.window, call.listed, step=Step.PHRASES, entities=call.entities)
        found = await self._ask_after_entities(
            Step.PHRASES, build_phrases_model(call.constraints), messages, call.scope, call.ledger
        )
        if found is None:
            return
        listed_keys = {entity.key for entity in call.entities}
        names = {normalize_name(name) for name in call.constraints.names or ()}
        for entity in found.resolved()[0]:
            if normalize_name(entity.name) in names:
                call.ledger.dropped.append(
                    f"phrase {entity.name!r} ({entity.type}) is a candidate name in lower case"
                )
            elif entity.key not in listed_keys:
                call.entities.append(entity)

    async def _call_sweep(self, call: _WindowCall) -> None:
        """A type or none for each candidate name the entities call left out.

        A small model that lists entities stops after the first few; typing every
        candidate instead (``classify``) finds more but types parts of names and common
        words. Here only the leftovers are typed: names already listed, known, or a word
        sequence inside or around one of those ("Klaus" beside "Klaus Becker") are not asked,
        and one call types at most :data:`MAX_CLASSIFIED` (the rest are counted as dropped).
        """
        leftovers = leftover_names(call.constraints.names or (), [*call.entities, *call.listed])
        if not leftovers:
            return
        if len(leftovers) > MAX_CLASSIFIED:
            call.ledger.dropped.append(
                f"sweep: {len(leftovers) - MAX_CLASSIFIED} candidate name(s) after the first "
                f"{MAX_CLASSIFIED} were not typed"
            )
            leftovers = leftovers[:MAX_CLASSIFIED]
        messages = self._messages(
            call.window, call.listed, step=Step.SWEEP, entities=call.entities, candidates=leftovers
        )
        model = build_classification_model(self.prompt.ontology, tuple(leftovers))
        found = await self._ask_after_entities(Step.SWEEP, model, messages, call.scope, call.ledger)
        if found is None:
            return
        listed_keys = {entity.key for entity in call.entities}
        call.entities += [entity for entity in found.resolved()[0] if entity.key not in listed_keys]

    async def _call_relations(self, call: _WindowCall) -> None:
        """Relations typed by the ontology over the entities found (and the known ones listed);
        with ``facts: true``, the facts about them in the same answer."""
        facts = self.prompt.facts and Step.FACTS not in self.prompt.steps
        if not call.entities and not (facts and call.listed):
            return
        found = {e.key: KnownEntity.of(e) for e in call.entities}
        endpoints = {k.name: k.type for k in call.listed if k.key not in found}
        endpoints.update({e.name: e.type for e in call.entities})
        model = build_relations_model(
            self.prompt.ontology, endpoints, turns=call.constraints.turns, facts=facts
        )
        if model is None:
            return
        messages = self._messages(call.window, call.listed, step=Step.RELATIONS, entities=call.entities)
        linked = await self._ask_after_entities(
            Step.RELATIONS, model, messages, call.scope_knowing_found(), call.ledger
        )
        call.relations = linked.resolved()[1] if linked is not None else []
        call.facts = linked.resolved_facts() if linked is not None else []

    async def _call_facts(self, call: _WindowCall) -> None:
        """What each new line that says something states about the entities found and listed,
        that no relation holds (the context lines were read before); :data:`MAX_FACT_TURNS`
        lines per call."""
        names = tuple(dict.fromkeys([*(e.name for e in call.entities), *(k.name for k in call.listed)]))
        saying = _saying_something(call.window.lines.lines)
        if not names:
            return
        scope = call.scope_knowing_found(drop_unsupported_facts=True)
        for start in range(0, len(saying), MAX_FACT_TURNS):
            if not call.ledger.has_room_for(1 + self.retry.reasks):
                call.ledger.dropped.append(
                    f"facts: {len(saying) - start} line(s) not read: the window's request cap or "
                    "deadline would not cover another call"
                )
                return
            turns = tuple(
                (line.entry_id, line.sender if line.sender in names else None)
                for line in saying[start : start + MAX_FACT_TURNS]
            )
            messages = self._messages(
                call.window, call.listed, step=Step.FACTS, entities=call.entities, turns=[t for t, _ in turns]
            )
            model = build_facts_model(names, turns)
            stated = await self._ask_after_entities(Step.FACTS, model, messages, scope, call.ledger)
            if stated is not None:
                call.facts += stated.resolved_facts()

    async def _call_pairs(self, call: _WindowCall) -> None:
        """A relation or none for each pair of entities one new line names together that the
        relations call left unrelated (see :mod:`._pairs`).

        The entities found and the known ones listed are the endpoints; one call asks about at
        most :data:`MAX_PAIRS` pairs, first co-mention first (the rest are counted as dropped).
        The relations found add to the relations call's.
        """
        found = {e.key: KnownEntity.of(e) for e in call.entities}
        known = [k for k in call.listed if k.key not in found]
        entities = [*found.values(), *known]
        names = {k.key: k.name for k in entities}
        related = relation_pairs(((r.source, r.target) for r in call.relations), names)
        endpoints = endpoints_of((k.name, k.type, k.aliases) for k in entities)
        pairs, more = co_mentioned_pairs(
            self.prompt.ontology, call.window.lines.lines, endpoints, related, limit=MAX_PAIRS
        )
        if more:
            call.ledger.dropped.append(
                f"pairs: {more} co-mentioned pair(s) after the first {MAX_PAIRS} were not asked"
            )
        if not pairs:
            return
        model = build_pairs_model(self.prompt.ontology, tuple(pairs))
        messages = self._messages(
            call.window, call.listed, step=Step.PAIRS, entities=call.entities, pairs=[p.key for p in pairs]
        )
        linked = await self._ask_after_entities(
            Step.PAIRS, model, messages, call.scope_knowing_found(), call.ledger
        )
        if linked is None:
            return
        stated = {(r.source, r.type, r.target) for r in call.relations}
        call.relations += [r for r in linked.resolved()[1] if (r.source, r.type, r.target) not in stated]

    async def _ask_after_entities(
        self,
        step: Step,
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
            timeout = self.retry.request_timeout_s
            return await send_with_retries(ledger, lambda: self.backend.create(**kwargs, timeout=timeout))

        import instructor

        create: Any = instructor.patch(create=send, mode=instructor.Mode[_INSTRUCTOR_MODES[self.mode]])
        attempts_before = ledger.usage.attempts
        try:
            # not context=: Instructor would template the messages
            with validation_scope(scope), extraction_call():
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
        if kept is None or not kept.dropped or not (kept.entities or kept.relations or kept.facts):
            return None  # nothing valid to keep: the window failed
        return kept

    def _failure(self, exc: Exception, ledger: CallLedger) -> ExtractionError:
        from instructor.core import IncompleteOutputException, InstructorRetryException

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


_STEP_CALLS: dict[Step, Callable[[Extractor, _WindowCall], Awaitable[None]]] = {
    Step.ALL: Extractor._call_all,
    Step.ENTITIES: Extractor._call_entities,
    Step.CLASSIFY: Extractor._call_classify,
    Step.PHRASES: Extractor._call_phrases,
    Step.SWEEP: Extractor._call_sweep,
    Step.RELATIONS: Extractor._call_relations,
    Step.PAIRS: Extractor._call_pairs,
    Step.FACTS: Extractor._call_facts,
}
"""How the extractor makes each kind of call a strategy lists."""


@dataclass
class _WindowCall:
    """One window's extraction while its steps run: what every step reads, and what they found."""

    window: Window
    listed: list[KnownEntity]
    ledger: CallLedger
    scope: ValidationScope
    constraints: Constraints
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)

    def scope_knowing_found(self, **changes: Any) -> ValidationScope:
        """The window's scope with the entities found so far known, so that a later step may
        name them (and with ``changes``)."""
        found = {e.key: KnownEntity.of(e) for e in self.entities}
        return dataclasses.replace(self.scope, known={**self.scope.known, **found}, **changes)


MAX_FACT_TURNS = 6
"""New lines one facts call reads. Asked about 16 at once, the 1.5B model wrote four statements
and then the fourth again for every other line; the calls after the first reuse its prompt from
the prefix cache."""
SAYS_SOMETHING = 6
"""Words a line needs for the facts call to read it ("Thanks, see you soon!" does not)."""


def _saying_something(lines: Sequence[TranscriptLine]) -> list[TranscriptLine]:
    """The lines of at least :data:`SAYS_SOMETHING` words."""
    return [line for line in lines if len((line.body or line.text).split()) >= SAYS_SOMETHING]


def _cut_json(cause: BaseException | None) -> bool:
    """Whether a validation error says the JSON ended mid-way: output cut at the token limit
    by an endpoint that did not report ``finish_reason: length``."""
    if not isinstance(cause, ValidationError):
        return False
    errors = cause.errors()
    return any(e.get("type") == "json_invalid" and "EOF while parsing" in str(e.get("msg")) for e in errors)


def _failed(error: ExtractionError, window: Window, carried: Usage | None) -> ExtractionError:
    """``error`` as the window's failure: the window named, and the cost of the truncated attempts
    that led to it added to its usage."""
    charged = error if carried is None else error.charged(carried)
    return charged.on_window(window.first_entry_id, window.last_entry_id)


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
