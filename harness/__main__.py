"""``python -m harness`` runs the bench command."""

from harness.cli.app import main

main()
