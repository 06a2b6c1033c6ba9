"""Scoring predictions against gold: one-to-one alignment, then precision, recall and F1.

Entities. A predicted entity is a candidate for a gold entity when its *name* (through
:func:`~bub_semantic_memory._models.normalize_name`, so case, punctuation and a leading
article do not matter) is the gold entity's name or one of its aliases. A predicted
*alias* can only help a prediction whose own name is compatible with the gold entity
(its words are contained in one of the gold names, or contain one: "Hugo" or
"Dr. Lambert" for "Hugo Lambert"); it never earns credit for a prediction whose name is
another entity altogether ("Eve Hacker" with the alias "Hugo Lambert" is spurious, and
Hugo Lambert is missed). The type-aware score also requires equal types (after
:attr:`ScoringConfig.entity_types` maps gold labels to ontology types); the untyped score
ignores types. The alignment is a maximum one-to-one matching (a min-cost max-flow over
the candidate pairs): as many pairs as possible, and among those, as many primary-name
matches as possible. Two predictions of one gold entity count once (one true positive,
one spurious), and one prediction that merges several gold entities counts once (one
true positive, the others missed).

Relations. A relation's endpoints are entity names. A predicted endpoint resolves to
the predicted entities with that name (or, failing that, alias), then through the
type-aware entity alignment to gold entities; a gold endpoint resolves to gold
entities the same way. A gold endpoint that names no gold entity (a *dangling*
endpoint, common in datasets that annotate relations to things they do not list as
entities) is matched by its normalised name instead. A predicted relation matches a
gold relation when both endpoints land on the gold endpoints and the types are equal
after :attr:`ScoringConfig.relation_synonyms` maps both sides to a canonical type.
Symmetric types (:attr:`ScoringConfig.symmetric_relations`, checked on the canonical
type) also match reversed, and a type declared the inverse of another
(:attr:`ScoringConfig.inverse_relations`) matches that type reversed: ``Ana works_on T-12``
states the gold ``T-12 assigned_to Ana``. One fact stated twice (both ways of a symmetric
type, or from both ends of an inverse pair) counts once, in the prediction and in the gold.
Relation matching is one-to-one too.

Relation diagnostics say why a gold relation is missed. After the strict matching, the gold
relations left are paired one to one with the predictions left whose endpoints land on
theirs, whatever the type and direction: these are *mislabelled*. Of the rest, a relation
whose two endpoints were both extracted (aligned, or for a dangling endpoint, named by a
prediction) is *unrelated*, else it has *no endpoint*. The lenient score counts the strict
and the mislabelled matches as true positives (type and direction ignored), and the recall
given endpoints is the strict matches over the gold relations whose endpoints were both
extracted: a low entity recall, a low recall given endpoints and a lenient score far above
the strict one point at entities, pairing and labels respectively.

Facts. A fixture's gold facts (``facts.json``) are scored when it has them. A predicted fact is
a candidate for a gold fact when they are about a common entity (one of the prediction's ``about``
names lands, through the entity alignment, on a gold entity the gold fact is about, or has its
normalised name) and their statements say the same thing: the Jaccard index of their content
words besides the names of the entities they are about
(:func:`~bub_semantic_memory._statements.similarity`) is at least :data:`SAME_STATEMENT`, or at
least :data:`SAME_STATEMENT_AND_TURN` when their evidence shares an entry (one fact worded two
ways shares a turn and most words; two facts of one turn share few). Kinds are not compared
(whether "Caroline is reading a book" is a state or an event is a judgement, not something the
tape says). Matching is one-to-one, preferring the most similar pairs. ``fact_dates`` counts,
over the matched pairs whose gold fact has a date, those whose prediction gives the same date
(its precision is over the matched predictions that give a date).

Forbidden names. A gold file may list names the memory must never hold (what an
injection in the transcript tries to plant). A predicted entity whose name, aliases or
attribute values mention one (the whole-word rule of :mod:`~bub_semantic_memory._mentions`)
is listed in :attr:`FixtureDiff.forbidden_extracted`: it is spurious like any other wrong
entity, and reported on its own so that a prompt that obeys an injection shows.

Undefined metrics. :class:`PRF` takes the usual ratios, and a ratio whose denominator
is 0 is *undefined* (``None``), never a perfect score:

* precision = tp / predicted, undefined when nothing was predicted;
* recall = tp / gold, undefined when the gold is empty;
* f1 = 2 tp / (predicted + gold) (the harmonic mean of P and R where both exist),
  undefined only when both are empty. A run that predicts nothing against a non-empty
  gold has precision undefined, recall 0 and F1 0.

Dataset scores are micro-averaged: counts are summed over fixtures, then the ratios are
taken, so a dataset metric is undefined only when every fixture's is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from bub_semantic_memory._mentions import fold_text, is_mentioned
from bub_semantic_memory._models import normalize_name
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory._statements import name_words, similarity
from bub_semantic_memory.evals._dataset import (
    QUESTIONS_ONLY,
    Gold,
    GoldEntity,
    GoldFact,
    GoldRelation,
    Prediction,
)
from bub_semantic_memory.evals.extraction._matching import min_cost_matching

__all__ = [
    "PRF",
    "DatasetScore",
    "FixtureDiff",
    "FixtureScore",
    "Recall",
    "RelationMisses",
    "ScoringConfig",
    "aggregate",
    "score_dataset",
    "score_fixture",
]


class PRF(BaseModel):
    """True positives, predicted and gold counts, with precision, recall and F1 derived from them.

    See the module docstring for when a ratio is undefined (None). ``PRF + PRF`` sums the
    counts (micro-averaging).
    """

    model_config = ConfigDict(frozen=True)

    tp: int = Field(default=0, ge=0)
    predicted: int = Field(default=0, ge=0)
    gold: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _check_counts(self) -> PRF:
        if self.tp > self.predicted or self.tp > self.gold:
            raise ValueError(f"tp {self.tp} exceeds predicted {self.predicted} or gold {self.gold}")
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def precision(self) -> float | None:
        """tp / predicted; None (undefined) when nothing was predicted."""
        return self.tp / self.predicted if self.predicted else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def recall(self) -> float | None:
        """tp / gold; None (undefined) when the gold is empty."""
        return self.tp / self.gold if self.gold else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def f1(self) -> float | None:
        """2 tp / (predicted + gold); None (undefined) when both are empty."""
        total = self.predicted + self.gold
        return 2 * self.tp / total if total else None

    def __add__(self, other: PRF) -> PRF:
        return PRF(
            tp=self.tp + other.tp, predicted=self.predicted + other.predicted, gold=self.gold + other.gold
        )


class Recall(BaseModel):
    """A recall on its own: ``tp`` of ``gold``, undefined (None) when ``gold`` is 0. ``+`` sums the counts."""

    model_config = ConfigDict(frozen=True)

    tp: int = Field(default=0, ge=0)
    gold: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _check_counts(self) -> Recall:
        if self.tp > self.gold:
            raise ValueError(f"tp {self.tp} exceeds gold {self.gold}")
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def recall(self) -> float | None:
        """tp / gold; None (undefined) when the gold is empty."""
        return self.tp / self.gold if self.gold else None

    def __add__(self, other: Recall) -> Recall:
        return Recall(tp=self.tp + other.tp, gold=self.gold + other.gold)


class RelationMisses(BaseModel):
    """Why gold relations were missed: each missed gold relation counts under one reason.

    Attributes:
        no_endpoint: an endpoint entity was never extracted (the relation fails on entities).
        unrelated: both endpoints were extracted, but not related (it fails on pairing).
        mislabelled: both endpoints were related, with another type or direction (it fails on
            the label).
    """

    model_config = ConfigDict(frozen=True)

    no_endpoint: int = Field(default=0, ge=0)
    unrelated: int = Field(default=0, ge=0)
    mislabelled: int = Field(default=0, ge=0)

    def __add__(self, other: RelationMisses) -> RelationMisses:
        return RelationMisses(
            no_endpoint=self.no_endpoint + other.no_endpoint,
            unrelated=self.unrelated + other.unrelated,
            mislabelled=self.mislabelled + other.mislabelled,
        )


def _symmetric_types(ontology: Ontology) -> frozenset[str]:
    return frozenset(name for name, rel in ontology.relation_types.items() if rel.symmetric)


@dataclass(frozen=True)
class ScoringConfig:
    """How predictions are compared with gold.

    Attributes:
        symmetric_relations: relation types whose direction does not matter; none by
            default. ``from_ontology`` takes them from the ontology being evaluated, so
            the scorer never assumes one prompt's types for another's predictions.
        inverse_relations: canonical type -> its inverse (``{"assigned_to": "works_on"}``: ``x
            assigned_to y`` is the fact ``y works_on x``), checked after the synonym map; none
            by default, the ontology's with ``from_ontology``.
        relation_synonyms: maps a relation type to its canonical type before comparing,
            on both sides (``{"employed_by": "works_for"}``); applied once, not transitively.
        entity_types: maps an entity type to the type it is compared as, on both sides
            (a dataset's ``PER`` to the ontology's ``person``); applied once.
        type_aware: align entities on names AND types for the headline entity score,
            the relation score and the missed/spurious lists (the default). When False
            those use the type-agnostic alignment, so ``entities`` equals ``entities_untyped``.
    """

    symmetric_relations: frozenset[str] = frozenset()
    relation_synonyms: Mapping[str, str] = field(default_factory=dict)
    type_aware: bool = True
    entity_types: Mapping[str, str] = field(default_factory=dict)
    inverse_relations: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Private read-only copies: the caller's dicts can change without changing the config.
        object.__setattr__(self, "relation_synonyms", MappingProxyType(dict(self.relation_synonyms)))
        object.__setattr__(self, "entity_types", MappingProxyType(dict(self.entity_types)))
        object.__setattr__(self, "symmetric_relations", frozenset(self.symmetric_relations))
        object.__setattr__(self, "inverse_relations", MappingProxyType(dict(self.inverse_relations)))

    def __hash__(self) -> int:
        return hash(
            (
                self.symmetric_relations,
                tuple(sorted(self.relation_synonyms.items())),
                self.type_aware,
                tuple(sorted(self.entity_types.items())),
                tuple(sorted(self.inverse_relations.items())),
            )
        )

    @classmethod
    def from_ontology(
        cls,
        ontology: Ontology,
        *,
        relation_synonyms: Mapping[str, str] | None = None,
        type_aware: bool = True,
        entity_types: Mapping[str, str] | None = None,
        symmetric: Iterable[str] = (),
        inverses: Mapping[str, str] | None = None,
    ) -> ScoringConfig:
        """A config whose symmetric and inverse relation types are those of ``ontology`` (its
        declared inverses, or the defaults that apply to it) plus ``symmetric`` and ``inverses``."""
        return cls(
            symmetric_relations=_symmetric_types(ontology) | frozenset(symmetric),
            relation_synonyms=dict(relation_synonyms or {}),
            type_aware=type_aware,
            entity_types=dict(entity_types or {}),
            inverse_relations={**ontology.inverses, **(inverses or {})},
        )

    def canonical(self, relation_type: str) -> str:
        """The relation type after the synonym map."""
        return self.relation_synonyms.get(relation_type, relation_type)

    def oriented(self, relation_type: str) -> tuple[str, bool]:
        """The type a relation is compared as (after the synonym map, the inverse's canonical
        type), and whether its ends turn around for it."""
        kind = self.canonical(relation_type)
        canonical = next((c for c, inverse in self.inverse_relations.items() if inverse == kind), None)
        return (canonical, True) if canonical is not None else (kind, False)

    def entity_type(self, entity_type: str) -> str:
        """The entity type after the entity type map."""
        return self.entity_types.get(entity_type, entity_type)


class FixtureDiff(BaseModel):
    """How one fixture's prediction compares with its gold: counts and the unmatched items.

    Attributes:
        entities: entity PRF with the type-aware alignment (see :attr:`ScoringConfig.type_aware`).
        entities_untyped: entity PRF ignoring types.
        relations: relation PRF, endpoints aligned through ``entities``' alignment (strict: the
            type and direction must agree, modulo symmetric and inverse types).
        relations_lenient: relation PRF when only the endpoints must agree (type and direction
            ignored): the strict matches, plus the rest paired by their endpoints.
        relations_given_endpoints: of the gold relations whose two endpoints were both extracted,
            those matched strictly (did the extraction relate what it found, and label it right?).
        relation_misses: the missed gold relations by reason (see :class:`RelationMisses`).
        missed_entities: gold entities left unaligned, as ``type:Name``.
        spurious_entities: predicted entities left unaligned, as ``type:Name``.
        missed_relations: gold relations left unmatched, as ``Source -type-> Target``.
        spurious_relations: predicted relations left unmatched, as ``Source -type-> Target``.
        forbidden_extracted: predicted entities that name a forbidden name of the gold, as
            ``type:Name``.
        facts: fact PRF (None: the fixture has no gold facts, so facts are not scored).
        fact_dates: over matched facts, the dates given right (see the module docstring).
        missed_facts / spurious_facts: gold and predicted statements left unmatched.
    """

    entities: PRF = Field(default_factory=PRF)
    entities_untyped: PRF = Field(default_factory=PRF)
    relations: PRF = Field(default_factory=PRF)
    relations_lenient: PRF | None = None
    relations_given_endpoints: Recall | None = None
    relation_misses: RelationMisses | None = None
    missed_entities: list[str] = Field(default_factory=list)
    spurious_entities: list[str] = Field(default_factory=list)
    missed_relations: list[str] = Field(default_factory=list)
    spurious_relations: list[str] = Field(default_factory=list)
    forbidden_extracted: list[str] = Field(default_factory=list)
    facts: PRF | None = None
    fact_dates: PRF | None = None
    missed_facts: list[str] = Field(default_factory=list)
    spurious_facts: list[str] = Field(default_factory=list)

    def diff_fields(self) -> dict[str, Any]:
        """This model's :class:`FixtureDiff` fields by name, to build another diff from."""
        return {name: getattr(self, name) for name in FixtureDiff.model_fields}


