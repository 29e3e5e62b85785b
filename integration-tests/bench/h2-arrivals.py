#!/usr/bin/env python3
"""How calls reach a gRPC server on the wire: TCP segments, the HTTP/2 frames that open and
half-close each call, and how they bunch, read from a packet capture.

    tcpdump -i lo -s 96 -w cap.pcap tcp &     # beside a run, e.g. ./spillway grpc-demo ...
    integration-tests/bench/h2-arrivals.py cap.pcap PORT [--last S] [--skip S]

PORT is the server's port (the run's server logs do not name it; the busiest destination ports
are listed when PORT is 0). The window is the S seconds (--last, default 4) that end --skip
seconds (default 2: a level's drain) before the last segment sent to PORT. A snap length of 96
keeps each segment's first 44 bytes of TCP payload: only the frames that start within them are
read, so where a client packs several calls into a segment most of them are not seen; the
segment counts are exact.
"""
import argparse
import collections
import statistics
import struct
import sys


def segments(path):
    """(time, source port, destination port, payload length, payload prefix) of each TCP segment
    that carries data, from a classic pcap of Ethernet or Linux cooked frames."""
    with open(path, 'rb') as f:
        head = f.read(24)
        magic = struct.unpack('<I', head[:4])[0]
        if magic not in (0xa1b2c3d4, 0xa1b23c4d):
            sys.exit('not a little-endian classic pcap: ' + path)
        scale = 1e9 if magic == 0xa1b23c4d else 1e6
        link = struct.unpack('<I', head[20:24])[0]
        offset = {1: 14, 113: 16}.get(link)
        if offset is None:
            sys.exit('link type %d: expected Ethernet (1) or Linux cooked (113)' % link)
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, incl, _ = struct.unpack('<IIII', rec)
            data = f.read(incl)
            ip = data[offset:]
            if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
                continue
            ihl = (ip[0] & 15) * 4
            total = struct.unpack('>H', ip[2:4])[0]
            tcp = ip[ihl:]
            if len(tcp) < 13:
                continue
            sport, dport = struct.unpack('>HH', tcp[:4])
            thl = (tcp[12] >> 4) * 4
            length = total - ihl - thl
            if length > 0:
                yield sec + frac / scale, sport, dport, length, tcp[thl:]


def frames(prefix):
    """(type, flags, stream) of each HTTP/2 frame whose 9-byte header lies within prefix."""
    i = 0
    while i + 9 <= len(prefix):
        length = int.from_bytes(prefix[i:i + 3], 'big')
        yield prefix[i + 3], prefix[i + 4], int.from_bytes(prefix[i + 5:i + 9], 'big') & 0x7fffffff
        i += 9 + length


def pct(values, p):
    return values[min(len(values) - 1, int(len(values) * p))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('pcap')
    ap.add_argument('port', type=int)
    ap.add_argument('--last', type=float, default=4.0)
    ap.add_argument('--skip', type=float, default=2.0)
    a = ap.parse_args()
    segs = list(segments(a.pcap))
    if a.port == 0:
        busiest = collections.Counter(d for _, _, d, _, _ in segs).most_common(6)
        print('busiest destination ports (segments):', busiest)
        return
    to_server = [s for s in segs if s[2] == a.port]
    if not to_server:
        sys.exit('no segment to port %d' % a.port)
    end = to_server[-1][0] - a.skip
    window = [s for s in to_server if end - a.last <= s[0] < end]
    per_ms = collections.Counter(int(t * 1000) for t, *_ in window)
    first = int((end - a.last) * 1000)
    counts = [per_ms.get(first + i, 0) for i in range(int(a.last * 1000))]
    opened = {}
    calls = 0
    with_end = 0
    gaps = []
    for t, sport, _, _, prefix in window:
        for kind, flags, stream in frames(prefix):
            key = (sport, stream)
            if kind == 1:  # HEADERS: a call opens
                calls += 1
                opened[key] = t
                if flags & 1:
                    with_end += 1
            elif kind == 0 and flags & 1 and key in opened:  # DATA with END_STREAM
                gap = t - opened.pop(key)
                if gap > 0:
                    gaps.append(gap * 1e6)
                else:
                    with_end += 1
    gaps.sort()
    print('port %d, %.1f s: %d segments with data (%.2f a ms, none in %.1f %% of ms, '
          'var/mean %.1f)' % (a.port, a.last, len(window), statistics.mean(counts),
                              100 * counts.count(0) / len(counts),
                              statistics.pvariance(counts) / max(1e-9, statistics.mean(counts))))
    print('calls whose HEADERS frame is seen: %d; half-closed in the same segment %d, later %d%s'
          % (calls, with_end, len(gaps), '' if not gaps else
             ' (after us p50 %.0f p90 %.0f p99 %.0f)' % (pct(gaps, 0.5), pct(gaps, 0.9),
                                                        pct(gaps, 0.99))))


if __name__ == '__main__':
    main()
