/* What a session can do to its own records (tests/audit_kept.rs):
 *   closeall PATH   close every descriptor (close_range), then execve(PATH): exit 0 when the
 *                   exec was refused (EACCES), 1 when it ran or failed otherwise
 *   closefrom PATH  the same with glibc's closefrom(0)
 *   storm N PATH    fork N children that each execve(PATH); every other one is killed with
 *                   SIGKILL right after its fork, wherever it is (mid-record, say); wait all
 *   selfkill N PATH N children that each execve(PATH) while a thread of their own sends
 *                   SIGKILL to themselves after 0, 5, 10, ... microseconds: killed anywhere
 *                   in the guard's decision and its record, by their own hand
 *   forge SOCKET    send the writer a record that names pid 1, uid 0 and another time;
 *                   print this process's pid and uid ("PID UID") when it was handed over
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static long selfkill_delay_us;

static void *killer(void *arg) {
    (void)arg;
    if (selfkill_delay_us)
        usleep((useconds_t)selfkill_delay_us);
    kill(getpid(), SIGKILL);
    return NULL;
}

/* A child that execve(path)s, killing itself after `kill_after_us` µs when that is not -1;
 * exits 0 when the exec was refused (EACCES). */
static pid_t spawn_exec(char *path, long kill_after_us) {
    pid_t pid = fork();
    if (pid == 0) {
        char *args[] = {path, NULL};
        pthread_t t;
        selfkill_delay_us = kill_after_us;
        if (kill_after_us >= 0)
            pthread_create(&t, NULL, killer, NULL);
        execve(path, args, environ);
        _exit(errno == EACCES ? 0 : 1);
    }
    return pid;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "closeall")) {
        char *args[] = {argv[2], NULL};
        if (syscall(SYS_close_range, 0U, ~0U, 0) != 0)
            return 2;
        execve(argv[2], args, environ);
        return errno == EACCES ? 0 : 1;
    }
    if (argc == 3 && !strcmp(argv[1], "closefrom")) {
        char *args[] = {argv[2], NULL};
        closefrom(0);
        execve(argv[2], args, environ);
        return errno == EACCES ? 0 : 1;
    }
    if (argc == 4 && !strcmp(argv[1], "selfkill")) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++) {
            pid_t pid = spawn_exec(argv[3], 5L * i);
            if (pid < 0)
                return 2;
            int st;
            waitpid(pid, &st, 0);
        }
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "forge")) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (strlen(argv[2]) >= sizeof a.sun_path)
            return 2;
        strcpy(a.sun_path, argv[2]);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
            return 3;
        const char *rec =
            "{\"time\":1.5,\"pid\":1,\"uid\":0,\"tool\":\"guard\",\"entry\":\"execve\","
            "\"decision\":\"deny\",\"reason\":\"mutable_native\",\"path\":\"/forged\","
            "\"target\":\"forged\"}";
        if (send(fd, rec, strlen(rec), 0) != (ssize_t)strlen(rec))
            return 4;
        char answer = 0;
        recv(fd, &answer, 1, 0);
        printf("%d %d %c\n", (int)getpid(), (int)getuid(), answer ? answer : '?');
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "storm")) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++) {
            pid_t pid = spawn_exec(argv[3], -1);
            if (pid < 0)
                return 2;
            if (i % 2)
                kill(pid, SIGKILL);
        }
        int bad = 0, st;
        while (wait(&st) > 0)
            if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
                bad++;
        return bad ? 1 : 0;
    }
    fprintf(stderr, "usage: audit_attack closeall|closefrom PATH | storm|selfkill N PATH | forge SOCKET\n");
    return 2;
}
