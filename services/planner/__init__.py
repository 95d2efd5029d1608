"""planner: the policy switch and macro executor behind HTTP (``koholint serve planner``)."""
