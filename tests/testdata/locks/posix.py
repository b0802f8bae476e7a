# Record locks (fcntl, lockf, OFD) and flock on one data file, by two
# processes: A (this one) and B (a child that runs the commands A sends it
# over a pipe). Between them the file changes kernel inode: A's writer
# opens behind A's own cached read (a new incarnation), and a
# key.separator change makes a new generation, which B opens. Each step
# prints "WHO STEP: RESULT" (RESULT: ok, None, an errno name, or the
# conflicting lock F_GETLK reports); TestMountLocksPosix compares.
#
# usage: posix.py DATA CONFIG NR_FCNTL
import errno, fcntl, os, struct, subprocess, sys, threading

data, config, nr_fcntl = sys.argv[1], sys.argv[2], sys.argv[3]
FL = 'hhqqi4x'  # struct flock (64-bit Linux)


def setlk(fd, typ, start, length, wait=False, cmd=None):
    cmd = cmd or (fcntl.F_SETLKW if wait else fcntl.F_SETLK)
    fcntl.fcntl(fd, cmd, struct.pack(FL, typ, os.SEEK_SET, start, length, 0))
    return 'ok'


def getlk(fd, typ, start, length, cmd=fcntl.F_GETLK):
    t, _, s, l, pid = struct.unpack(FL, fcntl.fcntl(fd, cmd, struct.pack(FL, typ, os.SEEK_SET, start, length, 0)))
    if t == fcntl.F_UNLCK:
        return 'unlocked'
    who = {A: 'A', B: 'B'}.get(pid, 'pid %d' % pid)
    return '%s [%d,+%d) by %s' % ('R' if t == fcntl.F_RDLCK else 'W', s, l, who)


def flock(fd, op):
    fcntl.flock(fd, op)
    return 'ok'


def run(f):
    try:
        return f()
    except OSError as e:
        return errno.errorcode[e.errno]


A, B = os.getpid(), 0
c2p, p2c = os.pipe(), os.pipe()
B = os.fork()
if B == 0:
    B = os.getpid()
    os.close(p2c[1])
    os.close(c2p[0])
    rd, wr = os.fdopen(p2c[0]), os.fdopen(c2p[1], 'w')
    env, bg = globals(), {}
    for line in rd:
        line = line.rstrip('\n')
        if line.startswith('bg '):  # in a thread of B; "join" waits for it
            bg['t'] = threading.Thread(target=lambda: bg.__setitem__('r', run(lambda: eval(line[3:], env))))
            bg['t'].start()
            res = 'started'
        elif line == 'join':
            bg['t'].join()
            res = bg['r']
        elif line.startswith('let '):
            res = run(lambda: exec(line[4:], env))
        else:
            res = run(lambda: eval(line, env))
        wr.write('%s\n' % (res,))
        wr.flush()
    os._exit(0)
os.close(p2c[0])
os.close(c2p[1])
to_b, from_b = os.fdopen(p2c[1], 'w'), os.fdopen(c2p[0])


def step(who, what):
    if who == 'B':
        to_b.write(what + '\n')
        to_b.flush()
        res = from_b.readline().rstrip('\n')
    else:
        res = run(lambda: eval(what))
    print('%s %s: %s' % (who, what, res), flush=True)


def blocked_in_fcntl(pid):
    # A thread of pid waits in fcntl(2): its SETLKW is with the daemon.
    for t in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/syscall' % (pid, t)) as f:
                if f.read().split(' ')[0] == nr_fcntl:
                    return True
        except FileNotFoundError:
            pass
    return False


