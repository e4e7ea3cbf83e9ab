# Summary of the paired runs in this folder (bench/comm/paired.sh, sizes 8 B..16 MiB):
# per size and MPI, isle_none against mpi_best, the default, and the best
# baseline of the same job (Open MPI: without han, which runs in a second job).
# Usage: python3 docs/results/comm-paired-probe/summarize.py
import json,sys,statistics as st
def load(f):
    d=json.load(open(f)); t={}
    for r in d['rows']: t[(r['mpi'],r['algo'],r['bytes'])]=r['time_us_median']
    return d,t
for tag in ['before','after']:
    files=[f for f in __import__('glob').glob(__import__('os').path.dirname(__file__)+'/%s-*.json'%tag)]
    rat={}; ratd={}; hj={}; idle=[]; commits=set()
    for f in files:
        d,t=load(f); commits.add(d['commit']); idle.append(d['host_idle_pct'])
        for b in d['mpi_best']:
            k=(b['mpi'],b['bytes'])
            rat.setdefault(k,[]).append(b.get('isle_none_speedup',0))
            de=t[(b['mpi'],'mpi_default' if b['mpi']=='openmpi' else 'mpi_auto',b['bytes'])]
            ratd.setdefault(k,[]).append(de/t[(b['mpi'],'isle_none',b['bytes'])])
            if b['mpi']=='openmpi':
                # best of the non-han baselines (same job) vs isle
                same=min(v for (m,a,bb),v in t.items() if m=='openmpi' and bb==b['bytes'] and a.startswith('mpi_') and a!='mpi_han')
                hj.setdefault(k,[]).append(same/t[('openmpi','isle_none',b['bytes'])])
    print(tag, commits, 'idle%', [tuple(x.values()) for x in idle])
    for k in sorted(rat):
        v=rat[k]; vd=ratd[k]
        extra=''
        if k in hj: extra=' | vs best same-job (no han) med %.2f [%.2f-%.2f]'%(st.median(hj[k]),min(hj[k]),max(hj[k]))
        print('  %-7s %9d none/mpi_best med %.2f [%.2f-%.2f]  none/default med %.2f [%.2f-%.2f]%s'%(k[0],k[1],st.median(v),min(v),max(v),st.median(vd),min(vd),max(vd),extra))
