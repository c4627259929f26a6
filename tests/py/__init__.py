# tests/py as a package (python3 -m unittest tests.py.test_X): its suites import
# util.py as `util`, as they do under `unittest discover -s tests/py`.
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)