# A: a cached reader with a read lock on [0,10), then a writer behind it,
# which the daemon gives a new kernel inode, with a write lock on [20,30).
fr = os.open(data, os.O_RDONLY)
fw = os.open(data, os.O_WRONLY | os.O_APPEND)
step('A', 'setlk(fr, fcntl.F_RDLCK, 0, 10)')
step('A', 'setlk(fw, fcntl.F_WRLCK, 20, 10)')
# Another writer, and a new generation; then B opens data.
subprocess.run(['bash', '-c', 'echo k:x >> "$1" && echo key.separator=: > "$2"', 'sh', data, config], check=True)
step('B', 'let fb = os.open(data, os.O_RDWR | os.O_APPEND)')
step('B', 'getlk(fb, fcntl.F_WRLCK, 0, 0)')
step('B', 'getlk(fb, fcntl.F_RDLCK, 0, 0)')
step('B', 'setlk(fb, fcntl.F_WRLCK, 5, 1)')
step('B', 'setlk(fb, fcntl.F_RDLCK, 0, 10)')
step('B', 'setlk(fb, fcntl.F_WRLCK, 10, 10)')
step('B', 'setlk(fb, fcntl.F_RDLCK, 25, 1)')
step('B', 'fcntl.lockf(fb, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 29)')
# A cuts [3,5) out of its read lock, and turns its write lock into a read
# lock, through the reader: any descriptor of the file will do.
step('A', 'setlk(fr, fcntl.F_UNLCK, 3, 2)')
step('B', 'getlk(fb, fcntl.F_WRLCK, 3, 2)')
step('B', 'getlk(fb, fcntl.F_WRLCK, 2, 1)')
step('B', 'getlk(fb, fcntl.F_WRLCK, 6, 100)')
step('A', 'setlk(fr, fcntl.F_RDLCK, 20, 10)')
step('B', 'setlk(fb, fcntl.F_RDLCK, 25, 1)')
step('B', 'getlk(fb, fcntl.F_WRLCK, 25, 1)')
# B waits for A's [0,3). A waiting for B's [10,20) would deadlock.
step('B', 'bg setlk(fb, fcntl.F_WRLCK, 0, 1, wait=True)')
ev = threading.Event()
for _ in range(6000):
    if blocked_in_fcntl(B):
        break
    ev.wait(0.005)
else:
    # Its lock was granted: the rest would wait forever.
    print('B never waited', flush=True)
    os.kill(B, 9)
    sys.exit(1)
step('A', 'setlk(fw, fcntl.F_WRLCK, 10, 1, wait=True)')
step('A', 'setlk(fr, fcntl.F_UNLCK, 0, 3)')
step('B', 'join')
step('A', 'getlk(fr, fcntl.F_WRLCK, 0, 1)')
# A closes another descriptor of data: all its locks on the file go, also
# those taken through the descriptors it keeps.
step('A', 'os.close(os.open(data, os.O_RDONLY))')
step('B', 'getlk(fb, fcntl.F_WRLCK, 0, 0)')
step('B', 'setlk(fb, fcntl.F_WRLCK, 0, 0)')
step('A', 'setlk(fr, fcntl.F_RDLCK, 40, 1)')
step('B', 'os.close(fb)')
step('A', 'setlk(fr, fcntl.F_RDLCK, 40, 1)')
# An open file description lock goes when its description closes, not
# when its process closes another descriptor of the file.
step('B', 'let fo = os.open(data, os.O_RDONLY)')
step('B', 'setlk(fo, fcntl.F_RDLCK, 100, 10, cmd=fcntl.F_OFD_SETLK)')
step('B', 'os.close(os.open(data, os.O_RDONLY))')
step('A', 'setlk(fw, fcntl.F_WRLCK, 105, 1)')
step('B', 'os.close(fo)')
step('A', 'setlk(fw, fcntl.F_WRLCK, 105, 1)')
# flock: one lock per open file description, whatever the kernel inode.
step('B', 'let fl = os.open(data, os.O_RDONLY)')
step('A', 'flock(fr, fcntl.LOCK_SH)')
step('B', 'flock(fl, fcntl.LOCK_SH | fcntl.LOCK_NB)')
# A conversion that fails has dropped the lock first, as Linux does.
step('B', 'flock(fl, fcntl.LOCK_EX | fcntl.LOCK_NB)')
step('A', 'flock(fw, fcntl.LOCK_EX | fcntl.LOCK_NB)')
step('A', 'flock(fr, fcntl.LOCK_EX | fcntl.LOCK_NB)')
# Closing a dup of the description keeps its lock; closing the last one
# releases it.
step('A', 'os.close(os.dup(fr))')
step('B', 'flock(fl, fcntl.LOCK_SH | fcntl.LOCK_NB)')
step('A', 'os.close(fr)')
step('B', 'flock(fl, fcntl.LOCK_SH | fcntl.LOCK_NB)')
step('B', 'os.close(fl)')
# A lock released by close(2) is free when close returns.
busy = 0
for _ in range(100):
    fd = os.open(data, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.close(fd)
    fd = os.open(data, os.O_RDONLY)
    if run(lambda: flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)) != 'ok':
        busy += 1
    os.close(fd)
print('A close, then LOCK_NB, 100 times: %d busy' % busy)
to_b.close()
os.waitpid(B, 0)
