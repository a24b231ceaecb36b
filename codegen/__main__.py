"""``python -m codegen``: see ``python -m codegen --help``."""

from codegen.cli import main

if __name__ == "__main__":
    main()
