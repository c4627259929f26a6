"""python3 -m py_server --loop asyncio|uvloop|c1m --api streams|protocol [flags]"""
import sys

from . import cli, workers


def main(argv=None):
    cfg = cli.parse(argv)
    return workers.run(cfg)


if __name__ == "__main__":
    sys.exit(main())
