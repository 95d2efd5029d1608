"""llm-local: an OpenAI-compatible chat server around a small local model (llama.cpp on CPU)."""
