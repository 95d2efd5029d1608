"""Scripted and simple policies, the walkthrough recorder, play and trajectories."""
