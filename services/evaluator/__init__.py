"""evaluator: a judge ensemble that scores the segments the trainer exports."""
