"""Errors shared by the service's commands."""


class CliError(Exception):
    """A user error: printed as one line, exit status 2, no traceback."""
