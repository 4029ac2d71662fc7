"""The reader's edition: each glossary entry rewritten for readers from all its evidence up to a
thread, spoiler-safe, many requests in flight (`writer.py`); the request's message and the
judgement of its answer (`prompt.py`); the evidence (`evidence.py`); the offline backend's
composition (`compose.py`). No Dagster."""
