/* The pod sandbox's process for the test bed's real nodes (image registry.k8s.io/pause):
 * it holds the pod's namespaces, reaps the zombies of a shared PID namespace and exits
 * on SIGINT or SIGTERM. Built statically with gcc by appstack_testbed.images. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void leave(int signo) { (void)signo; _exit(0); }

static void reap(int signo) {
    (void)signo;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction stop = {.sa_handler = leave};
    struct sigaction child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
    sigaction(SIGINT, &stop, NULL);
    sigaction(SIGTERM, &stop, NULL);
    sigaction(SIGCHLD, &child, NULL);
    for (;;) {
        pause();
    }
    return 0;
}
