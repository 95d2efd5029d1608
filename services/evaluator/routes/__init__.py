"""The evaluator's HTTP routes, one module per resource."""
