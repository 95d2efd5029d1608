"""console's HTTP routes, one module per resource."""
