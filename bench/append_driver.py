# Drives the relay's append script (Scripts.append) against a redis-server and prints the
# Redis CPU per appended event and INFO commandstats (issue 14). Used by scripts/append-cost.sh.
# usage: append_driver.py SOCKET SCRIPT_FILE old|new STREAMS EVENTS [REFRESH_EVERY]
#   old: the 7-argument script before issue 14 (PEXPIRE on every append)
#   new: the 8-argument script (ARGV[8] = refresh TTLs '1'/'0', set on seq 1, the final
#        event and every REFRESH_EVERY-th event: 500 = once per 10 s at 50 tokens/s)
import socket, sys, time, re
sock_path, script_file, style, streams, events = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
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
sha = cmd('SCRIPT', 'LOAD', open(script_file).read())
ids = ['bench%d' % i for i in range(streams)]
for i in ids:
    cmd('HSET', 'relay:{%s}:meta' % i, 'owner', 'u', 'sid', 's', 'instance', 'x', 'state', 'running', 'last_seq', '0', 'created_ms', '1', 'budget', 'b', 'prompt', '3')
    cmd('PEXPIRE', 'relay:{%s}:meta' % i, 300000)
cmd('CONFIG', 'RESETSTAT')
def info():
    t = cmd('INFO', 'ALL')
    return t
def cpu(t):
    u = float(re.search(r'used_cpu_user:([\d.]+)', t).group(1)); sy = float(re.search(r'used_cpu_sys:([\d.]+)', t).group(1))
    return u + sy
c0 = cpu(info())
t0 = time.time()
batch = []
sent = 0
refresh_every = int(sys.argv[6]) if len(sys.argv) > 6 else 1
for seq in range(1, events + 1):
    for i in ids:
        k = 'relay:{%s}:' % i
        json = '{"type":"delta","content":"t=1700000000000000;n=%d;xxxxxxxxxxxxxx"}' % seq
        final = 'done' if seq == events else ''
        keys = [k + 'events', k + 'meta', k + 'live', k + 'text', k + 'offsets']
        if style == 'old':
            args = [seq, json, 200, 300000, final, ' word', '1']
        else:
            refresh = '1' if (seq == 1 or final or seq % refresh_every == 0) else '0'
            args = [seq, json, 200, 300000, final, ' word', '1', refresh]
        batch.append(enc('EVALSHA', sha, 5, *keys, *args))
    if len(batch) >= 64 or seq == events:
        s.sendall(b''.join(batch))
        for _ in batch:
            r = read()
            if isinstance(r, str) and r.startswith(('NOSTREAM', 'FINISHED', 'OUTOF', 'ERR')): print('error', r); sys.exit(1)
        sent += len(batch); batch = []
t = info(); c1 = cpu(t)
n = streams * events
print('events %d, wall %.2fs, redis cpu %.3fs = %.2f us/event' % (n, time.time() - t0, c1 - c0, (c1 - c0) / n * 1e6))
tot = 0
for m in re.finditer(r'cmdstat_(\w+):calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)', t):
    name, calls, usec = m.group(1), int(m.group(2)), int(m.group(3))
    if name in ('info', 'config'): continue
    tot += usec if name == 'evalsha' else 0
    print('  %-10s calls %8d  usec/call %6.2f  usec/event %6.2f' % (name, calls, usec / calls, usec / n))
# verify
k = 'relay:{%s}:' % ids[0]
print('  xlen', cmd('XLEN', k + 'events'), 'pttl', cmd('PTTL', k + 'events'), cmd('PTTL', k + 'text'), cmd('PTTL', k+'offsets'), cmd('PTTL', k+'meta'), 'meta', cmd('HMGET', k + 'meta', 'state', 'last_seq'))