class FixtureScore(FixtureDiff):
    """The score of one fixture: its :class:`FixtureDiff` and per-type breakdowns.

    Attributes:
        per_entity_type: entity PRF by type (gold counts by gold type, predictions by predicted
            type, true positives from the type-aware alignment whatever ``type_aware`` says).
        per_relation_type: relation PRF by canonical relation type.
    """

    fixture: str = ""
    per_entity_type: dict[str, PRF] = Field(default_factory=dict)
    per_relation_type: dict[str, PRF] = Field(default_factory=dict)


class DatasetScore(BaseModel):
    """Micro-averaged scores over fixtures, per-type breakdowns and every fixture's score.

    Attributes:
        entities: summed type-aware entity counts.
        entities_untyped: summed type-agnostic entity counts.
        relations: summed relation counts.
        relations_lenient / relations_given_endpoints / relation_misses: summed (see
            :class:`FixtureDiff`; None when no fixture has them).
        facts / fact_dates: summed over the fixtures that score facts (None: none does).
        per_entity_type: summed per-type entity counts, keyed by type.
        per_relation_type: summed per-type relation counts, keyed by canonical type.
        fixtures: the per-fixture scores, in input order.
    """

    entities: PRF = Field(default_factory=PRF)
    entities_untyped: PRF = Field(default_factory=PRF)
    relations: PRF = Field(default_factory=PRF)
    relations_lenient: PRF | None = None
    relations_given_endpoints: Recall | None = None
    relation_misses: RelationMisses | None = None
    facts: PRF | None = None
    fact_dates: PRF | None = None
    per_entity_type: dict[str, PRF] = Field(default_factory=dict)
    per_relation_type: dict[str, PRF] = Field(default_factory=dict)
    fixtures: list[FixtureScore] = Field(default_factory=list)


