"""reward-model tests: synthetic segments importable, torch on one thread."""

import sys
from pathlib import Path

import torch

# reward_synthetic.py sits beside the tests (importlib mode puts no test folder on sys.path).
sys.path.insert(0, str(Path(__file__).parent))
# Two threads on two shared cores made torch ten times slower here (as in the trainer).
torch.set_num_threads(1)
