#!/bin/bash
HERE=$(cd "$(dirname "$0")" && pwd)
# ghz.sh OUT ARGS... : ghz on core 0 against the frontend's Handle, JSON to run/OUT.json, summary printed
out=$1; shift
taskset -c 0 $HOME/go/bin/ghz --insecure --proto $HERE/src/main/proto/trial.proto --call trial.Frontend.Handle -d '{}' -O json "$@" localhost:7000 > $HERE/run/$out.json
python3 - $HERE/run/$out.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
ok=[x for x in d.get('details',[]) if x.get('status')=='OK']
lat=sorted(x['latency'] for x in ok)
p=lambda q: lat[min(len(lat)-1,int(q*len(lat)))]/1e6 if lat else 0
dur=d['total']/1e9
print(f"{sys.argv[1].split('/')[-1]}: count={d['count']} in {dur:.1f}s rps={d['rps']:.0f} ok/s={len(ok)/dur:.0f} codes={d['statusCodeDistribution']} ok p50={p(.5):.2f}ms p99={p(.99):.2f}ms")
PY
