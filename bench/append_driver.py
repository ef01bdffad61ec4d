# Drives the relay's per-event append against a redis-server and prints the Redis CPU per
# appended event and INFO commandstats. Used by scripts/append-cost.sh.
# usage: append_driver.py SOCKET SCRIPT_FILE|- old|new|plain|grouped STREAMS EVENTS [REFRESH_EVERY] [DEPTH]
#   old:   the 7-argument Lua append script (PEXPIRE on every append)
#   new:   the 8-argument Lua append script (ARGV[8] = refresh TTLs '1'/'0')
#   plain: no script (StreamAppender + EventLog.append), per event:
#          SETRANGE text, BITFIELD offsets SET u32, XADD NOMKSTREAM MAXLEN 200 <seq>-0,
#          PEXPIRE of the four keys when due, and PUBLISH once the XADD is acknowledged
#          (here: in the next write, as the relay sends it after the reply)
#   grouped: the relay's append (StreamTrim + TextCheckpoint): per event XADD NOMKSTREAM
#          <seq>-0 with MAXLEN 193 only on every 8th seq, PUBLISH once acknowledged; per 25
#          events of a stream one SETRANGE of their text and one BITFIELD with a SET each
#          (+ PEXPIRE of text and offsets)
#   REFRESH_EVERY: TTLs refreshed on seq 1 and every REFRESH_EVERY-th event (500 = once
#          per 10 s at 50 tokens/s); DEPTH: events per write (default 64)
#   env PUBLISH_OWN_WRITE=1 (plain): the publishes go in a write of their own (a relay
#          without batching of commands per write, one stream at 50 tokens/s)
import socket, sys, time, re, os
sock_path, script_file, style, streams, events = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
refresh_every = int(sys.argv[6]) if len(sys.argv) > 6 else 1
depth = int(sys.argv[7]) if len(sys.argv) > 7 else 64
s = socket.socket(socket.AF_UNIX); s.connect(sock_path)
f = s.makefile('rb')
def enc(*a):
    out = [b'*%d\r\n' % len(a)]
    for x in a:
        x = x if isinstance(x, bytes) else str(x).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(x), x))
    return b''.join(out)
def read():
    l = f.readline()
    t = l[:1]
    if t in b'+-:': return l[1:-2].decode()
    if t == b'$':
        n = int(l[1:]);
        if n < 0: return None
        d = f.read(n + 2); return d[:-2].decode()
    if t == b'*':
        n = int(l[1:]); return [read() for _ in range(n)] if n >= 0 else None
def cmd(*a):
    s.sendall(enc(*a)); return read()
cmd('FLUSHALL'); cmd('CONFIG', 'RESETSTAT')
sha = cmd('SCRIPT', 'LOAD', open(script_file).read()) if style not in ('plain', 'grouped') else None
ids = ['bench%d' % i for i in range(streams)]
for i in ids:
    k = 'relay:{%s}:' % i
    cmd('HSET', k + 'meta', 'owner', 'u', 'sid', 's', 'instance', 'x', 'state', 'running', 'last_seq', '0', 'created_ms', '1', 'budget', 'b', 'prompt', '3')
    cmd('PEXPIRE', k + 'meta', 300000)
    if style in ('plain', 'grouped'):  # Scripts.create: the empty stream
        cmd('XADD', k + 'events', 'MAXLEN', 0, '0-1', 'e', '')
        cmd('PEXPIRE', k + 'events', 300000)
cmd('CONFIG', 'RESETSTAT')
def cpu(t):
    u = float(re.search(r'used_cpu_user:([\d.]+)', t).group(1)); sy = float(re.search(r'used_cpu_sys:([\d.]+)', t).group(1))
    return u + sy
c0 = cpu(cmd('INFO', 'ALL'))
t0 = time.time()
batch = []; nrep = 0; pending_pub = []; n_ev = 0
offs = {i: 0 for i in ids}
def flush():
    global batch, nrep, pending_pub
    s.sendall(b''.join(batch))
    pubs = []
    for kind in kinds:
        r = read()
        if isinstance(r, str) and r.startswith(('NOSTREAM', 'FINISHED', 'OUTOF', 'ERR')): print('error', r); sys.exit(1)
        if kind is not None: pubs.append(kind)
    batch = []; pending_pub = pubs
