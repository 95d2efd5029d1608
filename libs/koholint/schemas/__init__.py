"""Wire contracts shared by the services (pydantic models), and their exported JSON Schemas."""
