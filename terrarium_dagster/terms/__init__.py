"""Story terms: candidate detection (what in a text looks like a term of the story), shared
by the agent (the scene message) and the offline backend. Its modules import one way:
`candidates` (the detector) over `text_search` (finding a term and its sentences) over
`english` (what the language knows); `given_names` stands alone."""
