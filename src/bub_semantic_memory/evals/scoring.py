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
type) also match reversed. Relation matching is one-to-one too.

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

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from bub_semantic_memory._mentions import fold_text, is_mentioned
from bub_semantic_memory._models import normalize_name
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory._statements import name_words, similarity
from bub_semantic_memory.evals.dataset import Gold, GoldEntity, GoldFact, GoldRelation, Prediction

__all__ = [
    "PRF",
    "DatasetScore",
    "FixtureDiff",
    "FixtureScore",
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


def _symmetric_types(ontology: Ontology) -> frozenset[str]:
    return frozenset(name for name, rel in ontology.relation_types.items() if rel.symmetric)


@dataclass(frozen=True)
class ScoringConfig:
    """How predictions are compared with gold.

    Attributes:
        symmetric_relations: relation types whose direction does not matter; none by
            default. ``from_ontology`` takes them from the ontology being evaluated, so
            the scorer never assumes one prompt's types for another's predictions.
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

    def __post_init__(self) -> None:
        # Private read-only copies: the caller's dicts can change without changing the config.
        object.__setattr__(self, "relation_synonyms", MappingProxyType(dict(self.relation_synonyms)))
        object.__setattr__(self, "entity_types", MappingProxyType(dict(self.entity_types)))
        object.__setattr__(self, "symmetric_relations", frozenset(self.symmetric_relations))

    def __hash__(self) -> int:
        return hash(
            (
                self.symmetric_relations,
                tuple(sorted(self.relation_synonyms.items())),
                self.type_aware,
                tuple(sorted(self.entity_types.items())),
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
    ) -> ScoringConfig:
        """A config whose symmetric relation types are those of ``ontology`` plus ``symmetric``."""
        return cls(
            symmetric_relations=_symmetric_types(ontology) | frozenset(symmetric),
            relation_synonyms=dict(relation_synonyms or {}),
            type_aware=type_aware,
            entity_types=dict(entity_types or {}),
        )

    def canonical(self, relation_type: str) -> str:
        """The relation type after the synonym map."""
        return self.relation_synonyms.get(relation_type, relation_type)

    def entity_type(self, entity_type: str) -> str:
        """The entity type after the entity type map."""
        return self.entity_types.get(entity_type, entity_type)


class FixtureDiff(BaseModel):
    """How one fixture's prediction compares with its gold: counts and the unmatched items.

    Attributes:
        entities: entity PRF with the type-aware alignment (see :attr:`ScoringConfig.type_aware`).
        entities_untyped: entity PRF ignoring types.
        relations: relation PRF, endpoints aligned through ``entities``' alignment.
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
        facts / fact_dates: summed over the fixtures that score facts (None: none does).
        per_entity_type: summed per-type entity counts, keyed by type.
        per_relation_type: summed per-type relation counts, keyed by canonical type.
        fixtures: the per-fixture scores, in input order.
    """

    entities: PRF = Field(default_factory=PRF)
    entities_untyped: PRF = Field(default_factory=PRF)
    relations: PRF = Field(default_factory=PRF)
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
        per_entity_type=dict(sorted(per_entity.items())),
        per_relation_type=dict(sorted(per_relation.items())),
        facts=_summed(s.facts for s in scores),
        fact_dates=_summed(s.fact_dates for s in scores),
        fixtures=list(scores),
    )


def _summed(scores: Iterable[PRF | None]) -> PRF | None:
    present = [score for score in scores if score is not None]
    return sum(present, PRF()) if present else None


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
    if config.entity_types:
        gold = gold.model_copy(update={"entities": _retyped(gold.entities, config)})
        prediction = prediction.model_copy(update={"entities": _retyped(prediction.entities, config)})
    typed = _align_entities(prediction.entities, gold.entities, type_aware=True)
    untyped = _align_entities(prediction.entities, gold.entities, type_aware=False)
    alignment = typed if config.type_aware else untyped
    n_pred, n_gold = len(prediction.entities), len(gold.entities)

    relation_matches = _align_relations(prediction, gold, alignment, config)

    per_entity_type = _per_type(
        [e.type for e in prediction.entities],
        [e.type for e in gold.entities],
        [gold.entities[g].type for g in typed.values()],
    )
    per_relation_type = _per_type(
        [config.canonical(r.type) for r in prediction.relations],
        [config.canonical(r.type) for r in gold.relations],
        [config.canonical(gold.relations[g].type) for g in relation_matches.values()],
    )
    aligned_gold = set(alignment.values())
    matched_gold_relations = set(relation_matches.values())
    fact_scores = _fact_scores(prediction, gold, facts, alignment) if facts is not None else {}
    return FixtureScore(
        **fact_scores,
        fixture=fixture_id,
        entities=PRF(tp=len(alignment), predicted=n_pred, gold=n_gold),
        entities_untyped=PRF(tp=len(untyped), predicted=n_pred, gold=n_gold),
        relations=PRF(
            tp=len(relation_matches), predicted=len(prediction.relations), gold=len(gold.relations)
        ),
        missed_entities=[_entity_label(e) for i, e in enumerate(gold.entities) if i not in aligned_gold],
        spurious_entities=[_entity_label(e) for i, e in enumerate(prediction.entities) if i not in alignment],
        missed_relations=[
            _relation_label(r) for i, r in enumerate(gold.relations) if i not in matched_gold_relations
        ],
        spurious_relations=[
            _relation_label(r) for i, r in enumerate(prediction.relations) if i not in relation_matches
        ],
        forbidden_extracted=_forbidden_extracted(prediction.entities, gold.forbidden),
        per_entity_type=per_entity_type,
        per_relation_type=per_relation_type,
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
    return _min_cost_matching(len(predicted), len(gold), costs)


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


def _align_relations(
    prediction: Prediction, gold: Gold, alignment: Mapping[int, int], config: ScoringConfig
) -> dict[int, int]:
    """One-to-one relation matching, predicted index -> gold index."""

    def endpoint(name: str) -> set[_Endpoint]:
        predicted = _resolve(name, prediction.entities)
        aligned: set[_Endpoint] = {alignment[p] for p in predicted if p in alignment}
        return aligned | {normalize_name(name)}

    def gold_endpoint(name: str) -> set[_Endpoint]:
        entities: set[_Endpoint] = set(_resolve(name, gold.entities))
        return entities or {normalize_name(name)}  # dangling: matched by name

    gold_ends = [
        (gold_endpoint(r.source), gold_endpoint(r.target), config.canonical(r.type)) for r in gold.relations
    ]
    costs: dict[tuple[int, int], int] = {}
    for p, relation in enumerate(prediction.relations):
        kind = config.canonical(relation.type)
        source, target = endpoint(relation.source), endpoint(relation.target)
        if not source or not target:
            continue
        symmetric = kind in config.symmetric_relations
        for g, (gold_source, gold_target, gold_kind) in enumerate(gold_ends):
            if gold_kind != kind:
                continue
            if source & gold_source and target & gold_target:
                costs[(p, g)] = 0
            elif symmetric and source & gold_target and target & gold_source:
                costs[(p, g)] = 1
    return _min_cost_matching(len(prediction.relations), len(gold.relations), costs)


def _min_cost_matching(n_left: int, n_right: int, costs: Mapping[tuple[int, int], int]) -> dict[int, int]:
    """A maximum-cardinality bipartite matching of minimum total cost, left -> right.

    Successive shortest augmenting paths (Bellman-Ford, since reversed matched edges
    have negative cost): each augmentation adds one pair at the least extra cost, so the
    final matching is of maximum size and, among those, of minimum cost. Ties are broken
    by index, so the result is deterministic.
    """
    matching: dict[int, int] = {}
    for component in _components(costs):
        if len(component) == 1:  # the common case: one candidate pair, nothing to choose
            [(left, right)] = component
            matching[left] = right
            continue
        lefts = sorted({left for left, _ in component})
        rights = sorted({right for _, right in component})
        left_index = {left: i for i, left in enumerate(lefts)}
        right_index = {right: i for i, right in enumerate(rights)}
        local = {(left_index[left], right_index[right]): costs[(left, right)] for left, right in component}
        for left, right in _solve(len(lefts), len(rights), local).items():
            matching[lefts[left]] = rights[right]
    return matching


def _components(costs: Mapping[tuple[int, int], int]) -> list[list[tuple[int, int]]]:
    """Candidate pairs grouped into connected components (independent sub-problems)."""
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(node: tuple[str, int]) -> tuple[str, int]:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for left, right in costs:
        parent[find(("l", left))] = find(("r", right))
    groups: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for pair in sorted(costs):
        groups.setdefault(find(("l", pair[0])), []).append(pair)
    return list(groups.values())


def _solve(n_left: int, n_right: int, costs: Mapping[tuple[int, int], int]) -> dict[int, int]:
    """Successive shortest augmenting paths on one component."""
    adjacency: dict[int, list[tuple[int, int]]] = {}
    for (left, right), cost in sorted(costs.items()):
        adjacency.setdefault(left, []).append((right, cost))
    match_left: dict[int, int] = {}
    match_right: dict[int, int] = {}
    while True:
        path = _shortest_augmenting_path(n_left, n_right, adjacency, costs, match_left, match_right)
        if path is None:
            return match_left
        for left, right in path:
            match_left[left] = right
            match_right[right] = left


def _shortest_augmenting_path(
    n_left: int,
    n_right: int,
    adjacency: Mapping[int, list[tuple[int, int]]],
    costs: Mapping[tuple[int, int], int],
    match_left: Mapping[int, int],
    match_right: Mapping[int, int],
) -> list[tuple[int, int]] | None:
    """The cheapest path from a free left node to a free right node, as the pairs it matches."""
    dist_left = [0.0 if left not in match_left else math.inf for left in range(n_left)]
    dist_right = [math.inf] * n_right
    came_from: list[int] = [-1] * n_right  # right -> the left node it was reached from
    changed = True
    while changed:
        changed = False
        for left in range(n_left):
            if dist_left[left] == math.inf:
                continue
            for right, cost in adjacency.get(left, ()):
                if match_left.get(left) == right:
                    continue
                if dist_left[left] + cost < dist_right[right]:
                    dist_right[right] = dist_left[left] + cost
                    came_from[right] = left
                    changed = True
        for right, left in match_right.items():
            candidate = dist_right[right] - costs[(left, right)]
            if candidate < dist_left[left]:
                dist_left[left] = candidate
                changed = True
    ends = [r for r in range(n_right) if r not in match_right and dist_right[r] < math.inf]
    if not ends:
        return None
    right = min(ends, key=lambda r: (dist_right[r], r))
    pairs: list[tuple[int, int]] = []
    while True:
        left = came_from[right]
        pairs.append((left, right))
        if left not in match_left:
            return pairs
        right = match_left[left]


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
    return _min_cost_matching(len(prediction.facts), len(facts), costs)
