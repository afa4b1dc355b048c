"""Runtime adapters: modes whose agent is built with a real agent framework (modes/runtimes/base.py)."""
