// Thin wrappers over Linux calls that Swift cannot reach directly: `prctl` and `syscall` are
// variadic; `accept4` and `pipe2` need _GNU_SOURCE, which Swift's Glibc module
// does not define.
#ifndef CKEYCHAINAGENT_H
#define CKEYCHAINAGENT_H

#include <spawn.h>
#include <stddef.h>
#include <sys/types.h>

/// prctl(PR_SET_DUMPABLE, value): 0 on success, -1 with errno.
int ck_set_dumpable(int value);
/// prctl(PR_GET_DUMPABLE): the flag, or -1 with errno.
int ck_get_dumpable(void);
/// pidfd_open(pid, 0): a pidfd (close-on-exec), or -1 with errno.
int ck_pidfd_open(pid_t pid);
/// Zeroes memory in a way the compiler may not remove.
void ck_explicit_bzero(void *pointer, size_t count);
/// accept4(socket, NULL, NULL, SOCK_CLOEXEC): the connected socket, or -1 with errno.
int ck_accept_cloexec(int socket);
/// pipe2(fds, O_CLOEXEC): 0, or -1 with errno.
int ck_pipe_cloexec(int fds[2]);
/// posix_spawn_file_actions_addclosefrom_np(actions, from) (glibc 2.34): the child closes
/// every descriptor from `from` up. 0, or an error number.
int ck_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int from);
/// The kernel's SO_PEERPIDFD option number (Linux 6.5), absent from older headers.
int ck_so_peerpidfd(void);

#endif
