"""Training: algorithms and bookkeeping on top of the environments."""
