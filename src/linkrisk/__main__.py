"""``python -m linkrisk``: the same command line as the ``linkrisk`` script."""

from .cli import main

if __name__ == "__main__":
    main()
