"""`python -m geval_core.providers.llama_server --model FILE ...`: llama-cpp-python's OpenAI-compatible
server with the workbench's safe llama.cpp defaults (see local_judge.disable_extra_buffers).

Takes the same arguments as `python -m llama_cpp.server`; plain `llama_cpp.server` crashes on its first
request on machines where ggml's AMX kernels fault.
"""

from __future__ import annotations

import sys

from .local_judge import disable_extra_buffers


def main() -> None:
    """Patch the llama.cpp model defaults, then hand over to llama_cpp.server."""
    disable_extra_buffers()
    from llama_cpp.server.__main__ import main as serve

    sys.exit(serve())


if __name__ == "__main__":
    main()
