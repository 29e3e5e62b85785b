import re
import json,sys,collections
from datetime import datetime
d=json.load(open(sys.argv[1]))
rows=collections.defaultdict(collections.Counter)
t0=None
for x in d['details']:
    ts=x['timestamp']
    m=re.match(r'(.*T\d\d:\d\d:\d\d)(\.\d+)?(.*)',ts); frac=(m.group(2) or '.0')[:7]; tz=m.group(3).replace('Z','+00:00')
    t=datetime.fromisoformat(m.group(1)+frac.ljust(7,'0')+tz).timestamp()
    t0=t if t0 is None or t<t0 else t0
    x['_t']=t
for x in d['details']:
    rows[int(x['_t']-t0)][x['status'] if x['status']!='ResourceExhausted' else 'RE:'+x.get('error','').split('desc = ')[-1][:30]]+=1
for s in sorted(rows): print(s, dict(rows[s]))