def score_fixture(
    gold: Gold,
    prediction: Prediction,
    config: ScoringConfig | None = None,
    *,
    facts: Sequence[GoldFact] | None = None,
) -> FixtureScore:
    """Score one prediction against its gold (see the module docstring for the rules).

    Args:
        facts: the fixture's gold facts (None: it has none, and facts are not scored).
    """
    fixture_id = gold.id or prediction.fixture
    return _score(fixture_id, gold, prediction, config or ScoringConfig(), facts)


def score_dataset(
    fixtures: Sequence[tuple[str, Gold, Prediction | None]],
    config: ScoringConfig | None = None,
    *,
    facts: Mapping[str, Sequence[GoldFact] | None] | None = None,
) -> DatasetScore:
    """Score every ``(fixture id, gold, prediction)``; a missing prediction (None) scores as empty.

    Totals and per-type scores are micro-averaged (counts summed, then the ratios).

    Args:
        facts: gold facts by fixture id (a fixture missing or None here has its facts unscored).
    """
    config = config or ScoringConfig()
    gold_facts = facts or {}
    scores = [
        _score(
            fid,
            gold,
            prediction if prediction is not None else Prediction(fixture=fid),
            config,
            gold_facts.get(fid),
        )
        for fid, gold, prediction in fixtures
    ]
    return aggregate(scores)


