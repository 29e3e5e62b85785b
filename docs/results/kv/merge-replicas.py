# Merges a kv-var-replicas sweep's variants into one results.json, one "scheme" per variant, so
# overload-report draws them on one chart: python3 merge-replicas.py SWEEP_DIR OUT_DIR
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
names = {"replicas-1_client_timeout_us-110": "protego, 1 server",
         "replicas-2_client_timeout_us-110": "protego, 2 replicas",
         "replicas-2_client_timeout_us-10": "protego, 2 replicas, 10 us client timeout"}
merged = None
for d, label in names.items():
    r = json.load(open(os.path.join(src, d, "results.json")))
    for rec in r["records"]:
        rec["scheme"] = label
    if merged is None:
        merged = r
    else:
        merged["records"] += r["records"]
os.makedirs(out, exist_ok=True)
json.dump(merged, open(os.path.join(out, "results.json"), "w"), indent=1)
