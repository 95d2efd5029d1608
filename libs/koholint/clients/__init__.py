"""HTTP clients of the services (httpx, sync and async)."""
