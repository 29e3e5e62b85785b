"""One kv-load report line (stdin) as a markdown table row; argv[1] names the server."""
import re
import sys

server, line = sys.argv[1], sys.stdin.read()


def g(pattern):
    return re.search(pattern, line).group(1)


rj = re.search(r"rejected ([0-9.]+) % \(aqm ([0-9]+), limit ([0-9]+), budget ([0-9]+)\)", line)
print(f"| {g(r'offered ([0-9]+)')} | {server} | {g(r' ok ([0-9]+)')} | {g(r'goodput ([0-9]+)')} "
      f"| {rj[1]} % ({rj[2]}/{rj[3]}/{rj[4]}) | {g(r'p50 ([0-9.]+)')} | {g(r' p99 ([0-9.]+)')} "
      f"| {g(r'p99.9 ([0-9.]+)')} | {g(r'reject p99 ([0-9.]+)')} |")
