#!/usr/bin/python3
"""ddp_exposed.py TRACE: from a dtrun Chrome trace (--trace) of a DDP run, per bucket (its launch
order within a step), the mean over ranks and steps >= 2 of when it was launched into backward, how
long its all-reduce took from launch, and how much of that ran after backward ended (exposed).
Used for the table in docs/concepts/data_parallel.md."""
import json, sys, collections
d = json.load(open(sys.argv[1])); ev = d['traceEvents'] if isinstance(d, dict) else d
bwd = {}; ars = collections.defaultdict(list)
for e in ev:
    a = e.get('args', {}); st = a.get('step', -1)
    if e.get('name') == 'backward' and e.get('ph') == 'X':
        bwd[(e['pid'], st)] = (e['ts'], e['ts'] + e['dur'])
    if e.get('name') == 'all-reduce' and e.get('ph') == 'X':
        launch = e['ts'] - a.get('queued_us', 0)
        ars[(e['pid'], st)].append((launch, e['ts'] + e['dur'], a['bytes']))
rows = collections.defaultdict(list); waits = []
for (pid, st), lst in ars.items():
    if st < 2 or (pid, st) not in bwd: continue
    b0, b1 = bwd[(pid, st)]
    lst.sort()
    for i, (l, t1, by) in enumerate(lst):
        rows[i].append((max(0.0, t1 - max(l, b1)) / 1e3, (l - b0) / 1e3, (t1 - l) / 1e3, by, (b1 - b0) / 1e3))
    waits.append(max(0.0, max(t1 for _, t1, _ in lst) - b1) / 1e3)
print("bucket  bytes     launched(ms after bwd start)  all-reduce ms  exposed ms   (backward ms)")
for i in sorted(rows):
    r = rows[i]; n = len(r)
    print(f"{i:4d} {r[0][3]:9d}   {sum(x[1] for x in r)/n:8.1f}   {sum(x[2] for x in r)/n:8.1f}   {sum(x[0] for x in r)/n:8.1f}   ({sum(x[4] for x in r)/n:.1f})")
print(f"exposed all-reduce per step (backward end -> last bucket done), mean: {sum(waits)/len(waits):.1f} ms over {len(waits)} rank-steps")
