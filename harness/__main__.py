"""``python -m harness`` runs the bench command."""

from harness.cli.commands import main

main()
