"""llm-local's HTTP routes: health, and the OpenAI-compatible API."""
