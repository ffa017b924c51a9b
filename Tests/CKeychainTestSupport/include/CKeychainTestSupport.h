#ifndef CKEYCHAINTESTSUPPORT_H
#define CKEYCHAINTESTSUPPORT_H

#include <sys/types.h>

/// 1 when the test process's environment was fixed before main: KEYCHAIN_AGENT=off, so that
/// nothing in the test process reaches (or starts) the user's session agent unless a test
/// hands its task an agent's keychain; the user's KEYCHAIN_* settings and session bus cleared;
/// and HOME, the XDG directories and XDG_RUNTIME_DIR in a directory of the process's own
/// (removed at exit), so that no test sees the user's keychains, device key or agent.
int ck_test_environment_applied(void);

/// Remembers the test agent: `keeper` is the pid of the shell that started it and kills it (by
/// its pid) when `lifeline`, the write end of a pipe on the shell's standard input, closes;
/// `agent` is the agent's pid. At exit the lifeline is closed and the shell reaped (after 5 s
/// both are killed), and `directory` is removed. When the test process dies otherwise (a crash,
/// SIGKILL), the kernel closes the lifeline and the shell still stops the agent.
void ck_test_agent_stop_at_exit(pid_t keeper, pid_t agent, int lifeline, const char *directory);

/// Starts `path` with `argv` and `envp` as process number `pid` (clone3 with `set_tid`, which
/// needs CAP_SYS_ADMIN in the pid namespace), `input` as its standard input and `output` as its
/// standard output, no other descriptor open. Returns the pid, or -1 with errno (EEXIST: the
/// number is taken; EPERM: not allowed here).
pid_t ck_test_spawn_with_pid(pid_t pid, const char *path, char *const argv[], char *const envp[], int input,
                             int output);

#endif