def aggregate(scores: Sequence[FixtureScore]) -> DatasetScore:
    """Micro-average fixture scores that were already computed (see :func:`score_dataset`)."""
    per_entity: dict[str, PRF] = {}
    per_relation: dict[str, PRF] = {}
    for score in scores:
        _merge(per_entity, score.per_entity_type)
        _merge(per_relation, score.per_relation_type)
    return DatasetScore(
        entities=sum((s.entities for s in scores), PRF()),
        entities_untyped=sum((s.entities_untyped for s in scores), PRF()),
        relations=sum((s.relations for s in scores), PRF()),
        relations_lenient=_summed(s.relations_lenient for s in scores),
        relations_given_endpoints=_summed(s.relations_given_endpoints for s in scores),
        relation_misses=_summed(s.relation_misses for s in scores),
        per_entity_type=dict(sorted(per_entity.items())),
        per_relation_type=dict(sorted(per_relation.items())),
        facts=_summed(s.facts for s in scores),
        fact_dates=_summed(s.fact_dates for s in scores),
        fixtures=list(scores),
    )


def _summed[T: (PRF, Recall, RelationMisses)](scores: Iterable[T | None]) -> T | None:
    present = [score for score in scores if score is not None]
    if not present:
        return None
    total = present[0]
    for score in present[1:]:
        total = total + score
    return total


