"""bench's version: a leaf, so any layer may name it without importing the package face."""

__version__ = "0.1.0"
