"""``python -m harness`` runs the bench command."""

from harness.cli import main

main()
