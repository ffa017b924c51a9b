// pam_keychain.so: unlocks the user's login keychain with the password they logged in with, and
// re-wraps it when they change that password (docs/login.md).
//
// C because PAM's ABI is C; it only carries the password from the PAM stack to the user's own
// `keychaind --pam MODE`, which does everything else in Swift:
//
//   auth      keeps the password the user typed (PAM_AUTHTOK) as PAM data, in locked memory that
//             is wiped when PAM frees it; prompts for nothing.
//   session   hands it to `keychaind --pam login`, started as the user (never as root): the login
//             keychain is created, converted from password-less, or unlocked in the user's agent.
//   password  hands the old and new password (PAM_OLDAUTHTOK, PAM_AUTHTOK) to `keychaind --pam
//             password`, which re-wraps the login keychain's keys.
//
// The password goes through a socket pair to the child's standard input: never an environment
// variable, an argument or a file. The module never makes a login fail: every failure is logged
// (without the password) and answered with PAM_IGNORE.
//
// Arguments: helper=PATH (default /usr/bin/keychaind), timeout=SECONDS (default 20), debug.

#define PAM_SM_AUTH
#define PAM_SM_SESSION
#define PAM_SM_PASSWORD

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "pam_keychain.h"

#define EXPORT __attribute__((visibility("default")))

// The PAM data name under which auth leaves the password for session.
static const char kPasswordData[] = "pam_keychain_password";
// The longest password carried (PAM's own limit is 512 bytes).
enum { kMaximumPassword = 4096 };

struct options {
    const char *helper;
    int timeout;
    int debug;
};

static struct options parse_options(pam_handle_t *pamh, int argc, const char **argv) {
    struct options options = {"/usr/bin/keychaind", 20, 0};
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "helper=", 7) == 0 && argv[i][7] == '/') {
            options.helper = argv[i] + 7;
        } else if (strncmp(argv[i], "timeout=", 8) == 0) {
            int seconds = atoi(argv[i] + 8);
            if (seconds > 0 && seconds <= 300) options.timeout = seconds;
        } else if (strcmp(argv[i], "debug") == 0) {
            options.debug = 1;
        } else {
            pam_syslog(pamh, LOG_WARNING, "unknown option: %s", argv[i]);
        }
    }
    return options;
}

// A password copy in locked memory, wiped and unlocked when freed.
struct secret {
    size_t length;
    char bytes[];
};

static struct secret *secret_copy(const char *text) {
    size_t length = strnlen(text, kMaximumPassword + 1);
    if (length > kMaximumPassword) return NULL;
    struct secret *copy = malloc(sizeof(struct secret) + length + 1);
    if (copy == NULL) return NULL;
    (void)mlock(copy, sizeof(struct secret) + length + 1);
    copy->length = length;
    memcpy(copy->bytes, text, length + 1);
    return copy;
}

static void secret_free(struct secret *secret) {
    if (secret == NULL) return;
    size_t size = sizeof(struct secret) + secret->length + 1;
    explicit_bzero(secret, size);
    (void)munlock(secret, size);
    free(secret);
}

static void secret_cleanup(pam_handle_t *pamh, void *data, int status) {
    (void)pamh;
    (void)status;
    secret_free(data);
}

// The variables the helper gets: where the user's files and agent are, from the PAM environment
// (pam_systemd's XDG_RUNTIME_DIR, pam_env's settings), never from the calling process's.
static const char *const kPassedVariables[] = {
    "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "KEYCHAIN_AGENT_SOCK",
    "KEYCHAIN_AGENT_PROGRAM", "LANG", NULL,
};

enum { kMaximumVariables = 16 };

// Runs in the child: becomes the user, then execs the helper with the socket as standard input.
static void become_user_and_exec(pam_handle_t *pamh, const struct options *options, const char *mode,
                                 const struct passwd *user, int input) {
    char *environment[kMaximumVariables] = {0};
    int count = 0;
    static char home[4096], name[512], logname[512];
    snprintf(home, sizeof home, "HOME=%s", user->pw_dir);
    snprintf(name, sizeof name, "USER=%s", user->pw_name);
    snprintf(logname, sizeof logname, "LOGNAME=%s", user->pw_name);
    environment[count++] = home;
    environment[count++] = name;
    environment[count++] = logname;
    environment[count++] = "PATH=/usr/local/bin:/usr/bin:/bin";
    for (const char *const *variable = kPassedVariables; *variable != NULL && count < kMaximumVariables - 1;
         variable++) {
        const char *value = pam_getenv(pamh, *variable);
        if (value == NULL) continue;
        size_t size = strlen(*variable) + strlen(value) + 2;
        char *entry = malloc(size);
        if (entry == NULL) _exit(125);
        snprintf(entry, size, "%s=%s", *variable, value);
        environment[count++] = entry;
    }

    if (dup2(input, STDIN_FILENO) < 0) _exit(125);
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, STDOUT_FILENO) < 0) _exit(125);
    if (!options->debug && dup2(null, STDERR_FILENO) < 0) _exit(125);
    closefrom(STDERR_FILENO + 1);

    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);

    if (getuid() != user->pw_uid || geteuid() != user->pw_uid) {
        if (initgroups(user->pw_name, user->pw_gid) != 0 || setgid(user->pw_gid) != 0 ||
            setuid(user->pw_uid) != 0) {
            _exit(126);
        }
    }
    // No way back to another identity.
    if (user->pw_uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) _exit(126);
    if (chdir(user->pw_dir) != 0 && chdir("/") != 0) _exit(126);

    char *const arguments[] = {"keychaind", "--pam", (char *)mode, NULL};
    execve(options->helper, arguments, environment);
    _exit(127);
}

