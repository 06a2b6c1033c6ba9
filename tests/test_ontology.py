from __future__ import annotations

import pytest
from pydantic import ValidationError

from bub_semantic_memory._ontology import Ontology, RelationType
from bub_semantic_memory.extraction._prompts import PromptLibrary


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


def _pair(**assigned: object) -> Ontology:
    """works_on (person -> project/task) and assigned_to (task -> person), with ``assigned``'s settings."""
    return Ontology.model_validate(
        {
            "entity_types": {"person": "p", "project": "p", "task": "t"},
            "relation_types": {
                "works_on": {"description": "w", "source": ["person"], "target": ["project", "task"]},
                "assigned_to": {
                    "description": "a",
                    "single_valued": True,
                    "source": ["task"],
                    "target": ["person"],
                    **assigned,
                },
            },
        }
    )


def test_ontology_orients_an_inverse_to_its_canonical_type_when_the_ends_fit() -> None:
    ontology = _pair(inverse_of="works_on")
    assert ontology.inverse("works_on") == "assigned_to" and ontology.inverse("assigned_to") == "works_on"
    assert ontology.orient("works_on", "person", "task") == ("assigned_to", True)
    # a project has no assignee
    assert ontology.orient("works_on", "person", "project") == ("works_on", False)
    assert ontology.orient("assigned_to", "task", "person") == ("assigned_to", False)


def test_ontology_reads_a_type_of_an_inverse_pair_written_backwards() -> None:
    ontology = _pair(inverse_of="works_on")
    assert ontology.orient("assigned_to", "person", "task") == ("assigned_to", True)
    assert ontology.orient("works_on", "task", "person") == ("assigned_to", False)
    assert ontology.orient("assigned_to", "project", "person") is None
    assert not ontology.allows("assigned_to", "person", "task")  # the grammar still offers one direction


def test_ontology_never_turns_a_type_without_an_inverse(ontology: Ontology) -> None:
    assert ontology.orient("lives_in", "person", "location") == ("lives_in", False)
    assert ontology.orient("lives_in", "location", "person") is None
    assert ontology.orient("knows", "person", "person") == ("knows", False)
    assert ontology.orient("no_such_type", "person", "person") is None


def test_released_ontologies_get_the_default_inverses(ontology: Ontology) -> None:
    assert dict(ontology.inverses) == {"assigned_to": "works_on", "reports_to": "manages"}
    assert ontology.orient("manages", "person", "person") == ("reports_to", True)
    assert ontology.orient("manages", "person", "project") == ("manages", False)


def test_an_ontology_that_declares_an_inverse_gets_only_what_it_declares(ontology: Ontology) -> None:
    data = ontology.model_dump()
    data["relation_types"]["assigned_to"]["inverse_of"] = "works_on"
    declared = Ontology.model_validate(data)
    assert dict(declared.inverses) == {"assigned_to": "works_on"}
    assert declared.orient("manages", "person", "person") == ("manages", False)


def test_default_inverses_skip_a_pair_whose_endpoint_types_do_not_fit() -> None:
    ontology = Ontology.model_validate(
        {
            "entity_types": {"person": "p", "project": "p"},
            "relation_types": {
                "works_on": {"description": "w", "source": ["person"], "target": ["project"]},
                "assigned_to": {"description": "a", "source": ["person"], "target": ["project"]},
            },
        }
    )
    assert dict(ontology.inverses) == {}


def test_an_ontology_without_inverses_dumps_as_before() -> None:
    assert "inverse_of" not in _pair().model_dump_json()
    assert '"inverse_of":"works_on"' in _pair(inverse_of="works_on").model_dump_json()


@pytest.mark.parametrize(
    ("inverse", "message"),
    [
        ("nothing", "no such relation type"),
        ("assigned_to", "not its own inverse"),
        ("knows", "symmetric type has no inverse"),
    ],
)
def test_ontology_rejects_a_bad_inverse(inverse: str, message: str) -> None:
    data = _pair(inverse_of="works_on").model_dump()
    data["entity_types"]["person"] = "p"
    data["relation_types"]["knows"] = {"description": "k", "symmetric": True}
    data["relation_types"]["assigned_to"]["inverse_of"] = inverse
    with pytest.raises(ValidationError, match=message):
        Ontology.model_validate(data)


def test_ontology_rejects_an_inverse_whose_turned_ends_its_inverse_does_not_allow() -> None:
    with pytest.raises(ValidationError, match="every works_on turned around must be allowed as assigned_to"):
        Ontology.model_validate(
            {
                "entity_types": {"person": "p", "project": "p", "task": "t"},
                "relation_types": {
                    "assigned_to": {"description": "a", "source": ["task"], "target": ["person"]},
                    "works_on": {
                        "description": "w",
                        "source": ["person"],
                        "target": ["project", "task"],
                        "inverse_of": "assigned_to",
                    },
                },
            }
        )


def test_ontology_rejects_an_inverse_declared_on_both_types_of_a_pair() -> None:
    data = _pair(inverse_of="works_on").model_dump()
    data["relation_types"]["works_on"]["inverse_of"] = "assigned_to"
    with pytest.raises(ValidationError, match="declare it on one type of the pair only"):
        Ontology.model_validate(data)


def test_an_ontology_equals_its_copy_whatever_it_cached() -> None:
    library = PromptLibrary()
    used, fresh = library.load("extract@9").ontology, library.load("extract@9").ontology.model_copy()
    hash(used)  # caches its hash
    assert used.inverses is not None  # and its inverses
    assert used == fresh and fresh == used
    assert used != library.load("extract@16").ontology
