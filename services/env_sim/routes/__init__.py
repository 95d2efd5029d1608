"""env-sim's HTTP routes, one module per resource."""
