// Thin wrappers over Linux calls that Swift cannot reach directly: `prctl` and `syscall` are
// variadic; `accept4`, `pipe2` and the scheduler's CPU calls need _GNU_SOURCE, which Swift's
// Glibc module does not define.
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
/// Zeroes the `bytes` of the calling thread's stack below the caller's frame, where the calls
/// it made before left their locals (decrypted secrets among them). Swift cannot address its
/// own stack; this must not be inlined or optimized away.
void ck_scrub_stack(size_t bytes);
/// accept4(socket, NULL, NULL, SOCK_CLOEXEC): the connected socket, or -1 with errno.
int ck_accept_cloexec(int socket);
/// pipe2(fds, O_CLOEXEC): 0, or -1 with errno.
int ck_pipe_cloexec(int fds[2]);
/// posix_spawn_file_actions_addclosefrom_np(actions, from) (glibc 2.34): the child closes
/// every descriptor from `from` up. 0, or an error number.
int ck_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int from);
/// The kernel's SO_PEERPIDFD option number (Linux 6.5), absent from older headers.
int ck_so_peerpidfd(void);
/// getsockopt(SO_PEERCRED)'s uid of a connected Unix socket's peer into `uid`: 0, or -1 with errno.
int ck_peer_uid(int socket, uid_t *uid);
/// sched_getcpu(): the CPU the calling thread is running on, or -1 with errno.
int ck_current_cpu(void);
/// sched_getaffinity(0, …) of the calling thread into `mask` (`size` bytes, a cpu_set_t): 0, or -1 with errno.
int ck_get_affinity(unsigned char *mask, size_t size);
/// sched_setaffinity(0, …) of the calling thread from `mask`: 0, or -1 with errno. Threads and
/// processes it starts afterwards inherit the set.
int ck_set_affinity(const unsigned char *mask, size_t size);
/// The size of a cpu_set_t, in bytes.
size_t ck_affinity_size(void);

#endif
