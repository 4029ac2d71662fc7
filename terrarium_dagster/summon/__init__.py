"""Summon and why: a past context rehydrated from its snapshot, trimmed to fit, and asked
through the model (read-only)."""
