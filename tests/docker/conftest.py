import sys
from pathlib import Path

# compose_support.py sits beside the tests (importlib mode puts no test folder on sys.path).
sys.path.insert(0, str(Path(__file__).parent))
