// The test process's fixed environment, and the end of the agent the tests share.
#define _GNU_SOURCE
#include "CKeychainTestSupport.h"

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int applied = 0;
static char hermetic_root[4096];

static int remove_entry(const char *path, const struct stat *info, int flag, struct FTW *walk);

static void remove_hermetic_root(void) {
    if (hermetic_root[0] != '\0') nftw(hermetic_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

// Points `variable` at the directory `name` of the test process's own root, made with mode 0700.
static void own_directory(const char *variable, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", hermetic_root, name);
    mkdir(path, 0700);
    setenv(variable, path, 1);
}

// Before main, while the process has one thread (setenv is not safe once tests run in
// parallel): every keychain the test process gets by itself is opened in the process, and the
// process and every program it starts have a home, XDG directories and runtime directory of
// their own. Whatever the user's environment holds (a login keychain and its device key, a
// running keychaind, a session bus, KEYCHAIN_* settings) never reaches a test.
__attribute__((constructor)) static void ck_test_environment(void) {
    static const char *const cleared[] = {
        "KEYCHAIN_DEFAULT_PATH", "KEYCHAIN_ACCESS_GROUPS", "KEYCHAIN_PASSWORD", "KEYCHAIN_AGENT_SOCK",
        "KEYCHAIN_AGENT_PROGRAM", "KEYCHAIN_UNSAFE_TEST_KDF", "KEYCHAIN_SYNC", "KEYCHAIN_PINENTRY", "KEYCHAIN_PINENTRY_TIMEOUT",
        "KEYCHAIND_DEBUG", "DBUS_SESSION_BUS_ADDRESS", NULL,
    };
    for (const char *const *name = cleared; *name != NULL; name++) unsetenv(*name);
    setenv("KEYCHAIN_AGENT", "off", 1);
    const char *temporary = getenv("TMPDIR");
    snprintf(hermetic_root, sizeof hermetic_root, "%s/keychain-tests-XXXXXX",
             temporary != NULL && temporary[0] == '/' ? temporary : "/tmp");
    if (mkdtemp(hermetic_root) == NULL) {
        hermetic_root[0] = '\0';
        return;  // applied stays 0: the tests that check it fail, saying so
    }
    own_directory("HOME", "home");
    own_directory("XDG_DATA_HOME", "data");
    own_directory("XDG_CONFIG_HOME", "config");
    own_directory("XDG_STATE_HOME", "state");
    own_directory("XDG_CACHE_HOME", "cache");
    own_directory("XDG_RUNTIME_DIR", "run");
    char path[4096];
    snprintf(path, sizeof path, "%s/admin-trust-settings.json", hermetic_root);
    setenv("KEYCHAIN_ADMIN_TRUST_SETTINGS", path, 1);
    snprintf(path, sizeof path, "%s/app-manifests", hermetic_root);
    setenv("KEYCHAIN_APP_MANIFESTS", path, 1);
    // Present from the start, so the TPM tests that capture traffic replace its value in place
    // (setenv then moves no array under another thread's spawn).
    snprintf(path, sizeof path, "%s/tpm-traffic.pcap", hermetic_root);
    setenv("TCTI_PCAP_FILE", path, 1);
    atexit(remove_hermetic_root);
    applied = 1;
}

int ck_test_environment_applied(void) { return applied; }

static pid_t keeper_pid = 0;
static pid_t agent_pid = 0;
static int lifeline_fd = -1;
static char *agent_directory = NULL;

static int remove_entry(const char *path, const struct stat *info, int flag, struct FTW *walk) {
    (void)info;
    (void)flag;
    (void)walk;
    remove(path);
    return 0;
}

static void stop_agent(void) {
    if (lifeline_fd >= 0) {
        close(lifeline_fd);
        lifeline_fd = -1;
    }
    if (keeper_pid > 0) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        int waited = 0;
        while (waitpid(keeper_pid, NULL, WNOHANG) == 0 && waited < 500) {
            nanosleep(&pause, NULL);
            waited += 1;
        }
        if (waited >= 500) {
            if (agent_pid > 0) kill(agent_pid, SIGKILL);
            kill(keeper_pid, SIGKILL);
            waitpid(keeper_pid, NULL, 0);
        }
        keeper_pid = 0;
        agent_pid = 0;
    }
    if (agent_directory != NULL) {
        nftw(agent_directory, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(agent_directory);
        agent_directory = NULL;
    }
}

void ck_test_agent_stop_at_exit(pid_t keeper, pid_t agent, int lifeline, const char *directory) {
    keeper_pid = keeper;
    agent_pid = agent;
    lifeline_fd = lifeline;
    agent_directory = strdup(directory);
    atexit(stop_agent);
}
