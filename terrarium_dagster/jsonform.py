"""The one JSON form the project writes where bytes matter: sorted keys, compact separators,
UTF-8 text. Tool results, tool-call arguments, prompt blocks, the store's JSON columns and
snapshots all use it, so the same value always gives the same bytes (a stable prompt prefix,
byte-identical resumes)."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> str:
    """`value` as canonical JSON: sorted keys, no spaces, non-ASCII kept as text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
