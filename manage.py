#!/usr/bin/env python
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "haico_site.settings")
    if sys.argv[1:2] == ["runserver"]:
        # daphne's runserver: the same event loop as haico_site.serve.
        from haico_site.serve import use_uvloop

        use_uvloop()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
