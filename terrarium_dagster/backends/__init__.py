"""Backends that speak vLLM's OpenAI-compatible protocol in-process: the offline backend (a
deterministic, rule-based stand-in for a model) and what it alone needs (`describe`)."""
