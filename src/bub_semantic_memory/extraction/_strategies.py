"""Prompt strategies: which calls one window's extraction makes, in which order.

A strategy is one :class:`Strategy` object in :data:`STRATEGIES`, named here and nowhere
else: a prompt's front matter picks one by name, the front matter is checked against its
requirements, and the extractor runs its :attr:`Strategy.steps` one after another. Each
step is a kind of call the extractor knows (:class:`Step`); a new strategy that combines
existing steps is one entry below.

The step's name is also what a prompt template is rendered with (``step``), so that one
template can word each call: ``{% if step == "relations" %}...``. That is a contract with
the template files, and :func:`check_template_steps` holds a template to it (a template may
only test the steps of its strategy).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "Step", "Strategy", "check_template_steps", "strategy_named"]


class Step(StrEnum):
    """One kind of call of a window's extraction (its value is the template's ``step``)."""

    ALL = "all"
    """Entities and relations in one answer."""
    ENTITIES = "entities"
    """The entities named in the window (without the phrase types when ``PHRASES`` follows)."""
    CLASSIFY = "classify"
    """Every candidate name gets an entity type or ``none``; entities are listed instead where
    there are no candidates (Chinese) or more than one call may type."""
    PHRASES = "phrases"
    """Tasks and events named by a short phrase, not listed yet (needs ``phrase_types``)."""
    SWEEP = "sweep"
    """The candidate names the entities call left out get a type or ``none``."""
    RELATIONS = "relations"
    """Relations typed by the ontology over the entities found, in a call of their own."""
    PAIRS = "pairs"
    """The pairs of entities one line names together that are not related yet each get a relation
    the ontology allows between them, or ``none``."""
    FACTS = "facts"
    """What each new line says about the entities found that no relation holds, one statement
    (or nothing) per line, citing that line (needs ``facts: true``; the relations call then
    states none)."""


@dataclass(frozen=True)
class Strategy:
    """A named sequence of calls.

    Attributes:
        name: what a prompt's ``strategy:`` says.
        steps: the calls, in order.
        summary: one line for docs and ``prompts show``.
        needs_candidates: a step types candidate names, so the prompt must set ``candidates: true``.
        needs_phrase_types: a step asks for phrases, so the prompt must set ``phrase_types``.
        needs_facts: a step states facts, so the prompt must set ``facts: true``.
    """

    name: str
    steps: tuple[Step, ...]
    summary: str
    needs_candidates: bool = False
    needs_phrase_types: bool = False
    needs_facts: bool = False

    def requirements_unmet(self, *, candidates: bool, phrase_types: bool, facts: bool = False) -> list[str]:
        """What a prompt with these settings lacks for this strategy (empty: nothing)."""
        problems = []
        if self.needs_candidates and not candidates:
            problems.append(f"strategy {self.name!r} types candidate names: set 'candidates: true'")
        if self.needs_phrase_types and not phrase_types:
            problems.append(
                f"strategy {self.name!r} asks for phrases in a call of its own: set 'phrase_types'"
            )
        if self.needs_facts and not facts:
            problems.append(f"strategy {self.name!r} asks for facts in a call of its own: set 'facts: true'")
        return problems


STRATEGIES: dict[str, Strategy] = {
    strategy.name: strategy
    for strategy in (
        Strategy("single", (Step.ALL,), "one call for entities and relations"),
        Strategy(
            "two_step",
            (Step.ENTITIES, Step.RELATIONS),
            "entities, then relations constrained to the extracted entities",
        ),
        Strategy(
            "three_step",
            (Step.ENTITIES, Step.PHRASES, Step.RELATIONS),
            "as two_step, with the phrase types asked for in a call of their own between the two",
            needs_phrase_types=True,
        ),
        Strategy(
            "classify",
            (Step.CLASSIFY, Step.RELATIONS),
            "as two_step, but the first call gives every candidate name a type or none",
            needs_candidates=True,
        ),
        Strategy(
            "sweep",
            (Step.ENTITIES, Step.SWEEP, Step.RELATIONS),
            "as two_step, with a call between the two typing the candidate names the first left out",
            needs_candidates=True,
        ),
        Strategy(
            "sweep_pairs",
            (Step.ENTITIES, Step.SWEEP, Step.RELATIONS, Step.PAIRS),
            "as sweep, then a call giving each co-mentioned pair the relations call left unrelated "
            "a relation or none",
            needs_candidates=True,
        ),
        Strategy(
            "sweep_facts",
            (Step.ENTITIES, Step.SWEEP, Step.RELATIONS, Step.FACTS),
            "as sweep, then a call stating the facts about the entities found, each citing its line",
            needs_candidates=True,
            needs_facts=True,
        ),
    )
}
"""Every strategy, by name."""

DEFAULT_STRATEGY = "single"
"""The strategy of a prompt whose front matter names none."""


def strategy_named(name: str) -> Strategy:
    """The strategy called ``name``.

    Raises:
        ValueError: no strategy has that name (the message lists those that exist).
    """
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; choose one of: {', '.join(STRATEGIES)}") from None


def check_template_steps(strategy: Strategy, tested: Iterable[str]) -> list[str]:
    """Problems with the step names a template tests (``step == "..."``) under ``strategy``."""
    allowed = {step.value for step in strategy.steps}
    return [
        f"the template tests step {name!r}, which strategy {strategy.name!r} never runs "
        f"(its steps: {', '.join(sorted(allowed))})"
        for name in sorted(set(tested) - allowed)
    ]
