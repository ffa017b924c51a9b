// The test process's fixed environment, and the end of the agent the tests share.
#define _GNU_SOURCE
#include "CKeychainTestSupport.h"

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int applied = 0;

// Before main, while the process has one thread (setenv is not safe once tests run in
// parallel): every keychain the test process gets by itself is opened in the process.
__attribute__((constructor)) static void ck_test_environment(void) {
    setenv("KEYCHAIN_AGENT", "off", 1);
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
