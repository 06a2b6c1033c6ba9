"""The long scenario fixtures written by ``make_long_scenarios.py``, one module each."""

from __future__ import annotations

from long_scenarios import accounts, family, friends, relocation, reorg
from long_scenarios.kit import Scenario

SCENARIOS: list[Scenario] = [
    reorg.SCENARIO,
    accounts.SCENARIO,
    family.SCENARIO,
    friends.SCENARIO,
    relocation.SCENARIO,
]
