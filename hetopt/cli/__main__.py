"""``python -m hetopt.cli``: the same as the ``hetopt`` command."""

from . import main

if __name__ == "__main__":  # pragma: no cover
    main()
