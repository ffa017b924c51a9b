"""A person at a terminal: runs a program on a new pseudo-terminal and types answers when
the screen shows what they wait for.

Usage: terminal.py PROGRAM [ARGUMENT...], with standard input holding lines "WAIT<TAB>TYPE":
wait (60 s at most) until the screen has shown WAIT since the last answer and the program has
turned echo off (2 s at most: a prompt for a secret turns it off, and flushes what was typed
before it), then type TYPE and Enter. Everything the terminal showed is written to standard output at the end, and
the exit status is the program's (3 when something awaited never appeared).
"""
import os
import pty
import select
import sys
import termios
import time

steps = [line.rstrip("\n").split("\t", 1) for line in sys.stdin if line.strip()]
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])

screen = b""


def read(timeout):
    global screen
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        return True
    try:
        data = os.read(fd, 65536)
    except OSError:
        return False
    if not data:
        return False
    screen += data
    return True


status = 0
for wait, answer in steps:
    start = len(screen)
    end = time.time() + 60
    while wait.encode() not in screen[start:] and time.time() < end:
        if not read(0.2):
            break
    if wait.encode() not in screen[start:]:
        status = 3
        break
    end = time.time() + 2
    while time.time() < end:
        try:
            if not termios.tcgetattr(fd)[3] & termios.ECHO:
                break
        except termios.error:
            break
        read(0.05)
    time.sleep(0.3)
    os.write(fd, answer.encode() + b"\r")

end = time.time() + 60
while time.time() < end and read(0.2):
    pass
try:
    _, code = os.waitpid(pid, 0)
    exit_code = os.waitstatus_to_exitcode(code)
except ChildProcessError:
    exit_code = 0
sys.stdout.write(screen.decode("utf-8", "replace"))
sys.exit(status or exit_code)
