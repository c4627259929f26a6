"""c1m_root.py - the repository root on sys.path (after everything else), so
that harness/lib's modules import the rules they share with the C programs
and py_server from their one Python home, py_server/cli_rules.py:

    import c1m_root  # noqa: F401
    from py_server import cli_rules
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.append(ROOT)
