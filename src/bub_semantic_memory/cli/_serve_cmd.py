"""``serve``: the embedded model behind llama.cpp's OpenAI-compatible HTTP server.

Extraction against it takes the hosted code path (an endpoint sent every tool schema with
every request, billed as a provider bills it), so it is how this machine measures what a
prompt version costs and scores on a hosted model without a hosted model: a proxy, named
as one in every report (see :func:`~bub_semantic_memory.backends._specs.model_note`).
"""

from __future__ import annotations

import os
import subprocess
import sys

import typer

from bub_semantic_memory.cli._common import fail, handle_errors, stderr

__all__ = ["serve"]


@handle_errors
def serve(
    model: str = typer.Option(
        "local", "--model", "-m", help="A local spec: local, local:<name> or local:/path.gguf."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8080, "--port", min=1, max=65535, help="Port to listen on."),
    context: int = typer.Option(8192, "--context", min=512, help="Context size the model is opened with."),
) -> None:
    """Serve a local model over HTTP with llama.cpp's OpenAI-compatible server (until Ctrl-C).

    The server replaces this command's process (on Windows it runs as a child), so stopping
    serve stops the server, and serve exits with the server's exit code.

    Point extraction at it with --model NAME --base-url http://HOST:PORT/v1, NAME being the
    packaged model's name (the server says which). Needs the 'serve' extra.
    """
    from bub_semantic_memory.backends import parse_local_spec, resolve_local_file

    local = parse_local_spec(model)
    if local is None:
        fail(
            f"--model {model!r} is not a local spec: use local, local:<name> or local:/path/to/model.gguf", 2
        )
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError:
        fail("the server needs the 'serve' extra: pip install 'bub-semantic-memory[local,serve]'")
    from bub_semantic_memory._home import models_dir

    resolved = resolve_local_file(local.name, local.path, models_dir=models_dir())
    alias = local.name or resolved.path.stem
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(resolved.path),
        "--model_alias",
        alias,
        "--host",
        host,
        "--port",
        str(port),
        "--n_ctx",
        str(context),
        "--n_threads",
        str(os.cpu_count() or 2),
        "--logits_all",
        "False",  # True keeps logits of every token: memory grew to 2.1 GB
        "--verbose",
        "False",
    ]
    if resolved.chat_format is not None:
        command += ["--chat_format", resolved.chat_format]
    stderr.print(
        f"Serving {alias} on http://{host}:{port}/v1: extract with --model {alias} --base-url http://{host}:{port}/v1",
        markup=False,
    )
    if sys.platform == "win32":  # no exec there: os.execv starts a process and returns at once
        try:
            raise typer.Exit(subprocess.call(command))
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
    sys.stdout.flush()
    sys.stderr.flush()
    # The server takes this process's place, so a signal that stops `serve` (Ctrl-C, or the
    # SIGTERM of `kill` or a service manager) stops the server: a child process would be left
    # running, holding the model's memory, the port and every core. Its exit code is serve's.
    os.execv(sys.executable, command)