def _merge(into: dict[str, PRF], other: Mapping[str, PRF]) -> None:
    for key, value in other.items():
        into[key] = into[key] + value if key in into else value


def _score(
    fixture_id: str,
    gold: Gold,
    prediction: Prediction,
    config: ScoringConfig,
    facts: Sequence[GoldFact] | None = None,
) -> FixtureScore:
    if QUESTIONS_ONLY in gold.tags:
        # The dataset annotates no entities or relations (LoCoMo): nothing the extraction says can be
        # right or wrong against it, so its F1 is undefined ("–"), not 0.
        prediction = prediction.model_copy(update={"entities": [], "relations": []})
    if config.entity_types:
        gold = gold.model_copy(update={"entities": _retyped(gold.entities, config)})
        prediction = prediction.model_copy(update={"entities": _retyped(prediction.entities, config)})
    typed = _align_entities(prediction.entities, gold.entities, type_aware=True)
    untyped = _align_entities(prediction.entities, gold.entities, type_aware=False)
    alignment = typed if config.type_aware else untyped
    n_pred, n_gold = len(prediction.entities), len(gold.entities)

    relations = _score_relations(prediction, gold, alignment, config)

    per_entity_type = _per_type(
        [e.type for e in prediction.entities],
        [e.type for e in gold.entities],
        [gold.entities[g].type for g in typed.values()],
    )
    aligned_gold = set(alignment.values())
    fact_scores = _fact_scores(prediction, gold, facts, alignment) if facts is not None else {}
    return FixtureScore(
        **fact_scores,
        **relations,
        fixture=fixture_id,
        entities=PRF(tp=len(alignment), predicted=n_pred, gold=n_gold),
        entities_untyped=PRF(tp=len(untyped), predicted=n_pred, gold=n_gold),
        missed_entities=[_entity_label(e) for i, e in enumerate(gold.entities) if i not in aligned_gold],
        spurious_entities=[_entity_label(e) for i, e in enumerate(prediction.entities) if i not in alignment],
        forbidden_extracted=_forbidden_extracted(prediction.entities, gold.forbidden),
        per_entity_type=per_entity_type,
    )


