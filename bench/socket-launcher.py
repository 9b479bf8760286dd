# systemd's part in socket activation, for the tests (test/socket-launcher.ts) and the restart bench
# (bench/restart.js): binds and listens on a TCP socket of 127.0.0.1 and never accepts on it; prints
# its port. On stdin, `start <log>` forks a server (argv[1:]) with that socket as fd 3 and LISTEN_FDS,
# LISTEN_PID (the child's own pid, known only after fork: Node's spawn cannot set it) and
# LISTEN_FDNAMES, as systemd does, its output into <log>, and prints its pid; `stop` sends it SIGTERM
# and prints its exit code once it has exited, as `systemctl stop` does. End of stdin ends it.
import os, signal, socket, sys
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen(1024)
print(s.getsockname()[1], flush=True)
child = None
for line in sys.stdin:
    words = line.split()
    if words[0] == 'start':
        log = words[1]
        child = os.fork()
        if child == 0:
            os.dup2(s.fileno(), 3)
            # When the socket is fd 3 already, dup2 does nothing and leaves it close-on-exec.
            os.set_inheritable(3, True)
            out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(out, 1)
            os.dup2(out, 2)
            env = dict(os.environ, LISTEN_FDS='1', LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES='petstore.socket')
            os.execve(sys.argv[1], sys.argv[1:], env)
        print(child, flush=True)
    elif words[0] == 'stop':
        os.kill(child, signal.SIGTERM)
        print(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]), flush=True)
        child = None
if child is not None:
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
