"""The model wire: the client (OpenAI-compatible chat completions as vLLM and llama.cpp serve
them), the server probe, replicas, the capacity gate, sampling, accounting, and the session every
request passes (the window gate, the books). Nothing here knows the scene loop."""
