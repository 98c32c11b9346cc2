"""The commands of ``linkrisk``, one module per concept; :mod:`linkrisk.cli` registers
them on its Typer app (in the order ``linkrisk --help`` lists them)."""
