"""The settings of the browser tests' servers: the site's own, read from the
environment as a deployment's are, with one change. Passwords are hashed
with a fast hasher, as in the rest of the suite (tests/conftest.py): the
site's PBKDF2 is slow on purpose, about 0.4 s of CPU per sign-up or log-in,
and nearly every browser test signs someone up. What the tests check of
signing up and in (the forms, the session, the refusals) does not depend
on how the password is hashed."""

from haico_site.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
