#!/usr/bin/env python
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "haico_site.settings")
    if sys.argv[1:2] == ["runserver"]:
        # daphne's runserver: the same event loop and socket writes as
        # haico_site.serve, and a stable name per address so a restart
        # releases its predecessor's turns.
        from haico_site.serve import name_instance, use_uvloop, write_at_once

        use_uvloop()
        write_at_once()
        address = next((arg for arg in sys.argv[2:] if not arg.startswith("-")), "127.0.0.1:8000")
        name_instance(f"runserver@{address}")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
