"""``python -m linkrisk.cli``: the same command line as the ``linkrisk`` script."""

from linkrisk.cli import main

if __name__ == "__main__":
    main()
