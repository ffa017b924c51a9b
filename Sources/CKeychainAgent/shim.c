#define _GNU_SOURCE
#include "CKeychainAgent.h"

#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

int ck_set_dumpable(int value) { return prctl(PR_SET_DUMPABLE, (unsigned long)value, 0, 0, 0); }

int ck_get_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

int ck_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

void ck_explicit_bzero(void *pointer, size_t count) { explicit_bzero(pointer, count); }

__attribute__((noinline)) void ck_scrub_stack(size_t bytes) {
    if (bytes > 256 * 1024) bytes = 256 * 1024;
    unsigned char *below = __builtin_alloca(bytes);
    explicit_bzero(below, bytes);
    __asm__ volatile("" : : "r"(below) : "memory");
}

int ck_so_peerpidfd(void) { return SO_PEERPIDFD; }

int ck_accept_cloexec(int socket) { return accept4(socket, NULL, NULL, SOCK_CLOEXEC); }

int ck_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int ck_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int ck_current_cpu(void) { return sched_getcpu(); }

int ck_get_affinity(unsigned char *mask, size_t size) { return sched_getaffinity(0, size, (cpu_set_t *)mask); }

int ck_set_affinity(const unsigned char *mask, size_t size) {
    return sched_setaffinity(0, size, (const cpu_set_t *)mask);
}

size_t ck_affinity_size(void) { return sizeof(cpu_set_t); }

int ck_peer_uid(int socket, uid_t *uid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *uid = credentials.uid;
    return 0;
}