static int send_all(int socket, const void *bytes, size_t length) {
    const char *next = bytes;
    while (length > 0) {
        ssize_t sent = send(socket, next, length, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) return -1;
        next += sent;
        length -= (size_t)sent;
    }
    return 0;
}

// The child's exit status once it has ended, or -1 (killed by a signal, or reaped by the
// application's own SIGCHLD handler).
static int reap(pid_t child) {
    int status = 0;
    pid_t ended;
    while ((ended = waitpid(child, &status, 0)) < 0 && errno == EINTR) {
    }
    if (ended != child) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static long milliseconds_since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start->tv_sec) * 1000L + (now.tv_nsec - start->tv_nsec) / 1000000L;
}

// Waits up to `seconds` for the child; kills it after that. Returns its exit status, or -1.
// The wait is on a pidfd (Linux 5.3): the login goes on the moment the child ends; without one,
// the child is polled every 2 ms.
static int wait_for(pid_t child, int seconds) {
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long limit = (long)seconds * 1000L;
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    if (pidfd >= 0) {
        struct pollfd ended = {pidfd, POLLIN, 0};
        int ready = 0;
        long left;
        while ((left = limit - milliseconds_since(&start)) > 0 &&
               (ready = poll(&ended, 1, (int)left)) < 0 && errno == EINTR) {
        }
        int done = left > 0 && ready > 0;
        close(pidfd);
        if (done) return reap(child);
    } else {
        struct timespec step = {0, 2 * 1000 * 1000};
        while (milliseconds_since(&start) < limit) {
            int status = 0;
            pid_t ended = waitpid(child, &status, WNOHANG);
            if (ended == child) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            if (ended < 0 && errno != EINTR) return -1;  // reaped by the application's own handler
            nanosleep(&step, NULL);
        }
    }
    kill(child, SIGKILL);
    (void)waitpid(child, NULL, 0);
    return -1;
}

// What `keychaind --pam` exits with when the password does not open the login keychain, and when
// the keychain is sealed to a TPM that cannot open it now (another machine's, or this one cleared).
enum { kWrongPassword = 3, kOtherTPM = 4, kBootStateChanged = 5, kCreated = 6 };

// Hands `first` (and `second`, for a password change) to `keychaind --pam MODE` run as the user.
// The input is the first secret's length (4 bytes, big-endian) and bytes, then the second's.
// Returns the helper's exit status, or -1 when it could not run or did not finish.
static int hand_off(pam_handle_t *pamh, const struct options *options, const char *mode, const char *first,
                    const char *second) {
    const char *user_name = NULL;
    if (pam_get_user(pamh, &user_name, NULL) != PAM_SUCCESS || user_name == NULL) return -1;
    struct passwd *user = getpwnam(user_name);
    if (user == NULL) {
        pam_syslog(pamh, LOG_NOTICE, "no such user: %s", user_name);
        return -1;
    }
    if (getuid() != 0 && geteuid() != 0 && getuid() != user->pw_uid) {
        pam_syslog(pamh, LOG_NOTICE, "cannot act as %s from uid %u", user_name, (unsigned)getuid());
        return -1;
    }
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return -1;
    pid_t child = fork();
    if (child < 0) {
        close(pair[0]);
        close(pair[1]);
        return -1;
    }
    if (child == 0) {
        close(pair[0]);
        become_user_and_exec(pamh, options, mode, user, pair[1]);
    }
    close(pair[1]);
    int failed = 0;
    const char *parts[2] = {first, second};
    for (int i = 0; i < 2 && parts[i] != NULL && !failed; i++) {
        size_t length = strnlen(parts[i], kMaximumPassword + 1);
        uint8_t header[4] = {(uint8_t)(length >> 24), (uint8_t)(length >> 16), (uint8_t)(length >> 8),
                             (uint8_t)length};
        failed = length > kMaximumPassword || send_all(pair[0], header, sizeof header) != 0 ||
                 send_all(pair[0], parts[i], length) != 0;
    }
    shutdown(pair[0], SHUT_WR);
    int status = wait_for(child, options->timeout);
    close(pair[0]);
    if (failed) status = -1;
    if (status != 0 && status != kCreated) {
        pam_syslog(pamh, LOG_NOTICE, "keychaind --pam %s for %s ended with %d", mode, user_name, status);
    } else if (options->debug) {
        pam_syslog(pamh, LOG_DEBUG, "keychaind --pam %s for %s: done", mode, user_name);
    }
    return status;
}

EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    (void)parse_options(pamh, argc, argv);
    const void *password = NULL;
    if (pam_get_item(pamh, PAM_AUTHTOK, &password) != PAM_SUCCESS || password == NULL) return PAM_IGNORE;
    struct secret *copy = secret_copy(password);
    if (copy == NULL) return PAM_IGNORE;
    if (pam_set_data(pamh, kPasswordData, copy, secret_cleanup) != PAM_SUCCESS) {
        secret_free(copy);
    }
    return PAM_IGNORE;
}

// A screen unlock: the application authenticated the user again and refreshes the credentials
// (PAM_REFRESH_CRED, PAM_REINITIALIZE_CRED) without opening a session, and only after the whole
// auth stack succeeded. The login keychain, locked when the session locked, is unlocked with the
// password just checked. A login's PAM_ESTABLISH_CRED is left to the session.
EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    if (!(flags & (PAM_REFRESH_CRED | PAM_REINITIALIZE_CRED))) return PAM_IGNORE;
    struct options options = parse_options(pamh, argc, argv);
    const void *data = NULL;
    if (pam_get_data(pamh, kPasswordData, &data) != PAM_SUCCESS || data == NULL) return PAM_IGNORE;
    const struct secret *password = data;
    int status = hand_off(pamh, &options, "login", password->bytes, NULL);
    (void)pam_set_data(pamh, kPasswordData, NULL, NULL);
    return status == 0 || status == kCreated ? PAM_SUCCESS : PAM_IGNORE;
}

EXPORT int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    struct options options = parse_options(pamh, argc, argv);
    const void *data = NULL;
    if (pam_get_data(pamh, kPasswordData, &data) != PAM_SUCCESS || data == NULL) {
        // A login without a password (autologin, a fingerprint, a FIDO2 key): keychaind unlocks the
        // login keychain on this machine's boot state if the user turned that on
        // (security set-login-unlock tpm), and otherwise does nothing.
        int status = hand_off(pamh, &options, "unlock", NULL, NULL);
        if (status == kBootStateChanged && !(flags & PAM_SILENT)) {
            (void)pam_info(pamh,
                           "Your login keychain stays locked: this machine's boot state changed since it was set "
                           "to unlock without a password. Unlock it with your password, then run: "
                           "security set-login-unlock tpm");
        }
        return status == 0 ? PAM_SUCCESS : PAM_IGNORE;
    }
    const struct secret *password = data;
    int status = hand_off(pamh, &options, "login", password->bytes, NULL);
    // The password is not kept past its one use (PAM calls the cleanup, which wipes it).
    (void)pam_set_data(pamh, kPasswordData, NULL, NULL);
    if (status == kWrongPassword && !(flags & PAM_SILENT)) {
        // An administrator set a new password: the keychain still has the old one. Said once, at
        // this login (the keychain stays locked, nothing is lost).
        (void)pam_info(pamh,
                       "Your login keychain still uses your previous password. To move it to this one, run: "
                       "security set-keychain-password");
    } else if (status == kOtherTPM && !(flags & PAM_SILENT)) {
        // The keychain is sealed to a TPM that is not this machine's any more (cleared or replaced).
        (void)pam_info(pamh,
                       "Your login keychain is sealed to a TPM that cannot open it now (cleared or replaced). "
                       "Open it with its recovery key: security set-keychain-password -o RECOVERY-KEY");
    } else if (status == kCreated && !(flags & PAM_SILENT)) {
        // The login keychain has had the login password since this login: said once, as the way
        // back after a forgotten password or a cleared TPM (the key itself is never in a message).
        (void)pam_info(pamh,
                       "Your login keychain now opens with your login password. Make its recovery key once, "
                       "and keep it apart from this computer: security login-keychain --recovery-key");
    }
    return status == 0 || status == kCreated ? PAM_SUCCESS : PAM_IGNORE;
}

EXPORT int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_IGNORE;
}

EXPORT int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    struct options options = parse_options(pamh, argc, argv);
    if (flags & PAM_PRELIM_CHECK) return PAM_IGNORE;
    const void *old = NULL, *new = NULL;
    if (pam_get_item(pamh, PAM_OLDAUTHTOK, &old) != PAM_SUCCESS || old == NULL) return PAM_IGNORE;
    if (pam_get_item(pamh, PAM_AUTHTOK, &new) != PAM_SUCCESS || new == NULL) return PAM_IGNORE;
    return hand_off(pamh, &options, "password", old, new) == 0 ? PAM_SUCCESS : PAM_IGNORE;
}
