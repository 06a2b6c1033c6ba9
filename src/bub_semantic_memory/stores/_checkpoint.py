"""Checkpoints: a tape's folded memory graph stored in its memory sidecar, so cold loads read only the tail.

A checkpoint is an ``anchor`` entry named ``memory.checkpoint`` in the sidecar (bub's
stores index anchors by name, so the newest one is found without reading the history).
Its state holds:

``version``
    the checkpoint format (:data:`CHECKPOINT_VERSION`); another version is ignored.
``through``
    the last sidecar entry id folded into it: every entry up to it, none after.
``ontology``
    a fingerprint of the relation rules the fold used (symmetric, single-valued, inverse); a
    graph folded under other rules would not equal the full fold, so it is ignored.
``sha256``
    the SHA-256 of ``graph``, the UTF-8 JSON text of :meth:`MemoryGraph.to_state`.

A checkpoint that fails any check is ignored, logged and counted, and the load falls
back to folding the snapshots: a checkpoint can only make a load faster, never lose a fact.

``forget --purge`` cannot leave a checkpoint that holds the forgotten names: it replaces the
state of each older checkpoint by :func:`purged_checkpoint` (``purged``, ``through`` and
nothing else), which loads pass over without a report, and stores a new checkpoint.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pydantic_core

from bub_semantic_memory._errors import StoreError
from bub_semantic_memory._ontology import Ontology
from bub_semantic_memory.memory import MemoryGraph

__all__ = [
    "CHECKPOINT_ANCHOR",
    "CHECKPOINT_VERSION",
    "Checkpoint",
    "CheckpointError",
    "decode_checkpoint",
    "encode_checkpoint",
    "is_purged_checkpoint",
    "ontology_fingerprint",
    "purged_checkpoint",
]

CHECKPOINT_ANCHOR = "memory.checkpoint"
CHECKPOINT_VERSION = 1


class CheckpointError(StoreError):
    """A stored checkpoint cannot be used (unknown version, bad hash, other rules, bad data)."""


@dataclass(frozen=True)
class Checkpoint:
    """A decoded checkpoint: the graph as of sidecar entry ``through``."""

    graph: MemoryGraph
    through: int


def ontology_fingerprint(ontology: Ontology | None) -> str:
    """A short hash of what the fold takes from the ontology: symmetric, single-valued and inverse
    relation types, with the endpoint types of the inverse pairs (they decide the stored direction)."""
    if ontology is None:
        rules: dict[str, list[Any]] = {"symmetric": [], "single_valued": []}
    else:
        relations = ontology.relation_types
        rules = {
            "symmetric": sorted(name for name, r in relations.items() if r.symmetric),
            "single_valued": sorted(name for name, r in relations.items() if r.single_valued),
        }
        if ontology.inverses:  # absent when there are none: those checkpoints stay valid
            rules["inverses"] = [
                [name, list(relations[name].source), list(relations[name].target), inverse]
                for name, inverse in sorted(ontology.inverses.items())
            ]
    return hashlib.sha256(json.dumps(rules, sort_keys=True).encode()).hexdigest()[:16]


def encode_checkpoint(graph: MemoryGraph, through: int) -> dict[str, Any]:
    """The anchor state of a checkpoint of ``graph``, which holds every sidecar entry up to ``through``."""
    text = json.dumps(graph.to_state(), ensure_ascii=False, separators=(",", ":"))
    return {
        "version": CHECKPOINT_VERSION,
        "through": through,
        "snapshots": graph.snapshot_count,
        "ontology": ontology_fingerprint(graph.ontology),
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "graph": text,
    }


def purged_checkpoint(state: object) -> dict[str, Any]:
    """What a purge leaves of a checkpoint's state: that it was purged, and the entry it covered."""
    through = state.get("through") if isinstance(state, dict) else None
    covered = through if isinstance(through, int) else 0
    return {"version": CHECKPOINT_VERSION, "purged": True, "through": covered}


def is_purged_checkpoint(state: object) -> bool:
    """Whether a checkpoint's state is what a purge left of it."""
    return isinstance(state, dict) and state.get("purged") is True


def decode_checkpoint(state: object, ontology: Ontology | None, *, tape: str = "") -> Checkpoint:
    """The graph stored in a checkpoint's anchor state.

    Raises:
        CheckpointError: the checkpoint is of another version, folded under other
            relation rules, altered (hash mismatch) or not well-formed.
    """
    if not isinstance(state, dict):
        raise CheckpointError("checkpoint state is not an object")
    version = state.get("version")
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(f"checkpoint version {version!r} is not {CHECKPOINT_VERSION}")
    through, text, digest = state.get("through"), state.get("graph"), state.get("sha256")
    if not isinstance(through, int) or not isinstance(text, str) or not isinstance(digest, str):
        raise CheckpointError("checkpoint lacks through, graph or sha256")
    if state.get("ontology") != ontology_fingerprint(ontology):
        raise CheckpointError("checkpoint was folded under other relation rules (ontology changed)")
    if hashlib.sha256(text.encode("utf-8")).hexdigest() != digest:
        raise CheckpointError("checkpoint content does not match its sha256")
    try:
        graph = MemoryGraph.from_state(pydantic_core.from_json(text), ontology, tape=tape)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CheckpointError(f"checkpoint graph is malformed: {exc!r}") from exc
    return Checkpoint(graph, through)
