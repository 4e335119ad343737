#!/usr/bin/env python3
# gen.py ROOT: 1,000,000 files in 71,429 directories nested up to 5 deep, in random order (a
# scattered layout on disk), for the by-hand restart and rollback runs of docs/benchmarks.md.
import os, random, sys
root = sys.argv[1]
random.seed(3)
n_files, n_dirs = 1_000_000, 71_429
dirs = ['']
for i in range(n_dirs):
    parent = dirs[random.randrange(len(dirs))] if len(dirs) > 1 and random.random() < 0.7 else ''
    if parent.count('/') >= 4:
        parent = ''
    d = (parent + '/' if parent else '') + f'd{i}'
    dirs.append(d)
    os.makedirs(os.path.join(root, d), exist_ok=True)
words = b"fn let mut struct impl pub use mod self match return loop while for in if else ".split()
for i in range(n_files):
    d = dirs[1 + i % n_dirs]
    size = min(int(random.lognormvariate(5.5, 1.0)), 20000)
    line = b" ".join(random.choice(words) for _ in range(12)) + b"\n"
    body = (line * (size // len(line) + 1))[:size]
    with open(os.path.join(root, d, f'f{i}.rs'), 'wb') as f:
        f.write(body)
