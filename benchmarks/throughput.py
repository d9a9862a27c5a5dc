"""Throughput table: jaxsoc vs minigrid (and xminigrid when installed). Same as ``jaxsoc bench``.

python benchmarks/throughput.py --envs MiniGrid-DoorKey-8x8-v0 --num-envs 1024 65536 --steps 1000
"""

import sys

from jaxsoc.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
