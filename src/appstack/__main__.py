"""``python -m appstack`` is the ``appstack`` command."""

from appstack.cli import main

main()