def _forbidden_extracted(entities: list[GoldEntity], forbidden: list[str]) -> list[str]:
    """The predicted entities that name a forbidden name anywhere in what they hold."""
    if not forbidden:
        return []
    found = []
    for entity in entities:
        held = fold_text(" | ".join([entity.name, *entity.aliases, *entity.attributes.values()]))
        if any(is_mentioned(name, held) for name in forbidden):
            found.append(_entity_label(entity))
    return found


def _retyped(entities: list[GoldEntity], config: ScoringConfig) -> list[GoldEntity]:
    return [e.model_copy(update={"type": config.entity_type(e.type)}) for e in entities]


def _per_type(predicted: list[str], gold: list[str], matched: list[str]) -> dict[str, PRF]:
    p, g, tp = Counter(predicted), Counter(gold), Counter(matched)
    return {t: PRF(tp=tp[t], predicted=p[t], gold=g[t]) for t in sorted(p.keys() | g.keys())}


def _entity_label(entity: GoldEntity) -> str:
    return f"{entity.type}:{entity.name}"


def _relation_label(relation: GoldRelation) -> str:
    return f"{relation.source} -{relation.type}-> {relation.target}"


def _name_set(entity: GoldEntity) -> set[str]:
    return {n for n in (normalize_name(x) for x in (entity.name, *entity.aliases)) if n}


def _words(name: str) -> frozenset[str]:
    return frozenset(name.split())


def _compatible(predicted_name: str, gold_names: set[str]) -> bool:
    """Whether a predicted name could denote the gold entity: its words contain, or are
    contained in, the words of one of the gold names ("Hugo" and "Hugo Lambert")."""
    words = _words(predicted_name)
    return bool(words) and any(words <= _words(g) or _words(g) <= words for g in gold_names)


def _align_entities(
    predicted: list[GoldEntity], gold: list[GoldEntity], *, type_aware: bool
) -> dict[int, int]:
    """Maximum one-to-one alignment, predicted index -> gold index, preferring primary-name matches.

    A pair is a candidate when the prediction's name is one of the gold names, or when one
    of its aliases is and its name is compatible with the gold entity (see the module docstring).
    """
    by_name: dict[str, list[int]] = {}
    for g, entity in enumerate(gold):
        for name in _name_set(entity):
            by_name.setdefault(name, []).append(g)
    gold_names = [_name_set(entity) for entity in gold]
    costs: dict[tuple[int, int], int] = {}
    for p, entity in enumerate(predicted):
        primary = normalize_name(entity.name)
        for g in sorted({g for name in _name_set(entity) for g in by_name.get(name, ())}):
            same_type = entity.type == gold[g].type
            if type_aware and not same_type:
                continue
            if primary not in gold_names[g] and not _compatible(primary, gold_names[g]):
                continue  # only an alias matches, and the name says it is someone else
            # Cheapest: the display names agree; then the name is a gold alias; then only an
            # alias of the prediction matches. Untyped: prefer same types.
            if primary == normalize_name(gold[g].name):
                cost = 0
            elif primary in gold_names[g]:
                cost = 2
            else:
                cost = 4
            costs[(p, g)] = cost + (0 if same_type else 1)
    return min_cost_matching(len(predicted), len(gold), costs)


def _resolve(name: str, entities: list[GoldEntity]) -> set[int]:
    """Indices of the entities called ``name``: by display name, or failing that by alias."""
    folded = normalize_name(name)
    if not folded:
        return set()
    primary = {i for i, e in enumerate(entities) if normalize_name(e.name) == folded}
    if primary:
        return primary
    return {i for i, e in enumerate(entities) if folded in {normalize_name(a) for a in e.aliases}}


type _Endpoint = int | str
"""A relation endpoint: a gold entity's index, or the normalised name of a dangling gold endpoint."""


