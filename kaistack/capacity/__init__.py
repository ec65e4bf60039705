"""Will the declared work fit: a stack turned into the snapshot KAI sees, simulated, and reported."""
