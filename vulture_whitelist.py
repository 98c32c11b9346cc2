"""Names ``vulture src --min-confidence 80`` reports that are used, each with its reason.

Run ``vulture src vulture_whitelist.py --min-confidence 80``: it must print nothing. This
file is only parsed by vulture, never imported (the bare names below are its way of
marking a name as used). A name that is really unused is removed from the code, not added
here.
"""

# src/linkrisk/cli.py, _root: the --version option's parameter. Typer reads the value in
# the eager callback _version (which prints and exits); the function body never needs it.
version

# src/linkrisk/engine/matching/prefetch.py (prefetch) and vec32.py (_make, _make_min,
# _make_maybe): numba @intrinsic functions take the typing context as their first
# argument, by numba's calling convention, whether they use it or not.
typingctx
