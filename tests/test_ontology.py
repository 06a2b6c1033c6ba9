from __future__ import annotations

import pytest
from pydantic import ValidationError

from bub_semantic_memory._ontology import Ontology, RelationType


def test_ontology_rejects_relations_that_name_unknown_entity_types() -> None:
    with pytest.raises(ValidationError, match="unknown entity types: planet"):
        Ontology(
            entity_types={"person": "a human"},
            relation_types={"visits": RelationType(description="x", source=("person",), target=("planet",))},
        )


def test_ontology_rejects_type_names_that_are_not_snake_case() -> None:
    with pytest.raises(ValidationError, match="snake_case"):
        Ontology(entity_types={"Person": "a human"})


def test_ontology_allows_checks_direction_and_symmetry(ontology: Ontology) -> None:
    assert ontology.allows("lives_in", "person", "location")
    assert not ontology.allows("lives_in", "location", "person")
    assert ontology.allows("knows", "person", "person")
    assert not ontology.allows("no_such_type", "person", "person")


def test_default_ontology_marks_symmetric_and_single_valued_types(ontology: Ontology) -> None:
    assert ontology.is_symmetric("knows") and not ontology.is_symmetric("works_on")
    assert ontology.is_single_valued("lives_in") and not ontology.is_single_valued("works_on")
