"""bub-semantic-memory: a memory of entities and relations, extracted from Bub tapes."""
