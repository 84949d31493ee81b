import re,statistics as st
rows=[]
import sys,os
D=sys.argv[1]
for b in ['new','old']:
  for i in (1,2,3):
    txt=open(os.path.join(D,f'{b}_{i}.md')).read()
    load=re.search(r'load average at start \(1/5/15 min\): ([\d.]+)',txt).group(1)
    d={}
    for line in txt.splitlines():
      if line.startswith('| ') and '| async' in line:
        c=[x.strip() for x in line.strip('|').split('|')]
        r,w=int(c[0]),int(c[2]); pps=float(c[4]); srv=float(c[13]); cli=float(c[14]); scpu=float(c[12])
        d[(r,w)]=(pps,srv,cli/pps*1e6,scpu,cli,c[15])
    for r in (1,2):
      a,z=d[(r,4)],d[(r,256)]
      rows.append((b,i,r,load,a,z))
print('| build | run.round | load at start | pushes/s W=4 | W=256 | 256 ÷ 4 | client µs/push W=4 | W=256 | 256 ÷ 4 | shard µs/push W=4 | W=256 | 256 ÷ 4 | client cpu-s/s W=4 / 256 | shard cpu-s/s W=4 / 256 |')
print('|:--|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|')
agg={}
for b,i,r,load,a,z in rows:
  pr=z[0]/a[0]; cr=z[2]/a[2]; sr=z[1]/a[1]
  agg.setdefault(b,[]).append((pr,cr,sr,a[2],z[2]))
  print(f'| {b} | {i}.{r} | {load} | {a[0]:.0f} | {z[0]:.0f} | {pr:.2f} | {a[2]:.0f} | {z[2]:.0f} | {cr:.2f} | {a[1]:.0f} | {z[1]:.0f} | {sr:.2f} | {a[4]:.2f} / {z[4]:.2f} | {a[3]:.2f} / {z[3]:.2f} |')
for b,v in agg.items():
  f=lambda k: f'{st.median([x[k] for x in v]):.2f} ({min(x[k] for x in v):.2f}–{max(x[k] for x in v):.2f})'
  print(f'{b}: pushes/s 256÷4 {f(0)}; client us/push 256÷4 {f(1)}; shard us/push 256÷4 {f(2)}; client us/push at 4 median {st.median([x[3] for x in v]):.0f}, at 256 {st.median([x[4] for x in v]):.0f}')
