"""`python -m gpudoctor`: the same guarded start as the `gpudoctor` command (see gpudoctor_entry)."""

import sys

try:
    from gpudoctor_entry import main
except BaseException as exc:  # stdlib-only: if even it cannot load, the install is broken
    sys.stderr.write(f"gpudoctor: internal error: cannot start ({type(exc).__name__}: {exc})\n")
    sys.exit(2 if sys.argv[1:2] == ["hook"] else 3)

if __name__ == "__main__":
    main()
