"""terrarium-dagster: a curated, sourced glossary of a serialized story, built by an LLM agent."""

__version__ = "0.1.0"
