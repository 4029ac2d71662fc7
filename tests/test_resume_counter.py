"""What a run measures before its first scene teaches its token counter nothing.

A resumed run restores the saved context (the counter's calibration and its remembered exact
counts), then checks the window, counting the fixed prefix exactly (`/tokenize`). Once more than
64 exact counts had been remembered, the prefix's had left them, so the resumed run asked the
server again and learned from that count: its calibration was no longer the one an
uninterrupted run had at that point, and it truncated and compacted at other sizes (a long post
read in parts, stopped after its 13th part: compaction token counts 8 to 16 tokens apart, and the
saved context state differed). The window check measures with a fork of the counter.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.annotator import served_annotator
from tests.support.vllm_server import ScriptedVLLM


def test_counting_the_prefix_for_the_window_check_leaves_the_counter_as_it_was(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    with served_annotator(vllm_server.url, tmp_path) as annotator:
        counter = annotator.session.counter
        before = (counter.calibration(), counter.anchors())
        prefix = annotator.served_prefix_tokens()
        assert (counter.calibration(), counter.anchors()) == before
        # still the server's own count of the prefix, not the estimate
        system = {"role": "system", "content": annotator.system_prompt}
        assert prefix == counter.fork().count_exact([system], list(annotator.tools))