@dataclass(frozen=True)
class _Stated:
    """A relation as compared: its ends (what each can land on), its type after the synonym map
    and turned to the canonical type of an inverse pair, and whether its direction matters."""

    source: frozenset[_Endpoint]
    type: str
    target: frozenset[_Endpoint]
    symmetric: bool

    @classmethod
    def of(
        cls, relation: GoldRelation, ends: Callable[[str], set[_Endpoint]], config: ScoringConfig
    ) -> _Stated:
        kind, turned = config.oriented(relation.type)
        source, target = frozenset(ends(relation.source)), frozenset(ends(relation.target))
        if turned:
            source, target = target, source
        return cls(source, kind, target, kind in config.symmetric_relations)

    def same_fact(self, other: _Stated) -> int | None:
        """0 when ``other`` states this fact as written, 1 reversed (a symmetric type), else None."""
        if self.type != other.type:
            return None
        return self.same_ends(other, either_way=self.symmetric)

    def same_ends(self, other: _Stated, *, either_way: bool = True) -> int | None:
        """0 when the ends land on ``other``'s as written, 1 crossed (when ``either_way``), else None."""
        if self.source & other.source and self.target & other.target:
            return 0
        if either_way and self.source & other.target and self.target & other.source:
            return 1
        return None


def _distinct(stated: list[_Stated]) -> list[int]:
    """Indices of the relations that state a fact no earlier one states (the first listing is kept)."""
    kept: list[int] = []
    for index, relation in enumerate(stated):
        if all(relation.same_fact(stated[k]) is None for k in kept):
            kept.append(index)
    return kept


def _score_relations(
    prediction: Prediction, gold: Gold, alignment: Mapping[int, int], config: ScoringConfig
) -> dict[str, Any]:
    """The relation fields of a fixture's score.

    One fact stated twice (a symmetric type both ways, or both types of an inverse pair) counts
    once on either side. Strict matches first; the gold relations left are then paired, one to one,
    with the predictions left whose ends land on theirs in any direction and type (lenient
    matches, "mislabelled"); the rest are missed because an end was not extracted, or not related.
    """

    def endpoint(name: str) -> set[_Endpoint]:
        predicted = _resolve(name, prediction.entities)
        aligned: set[_Endpoint] = {alignment[p] for p in predicted if p in alignment}
        return aligned | {normalize_name(name)}

    def gold_endpoint(name: str) -> set[_Endpoint]:
        entities: set[_Endpoint] = set(_resolve(name, gold.entities))
        return entities or {normalize_name(name)}  # dangling: matched by name

    predicted_all = [_Stated.of(r, endpoint, config) for r in prediction.relations]
    gold_all = [_Stated.of(r, gold_endpoint, config) for r in gold.relations]
    p_index, g_index = _distinct(predicted_all), _distinct(gold_all)
    predicted, golden = [predicted_all[i] for i in p_index], [gold_all[i] for i in g_index]

    strict = min_cost_matching(len(predicted), len(golden), _pair_costs(predicted, golden, strict=True))
    left_p = [p for p in range(len(predicted)) if p not in strict]
    left_g = [g for g in range(len(golden)) if g not in set(strict.values())]
    loose = min_cost_matching(
        len(left_p),
        len(left_g),
        _pair_costs([predicted[p] for p in left_p], [golden[g] for g in left_g], strict=False),
    )
    mislabelled = {left_g[g] for g in loose.values()}

    extracted: set[_Endpoint] = set(alignment.values())
    extracted |= {normalize_name(n) for e in prediction.entities for n in (e.name, *e.aliases)}
    extracted |= {normalize_name(n) for r in prediction.relations for n in (r.source, r.target)}
    unmatched = [g for g in left_g if g not in mislabelled]
    both_ends = [g for g in unmatched if golden[g].source & extracted and golden[g].target & extracted]

    gold_relations = [gold.relations[i] for i in g_index]
    predicted_relations = [prediction.relations[i] for i in p_index]
    matched_gold = set(strict.values())
    # A prediction matched through an inverse counts under the gold relation's type.
    per_relation_type = _per_type(
        [
            config.canonical(gold_relations[strict[p]].type if p in strict else r.type)
            for p, r in enumerate(predicted_relations)
        ],
        [config.canonical(r.type) for r in gold_relations],
        [config.canonical(gold_relations[g].type) for g in strict.values()],
    )
    return {
        "relations": PRF(tp=len(strict), predicted=len(predicted), gold=len(golden)),
        "relations_lenient": PRF(tp=len(strict) + len(loose), predicted=len(predicted), gold=len(golden)),
        "relations_given_endpoints": Recall(
            tp=len(strict), gold=len(strict) + len(mislabelled) + len(both_ends)
        ),
        "relation_misses": RelationMisses(
            no_endpoint=len(unmatched) - len(both_ends),
            unrelated=len(both_ends),
            mislabelled=len(mislabelled),
        ),
        "missed_relations": [
            _relation_label(r) for g, r in enumerate(gold_relations) if g not in matched_gold
        ],
        "spurious_relations": [
            _relation_label(r) for p, r in enumerate(predicted_relations) if p not in strict
        ],
        "per_relation_type": per_relation_type,
    }


