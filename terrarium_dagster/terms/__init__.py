"""Story terms: candidate detection (what in a text looks like a term of the story), shared
by the agent (the scene message) and the offline backend."""
