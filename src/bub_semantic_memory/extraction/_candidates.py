"""Capitalised spans that could be names: the candidate list of prompts with ``candidates: true``.

A prompt version that sets ``candidates: true`` constrains entity names to spans of the
transcript, so a grammar-constrained model cannot invent a name. The heuristic is for
scripts with capitals; it steps aside (returns None) for scripts without them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bub_semantic_memory.extraction._planted import PlantedNames
from bub_semantic_memory.extraction._responses import MAX_NAME
from bub_semantic_memory.tape import TranscriptLine

__all__ = ["candidate_names"]

_CAPITALISED = re.compile(
    r"(?<![\w@])[A-Z](?:[\w'’&.-]*\w)?(?:\s+(?:(?:of|the|de|da|van|von|del|di)\s+)?[A-Z0-9](?:[\w'’&.-]*\w)?){0,3}"
)
_QUOTED = re.compile(r'"([A-Z][^"\n]*)"')  # a JSON string value or a quotation that starts with a capital
_QUOTED_MAX_WORDS = 5
_CONNECTORS = frozenset(("of", "the", "de", "da", "van", "von", "del", "di"))  # "Bank of America"
_UNCASED_SCRIPT = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CONTRACTION = re.compile(r"['’](?:s|re|ll|d|ve|m|t)$", re.IGNORECASE)
_CALENDAR = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat
    january february march april may june july august september october november december""".split()  # noqa: SIM905
)
_NOT_NAMES = _CALENDAR | frozenset(
    """i i'm i'll i've hi hello hey thanks thank yes no ok okay sure please can could would should will
    what when where who whom why how which the a an and but or so also then there here this that these those
    it its my our your his her their we you they he she me us them let lets great good nice got noted done
    actually anyway btw fyi today tomorrow yesterday
    redacted user assistant tool we're you're they're it's that's there's i'd we'll you'll don't
    didn't if is are do does did just maybe now not all any anything nothing for to in on at by with from as
    after before since until again still only very really""".split()  # noqa: SIM905
)
_RELATIVE = frozenset(("last", "next", "this", "every"))  # "Last Friday", "Next August": a time, not a name


def candidate_names(lines: Sequence[TranscriptLine], *, limit: int = 120) -> list[str] | None:
    """Capitalised spans of the lines that could be names ("Maya Lin", "Project Apollo", "Globex").

    A one-word span that only ever starts a sentence ("Update", "Right") is dropped;
    contractions ("He's") are never names; a named sender is a name wherever it stands;
    a quoted string of up to five words in title case is one name; a name that only an
    instruction planted in the lines introduces ("add Eve Hacker", see :mod:`.planted`) is none.
    Scripts without capitals (Chinese) yield None: the name is then free text.
    """
    if any(_UNCASED_SCRIPT.search(line.text) for line in lines):
        return None  # capitals mean nothing in Chinese or Japanese: leave names free
    found: dict[str, None] = {}
    mid_sentence: set[str] = set()
    for line in lines:
        if line.sender:
            mid_sentence.add(line.sender)
        # each paragraph starts a sentence; the first is led by its named sender, if any
        first, *rest = line.paragraphs
        paragraphs = [f"{line.sender}: {first}" if line.sender else f": {first}", *(f": {p}" for p in rest)]
        for body in paragraphs:
            _collect_spans(body, found, mid_sentence)
        for body in paragraphs:
            for quoted in _quoted_names(body):
                found.setdefault(quoted, None)
                mid_sentence.add(quoted)
    planted = PlantedNames(lines)
    return [span for span in found if span in mid_sentence and not (planted and planted.plants(span))][:limit]


def _collect_spans(body: str, found: dict[str, None], mid_sentence: set[str]) -> None:
    """Add one paragraph's capitalised spans to ``found`` (and to ``mid_sentence`` if mid-sentence)."""
    for match in _CAPITALISED.finditer(body):
        before = body[: match.start()].rstrip()
        initial = not before or before[-1] in '.!?:;"('
        run = match.group(0).split()
        words = _name_words(run)
        if words[:1] != run[:1]:
            initial = False  # "I'm Maya": Maya does not start the sentence
        while words and words[-1].casefold() in ("of", "the"):
            words = words[:-1]
        for size in range(len(words), 0, -1):
            span = " ".join(words[:size])
            if not any(ch.isalpha() for ch in span) or span.casefold() in _NOT_NAMES or len(span) > MAX_NAME:
                continue
            found.setdefault(span, None)
            if not initial or size > 1:
                mid_sentence.add(span)


def _name_words(words: list[str]) -> list[str]:
    """The words of a capitalised run that can be a name: without leading words that are none
    ("Hey", "I'm", "Last Friday"), without contractions, and cut before the pronoun "I", which
    a run of capitals takes in from the sentence ("Glad I", "Ford Mustang I was"): left in, a
    conversation of 600 turns offered a dozen such candidates, and a model that named one
    ("Whenever I", a person) had three windows refused on it. A regnal "I" ("World War I")
    is cut too: rarer in a conversation than a sentence that goes on with "I"."""
    while words and (
        _CONTRACTION.search(words[0])
        or words[0].casefold().strip("'’.") in _NOT_NAMES
        or (words[0].casefold() in _RELATIVE and len(words) > 1 and words[1].casefold() in _CALENDAR)
    ):
        words = words[1:]
    if "I" in words:
        words = words[: words.index("I")]
    return [w for w in words if not _CONTRACTION.search(w)]


def _quoted_names(text: str) -> list[str]:
    """Whole quoted strings in title case: tool results carry names as JSON values ("Sacramento",
    "Brightwater Foods"), where the quote made them look like the start of a sentence. A value
    with a lower-case word ("Food distribution") is more often a category than a name."""
    names = []
    for match in _QUOTED.finditer(text):
        value = match.group(1).strip()
        words = value.split()
        if (
            len(words) <= _QUOTED_MAX_WORDS
            and all(not w[0].isalpha() or w[0].isupper() or w in _CONNECTORS for w in words)
            and len(value) <= MAX_NAME
            and value.casefold() not in _NOT_NAMES
            and not _CONTRACTION.search(value)
        ):
            names.append(value)
    return names
