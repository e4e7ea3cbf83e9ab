# Pass-through cost at 8 B..4 KiB: isle_none against the library's default
# (mpi_auto / mpi_default) in the same bench_paired job, per run; median,
# p10, p90 over runs. MPICH (res6) also per isle_none's 8 B pick (from
# ISLE_COMM_VERBOSE=1: the first "probed" line is isle_none's communicator)
# against that algorithm called directly.
# Usage: python3 docs/results/comm-passthrough/summarize.py
import glob, json, os, statistics as st
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'raw')
def rows(f):
    t, idle = {}, None
    for l in open(f):
        if l.startswith('{'):
            r = json.loads(l); t[(r['algo'], r['bytes'])] = r
        elif l.startswith('idle_pct'):
            idle = float(l.split()[1])
    return t, idle
def q(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(p * len(v)))]
for res, tag in [('res2', 'mpich-base'), ('res2', 'mpich-newsingle'), ('res2', 'mpich-basebatch'),
                 ('res2', 'mpich-new'), ('res6', 'mpich-basebatch'), ('res6', 'mpich-new'),
                 ('res9', 'mpich-basebatch'), ('res9', 'mpich-new'), ('res9', 'mpich-varB'),
                 ('res7', 'ompi-base'), ('res7', 'ompi-basebatch'), ('res7', 'ompi-new')]:
    files = sorted(glob.glob('%s/%s-%s-*.txt' % (here, res, tag)))
    rat, idle, calls = {}, [], {}
    for f in files:
        t, i = rows(f); idle.append(i)
        de = 'mpi_auto' if ('mpi_auto', 8) in t else 'mpi_default'
        for (a, b), r in t.items():
            if a == 'isle_none':
                rat.setdefault(b, []).append(r['time_us_median'] / t[(de, b)]['time_us_median'])
                calls[b] = r.get('calls_per_iter', 1)
    print('%s %s: %d runs, host idle %% median %.1f' % (res, tag, len(files), st.median(idle)))
    for b in sorted(rat):
        v = rat[b]
        print('   %5d B  isle_none/default  median %.3f  p10 %.3f  p90 %.3f  (calls/iter %d)' % (b, st.median(v), q(v, .1), q(v, .9), calls[b]))
for res, tag in [('res6', 'mpich-basebatch'), ('res6', 'mpich-new'), ('res9', 'mpich-basebatch'),
                 ('res9', 'mpich-new'), ('res9', 'mpich-varB')]:
    agg = {}
    for f in sorted(glob.glob('%s/%s-%s-*.txt' % (here, res, tag))):
        t, _ = rows(f)
        e = open(f + '.err').read()
        pk = e.split('probed 8:')[1].split()[0] if 'probed 8:' in e else '?'
        a = t[('mpi_auto', 8)]['time_us_median']; i = t[('isle_none', 8)]['time_us_median']
        d = t[('mpi_' + ('auto' if pk in ('auto', 'isle') else pk), 8)]['time_us_median']
        agg.setdefault(pk, []).append((i / a, i / d))
    for pk, v in sorted(agg.items()):
        print('   %s %-16s pick %-9s runs %2d  isle_none/mpi_auto median %.3f  isle_none/mpi_%s (same algorithm, direct) median %.3f'
              % (res, tag, pk, len(v), st.median(x[0] for x in v), 'auto' if pk == 'auto' else pk, st.median(x[1] for x in v)))
