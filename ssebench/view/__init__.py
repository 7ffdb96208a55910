"""``ssebench view``: a local web page over results folders (runs list, run page, comparison).

docs/view.md describes it; ``cli.py`` is the command, ``app.py`` the routes.
"""
