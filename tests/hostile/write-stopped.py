#!/usr/bin/env python3
"""write-stopped.py MARK CMD ARGS...: run CMD with SIGINT at its default action
(a non-interactive shell starts background jobs with it ignored), stop it
(SIGSTOP) as soon as a temporary file .out.gguf.* appears in the current
folder, then write CMD's pid to MARK. The test signals the stopped process and
continues it; this script waits for it and exits as a shell reports a child:
its status, or 128 + the signal that ended it. Stopping the writer at its
temporary file makes the test independent of how fast the machine quantizes."""
import os, signal, sys, time

mark, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execv(argv[0], argv)
deadline = time.monotonic() + 30
stopped = False
while time.monotonic() < deadline:
    if any(n.startswith(".out.gguf.") for n in os.listdir(".")):
        os.kill(pid, signal.SIGSTOP)
        stopped = True
        break
    done, _ = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.0005)
with open(mark + ".tmp", "w") as f:
    f.write(str(pid) if stopped else "none")
os.rename(mark + ".tmp", mark)
if not stopped:
    sys.exit(99)
while True:
    _, status = os.waitpid(pid, os.WUNTRACED | os.WCONTINUED)
    if os.WIFEXITED(status):
        sys.exit(os.WEXITSTATUS(status))
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
