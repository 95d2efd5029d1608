"""reward-model's HTTP routes, one module per resource."""
