"""The stack declaration: the typed model, its parsing and errors, quantities, KAI's API names and the version pins."""
