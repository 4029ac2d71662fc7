"""The scene's path goes one way: compaction reaches the model only through the scene's calls it is
handed with each request (`agent/calls.py::SceneCalls.summarize` and `flush`, recorded for that
scene), never back through the Annotator."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from terrarium_dagster.agent.calls import AgentCalls
from terrarium_dagster.model.session import ModelSession
from tests.support.annotator import served_annotator
from tests.support.vllm_server import ScriptedVLLM


def _reachable(root: object, *, boundary: tuple[type, ...]) -> dict[int, object]:
    """Objects reachable from `root` through attributes, containers, bound methods and closures
    (not through modules, classes or a function's globals); a `boundary` object is reached but
    not entered."""
    seen: dict[int, object] = {}
    todo: list[object] = [root]
    while todo:
        item = todo.pop()
        if id(item) in seen or isinstance(item, types.ModuleType | type):
            continue
        seen[id(item)] = item
        if isinstance(item, (*boundary, str, bytes, int, float, bool)):
            continue
        nested: list[Any] = []
        if isinstance(item, dict):
            nested += [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple | set | frozenset):
            nested += list(item)
        elif isinstance(item, types.MethodType):
            nested += [item.__self__, item.__func__]
        elif isinstance(item, types.FunctionType):
            nested += [cell.cell_contents for cell in item.__closure__ or ()]
        if hasattr(item, "__dict__") and not isinstance(item, types.FunctionType):
            nested += list(vars(item).values())
        todo.extend(nested)
    return seen


def test_the_context_manager_reaches_the_model_without_the_annotator(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    with served_annotator(vllm_server.url, tmp_path) as annotator:
        session = annotator.session
        context = annotator.context
        # the manager holds no way to the model of its own: each scene hands its calls
        assert context.summarizer is None and context.flusher is None
        thread = annotator.corpus.threads()[0]
        scene = annotator.corpus.scenes(thread.id)[0]
        scene_calls = annotator.calls.serving(thread, scene)
        assert (scene_calls.scope.thread_id, scene_calls.scope.scene_id) == (thread.id, scene.id)
        assert isinstance(scene_calls.summarize, types.MethodType)
        assert isinstance(scene_calls.flush, types.MethodType)
        # the model session is the run's shared gate (the Annotator listens to it for progress
        # and the window); below it, nothing compaction holds or is handed leads back to the
        # Annotator
        reached = _reachable((context, scene_calls), boundary=(ModelSession,))
        assert id(annotator) not in reached
        assert any(isinstance(item, AgentCalls) for item in reached.values())
        assert any(item is session for item in reached.values())