def _pair_costs(predicted: list[_Stated], gold: list[_Stated], *, strict: bool) -> dict[tuple[int, int], int]:
    """Candidate pairs and their costs: strict (same fact) or lenient (same ends, any type or direction)."""
    costs: dict[tuple[int, int], int] = {}
    for p, relation in enumerate(predicted):
        if not relation.source or not relation.target:
            continue
        for g, gold_relation in enumerate(gold):
            cost = relation.same_fact(gold_relation) if strict else relation.same_ends(gold_relation)
            if cost is not None:
                costs[(p, g)] = cost
    return costs


SAME_STATEMENT = 0.5
"""Two statements with this share of content words in common (Jaccard) are the same fact."""
SAME_STATEMENT_AND_TURN = 0.35
"""The share that suffices when the two facts' evidence shares an entry."""
_SIMILARITY_COST = 1000


def _fact_scores(
    prediction: Prediction, gold: Gold, facts: Sequence[GoldFact], alignment: Mapping[int, int]
) -> dict[str, Any]:
    """The fact fields of a fixture's score (see the module docstring)."""
    pairs = _align_facts(prediction, gold, facts, alignment)
    predicted = prediction.facts
    dated = [(p, g) for p, g in pairs.items() if facts[g].when is not None]
    matched = set(pairs.values())
    return {
        "facts": PRF(tp=len(pairs), predicted=len(predicted), gold=len(facts)),
        "fact_dates": PRF(
            tp=sum(1 for p, g in dated if predicted[p].when == facts[g].when),
            predicted=sum(1 for p, _ in dated if predicted[p].when is not None),
            gold=len(dated),
        ),
        "missed_facts": [f.statement for g, f in enumerate(facts) if g not in matched],
        "spurious_facts": [f.statement for p, f in enumerate(predicted) if p not in pairs],
    }


def _align_facts(
    prediction: Prediction, gold: Gold, facts: Sequence[GoldFact], alignment: Mapping[int, int]
) -> dict[int, int]:
    """One-to-one fact matching, predicted index -> gold index, the most similar pairs first."""

    def predicted_about(fact: GoldFact) -> set[_Endpoint]:
        ends: set[_Endpoint] = {normalize_name(name) for name in fact.about}
        for name in fact.about:
            ends |= {alignment[p] for p in _resolve(name, prediction.entities) if p in alignment}
        return ends

    def gold_about(fact: GoldFact) -> set[_Endpoint]:
        ends: set[_Endpoint] = set()
        for name in fact.about:
            ends |= set(_resolve(name, gold.entities)) or {normalize_name(name)}
        return ends

    def names(fact: GoldFact, entities: list[GoldEntity]) -> frozenset[str]:
        found = [entities[i] for name in fact.about for i in _resolve(name, entities)]
        return name_words([*fact.about, *(n for e in found for n in (e.name, *e.aliases))])

    gold_ends = [gold_about(fact) for fact in facts]
    gold_names = [names(fact, gold.entities) for fact in facts]
    costs: dict[tuple[int, int], int] = {}
    for p, fact in enumerate(prediction.facts):
        ends = predicted_about(fact)
        for g, gold_fact in enumerate(facts):
            if not ends & gold_ends[g]:
                continue
            ignore = names(fact, prediction.entities) | gold_names[g]
            alike = similarity(fact.statement, gold_fact.statement, ignore=ignore)
            shared_turn = bool(set(fact.evidence) & set(gold_fact.evidence))
            if alike >= SAME_STATEMENT or (shared_turn and alike >= SAME_STATEMENT_AND_TURN):
                costs[(p, g)] = round((1.0 - alike) * _SIMILARITY_COST)
    return min_cost_matching(len(prediction.facts), len(facts), costs)
