"""Recorded episodes: JSONL trajectories with their deterministic replay check
(``koholint.trajectory.jsonl``) and animated GIFs of the screens (``koholint.trajectory.gif``).

Named policies (``koholint play``), trained policies (``--export``) and Go-Explore's winning
trajectory (``koholint explore``) all record through here.
"""
