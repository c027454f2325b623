#!/usr/bin/env python3
"""The budget's cost table (`row_cost` in lib/src/convert/budget.c; docs/recipes.md, "Budgets",
*Measuring*), measured again: what measuring one row costs each candidate, in units of the
cheapest encoder's row (grouped_absmax to q8_g32_fp16), with the real encoders at the CPU's
default kernel level (bench/README.md, "The budget's measuring pass", says how to refresh the
table from it).  Not part of make test; no test reads its figures.

On a generated one-layer checkpoint (ninfer-gen-checkpoint, Llama-shaped, BF16; 1024/2816 by
default) with an imatrix (tests/cli/gen_imatrix.py), for every candidate of a default budget
(the `budget.candidates` of a --dry-run) it runs two dry runs whose budget has that candidate
alone, on the seven matrices: one measuring every row (`sample_rows: 0`) and one measuring a
single row a tensor (`sample_rows: 1`).  Their difference in CPU time (user + sys of the child,
getrusage) is the cost of measuring all the rows but one of each matrix -- reading, encoding,
decoding and the weighted error -- without the fixed costs (the checkpoint's header, a grid's
tables, nvfp4's pass for its global scale).  Each figure is the median of --repeat runs.

usage: row_costs.py BIN_DIR [--hidden H] [--intermediate I] [--repeat N] [--only SUBSTRING]"""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'cli'))
import gen_imatrix  # noqa: E402  (the CLI tests' imatrix writer)

BASE = ('grouped_absmax', 'q8_g32_fp16')  # the unit: 1


def cpu_of(argv, env=None):
    """CPU seconds (user + sys) of one run of argv, its exit status and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return t, p.returncode, p.stderr


def recipe(path, budget):
    with open(path, 'w') as f:
        f.write('recipe: 1\nsources: {base: ., imatrix: imatrix.gguf}\ndefaults: {format: fp32}\n')
        f.write('budget: {%s}\n' % budget)
        f.write('rules:\n  - {match: "model.layers.*", when: {rank: 2}, format: budget}\n')


def main(argv):
    args = {'--hidden': '1024', '--intermediate': '2816', '--repeat': '3', '--only': ''}
    if len(argv) < 2 or argv[1] in ('-h', '--help'):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    bin_dir = argv[1]
    i = 2
    while i < len(argv):
        if argv[i] not in args or i + 1 >= len(argv):
            print('row_costs.py: unknown or incomplete option %s' % argv[i], file=sys.stderr)
            return 2
        args[argv[i]] = argv[i + 1]
        i += 2
    conv = os.path.join(bin_dir, 'ninfer-convert')
    hidden, inter, repeat = int(args['--hidden']), int(args['--intermediate']), int(args['--repeat'])
    tmp = tempfile.mkdtemp(prefix='ninfer-rowcost-')
    try:
        ck = os.path.join(tmp, 'ck')
        subprocess.run([os.path.join(bin_dir, 'ninfer-gen-checkpoint'), ck, '--hidden', str(hidden), '--kv-hidden',
                        str(hidden), '--intermediate', str(inter), '--layers', '1', '--vocab', '8'],
                       check=True, stdout=subprocess.DEVNULL)
        gen_imatrix.main(os.path.join(ck, 'imatrix.gguf'), hidden, inter, 1, 7, 3.0)
        r = os.path.join(ck, 'r.yaml')
        out = os.path.join(tmp, 'o.ninfer')
        run = [conv, '-r', r, '-o', out, '--dry-run', '--threads', '1', '--progress=never', '-q']
        recipe(r, 'bits_per_weight: 6, imatrix: imatrix')
        p = subprocess.run(run[:-1] + ['--json'], check=True, capture_output=True, text=True)
        cands = [(c['method'], c['format']) for c in json.loads(p.stdout)['budget']['candidates']]
        rows = 4 * hidden + 2 * inter + hidden  # q, k, v, o, gate, up, down
        print('machine: %s; load average %s' % (cpu_name(), open('/proc/loadavg').read().split()[0]))
        print('checkpoint: one layer, hidden %d, intermediate %d (%d rows in the seven matrices); imatrix; '
              '1 thread; median of %d; NINFER_SIMD=%s' % (hidden, inter, rows, repeat,
                                                         os.environ.get('NINFER_SIMD', '(default)')))
        figures = {}
        for method, fmt in cands:
            if args['--only'] and args['--only'] not in fmt + ' ' + method and (method, fmt) != BASE:
                continue
            one = 'formats: [%s], methods: [%s], imatrix: imatrix' % (fmt, method)
            recipe(r, 'bytes: 1000000000000000, sample_rows: 0, ' + one)
            _, st, err = cpu_of(run)
            try:  # "... the budget: A to B bytes (...)": B, the candidate's size
                cap = err.split(' to ')[-1].split(' bytes')[0]
                int(cap)
            except ValueError:
                print('%-14s %-20s not measured: %s' % (method, fmt, err.strip()), file=sys.stderr)
                continue
            t = {}
            for s in ('0', '1'):
                recipe(r, 'bytes: %s, sample_rows: %s, %s' % (cap, s, one))
                got = []
                for _ in range(repeat):
                    sec, st, err = cpu_of(run)
                    if st != 0:
                        raise SystemExit('row_costs.py: %s %s: %s' % (method, fmt, err.strip()))
                    got.append(sec)
                t[s] = statistics.median(got)
            figures[(method, fmt)] = (t['0'], t['1'], max(t['0'] - t['1'], 1e-9) / (rows - 7))
        base = figures[BASE][2]
        print('%-15s %-20s %9s %9s %10s %7s %5s' % ('method', 'format', 'all s', '1 row s', 'us a row', 'ratio',
                                                     'cost'))
        for (method, fmt), (t0, t1, per) in sorted(figures.items(), key=lambda kv: kv[1][2]):
            print('%-15s %-20s %9.3f %9.3f %10.2f %7.2f %5d' % (method, fmt, t0, t1, per * 1e6, per / base,
                                                             max(1, round(per / base))))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def cpu_name():
    try:
        for line in open('/proc/cpuinfo'):
            if line.startswith('model name'):
                return '%s, %d CPUs' % (line.split(':', 1)[1].strip(), os.cpu_count())
    except OSError:
        pass
    return 'unknown CPU'


if __name__ == '__main__':
    sys.exit(main(sys.argv))