kinds = []
for seq in range(1, events + 1):
    for i in ids:
        k = 'relay:{%s}:' % i
        json = '{"type":"delta","content":"t=1700000000000000;n=%d;xxxxxxxxxxxxxx"}' % seq
        final = 'done' if seq == events and style not in ('plain', 'grouped') else ''
        refresh = seq == 1 or final or seq % refresh_every == 0
        if style == 'grouped':
            offs[i] += 5
            if seq % 25 == 0:
                batch.append(enc('SETRANGE', k + 'text', offs[i] - 125, ' word' * 25)); kinds.append(None)
                bf = ['BITFIELD', k + 'offsets']
                for j in range(25): bf += ['SET', 'u32', '#%d' % (seq - 24 + j), offs[i] - 5 * (24 - j)]
                batch.append(enc(*bf)); kinds.append(None)
                batch.append(enc('PEXPIRE', k + 'text', 300000)); kinds.append(None)
                batch.append(enc('PEXPIRE', k + 'offsets', 300000)); kinds.append(None)
            trim = ['MAXLEN', 193] if seq % 8 == 0 else []
            batch.append(enc('XADD', k + 'events', 'NOMKSTREAM', *trim, '%d-0' % seq, 'e', json)); kinds.append((k, seq, json))
            if refresh:
                for key in ('events', 'meta', 'text', 'offsets'):
                    batch.append(enc('PEXPIRE', k + key, 300000)); kinds.append(None)
        elif style == 'plain':
            start = offs[i]; offs[i] += 5
            batch.append(enc('SETRANGE', k + 'text', start, ' word')); kinds.append(None)
            batch.append(enc('BITFIELD', k + 'offsets', 'SET', 'u32', '#%d' % seq, offs[i])); kinds.append(None)
            batch.append(enc('XADD', k + 'events', 'NOMKSTREAM', 'MAXLEN', 200, '%d-0' % seq, 'e', json)); kinds.append((k, seq, json))
            if refresh:
                for key in ('events', 'meta', 'text', 'offsets'):
                    batch.append(enc('PEXPIRE', k + key, 300000)); kinds.append(None)
        else:
            keys = [k + 'events', k + 'meta', k + 'live', k + 'text', k + 'offsets']
            args = [seq, json, 200, 300000, final, ' word', '1'] + ([] if style == 'old' else ['1' if refresh else '0'])
            batch.append(enc('EVALSHA', sha, 5, *keys, *args)); kinds.append(None)
        n_ev += 1
        if n_ev % depth == 0:
            if os.environ.get('PUBLISH_OWN_WRITE') == '1' and pending_pub:
                saved, saved_kinds = batch, kinds
                batch = [enc('PUBLISH', pk + 'live', '%d %s' % (ps, pj)) for (pk, ps, pj) in pending_pub]
                kinds = [None] * len(batch)
                flush(); batch, kinds = saved, saved_kinds
            # the previous write's acknowledged events are published with this one
            for (pk, ps, pj) in pending_pub:
                batch.append(enc('PUBLISH', pk + 'live', '%d %s' % (ps, pj))); kinds.append(None)
            flush(); kinds = []
while batch or pending_pub:
    for (pk, ps, pj) in pending_pub:
        batch.append(enc('PUBLISH', pk + 'live', '%d %s' % (ps, pj))); kinds.append(None)
    flush(); kinds = []
t = cmd('INFO', 'ALL'); c1 = cpu(t)
n = streams * events
print('%s%s depth %d: events %d, wall %.2fs, redis cpu %.3fs = %.2f us/event' % (style, ' (publish in its own write)' if os.environ.get('PUBLISH_OWN_WRITE') == '1' else '', depth, n, time.time() - t0, c1 - c0, (c1 - c0) / n * 1e6))
for m in re.finditer(r'cmdstat_(\w+):calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)', t):
    name, calls, usec = m.group(1), int(m.group(2)), int(m.group(3))
    if name in ('info', 'config'): continue
    print('  %-10s calls %8d  usec/call %6.2f  usec/event %6.2f' % (name, calls, usec / calls, usec / n))
k = 'relay:{%s}:' % ids[0]
print('  xlen', cmd('XLEN', k + 'events'), 'pttl', cmd('PTTL', k + 'events'), cmd('PTTL', k + 'text'), cmd('PTTL', k+'offsets'), cmd('PTTL', k+'meta'), 'meta', cmd('HMGET', k + 'meta', 'state', 'last_seq'))
