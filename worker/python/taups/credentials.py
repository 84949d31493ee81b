"""Reading a bearer token from a file, as ps_worker --auth_token_file does.

The file must be readable by its owner only (chmod 600) and hold the token
on its first line (surrounding whitespace ignored). Errors name the file,
never its contents. Pure function; thread-safe.
"""

import os
import stat


def read_token_file(path):
    """The token in `path`. ValueError when the file cannot be read, may be
    read by group or others, or holds no token."""
    path = os.fspath(path)
    try:
        mode = os.stat(path).st_mode
        with open(path, encoding="utf-8") as f:
            first_line = f.readline()
    except OSError as error:
        raise ValueError(f"auth_token_file={path!r}: {error.strerror}") \
            from None
    except UnicodeDecodeError:
        raise ValueError(f"auth_token_file={path!r} is not text") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(f"auth_token_file={path!r} may be read by group or "
                         "others; chmod 600 it")
    token = first_line.strip()
    if not token:
        raise ValueError(f"auth_token_file={path!r} holds no token")
    return token
