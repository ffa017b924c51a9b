// Starting a process under a chosen pid number, for the tests of pid reuse.
#define _GNU_SOURCE
#include "CKeychainTestSupport.h"

#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

pid_t ck_test_spawn_with_pid(pid_t pid, const char *path, char *const argv[], char *const envp[], int input,
                             int output) {
    struct clone_args args;
    memset(&args, 0, sizeof args);
    args.exit_signal = SIGCHLD;
    args.set_tid = (uint64_t)(uintptr_t)&pid;
    args.set_tid_size = 1;
    long child = syscall(SYS_clone3, &args, sizeof args);
    if (child != 0) return (pid_t)child;  // the parent: the child's pid, or -1 with errno
    // The child, a copy of one thread of a multithreaded process: system calls only, then exec.
    if (dup2(input, 0) < 0 || dup2(output, 1) < 0) _exit(126);
    syscall(SYS_close_range, 3, ~0U, 0);
    execve(path, argv, envp);
    _exit(127);
}
