"""What the commands do: render, validate, check, lint, verify and promote a stack."""
